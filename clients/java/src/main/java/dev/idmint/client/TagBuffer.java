package dev.idmint.client;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One tag's double buffer: the current segment, handed out by an atomic add (no lock), and the
 * next one, fetched in the background once {@code prefetchAt} of the current one is used.
 *
 * <p>The lock guards everything but the fast path: switching segments, the fetch's state, the
 * rate, closing. One fetch runs at a time. A fetch that fails because no node can serve
 * ({@link UnavailableException}) is retried after a jittered pause that doubles up to a quarter
 * of {@code maxWait}, until it succeeds or the buffer closes: a prefetch that fails while the
 * current segment still has IDs must succeed before it runs out. Callers with nothing to take
 * wait at most {@code maxWait} and then get {@link UnavailableException} naming the last cause.
 * A refusal (the tag used up, unknown, a broken reply) ends the fetch; the callers waiting on it
 * get it at once, and the next caller starts a new fetch. A {@code dated} refusal turns the tag
 * into one whose IDs are taken from a node one at a time.
 */
final class TagBuffer {
    private static final long INITIAL_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long MAX_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);

    final String tag;
    private final Core core;
    private volatile Segment current = Segment.EMPTY;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Guarded by lock:
    private Segment next;
    private boolean closed;
    private boolean givenBack;
    private volatile boolean dated;
    private long fetchSeq;
    private boolean fetching;
    private boolean inCall;
    private long fatalSeq = -1;
    private IdMintException fatal;
    private Object lastError;
    /** The last ID of the last range taken (0: none yet): the next is asked for above it. */
    private long floor;
    private final RateMeter rate = new RateMeter();
    private long consumedBefore;

    TagBuffer(String tag, Core core) {
        this.tag = tag;
        this.core = core;
    }

    /** The next ID if one is in memory, else 0 (IDs are never 0). No lock, one atomic add. */
    long tryNext() {
        Segment s = current;
        long off = s.offset.getAndIncrement();
        if (off < s.len) {
            if (off == s.trigger) {
                reachedTrigger(s);
            }
            return s.first + off;
        }
        return 0;
    }

    /** The next ID: from memory, after waiting (at most {@code maxWait}) for a range, or for a dated tag from a node. */
    long next() {
        long id = tryNext();
        return id != 0 ? id : nextSlow();
    }

    boolean isDated() {
        return dated;
    }

    long nextSlow() {
        return nextSlow(System.nanoTime());
    }

    /** {@link #nextSlow()} for a call made at {@code startedNanos} ({@link System#nanoTime()}): its {@code maxWait} counts from then. */
    long nextSlow(long startedNanos) {
        if (dated) {
            return core.datedNext(tag, startedNanos);
        }
        long waitStarted = startedNanos;
        long waitingOn = -1;
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    throw new ClosedException();
                }
                if (dated) {
                    break;
                }
                Segment s = current;
                long off = s.offset.getAndIncrement();
                if (off < s.len) {
                    if (off == s.trigger) {
                        triggered(s);
                    }
                    return s.first + off;
                }
                if (next != null) {
                    switchToNext();
                    continue;
                }
                if (fatal != null && fatalSeq == waitingOn) {
                    throw fatal;
                }
                if (!fetching) {
                    startFetch();
                }
                waitingOn = fetchSeq;
                long now = System.nanoTime();
                long left = waitStarted + core.config.maxWait().toNanos() - now;
                if (left <= 0) {
                    Object cause = lastError != null ? lastError : core.nodes.lastFailure();
                    throw Nodes.unavailable(waitStarted, cause == null
                            ? "no range of tag `" + tag + "` arrived in time" : cause);
                }
                try {
                    changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw Nodes.unavailable(waitStarted, "interrupted while waiting for a range of tag `" + tag + "`");
                }
            }
        } finally {
            lock.unlock();
        }
        return core.datedNext(tag, startedNanos);
    }

    /** The claim of the trigger offset happened: sample the rate and fetch the next range. */
    private void reachedTrigger(Segment s) {
        lock.lock();
        try {
            triggered(s);
        } finally {
            lock.unlock();
        }
    }

    private void triggered(Segment s) {
        if (s == current) {
            rate.observe(consumedBefore + s.trigger, nowMs());
        }
        if (!closed && !dated && !fetching && next == null) {
            startFetch();
        }
    }

    /** Makes the next segment the current one (the current one is used up). Under the lock. */
    private void switchToNext() {
        consumedBefore += current.len;
        current = next;
        next = null;
        rate.observe(consumedBefore, nowMs());
        changed.signalAll();
    }

    /** Starts a fetch. Under the lock. */
    private void startFetch() {
        long seq = ++fetchSeq;
        fetching = true;
        try {
            core.executor.execute(() -> runFetch(seq));
        } catch (RejectedExecutionException e) {
            fetching = false;
            fatal = new ClosedException();
            fatalSeq = seq;
        }
    }

    private void runFetch(long seq) {
        long pause = INITIAL_PAUSE_NANOS;
        long maxPause = Math.max(TimeUnit.MILLISECONDS.toNanos(1),
                Math.min(MAX_PAUSE_NANOS, core.config.maxWait().toNanos() / 4));
        while (true) {
            long step;
            long above;
            lock.lock();
            try {
                if (closed || fetchSeq != seq || !fetching) {
                    fetching = false;
                    changed.signalAll();
                    return;
                }
                IdMintConfig c = core.config;
                step = RateMeter.planStep(rate.rate(), c.minStep(), c.maxStep(),
                        c.targetLifetime().toNanos() / 1e9);
                above = floor;
                inCall = true;
            } finally {
                lock.unlock();
            }
            Ranges.Range range;
            try {
                range = core.ranges.take(tag, step, above, core::isClosed);
            } catch (UnavailableException e) {
                lock.lock();
                try {
                    lastError = e;
                    inCall = false;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
                Nodes.sleepNanos(ThreadLocalRandom.current().nextLong(pause / 2, pause + 1));
                pause = Math.min(pause * 2, maxPause);
                continue;
            } catch (DatedTagException e) {
                end(() -> dated = true);
                return;
            } catch (IdMintException e) {
                end(() -> {
                    fatal = e;
                    fatalSeq = seq;
                    lastError = e;
                });
                return;
            } catch (RuntimeException e) {
                RefusedException wrapped = new RefusedException("unexpected failure taking a range of tag `"
                        + tag + "`: " + e, ErrorCode.INTERNAL, "");
                wrapped.initCause(e);
                end(() -> {
                    fatal = wrapped;
                    fatalSeq = seq;
                    lastError = wrapped;
                });
                return;
            }
            boolean orphan;
            lock.lock();
            try {
                fetching = false;
                inCall = false;
                orphan = closed && givenBack;
                if (!orphan) {
                    floor = range.last();
                    lastError = null;
                    // Closed but not yet given back: kept for close() to give back.
                    next = Segment.of(range, core.config.prefetchAt());
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
            if (orphan) {
                // close() gave back what it had before this range came: give it back here.
                core.ranges.giveBack(tag, range.first(), range.last(), range.node(), range.generation());
            }
            return;
        }
    }

    /** Ends the fetch, recording its outcome. */
    private void end(Runnable outcome) {
        lock.lock();
        try {
            outcome.run();
            fetching = false;
            inCall = false;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops handing out IDs and gives the unused IDs back to the node that handed out the last
     * range, where it can still take them. A fetch inside its call to a node is waited for (up
     * to {@code maxWait}) so its range is given back too. True when the node took IDs back.
     *
     * <p>What goes back: the current segment's unused tail joined to the unused next range when
     * they are contiguous; else the next range alone (the tail is a gap); else the tail. A node
     * takes a run back only on the connection it handed it out over and only if nothing was
     * taken after it, so a refused give-back leaves a gap, never a duplicate.
     */
    boolean close() {
        long[] tail;
        Segment nxt;
        long lastTaken;
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            closed = true;
            Segment s = current;
            tail = s.tail(s.offset.getAndSet(Segment.CLOSED));
            changed.signalAll();
            long deadline = System.nanoTime() + core.config.maxWait().toNanos();
            while (inCall) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            givenBack = true;
            nxt = next;
            next = null;
            lastTaken = floor;
        } finally {
            lock.unlock();
        }
        long[] plan;
        int node;
        int generation;
        if (nxt != null) {
            long[] rest = nxt.tail(nxt.offset.get());
            if (tail != null && rest != null && tail[1] + 1 == rest[0]) {
                plan = new long[] {tail[0], rest[1]};
            } else {
                plan = rest;
            }
            node = nxt.node;
            generation = nxt.generation;
        } else {
            plan = tail;
            Segment s = current;
            node = s.node;
            generation = s.generation;
        }
        // Only the end of the last range taken can go back (a node takes back only its last run).
        if (plan == null || plan[1] != lastTaken || node < 0) {
            return false;
        }
        return core.ranges.giveBack(tag, plan[0], plan[1], node, generation);
    }

    private static long nowMs() {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime());
    }
}
