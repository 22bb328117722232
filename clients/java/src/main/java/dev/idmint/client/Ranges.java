package dev.idmint.client;

import java.math.BigInteger;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * Ranges of segment IDs from the nodes, and their give-back.
 *
 * <p>Each range is {@code IDMINT.RANGE tag n ABOVE last}, {@code last} the end of the previous
 * range this client got for the tag. Nodes each hold their own part of a tag's sequence, so a
 * node the client fails over to may be behind the one it left; {@code ABOVE} makes it serve IDs
 * above what the client already holds, so the client's IDs keep increasing. A reply that is not
 * a run of at most {@code n} IDs strictly above {@code last}, within the positive range of a
 * Java {@code long}, breaks the contract: it is refused, never handed out.
 */
final class Ranges {
    /** A range a node gave: {@code first..last} (inclusive), from node {@code node} over connection {@code generation}. */
    record Range(long first, long last, int node, int generation) {}

    private final Nodes nodes;
    private final Duration maxWait;
    /** The largest count the nodes grant (their {@code --max-count}), once one refused more. */
    private final AtomicLong largest = new AtomicLong(Long.MAX_VALUE);

    Ranges(Nodes nodes, Duration maxWait) {
        this.nodes = nodes;
        this.maxWait = maxWait;
    }

    /** The nodes' largest count as learned so far ({@link Long#MAX_VALUE} while none refused). */
    long largest() {
        return largest.get();
    }

    /** Lowers the learned largest count to {@code n}. */
    void learnLargest(long n) {
        largest.accumulateAndGet(n, Math::min);
    }

    /**
     * A range of at most {@code step} IDs of {@code tag} above {@code above} (0: the tag's first).
     *
     * @throws UnavailableException when no node served within {@code maxWait}
     * @throws RefusedException when the nodes refused, or a reply broke the contract
     */
    Range take(String tag, long step, long above, BooleanSupplier closed) {
        long n = Math.min(step, largest.get());
        while (true) {
            List<Object> cmd = above > 0
                    ? List.of("IDMINT.RANGE", tag, n, "ABOVE", above)
                    : List.of("IDMINT.RANGE", tag, n);
            Nodes.Answer answer;
            try {
                answer = nodes.call(cmd, maxWait, closed, Ranges::pair);
            } catch (RefusedException refused) {
                // The nodes' --max-count is below the client's maxStep: ask for less, from now on,
                // rather than fail every refill once the rate grows.
                long limit = Nodes.largestCount(refused);
                if (limit > 0 && limit < n) {
                    learnLargest(limit);
                    n = limit;
                    continue;
                }
                throw refused;
            }
            Object[] pair = (Object[]) answer.value();
            long first = idOrZero(pair[0]);
            long last = idOrZero(pair[1]);
            if (first == 0 || last == 0 || first > last || first <= above || last - first >= n) {
                // A node that breaks the contract: never hand its IDs out.
                String address = nodes.address(answer.node());
                throw new RefusedException(address + " answered IDMINT.RANGE " + tag + " " + n + " with "
                        + pair[0] + ".." + pair[1] + ", not a run of at most " + n + " above " + above
                        + " within 1.." + Long.MAX_VALUE, ErrorCode.STORE_INVALID, "");
            }
            nodes.stats.range(last - first + 1);
            return new Range(first, last, answer.node(), answer.generation());
        }
    }

    /**
     * Gives {@code first..last} of {@code tag} back to node {@code node} over connection
     * {@code generation}, the one that handed it out. True when the node took it back.
     */
    boolean giveBack(String tag, long first, long last, int node, int generation) {
        Object reply = nodes.callOn(node, generation, List.of("IDMINT.GIVEBACK", tag, first, last));
        boolean taken = reply instanceof Long n && n == 1L;
        if (taken) {
            nodes.stats.givenBack(last - first + 1);
        }
        return taken;
    }

    /** The shape of {@code IDMINT.RANGE}'s reply: two integers. */
    private static Object pair(Object reply) throws Resp.ProtocolException {
        if (reply instanceof List<?> list && list.size() == 2 && isInteger(list.get(0)) && isInteger(list.get(1))) {
            return new Object[] {list.get(0), list.get(1)};
        }
        throw new Resp.ProtocolException("expected [first, last]");
    }

    static boolean isInteger(Object value) {
        return value instanceof Long || value instanceof BigInteger;
    }

    /** The ID an integer reply holds: 0 for anything that is not a positive value of a Java {@code long} (nodes hand out IDs below 2^63). */
    static long idOrZero(Object value) {
        return value instanceof Long n && n > 0 ? n : 0;
    }
}
