package dev.idmint.client;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLSocketFactory;

/**
 * The nodes a client knows, and failing over between them.
 *
 * <p>A request goes to the node that answered last (so a client stays where it is), then to the
 * others in order. A node that fails (no connection, a timeout, a dropped connection, a reply
 * that does not parse, or {@code -TRYAGAIN}: its store is unavailable) is avoided for a back-off
 * period that doubles at each further failure (failures of requests in flight together count
 * once) and resets when it answers. When every node is avoided, only the one whose back-off ends
 * first is tried, after a short pause: a client never sits idle while a node might answer, and
 * never hammers a cluster that is down.
 *
 * <p>A node's refusal is not a failure of the node: another node is tried, but when every node
 * tried in a round refused, the refusal is the answer at once, without waiting out
 * {@code maxWait}. Refusals are an allow-list (see {@link #refusal}); any other error reply is the
 * node's failure.
 *
 * <p>A request whose node died while it was in flight may or may not have been served there. It
 * is sent again to the next node: a range the dead node handed out is lost (a gap, never
 * reissued), never given to anyone else.
 */
final class Nodes {
    /** Reads a reply into what the caller wants; a {@link Resp.ProtocolException} for a reply of the wrong shape. */
    @FunctionalInterface
    interface Parser {
        Object parse(Object reply) throws Resp.ProtocolException;
    }

    /** What a request got: the reply, which node gave it, over which connection. */
    record Answer(Object value, int node, int generation) {}

    /** The starts of the {@code -ERR} replies without a code that are refusals: Redis' and idmint's words for a bad command or argument. */
    private static final List<String> REFUSALS = List.of(
            "invalid tag",
            "invalid argument",
            "unknown tag",
            "count must be",
            "unknown command",
            "wrong number of arguments",
            "syntax error",
            "value is not an integer",
            "first must not be");

    /** What a node without tokens answers a token: a refusal (configuration, not an outage). */
    private static final String NO_PASSWORD = "AUTH <password> called without";

    /** Nodes word a count limit "count must be" (IDMINT.RANGE) or "COUNT must be" (IDMINT.SNOWFLAKE, IDMINT.NEXT). */
    private static final Pattern COUNT_LIMIT = Pattern.compile("count must be between 1 and (\\d+)", Pattern.CASE_INSENSITIVE);

    private final List<NodeConnection> nodes;
    private final Health[] health;
    private final AtomicInteger preferred = new AtomicInteger();
    private final long callTimeoutNanos;
    private final long backoffNanos;
    private final long maxBackoffNanos;
    final Stats stats;
    /** The last failure of any node (an exception or a message), for the message of a wait that ran out. */
    private volatile Object lastFailure;

    Nodes(IdMintConfig config, SSLSocketFactory tls) {
        List<NodeConnection> list = new ArrayList<>();
        for (String url : config.nodes()) {
            list.add(new NodeConnection(NodeAddress.parse(url), config.token(), tls));
        }
        this.nodes = List.copyOf(list);
        this.health = new Health[nodes.size()];
        for (int i = 0; i < health.length; i++) {
            health[i] = new Health();
        }
        this.callTimeoutNanos = config.callTimeout().toNanos();
        this.backoffNanos = config.backoff().toNanos();
        this.maxBackoffNanos = config.maxBackoff().toNanos();
        List<String> names = new ArrayList<>();
        for (NodeConnection node : nodes) {
            names.add(node.address().toString());
        }
        this.stats = new Stats(names);
    }

    /** The address of node {@code i}, as messages show it. */
    String address(int i) {
        return nodes.get(i).address().toString();
    }

    /** The last failure seen on any node, or null. */
    Object lastFailure() {
        return lastFailure;
    }

    /** The node that answered last. */
    String current() {
        return address(preferred.get());
    }

    /**
     * Sends {@code args} to the nodes in turn until one answers, for at most {@code maxWait}.
     *
     * @throws RefusedException when the nodes refused (every node tried in a round)
     * @throws UnavailableException when no node answered within {@code maxWait}
     * @throws ClosedException when {@code closed} says so between attempts
     */
    Answer call(List<?> args, Duration maxWait, java.util.function.BooleanSupplier closed) {
        return call(args, maxWait, closed, reply -> reply);
    }

