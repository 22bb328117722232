package dev.idmint.client;

import java.util.Locale;

/**
 * The digits of an {@link IdForm}. Each alphabet lists its digits in ASCII order, so IDs written
 * at one fixed width sort as text exactly as they sort as numbers.
 */
public enum Radix {
    /** {@code 0-9}. */
    DECIMAL("decimal", "0123456789"),
    /** {@code 0-9A-Za-z} (case-sensitive). */
    BASE62("base62", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
    /** {@code 0-9a-z} (written lowercase, read in either case). */
    BASE36("base36", "0123456789abcdefghijklmnopqrstuvwxyz"),
    /** Crockford's {@code 0-9A-HJKMNP-TV-Z} (no I, L, O, U), the ULID alphabet. */
    BASE32("base32", "0123456789ABCDEFGHJKMNPQRSTVWXYZ");

    private final String wireName;
    final String digits;

    Radix(String wireName, String digits) {
        this.wireName = wireName;
        this.digits = digits;
    }

    /** The name used in settings and requests ({@code base62}). */
    public String wireName() {
        return wireName;
    }

    int base() {
        return digits.length();
    }

    /** Digits that hold every 63-bit ID: 19, 11, 13 and 13. */
    public int fullWidth() {
        int width = 1;
        long max = Long.MAX_VALUE;
        while (max >= base()) {
            max /= base();
            width++;
        }
        return width;
    }

    /** The value of one character by the radix's reading rules, or -1 outside the alphabet. */
    int valueOf(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        switch (this) {
            case BASE62:
                if (c >= 'A' && c <= 'Z') {
                    return c - 'A' + 10;
                }
                if (c >= 'a' && c <= 'z') {
                    return c - 'a' + 36;
                }
                return -1;
            case BASE36:
                if (c >= 'a' && c <= 'z') {
                    return c - 'a' + 10;
                }
                if (c >= 'A' && c <= 'Z') {
                    return c - 'A' + 10;
                }
                return -1;
            case BASE32: {
                char u = c >= 'a' && c <= 'z' ? (char) (c - 'a' + 'A') : c;
                if (u == 'I' || u == 'L') {
                    return 1;
                }
                if (u == 'O') {
                    return 0;
                }
                return digits.indexOf(u);
            }
            default:
                return -1;
        }
    }

    /**
     * The radix a name gives: {@code decimal} ({@code dec}, {@code 10}), {@code base62}
     * ({@code 62}), {@code base36} ({@code 36}), {@code base32} ({@code 32}, {@code crockford},
     * {@code ulid}), in any case.
     *
     * @throws IllegalArgumentException for any other name
     */
    public static Radix parse(String name) {
        switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "decimal":
            case "dec":
            case "10":
                return DECIMAL;
            case "base62":
            case "62":
                return BASE62;
            case "base36":
            case "36":
                return BASE36;
            case "base32":
            case "32":
            case "crockford":
            case "ulid":
                return BASE32;
            default:
                throw new IllegalArgumentException("`" + name + "` is not a form: decimal, base62, base36 or base32");
        }
    }

    @Override
    public String toString() {
        return wireName;
    }
}
