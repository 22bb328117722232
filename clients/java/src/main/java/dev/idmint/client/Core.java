package dev.idmint.client;

import java.util.List;
import java.util.concurrent.ExecutorService;

/** What every part of one client shares: the settings, the nodes, the ranges, the threads, whether it is closed. */
final class Core {
    final IdMintConfig config;
    final Nodes nodes;
    final Ranges ranges;
    /** Background fetches (one per tag at most) and the give-backs at close. */
    final ExecutorService executor;
    /** The slow paths of the asynchronous calls: a few threads, however many calls wait. */
    final ExecutorService asyncExecutor;
    private volatile boolean closed;

    Core(IdMintConfig config, Nodes nodes, ExecutorService executor, ExecutorService asyncExecutor) {
        this.asyncExecutor = asyncExecutor;
        this.config = config;
        this.nodes = nodes;
        this.ranges = new Ranges(nodes, config.maxWait());
        this.executor = executor;
    }

    boolean isClosed() {
        return closed;
    }

    void markClosed() {
        closed = true;
    }

    /**
     * One ID of the dated tag {@code tag}, from the first node that answers within
     * {@code maxWait}: a range kept here would outlive its period, so none is
     * ({@code IDMINT.NEXT tag FORMAT INTEGER}, one round trip each).
     */
    long datedNext(String tag, long startedNanos) {
        if (closed) {
            throw new ClosedException();
        }
        long left = config.maxWait().toNanos() - (System.nanoTime() - startedNanos);
        if (left <= 0) {
            throw Nodes.unavailable(startedNanos, "no ID of dated tag `" + tag + "` in time");
        }
        Nodes.Answer answer = nodes.call(List.of("IDMINT.NEXT", tag, "FORMAT", "INTEGER"), java.time.Duration.ofNanos(left),
                this::isClosed, reply -> {
                    if (!Ranges.isInteger(reply)) {
                        throw new Resp.ProtocolException("expected an ID");
                    }
                    return reply;
                });
        long id = Ranges.idOrZero(answer.value());
        if (id == 0) {
            throw new RefusedException(nodes.address(answer.node()) + " answered IDMINT.NEXT " + tag
                    + " with " + answer.value() + ", not an ID in 1.." + Long.MAX_VALUE, ErrorCode.STORE_INVALID, "");
        }
        return id;
    }
}
