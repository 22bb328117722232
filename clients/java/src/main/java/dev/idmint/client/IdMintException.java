package dev.idmint.client;

import java.util.Optional;

/**
 * What a call of {@link IdMint} can fail with. A call never makes an ID up: it returns one the
 * nodes handed out, or throws one of these.
 *
 * <p>Unchecked, so that it travels through {@link java.util.concurrent.CompletableFuture}s and
 * lambdas unchanged; the kinds are sealed subclasses a program can catch one by one:
 * {@link UnavailableException} (retry later), {@link RefusedException} and its kinds (no retry
 * changes the answer), {@link ClosedException} and {@link ConfigException}.
 */
public sealed class IdMintException extends RuntimeException
        permits UnavailableException, RefusedException, ClosedException, ConfigException {
    private static final long serialVersionUID = 1L;

    private final transient ErrorCode code;

    IdMintException(String message, ErrorCode code, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    /**
     * The code of the nodes' answer behind the error, when there is one ({@code tag_exhausted},
     * {@code too_many_tags}, {@code store_unavailable}): what a program branches on rather than
     * the message.
     */
    public Optional<ErrorCode> code() {
        return Optional.ofNullable(code);
    }

    /** True when the same call may succeed later without any change (only {@link UnavailableException}). */
    public boolean isRetryable() {
        return false;
    }
}
