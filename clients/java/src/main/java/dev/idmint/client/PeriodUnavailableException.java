package dev.idmint.client;

/**
 * A dated tag cannot hand out an ID now: its period's counters are used up, or the store's
 * clock went back into an earlier period. It lifts when the next period begins, not at a
 * retry. Code {@code period_unavailable}.
 */
public final class PeriodUnavailableException extends RefusedException {
    private static final long serialVersionUID = 1L;

    PeriodUnavailableException(String message, String reply) {
        super(message, ErrorCode.PERIOD_UNAVAILABLE, reply);
    }
}
