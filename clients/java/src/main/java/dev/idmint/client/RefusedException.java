package dev.idmint.client;

/**
 * A node refused the request, and every node would answer the same: a bad tag name, an
 * unknown tag, a token that does not allow it, the nodes' tag cap, a reply that breaks the
 * protocol's contract. Not retryable without a change. The subclasses are the refusals a
 * program acts on differently.
 */
public sealed class RefusedException extends IdMintException
        permits TagExhaustedException, PeriodUnavailableException, PermutedException,
                DatedTagException, AuthException {
    private static final long serialVersionUID = 1L;

    private final String reply;

    RefusedException(String message, ErrorCode code, String reply) {
        super(message, code, null);
        this.reply = reply;
    }

    /** The node's error reply as it came ({@code ERR unknown tag `x`}), or empty when the client refused on its own. */
    public String reply() {
        return reply;
    }
}
