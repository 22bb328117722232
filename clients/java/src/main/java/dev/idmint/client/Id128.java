package dev.idmint.client;

import java.util.UUID;

/**
 * A 128-bit ID: a UUIDv7 or a ULID made by {@link Uuid7Generator} or {@link UlidGenerator}
 * (or read by {@link #parse(String)}), as two big-endian halves and the layout it is read in.
 *
 * <p>Both layouts start with 48 bits of Unix milliseconds and a 24-bit counter, so the order
 * of {@link #compareTo} (the halves as unsigned numbers, the same as comparing
 * {@link #toBytes()}) is the order a generator made them in, and so is the order of any of its
 * texts. Two IDs are equal when their bits and their kind are: the same bits read as a ULID
 * and as a UUIDv7 are two readings ({@link #withKind} turns one into the other). The four
 * renderings:
 *
 * <ul>
 *   <li>{@link #toUuidString()}: {@code 0192f3a1-7c2e-7a3b-8d4e-5f60718293a4} (lowercase 8-4-4-4-12);
 *   <li>{@link #toUlidString()}: {@code 01JBSX2Z1E7ARYBJAF0C6Z8BN4} (26 characters of Crockford's base32, uppercase);
 *   <li>{@link #toHexString()}: 32 lowercase hex digits;
 *   <li>{@link #toBytes()}: the 16 bytes, big-endian.
 * </ul>
 *
 * @param hi   the first 8 bytes, big-endian (the milliseconds are its top 48 bits)
 * @param lo   the last 8 bytes, big-endian
 * @param kind the layout the bits are read in: it picks {@link #toString()}'s form and where
 *             {@link #decode()} finds the counter
 */
public record Id128(long hi, long lo, Kind kind) implements Comparable<Id128> {
    /** The two layouts of the 128 bits. */
    public enum Kind {
        /** RFC 9562 UUID version 7: version and variant bits between the counter's halves. */
        UUIDV7("uuidv7"),
        /** A ULID: the counter right after the milliseconds, no fixed bits. */
        ULID("ulid");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /** The kind's name as the nodes and the test vectors write it: {@code uuidv7}, {@code ulid}. */
        public String label() {
            return label;
        }
    }

    /** The random bits below the node field in a UUIDv7 (with no node field). */
    static final int UUID_RANDOM_BITS = 50;
    /** The random bits below the node field in a ULID (with no node field). */
    static final int ULID_RANDOM_BITS = 56;
    /** Version 7 in the top four bits of the third group, as {@code hi} holds it. */
    static final long VERSION_7 = 0x7000L;
    /** Variant 0b10 in the top two bits of {@code lo}. */
    static final long VARIANT_RFC = 0x8000_0000_0000_0000L;

    /** Refuses a null kind: every ID is read in one of the two layouts. */
    public Id128 {
        if (kind == null) {
            throw new NullPointerException("kind");
        }
    }

    /**
     * Reads an ID in any of its texts, told apart by length: 36 characters, the canonical UUID
     * (dashes at 8, 13, 18, 23; hex digits in either case); 32, hex; 26, a ULID (either case;
     * I, L, O and U are not in its alphabet, and a first character above 7 would not fit 128
     * bits). The UUID and hex texts read as {@link Kind#UUIDV7}, whatever their version bits
     * say ({@link #decode()} reports them; {@link #parseUuid7} refuses other versions), the ULID
     * text as {@link Kind#ULID}.
     *
     * @throws Id128FormatException the text is none of these, saying why
     */
    public static Id128 parse(String text) {
        return Id128Text.parse(text);
    }

    /**
     * {@link #parse(String)} read in the given layout: a ULID written in hex, say.
     *
     * @throws Id128FormatException the text is not an ID
     */
    public static Id128 parse(String text, Kind kind) {
        return parse(text).withKind(kind);
    }

    /**
     * {@link #parse(String)}, requiring a UUID of version 7 and the RFC variant ({@code 0b10}).
     *
     * @throws Id128FormatException the text is not an ID, or not a UUIDv7
     */
    public static Id128 parseUuid7(String text) {
        Id128 id = parse(text, Kind.UUIDV7);
        if (!id.isUuid7()) {
            throw new Id128FormatException(text, "not a UUIDv7: version " + id.version() + ", variant " + id.variantBits());
        }
        return id;
    }

