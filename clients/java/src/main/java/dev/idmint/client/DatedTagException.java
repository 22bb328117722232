package dev.idmint.client;

/**
 * The nodes refused a range of a dated tag (made with a {@code period}): a range kept by the
 * client would outlive its period. The client handles it itself, taking that tag's IDs one at
 * a time with {@code IDMINT.NEXT}; a caller sees this only if a node refuses that too. Code
 * {@code dated}.
 */
public final class DatedTagException extends RefusedException {
    private static final long serialVersionUID = 1L;

    DatedTagException(String message, String reply) {
        super(message, ErrorCode.DATED, reply);
    }
}
