package dev.idmint.client;

/**
 * Where the fields sit in each kind's 128 bits (docs/ARCHITECTURE.md, "128-bit IDs"): 48 bits
 * of milliseconds, a 24-bit counter (split by the version and variant bits in a UUIDv7), an
 * optional node field of {@code nodeBits} bits, then random bits. One instance per generator,
 * with the node field's bits placed once.
 */
final class Id128Layout {
    /** The largest node field. */
    static final int MAX_NODE_BITS = 24;

    final Id128.Kind kind;
    final int nodeBits;
    /** The node value already shifted to its place in {@code lo}. */
    private final long nodeInPlace;
    /** The random bits kept from each 64-bit draw: the low {@code 50 - nodeBits} or {@code 56 - nodeBits}. */
    private final long randomMask;

    Id128Layout(Id128.Kind kind, int nodeBits, long node) {
        checkNodeBits(nodeBits);
        if (node < 0 || node >= 1L << nodeBits) {
            throw new ConfigException("node", node + " does not fit nodeBits = " + nodeBits
                    + " (0.." + ((1L << nodeBits) - 1) + ")");
        }
        this.kind = kind;
        this.nodeBits = nodeBits;
        int randomBits = randomBits(kind, nodeBits);
        this.nodeInPlace = node << randomBits;
        this.randomMask = (1L << randomBits) - 1;
    }

    static int randomBits(Id128.Kind kind, int nodeBits) {
        return (kind == Id128.Kind.UUIDV7 ? Id128.UUID_RANDOM_BITS : Id128.ULID_RANDOM_BITS) - nodeBits;
    }

    static void checkNodeBits(int nodeBits) {
        if (nodeBits < 0 || nodeBits > MAX_NODE_BITS) {
            throw new ConfigException("nodeBits", nodeBits + " is not in 0.." + MAX_NODE_BITS);
        }
    }

    /** The ID of these fields; {@code random} is cut to the random bits this layout keeps. */
    Id128 compose(long ms, long counter, long random) {
        long r = random & randomMask;
        if (kind == Id128.Kind.UUIDV7) {
            long hi = ms << 16 | Id128.VERSION_7 | counter >>> 12;
            long lo = Id128.VARIANT_RFC | (counter & 0xFFF) << 50 | nodeInPlace | r;
            return new Id128(hi, lo, kind);
        }
        return new Id128(ms << 16 | counter >>> 8, (counter & 0xFF) << 56 | nodeInPlace | r, kind);
    }

    /**
     * The ID of these fields, each checked to fit: how the tests build the cross-language
     * vectors' cases from their fields.
     */
    static Id128 compose(Id128.Kind kind, long ms, long counter, int nodeBits, long node, long random) {
        if (ms < 0 || ms >= 1L << 48) {
            throw new IllegalArgumentException("ms " + ms + " does not fit 48 bits");
        }
        if (counter < 0 || counter >= 1L << 24) {
            throw new IllegalArgumentException("counter " + counter + " does not fit 24 bits");
        }
        Id128Layout layout = new Id128Layout(kind, nodeBits, node);
        if (random < 0 || (random & ~layout.randomMask) != 0) {
            throw new IllegalArgumentException("random " + Long.toHexString(random) + " does not fit "
                    + randomBits(kind, nodeBits) + " bits");
        }
        return layout.compose(ms, counter, random);
    }
}
