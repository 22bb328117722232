package dev.idmint.client;

/**
 * A text (or byte array) that is not a 128-bit ID, refused by {@link Id128#parse(String)} and
 * its kin: the text, and why.
 */
public final class Id128FormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** Texts longer than this are cut in the message: a refusal should not echo megabytes. */
    private static final int SHOWN = 64;

    private final String text;
    private final String reason;

    Id128FormatException(String text, String reason) {
        super(text == null ? "not a 128-bit ID: " + reason
                : "not a 128-bit ID: `" + shown(text) + "`: " + reason);
        this.text = text;
        this.reason = reason;
    }

    /** The text refused (null for bytes). */
    public String text() {
        return text;
    }

    /** Why, in words. */
    public String reason() {
        return reason;
    }

    private static String shown(String text) {
        return text.length() <= SHOWN ? text : text.substring(0, SHOWN) + "...";
    }
}
