package dev.idmint.client;

/** The tag's IDs are used up (or too few are left): start a new tag. Code {@code tag_exhausted}. */
public final class TagExhaustedException extends RefusedException {
    private static final long serialVersionUID = 1L;

    TagExhaustedException(String message, String reply) {
        super(message, ErrorCode.TAG_EXHAUSTED, reply);
    }
}
