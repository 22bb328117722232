package dev.idmint.client;

/**
 * The token was refused: missing ({@code NOAUTH}), wrong ({@code WRONGPASS}), not allowed this
 * command or tag ({@code NOPERM}), or sent to nodes that have no tokens. The Redis protocol
 * names no idmint code for these; {@link #code()} gives the HTTP API's equivalent,
 * {@code unauthorized} or (for {@code NOPERM}) {@code forbidden}.
 */
public final class AuthException extends RefusedException {
    private static final long serialVersionUID = 1L;

    AuthException(String message, ErrorCode code, String reply) {
        super(message, code, reply);
    }
}
