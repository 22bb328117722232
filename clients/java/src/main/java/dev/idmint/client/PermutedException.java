package dev.idmint.client;

/**
 * The nodes hand out their IDs permuted ({@code serve --permutation-key-file}): this client
 * keeps segment IDs as runs of consecutive IDs, which permuted IDs are not, so
 * {@link IdMint#next(String)} is refused. Snowflakes are still served; take segment IDs from the
 * nodes themselves ({@code IDMINT.NEXT tag COUNT n}). Code {@code permuted}.
 */
public final class PermutedException extends RefusedException {
    private static final long serialVersionUID = 1L;

    PermutedException(String message, String reply) {
        super(message, ErrorCode.PERMUTED, reply);
    }
}
