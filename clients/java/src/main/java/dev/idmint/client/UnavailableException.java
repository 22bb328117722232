package dev.idmint.client;

import java.time.Duration;

/**
 * No node could serve within the bounded wait ({@code maxWait}): every node down or
 * unreachable, or its store unavailable. Retryable: the same call may succeed later. The
 * message names the last failure seen; {@link #getCause()} is it, when it was an exception.
 */
public final class UnavailableException extends IdMintException {
    private static final long serialVersionUID = 1L;

    private final Duration waited;
    private final String lastCause;

    UnavailableException(Duration waited, String lastCause, Throwable cause) {
        super("no idmint node could serve within " + Durations.show(waited) + ": " + lastCause,
                ErrorCode.STORE_UNAVAILABLE, cause);
        this.waited = waited;
        this.lastCause = lastCause;
    }

    /** The last failure seen, in words. */
    String lastCause() {
        return lastCause;
    }

    /** How long the call waited before giving up. */
    public Duration waited() {
        return waited;
    }

    @Override
    public boolean isRetryable() {
        return true;
    }
}
