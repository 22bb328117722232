package dev.idmint.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Snowflakes in small batches that never get old.
 *
 * <p>A snowflake carries the time it was made, and its use is to sort by it; a batch kept for
 * long would hand out IDs whose time lies in the past. So what is left of a batch is thrown away
 * unused once it is older than {@code snowflakeMaxAge} (counted from when it was asked for), and
 * a call that finds none fresh asks a node for a new one and takes its own share of the answer
 * whatever the round trip took (a node farther away than the bound still serves). Snowflakes one
 * client hands out strictly increase: any ID not above the last one handed out (a batch from a
 * node whose clock or worker ID sorts lower) is skipped.
 *
 * <p>Unless the nodes hand out their IDs permuted ({@code serve --permutation-key-file}): then no
 * ID sorts by time, and keeping them in order would skip nearly all of them. The client asks
 * once, before its first batch, with {@code IDMINT.SPACE} (a node too old to know it hands out
 * plain IDs), and hands permuted batches out as they come.
 */
final class Snowflakes {
    /** The most snowflakes one call may ask for: the nodes' default {@code --max-count}. */
    static final int MAX = 10_000;

    private final Core core;
    /** Guards the batch in hand. */
    private final ReentrantLock held = new ReentrantLock();
    private long[] ids = new long[0];
    private int pos;
    private long askedAt;
    private long last;
    /** Whether the nodes hand out permuted IDs; null until asked. */
    private volatile Boolean permuted;
    /** One request for a batch at a time: callers that find the batch empty wait for it. */
    private final ReentrantLock asking = new ReentrantLock();

    Snowflakes(Core core) {
        this.core = core;
    }

    /** {@code n} snowflakes ({@code 1..MAX}), increasing, none from a batch kept past the bound. */
    long[] take(int n) {
        return take(n, System.nanoTime());
    }

    /** {@link #take(int)} for a call made at {@code started} ({@link System#nanoTime()}): its {@code maxWait} counts from then. */
    long[] take(int n, long started) {
        if (n < 1 || n > MAX) {
            throw new RefusedException("snowflakes: between 1 and " + MAX + " at once, not " + n,
                    ErrorCode.INVALID_ARGUMENT, "");
        }
        IdMintConfig config = core.config;
        long maxWait = config.maxWait().toNanos();
        long[] out = new long[n];
        int got = takeFresh(out, 0);
        while (got < n) {
            long left = maxWait - (System.nanoTime() - started);
            try {
                if (left <= 0 || !asking.tryLock(left, TimeUnit.NANOSECONDS)) {
                    throw Nodes.unavailable(started, "no fresh snowflake batch in time");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw Nodes.unavailable(started, "interrupted waiting for a snowflake batch");
            }
            try {
                got = takeFresh(out, got);
                if (got == n) {
                    break;
                }
                if (core.isClosed()) {
                    throw new ClosedException();
                }
                left = maxWait - (System.nanoTime() - started);
                if (left <= 0) {
                    throw Nodes.unavailable(started, "no fresh snowflake batch in time");
                }
                if (permuted == null) {
                    permuted = askPermuted(Duration.ofNanos(left));
                    left = Math.max(1, maxWait - (System.nanoTime() - started));
                }
                long want = Math.min(Math.max(config.snowflakeBatch(), n - got), core.ranges.largest());
                long asked = System.nanoTime();
                long[] batch = ask(want, Duration.ofNanos(left));
                core.nodes.stats.snowflakeBatch();
                int before = got;
                held.lock();
                try {
                    ids = batch;
                    pos = 0;
                    askedAt = asked;
                    got = takeOwn(out, got);
                } finally {
                    held.unlock();
                }
                if (got == before) {
                    // Every ID of the batch sorts below one handed out already (a node whose clock
                    // is behind the last one's): let time pass before asking again.
                    Nodes.sleepNanos(TimeUnit.MILLISECONDS.toNanos(1));
                }
            } finally {
                asking.unlock();
            }
        }
        return out;
    }

    /** Drops the batch in hand (the client closed). */
    void clear() {
        held.lock();
        try {
            ids = new long[0];
            pos = 0;
        } finally {
            held.unlock();
        }
    }

    /** Moves fresh IDs into {@code out} from index {@code got}; returns the new count. */
    private int takeFresh(long[] out, int got) {
        held.lock();
        try {
            if (pos < ids.length && System.nanoTime() - askedAt > core.config.snowflakeMaxAge().toNanos()) {
                ids = new long[0];
                pos = 0;
            }
            return takeOwn(out, got);
        } finally {
            held.unlock();
        }
    }

    /** Moves IDs, however old, into {@code out}: for the call that asked. Under {@code held}. */
    private int takeOwn(long[] out, int got) {
        boolean unordered = Boolean.TRUE.equals(permuted);
        while (got < out.length && pos < ids.length) {
            long id = ids[pos++];
            if (unordered) {
                out[got++] = id;
            } else if (id > last) {
                last = id;
                out[got++] = id;
            }
        }
        return got;
    }

    /** A batch of up to {@code want} snowflakes, learning the nodes' largest count from a refusal. */
    private long[] ask(long want, Duration maxWait) {
        long n = want;
        while (true) {
            long count = n;
            Nodes.Answer answer;
            try {
                answer = core.nodes.call(List.of("IDMINT.SNOWFLAKE", "COUNT", count), maxWait, core::isClosed,
                        reply -> {
                            if (reply instanceof List<?> list && list.stream().allMatch(Ranges::isInteger)) {
                                return list;
                            }
                            throw new Resp.ProtocolException("expected a list of IDs");
                        });
            } catch (RefusedException refused) {
                long limit = Nodes.largestCount(refused);
                if (limit > 0 && limit < n) {
                    core.ranges.learnLargest(limit);
                    n = limit;
                    continue;
                }
                throw refused;
            }
            List<?> list = (List<?>) answer.value();
            long[] batch = new long[list.size()];
            for (int i = 0; i < batch.length; i++) {
                batch[i] = Ranges.idOrZero(list.get(i));
                if (batch[i] == 0 || batch.length > count) {
                    // A node that breaks the contract: never hand its IDs out.
                    throw new RefusedException(core.nodes.address(answer.node()) + " answered IDMINT.SNOWFLAKE COUNT "
                            + count + " with " + Resp.show(list) + ", not up to " + count + " IDs in 1.."
                            + Long.MAX_VALUE, ErrorCode.STORE_INVALID, "");
                }
            }
            return batch;
        }
    }

    /**
     * Whether the nodes hand out permuted IDs, from {@code IDMINT.SPACE}'s {@code permuted} (a map,
     * in RESP2 its pairs); false from a node that does not know the command.
     */
    private boolean askPermuted(Duration maxWait) {
        Nodes.Answer answer;
        try {
            answer = core.nodes.call(List.of("IDMINT.SPACE"), maxWait, core::isClosed);
        } catch (RefusedException refused) {
            if (refused.reply().startsWith("ERR unknown command")) {
                return false;
            }
            throw refused;
        }
        if (answer.value() instanceof List<?> pairs) {
            for (int i = 0; i + 1 < pairs.size(); i += 2) {
                if (pairs.get(i) instanceof byte[] key && new String(key, java.nio.charset.StandardCharsets.UTF_8).equals("permuted")) {
                    return Long.valueOf(1).equals(pairs.get(i + 1));
                }
            }
        }
        return false;
    }
}
