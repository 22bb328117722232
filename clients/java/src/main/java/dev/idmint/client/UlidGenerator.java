package dev.idmint.client;

/**
 * Makes ULIDs (ulid/spec: 26 characters of Crockford's base32) here, with no round trip: 48 bits of Unix milliseconds, a 24-bit counter,
 * an optional node field, then 56 (less the node field's) random bits from a CSPRNG.
 *
 * <pre>{@code
 * UlidGenerator ids = UlidGenerator.create();
 * Id128 id = ids.next();
 * String text = id.toString();   // 01JBSX2Z1E7ARYBJAF0C6Z8BN4
 * }</pre>
 *
 * <p>Thread-safe and lock-free: the IDs of one generator strictly increase in the order they
 * are issued, across all its threads, as numbers, bytes and every text form alike. The first ID
 * of a millisecond starts the counter at a random value below 2^23; each next one in that
 * millisecond adds one; past 2^24 - 1 an ID borrows the next millisecond (counter 0), at most
 * a second ahead of the clock before it waits for it. A clock that steps back changes nothing
 * visible: IDs count on from the last one until the clock catches up.
 *
 * <p>The node field ({@link Id128GeneratorBuilder#nodeBits}, {@link Id128GeneratorBuilder#node}) sets {@code nodeBits}
 * bits below the counter to a fixed value (a leased worker ID, say): generators with different
 * node values can never make the same ID, even if their random sources failed; it costs that
 * many random bits per ID.
 */
public final class UlidGenerator extends Id128Source {
    private UlidGenerator(Id128GeneratorBuilder<UlidGenerator> b) {
        super(Id128.Kind.ULID, b);
    }

    /** A generator without a node field. */
    public static UlidGenerator create() {
        return builder().build();
    }

    /** The settings of a generator: a node field. */
    public static Id128GeneratorBuilder<UlidGenerator> builder() {
        return new Id128GeneratorBuilder<>(UlidGenerator::new);
    }
}
