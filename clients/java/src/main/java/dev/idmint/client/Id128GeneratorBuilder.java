package dev.idmint.client;

import java.util.function.Function;

/**
 * The settings of a {@link Uuid7Generator} or {@link UlidGenerator}: a node field. Made by
 * their {@code builder()}.
 *
 * @param <G> the generator {@link #build} makes
 */
public final class Id128GeneratorBuilder<G> {
    int nodeBits;
    long node;
    MillisClock clock = MillisClock.SYSTEM;
    RandomBits random = SecureBits.INSTANCE;
    long maxLeadMs = 1000;
    private final Function<Id128GeneratorBuilder<G>, G> make;

    Id128GeneratorBuilder(Function<Id128GeneratorBuilder<G>, G> make) {
        this.make = make;
    }

    /** The node field's width, {@code 0..24} (default 0: none). */
    public Id128GeneratorBuilder<G> nodeBits(int nodeBits) {
        this.nodeBits = nodeBits;
        return this;
    }

    /** The node field's value, below {@code 2^nodeBits} (default 0). */
    public Id128GeneratorBuilder<G> node(long node) {
        this.node = node;
        return this;
    }

    /** Tests: a clock moved by hand. */
    Id128GeneratorBuilder<G> clock(MillisClock clock) {
        this.clock = clock;
        return this;
    }

    /** Tests: fixed random bits. */
    Id128GeneratorBuilder<G> random(RandomBits random) {
        this.random = random;
        return this;
    }

    /** Tests: how far ahead of the clock borrowing may go before it waits. */
    Id128GeneratorBuilder<G> maxLeadMs(long maxLeadMs) {
        this.maxLeadMs = maxLeadMs;
        return this;
    }

    /**
     * The generator.
     *
     * @throws ConfigException {@code nodeBits} is not in {@code 0..24} (field {@code nodeBits}),
     *     or {@code node} does not fit it (field {@code node})
     */
    public G build() {
        return make.apply(this);
    }
}