    /**
     * The ID of these 16 big-endian bytes, read in {@code kind}'s layout.
     *
     * @throws Id128FormatException there are not exactly 16 bytes
     */
    public static Id128 fromBytes(byte[] bytes, Kind kind) {
        if (bytes == null || bytes.length != 16) {
            throw new Id128FormatException(null, "a 128-bit ID is 16 bytes, not "
                    + (bytes == null ? "null" : bytes.length));
        }
        long hi = 0;
        long lo = 0;
        for (int i = 0; i < 8; i++) {
            hi = hi << 8 | (bytes[i] & 0xFF);
            lo = lo << 8 | (bytes[i + 8] & 0xFF);
        }
        return new Id128(hi, lo, kind);
    }

    /** The ID of a {@link UUID}, in the UUIDv7 layout (whatever its version: see {@link #isUuid7()}). */
    public static Id128 fromUuid(UUID uuid) {
        return new Id128(uuid.getMostSignificantBits(), uuid.getLeastSignificantBits(), Kind.UUIDV7);
    }

    /** The same 128 bits read in another layout. */
    public Id128 withKind(Kind other) {
        return other == kind ? this : new Id128(hi, lo, other);
    }

    /** The same bits as a {@link UUID} (its {@code version()} is 7 and {@code variant()} 2 for a UUIDv7). */
    public UUID toUuid() {
        return new UUID(hi, lo);
    }

    /** The canonical UUID text: {@code 0192f3a1-7c2e-7a3b-8d4e-5f60718293a4}, lowercase. */
    public String toUuidString() {
        return Id128Text.uuid(hi, lo);
    }

    /** The 26-character ULID text, Crockford's base32, uppercase. */
    public String toUlidString() {
        return Id128Text.ulid(hi, lo);
    }

    /** The 32 lowercase hex digits. */
    public String toHexString() {
        return Id128Text.hex(hi, lo);
    }

    /** The 16 bytes, big-endian (a new array each call). */
    public byte[] toBytes() {
        byte[] out = new byte[16];
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (hi >>> (56 - 8 * i));
            out[i + 8] = (byte) (lo >>> (56 - 8 * i));
        }
        return out;
    }

    /** The text of its kind: the canonical UUID for {@link Kind#UUIDV7}, the ULID text for {@link Kind#ULID}. */
    @Override
    public String toString() {
        return kind == Kind.UUIDV7 ? toUuidString() : toUlidString();
    }

    /** The Unix milliseconds of its top 48 bits. */
    public long millis() {
        return hi >>> 16;
    }

    /** Whether the bits carry UUID version 7 and the RFC variant {@code 0b10}. */
    public boolean isUuid7() {
        return version() == 7 && variantBits() == 2;
    }

    /** Its fields, read in its kind's layout without a node field: see {@link #decode(int)}. */
    public DecodedId128 decode() {
        return DecodedId128.of(this, -1);
    }

    /**
     * Its fields, read in its kind's layout with a node field of {@code nodeBits} bits (the
     * generator's setting; 0 for none).
     *
     * @throws IllegalArgumentException {@code nodeBits} is not in {@code 0..24}
     */
    public DecodedId128 decode(int nodeBits) {
        Id128Layout.checkNodeBits(nodeBits);
        return DecodedId128.of(this, nodeBits);
    }

    /** Unsigned order of the 128 bits (generation order), then the kind. */
    @Override
    public int compareTo(Id128 other) {
        int c = Long.compareUnsigned(hi, other.hi);
        if (c == 0) {
            c = Long.compareUnsigned(lo, other.lo);
        }
        return c != 0 ? c : kind.compareTo(other.kind);
    }

    /** The UUID version nibble (bits 48..52). */
    int version() {
        return (int) (hi >>> 12) & 0xF;
    }

    /** The top two bits of {@code lo}: the UUID variant of an RFC 9562 UUID is {@code 0b10}. */
    int variantBits() {
        return (int) (lo >>> 62);
    }
}
