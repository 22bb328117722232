package dev.idmint.client;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The state both 128-bit generators share: the last (millisecond, counter) pair issued, packed
 * in one word as {@code (ms - base) << 24 | counter}, taken lock-free.
 *
 * <p>Within a millisecond every ID is one {@code incrementAndGet} of the word: it never fails
 * or retries, so threads racing cost one cache-line transfer per ID, and every value it returns
 * is above every value returned before (strictly increasing across threads). A counter that
 * passes 2^24 - 1 carries into the millisecond field by itself: the ID borrows the next
 * millisecond with counter 0, as the spec asks. The first ID of a new millisecond is a
 * compare-and-swap to {@code (now, random seed < 2^23)}; losing it to another thread just
 * means reading the word again.
 *
 * <p>A clock that steps back leaves the word ahead of it: IDs go on counting from the last one
 * (never a repeat, never lower), with no wait, until the clock catches up. Borrowing more than
 * {@code maxLead} ms ahead of the highest clock reading seen waits for the clock; it takes
 * 2^23 or more IDs in each millisecond of the lead, so it does not happen in practice.
 *
 * <p>The offset {@code ms - base} has 40 bits: a generator runs for 34 years.
 */
final class Id128Engine {
    static final int COUNTER_BITS = 24;
    static final long SEED_MASK = (1L << 23) - 1;
    static final long COUNTER_MASK = (1L << COUNTER_BITS) - 1;

    private final MillisClock clock;
    private final RandomBits random;
    private final long maxLeadMs;
    /** The milliseconds of offset 0: one before the clock when the generator was made. */
    private final long base;
    private final AtomicLong state = new AtomicLong();
    /** The highest clock reading that started a millisecond; a benign race may keep it a little low (waits sooner, never later). */
    private volatile long clockHigh;

    Id128Engine(MillisClock clock, RandomBits random, long maxLeadMs) {
        this.clock = clock;
        this.random = random;
        this.maxLeadMs = maxLeadMs;
        long now = clock.millis();
        this.base = now - 1; // the word 0 is then behind the clock: the first ID seeds
        this.clockHigh = now;
    }

    /** The next packed (ms offset, counter) word; {@link #millis} and {@link #counter} read it. */
    long next() {
        while (true) {
            long now = clock.millis();
            long last = state.get();
            if (now - base > last >>> COUNTER_BITS) {
                // A new millisecond: seed the counter. Lost to another thread, read again.
                long fresh = (now - base) << COUNTER_BITS | (random.nextLong() & SEED_MASK);
                if (state.compareAndSet(last, fresh)) {
                    if (now > clockHigh) {
                        clockHigh = now;
                    }
                    return fresh;
                }
                continue;
            }
            // The clock's millisecond (or the word is ahead of the clock): count on.
            long taken = state.incrementAndGet();
            long ms = millis(taken);
            if (ms > now && ms > Math.max(now, clockHigh) + maxLeadMs) {
                awaitClock(ms - maxLeadMs);
            }
            return taken;
        }
    }

    long millis(long word) {
        return base + (word >>> COUNTER_BITS);
    }

    static long counter(long word) {
        return word & COUNTER_MASK;
    }

    /**
     * Holds the ID just taken until the clock reaches {@code ms}: a borrow beyond the lead. The
     * value is already this thread's, so the wait delays only this caller.
     */
    private void awaitClock(long ms) {
        for (long now = clock.millis(); now < ms; now = clock.millis()) {
            clock.sleep(Math.min(ms - now, 100));
        }
    }

    /** Sets the last (ms, counter) issued: for tests of the overflow, without drawing 2^23 IDs. */
    void restoreForTest(long ms, long counter) {
        state.set((ms - base) << COUNTER_BITS | counter);
    }
}
