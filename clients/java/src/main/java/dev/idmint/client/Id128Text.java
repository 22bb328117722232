package dev.idmint.client;

import java.util.Arrays;

/** The texts of a 128-bit ID, written and read: canonical UUID, hex, and ULID (Crockford's base32). */
final class Id128Text {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final char[] CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ".toCharArray();
    /** Hex digit values by character (either case), -1 for the rest. */
    private static final byte[] HEX_VALUE = new byte[128];
    /** Crockford digit values by character (either case; no I, L, O, U), -1 for the rest. */
    private static final byte[] CROCKFORD_VALUE = new byte[128];
    private static final String FORMS =
            "expected 36 characters (uuid, 8-4-4-4-12), 32 (hex) or 26 (ulid)";

    static {
        Arrays.fill(HEX_VALUE, (byte) -1);
        Arrays.fill(CROCKFORD_VALUE, (byte) -1);
        for (int i = 0; i < 16; i++) {
            HEX_VALUE[HEX[i]] = (byte) i;
            HEX_VALUE[Character.toUpperCase(HEX[i])] = (byte) i;
        }
        for (int i = 0; i < 32; i++) {
            CROCKFORD_VALUE[CROCKFORD[i]] = (byte) i;
            CROCKFORD_VALUE[Character.toLowerCase(CROCKFORD[i])] = (byte) i;
        }
    }

    private Id128Text() {}

    static String uuid(long hi, long lo) {
        char[] out = new char[36];
        int at = 0;
        for (int i = 0; i < 32; i++) {
            if (i == 8 || i == 12 || i == 16 || i == 20) {
                out[at++] = '-';
            }
            out[at++] = HEX[nibble(hi, lo, i)];
        }
        return new String(out);
    }

    static String hex(long hi, long lo) {
        char[] out = new char[32];
        for (int i = 0; i < 32; i++) {
            out[i] = HEX[nibble(hi, lo, i)];
        }
        return new String(out);
    }

    /** 26 digits of 5 bits, the first holding only the top 3 of the 128 (130 bits written). */
    static String ulid(long hi, long lo) {
        char[] out = new char[26];
        for (int i = 0; i < 26; i++) {
            int shift = 5 * (25 - i); // of the digit's lowest bit, counted from the ID's lowest
            long digit;
            if (shift >= 64) {
                digit = hi >>> (shift - 64);
            } else if (shift + 5 > 64) {
                digit = lo >>> shift | hi << (64 - shift); // straddles the halves
            } else {
                digit = lo >>> shift;
            }
            out[i] = CROCKFORD[(int) digit & 31];
        }
        return new String(out);
    }

    /** Hex digit {@code i} (0 = most significant) of the 128 bits. */
    private static int nibble(long hi, long lo, int i) {
        return (int) ((i < 16 ? hi >>> (60 - 4 * i) : lo >>> (60 - 4 * (i - 16))) & 0xF);
    }

    static Id128 parse(String text) {
        if (text == null) {
            throw new Id128FormatException(null, "null; " + FORMS);
        }
        switch (text.length()) {
            case 36:
                return hexDigits(text, true);
            case 32:
                return hexDigits(text, false);
            case 26:
                return ulidDigits(text);
            default:
                throw new Id128FormatException(text, text.length() + " characters; " + FORMS);
        }
    }

    /** 32 hex digits, with dashes at 8, 13, 18 and 23 when {@code dashed}. */
    private static Id128 hexDigits(String text, boolean dashed) {
        long hi = 0;
        long lo = 0;
        int digits = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
                if (c != '-') {
                    throw new Id128FormatException(text, "character " + (i + 1) + " should be '-' (uuid form 8-4-4-4-12)");
                }
                continue;
            }
            int v = c < 128 ? HEX_VALUE[c] : -1;
            if (v < 0) {
                throw new Id128FormatException(text, "character " + (i + 1) + " is not a hex digit");
            }
            if (digits++ < 16) {
                hi = hi << 4 | v;
            } else {
                lo = lo << 4 | v;
            }
        }
        return new Id128(hi, lo, Id128.Kind.UUIDV7);
    }

    private static Id128 ulidDigits(String text) {
        long hi = 0;
        long lo = 0;
        for (int i = 0; i < 26; i++) {
            char c = text.charAt(i);
            int v = c < 128 ? CROCKFORD_VALUE[c] : -1;
            if (v < 0) {
                throw new Id128FormatException(text, "character " + (i + 1)
                        + " is not in the ULID alphabet 0-9 A-Z without I, L, O, U");
            }
            if (i == 0 && v > 7) {
                throw new Id128FormatException(text, "above the largest ULID 7ZZZZZZZZZZZZZZZZZZZZZZZZZ (128 bits)");
            }
            hi = hi << 5 | lo >>> 59;
            lo = lo << 5 | v;
        }
        return new Id128(hi, lo, Id128.Kind.ULID);
    }
}
