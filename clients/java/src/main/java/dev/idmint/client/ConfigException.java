package dev.idmint.client;

/**
 * A configuration that cannot work, refused by {@link IdMintConfig.Builder#build()} before any
 * connection is opened (or an argument a call refuses, such as a count out of range): which
 * setting, and why.
 */
public final class ConfigException extends IdMintException {
    private static final long serialVersionUID = 1L;

    private final String field;

    ConfigException(String field, String reason) {
        this(field, reason, null);
    }

    ConfigException(String field, String reason, Throwable cause) {
        super("idmint client configuration: " + field + ": " + reason, null, cause);
        this.field = field;
    }

    /** The setting refused, by its builder method's name ({@code maxWait}). */
    public String field() {
        return field;
    }
}