    /**
     * {@link #call(List, Duration, java.util.function.BooleanSupplier)} with the reply read by
     * {@code parser}: a reply of the wrong shape ({@link Resp.ProtocolException}) is the node's
     * failure, and the next node is tried.
     */
    Answer call(List<?> args, Duration maxWait, java.util.function.BooleanSupplier closed, Parser parser) {
        long started = System.nanoTime();
        long deadline = started + maxWait.toNanos();
        long pause = TimeUnit.MILLISECONDS.toNanos(10);
        while (true) {
            Object last = null;
            boolean allRefused = true;
            for (int i : order()) {
                if (closed.getAsBoolean()) {
                    throw new ClosedException();
                }
                if (Thread.currentThread().isInterrupted()) {
                    // The caller's interruption is no node's failure: stop without blaming one.
                    throw unavailable(started, "interrupted");
                }
                Object outcome = attempt(i, args, parser);
                if (outcome instanceof Answer answer) {
                    if (preferred.getAndSet(i) != i) {
                        stats.failover();
                    }
                    return answer;
                }
                if (!(outcome instanceof RefusedException)) {
                    allRefused = false;
                    lastFailure = outcome;
                }
                last = outcome;
                if (System.nanoTime() >= deadline) {
                    break;
                }
            }
            if (last == null) {
                last = "no node configured";
            }
            if (allRefused && last instanceof RefusedException refused) {
                throw refused;
            }
            long now = System.nanoTime();
            if (now >= deadline) {
                if (last instanceof RefusedException refused) {
                    throw refused;
                }
                throw unavailable(started, last);
            }
            sleepNanos(Math.min(pause, deadline - now));
            pause = Math.min(pause * 2, TimeUnit.MILLISECONDS.toNanos(200));
        }
    }

    /** Sends {@code args} to node {@code i} only, over connection {@code generation} only ({@code IDMINT.GIVEBACK} goes where the range came from). Null when that connection is gone or failed. */
    Object callOn(int i, int generation, List<?> args) {
        try {
            NodeConnection.Reply reply = nodes.get(i).call(args, callTimeoutNanos, generation);
            return reply == null ? null : reply.value();
        } catch (IOException e) {
            return null;
        }
    }

    static UnavailableException unavailable(long startedNanos, Object last) {
        Duration waited = Duration.ofNanos(System.nanoTime() - startedNanos);
        if (last instanceof UnavailableException u) {
            return new UnavailableException(waited, u.lastCause(), u.getCause());
        }
        if (last instanceof Throwable t) {
            return new UnavailableException(waited, t.getMessage(), t);
        }
        return new UnavailableException(waited, String.valueOf(last), null);
    }

    /**
     * One attempt on node {@code i}, bounded by the call timeout: an {@link Answer}, a
     * {@link RefusedException} (the node refused), or the node's failure (an exception or a
     * message) after marking it failed.
     */
    private Object attempt(int i, List<?> args, Parser parser) {
        NodeConnection node = nodes.get(i);
        NodeConnection.Reply reply;
        try {
            reply = node.call(args, callTimeoutNanos, -1);
        } catch (NodeConnection.AuthRefused refused) {
            RefusedException typed = refusal(node.address(), refused.reply);
            if (typed != null) {
                answered(i);
                return typed;
            }
            // Not about the token: a node that refuses the connection (`max number of clients`).
            failed(i);
            return node.address() + " failed: " + refused.reply.text();
        } catch (NodeConnection.Busy e) {
            // Requests to a node go one at a time: a queue behind an answering node is not its
            // failure (counting it would fail over from a node that answers every request).
            return e;
        } catch (IOException e) {
            failed(i);
            return new IOException(node.address() + " failed: " + describe(e), e);
        }
        if (reply.value() instanceof Resp.Error error) {
            RefusedException refused = refusal(node.address(), error);
            if (refused != null) {
                answered(i);
                return refused;
            }
            failed(i);
            if (!error.code().equals("TRYAGAIN")) {
                // A reply the client does not know (a full node): start afresh on another connection.
                node.dropIfIdle();
                return node.address() + " failed: " + error.text();
            }
            // The node answers, its store does not: keep the connection (and what it may give back).
            return node.address() + " is unavailable: " + error.text();
        }
        Object parsed;
        try {
            parsed = parser.parse(reply.value());
        } catch (Resp.ProtocolException e) {
            failed(i);
            return new IOException(node.address() + " answered " + String.join(" ", args.stream().map(String::valueOf).limit(2).toList())
                    + " with " + Resp.show(reply.value()) + ": " + e.getMessage(), e);
        }
        answered(i);
        return new Answer(parsed, i, reply.generation());
    }

    private static String describe(IOException e) {
        String message = e.getMessage();
        return message == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": " + message;
    }

    /**
     * The refusal an error reply is, typed; null when it is the node's failure. A refusal is an
     * answer no retry changes: a refused token, a bad tag or count, a used-up tag, the nodes'
     * tag cap or a token's quota, runs asked of permuted IDs, a range of a dated tag, a dated
     * tag's used-up period, a command the node does not know.
     */
    static RefusedException refusal(NodeAddress address, Resp.Error error) {
        String code = error.code();
        String detail = error.detail();
        String reply = error.text();
        switch (code) {
            case "WRONGPASS":
            case "NOAUTH":
                return new AuthException(address + " refused the token: " + reply, ErrorCode.UNAUTHORIZED, reply);
            case "NOPERM":
                return new AuthException(address + " refused the token: " + reply, ErrorCode.FORBIDDEN, reply);
            case "ERR":
                break;
            default:
                return null;
        }
        if (detail.startsWith(NO_PASSWORD)) {
            return new AuthException(address + " has no tokens, but one was sent: " + reply, ErrorCode.UNAUTHORIZED, reply);
        }
        ErrorCode named = refusedCode(detail);
        if (named != null) {
            switch (named) {
                case TAG_EXHAUSTED:
                    return new TagExhaustedException("tag `" + quotedTag(detail) + "` is exhausted", reply);
                case PERIOD_UNAVAILABLE:
                    return new PeriodUnavailableException(afterCode(detail), reply);
                case DATED:
                    return new DatedTagException(afterCode(detail), reply);
                case PERMUTED:
                    return new PermutedException(address + " hands out its IDs permuted (serve "
                            + "--permutation-key-file): this client keeps segment IDs as runs of "
                            + "consecutive IDs, which permuted IDs are not; take segment IDs from the "
                            + "nodes themselves (IDMINT.NEXT tag COUNT n)", reply);
                default:
                    return new RefusedException(address + " refused: " + reply, named, reply);
            }
        }
        for (String start : REFUSALS) {
            // Case aside: "count must be" and "COUNT must be" are both the nodes' wordings.
            if (detail.regionMatches(true, 0, start, 0, start.length())) {
                return new RefusedException(address + " refused: " + reply, plainCode(detail), reply);
            }
        }
        return null;
    }

