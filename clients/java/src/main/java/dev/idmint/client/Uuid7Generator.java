package dev.idmint.client;

/**
 * Makes UUIDv7s (RFC 9562: version 7, variant {@code 0b10}) here, with no round trip: 48 bits of Unix milliseconds, a 24-bit counter,
 * an optional node field, then 50 (less the node field's) random bits from a CSPRNG.
 *
 * <pre>{@code
 * Uuid7Generator ids = Uuid7Generator.create();
 * Id128 id = ids.next();
 * String text = id.toString();   // 0192f3a1-7c2e-7a3b-8d4e-5f60718293a4
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
public final class Uuid7Generator extends Id128Source {
    private Uuid7Generator(Id128GeneratorBuilder<Uuid7Generator> b) {
        super(Id128.Kind.UUIDV7, b);
    }

    /** A generator without a node field. */
    public static Uuid7Generator create() {
        return builder().build();
    }

    /** The settings of a generator: a node field. */
    public static Id128GeneratorBuilder<Uuid7Generator> builder() {
        return new Id128GeneratorBuilder<>(Uuid7Generator::new);
    }
}
