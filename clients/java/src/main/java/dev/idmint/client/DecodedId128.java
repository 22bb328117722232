package dev.idmint.client;

import java.time.Instant;

/**
 * The fields of a 128-bit ID ({@link Id128#decode(int)}).
 *
 * @param kind     the layout it was read in
 * @param millis   the Unix milliseconds of its top 48 bits
 * @param version  the UUID version nibble (7 for a UUIDv7), or -1 for a ULID
 * @param variant  the UUID variant's top two bits ({@code 0b10}, 2, for RFC 9562), or -1 for a ULID
 * @param counter  the 24-bit counter
 * @param nodeBits the node field's width it was read with, or -1 when not given
 * @param node     the node field, or -1 when {@code nodeBits} was not given (0 when it is 0)
 */
public record DecodedId128(Id128.Kind kind, long millis, int version, int variant, int counter, int nodeBits, long node) {
    static DecodedId128 of(Id128 id, int nodeBits) {
        long hi = id.hi();
        long lo = id.lo();
        boolean uuid = id.kind() == Id128.Kind.UUIDV7;
        int counter = uuid
                ? (int) ((hi & 0xFFF) << 12 | (lo >>> 50) & 0xFFF)
                : (int) ((hi & 0xFFFF) << 8 | lo >>> 56);
        long node = -1;
        if (nodeBits >= 0) {
            node = (lo >>> Id128Layout.randomBits(id.kind(), nodeBits)) & ((1L << nodeBits) - 1);
        }
        return new DecodedId128(id.kind(), id.millis(), uuid ? id.version() : -1,
                uuid ? id.variantBits() : -1, counter, nodeBits, node);
    }

    /** {@link #millis()} as an instant (its text is RFC 3339, in UTC). */
    public Instant time() {
        return Instant.ofEpochMilli(millis);
    }
}