    /**
     * The code right after {@code -ERR} when it is one every node answers the same (the tag's
     * IDs used up, the tag cap or quota, permuted, dated, a used-up period); null otherwise
     * ({@code store_corrupt} is that node's store).
     */
    static ErrorCode refusedCode(String detail) {
        int space = detail.indexOf(' ');
        String word = space < 0 ? detail : detail.substring(0, space);
        ErrorCode code = ErrorCode.fromWire(word).orElse(null);
        if (code == null) {
            return null;
        }
        switch (code) {
            case TAG_EXHAUSTED:
            case TOO_MANY_TAGS:
            case TAG_QUOTA:
            case PERMUTED:
            case DATED:
            case PERIOD_UNAVAILABLE:
                return code;
            default:
                return null;
        }
    }

    /** The code of a refusal the node wrote without one, from its words. */
    private static ErrorCode plainCode(String detail) {
        if (detail.startsWith("invalid tag")) {
            return ErrorCode.INVALID_TAG;
        }
        if (detail.startsWith("unknown tag")) {
            return ErrorCode.UNKNOWN_TAG;
        }
        if (detail.regionMatches(true, 0, "count must be", 0, 13)) {
            return ErrorCode.INVALID_COUNT;
        }
        return ErrorCode.INVALID_ARGUMENT;
    }

    private static String afterCode(String detail) {
        int space = detail.indexOf(' ');
        return space < 0 ? detail : detail.substring(space + 1);
    }

    private static String quotedTag(String detail) {
        int open = detail.indexOf('`');
        int close = open < 0 ? -1 : detail.indexOf('`', open + 1);
        return close < 0 ? "?" : detail.substring(open + 1, close);
    }

    /** The {@code N} of a node's "count must be between 1 and N" refusal, or -1. */
    static long largestCount(RefusedException refused) {
        Matcher m = COUNT_LIMIT.matcher(refused.reply());
        if (!m.find()) {
            return -1;
        }
        try {
            long n = Long.parseLong(m.group(1));
            return n > 0 ? n : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The nodes to try: the preferred one, then the others, those not avoided first; when every node is avoided, only the one whose back-off ends first. */
    private int[] order() {
        long now = System.nanoTime();
        int n = nodes.size();
        int first = Math.floorMod(preferred.get(), n);
        int[] ready = new int[n];
        int count = 0;
        int soonest = -1;
        long soonestUntil = 0;
        for (int k = 0; k < n; k++) {
            int i = (first + k) % n;
            long until = health[i].downUntil();
            if (until != 0 && until - now > 0) {
                if (soonest < 0 || until - soonestUntil < 0) {
                    soonest = i;
                    soonestUntil = until;
                }
            } else {
                ready[count++] = i;
            }
        }
        if (count == 0) {
            return new int[] {soonest};
        }
        return java.util.Arrays.copyOf(ready, count);
    }

    private void answered(int i) {
        health[i].reset();
    }

    private void failed(int i) {
        if (health[i].fail(backoffNanos, maxBackoffNanos)) {
            stats.nodeFailed(i);
        }
    }

    /** Closes every connection. */
    void close() {
        for (NodeConnection node : nodes) {
            node.close();
        }
    }

    static void sleepNanos(long nanos) {
        if (nanos <= 0) {
            return;
        }
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A node's health: avoided until a moment, and the next back-off. */
    private static final class Health {
        /** {@link System#nanoTime()} until which the node is avoided; 0 for not avoided. */
        private long downUntil;
        private long nextBackoff;

        synchronized long downUntil() {
            return downUntil;
        }

        synchronized void reset() {
            downUntil = 0;
            nextBackoff = 0;
        }

        /** Records a failure; true when it counted (requests in flight together fail once). */
        synchronized boolean fail(long first, long max) {
            long now = System.nanoTime();
            if (downUntil != 0 && downUntil - now > 0) {
                return false;
            }
            long backoff = Math.min(nextBackoff == 0 ? first : nextBackoff, max);
            downUntil = now + backoff;
            if (downUntil == 0) {
                downUntil = 1;
            }
            nextBackoff = Math.min(backoff * 2, max);
            return true;
        }
    }
}
