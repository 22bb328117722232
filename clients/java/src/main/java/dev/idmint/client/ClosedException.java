package dev.idmint.client;

/** The client was closed: it hands out nothing more. */
public final class ClosedException extends IdMintException {
    private static final long serialVersionUID = 1L;

    ClosedException() {
        super("the idmint client is closed", null, null);
    }
}
