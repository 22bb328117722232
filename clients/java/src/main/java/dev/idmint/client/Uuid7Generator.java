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
 * <p>The node field ({@link Builder#nodeBits}, {@link Builder#node}) sets {@code nodeBits}
 * bits below the counter to a fixed value (a leased worker ID, say): generators with different
 * node values can never make the same ID, even if their random sources failed; it costs that
 * many random bits per ID.
 */
public final class Uuid7Generator {
    private final Id128Engine engine;
    private final Id128Layout layout;
    private final RandomBits random;

    private Uuid7Generator(Builder b) {
        this.layout = new Id128Layout(Id128.Kind.UUIDV7, b.nodeBits, b.node);
        this.random = b.random;
        this.engine = new Id128Engine(b.clock, b.random, b.maxLeadMs);
    }

    /** A generator without a node field. */
    public static Uuid7Generator create() {
        return builder().build();
    }

    /** The settings of a generator: a node field. */
    public static Builder builder() {
        return new Builder();
    }

    /** The next ID: above every ID this generator issued before. */
    public Id128 next() {
        long word = engine.next();
        return layout.compose(engine.millis(word), Id128Engine.counter(word), random.nextLong());
    }

    /** The node field's width (0: none). */
    public int nodeBits() {
        return layout.nodeBits;
    }

    Id128Engine engine() {
        return engine;
    }

    @Override
    public String toString() {
        return "Uuid7Generator[nodeBits=" + layout.nodeBits + "]";
    }

    /** A {@link Uuid7Generator}'s settings. */
    public static final class Builder {
        private int nodeBits;
        private long node;
        private MillisClock clock = MillisClock.SYSTEM;
        private RandomBits random = SecureBits.INSTANCE;
        private long maxLeadMs = 1000;

        private Builder() {}

        /** The node field's width, {@code 0..24} (default 0: none). */
        public Builder nodeBits(int nodeBits) {
            this.nodeBits = nodeBits;
            return this;
        }

        /** The node field's value, below {@code 2^nodeBits} (default 0). */
        public Builder node(long node) {
            this.node = node;
            return this;
        }

        /** Tests: a clock moved by hand. */
        Builder clock(MillisClock clock) {
            this.clock = clock;
            return this;
        }

        /** Tests: fixed random bits. */
        Builder random(RandomBits random) {
            this.random = random;
            return this;
        }

        /** Tests: how far ahead of the clock borrowing may go before it waits. */
        Builder maxLeadMs(long maxLeadMs) {
            this.maxLeadMs = maxLeadMs;
            return this;
        }

        /**
         * The generator.
         *
         * @throws ConfigException {@code nodeBits} is not in {@code 0..24} (field {@code nodeBits}),
         *     or {@code node} does not fit it (field {@code node})
         */
        public Uuid7Generator build() {
            return new Uuid7Generator(this);
        }
    }
}
