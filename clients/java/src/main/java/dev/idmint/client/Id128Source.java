package dev.idmint.client;

/**
 * What {@link Uuid7Generator} and {@link UlidGenerator} share: the lock-free word of
 * {@link Id128Engine}, the kind's layout and the random source. Each generator only names its
 * kind.
 */
abstract class Id128Source {
    private final Id128Engine engine;
    private final Id128Layout layout;
    private final RandomBits random;

    Id128Source(Id128.Kind kind, Id128GeneratorBuilder<?> b) {
        this.layout = new Id128Layout(kind, b.nodeBits, b.node);
        this.random = b.random;
        this.engine = new Id128Engine(b.clock, b.random, b.maxLeadMs);
    }

    /** The next ID: above every ID this generator issued before, on any thread. */
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
        return getClass().getSimpleName() + "[nodeBits=" + layout.nodeBits + "]";
    }
}
