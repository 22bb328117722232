package dev.idmint.client;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One range in a tag's buffer, handed out by an atomic add on its offset: the IDs
 * {@code first + offset} for offsets below {@code len}. Claims that land at or past
 * {@code len} fail and send the caller to the slow path; offsets only grow, so a segment once
 * used up stays used up, whatever threads still hold it. Closing moves the offset far past any
 * length in one swap, which also tells what was left.
 */
final class Segment {
    /** The offset a closed segment is set to: every later claim fails. */
    static final long CLOSED = Long.MAX_VALUE / 2;

    /** The segment a buffer starts with: every claim fails. */
    static final Segment EMPTY = new Segment(1, 0, 0, -1, -1, 0.0);

    final long first;
    /** The last ID (inclusive, so a range ending at {@link Long#MAX_VALUE} needs no overflow). */
    final long last;
    final long len;
    /** The offset whose claim starts the fetch of the next range. */
    final long trigger;
    final int node;
    final int generation;
    final AtomicLong offset = new AtomicLong();

    private Segment(long first, long last, long len, int node, int generation, double prefetchAt) {
        this.first = first;
        this.last = last;
        this.len = len;
        this.node = node;
        this.generation = generation;
        this.trigger = len == 0 ? -1 : Math.min((long) (len * prefetchAt), len - 1);
    }

    static Segment of(Ranges.Range range, double prefetchAt) {
        long len = range.last() - range.first() + 1;
        return new Segment(range.first(), range.last(), len, range.node(), range.generation(), prefetchAt);
    }

    /** The unused IDs from {@code offset} on, as {@code [first, last]}, or null when none are left. */
    long[] tail(long offset) {
        if (len == 0 || offset >= len) {
            return null;
        }
        return new long[] {first + offset, last};
    }
}
