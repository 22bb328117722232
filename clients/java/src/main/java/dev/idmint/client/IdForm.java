package dev.idmint.client;

/**
 * IDs as text: decimal, base62, base36 and Crockford's base32 (the ULID alphabet), with an
 * optional prefix and a fixed width, written and read exactly as the nodes do for
 * {@code format=} and {@code FORMAT}: {@code IdForm.of(Radix.BASE62).withPrefix("ord_").encode(id)}.
 *
 * <p>Every form pads to the width that holds any 63-bit ID ({@link Radix#fullWidth()}) by
 * default, so IDs sort as text as they sort as numbers; width 0 writes the shortest text
 * instead. Reading is as forgiving as the alphabet allows and no more: base36 and base32 ignore
 * case, base32 also reads {@code I} and {@code L} as 1, {@code O} as 0 and skips hyphens
 * (Crockford's rules); base62 is case-sensitive. Anything else (an empty text, a wrong prefix, a
 * character outside the alphabet, a value above the largest ID) is refused with an
 * {@link IllegalArgumentException} that says which. Immutable and thread-safe.
 */
public final class IdForm {
    /** Longest prefix accepted, in characters. */
    public static final int MAX_PREFIX = 16;
    /** The widest fixed width accepted. */
    public static final int MAX_WIDTH = 32;

    /** Plain decimal, shortest, no prefix: as IDs are written everywhere else. */
    public static final IdForm DECIMAL = new IdForm(Radix.DECIMAL, "", 0);

    private final Radix radix;
    private final String prefix;
    private final int width;

    private IdForm(Radix radix, String prefix, int width) {
        this.radix = radix;
        this.prefix = prefix;
        this.width = width;
    }

    /** {@code radix} at its full width (sortable), no prefix. */
    public static IdForm of(Radix radix) {
        return new IdForm(radix, "", radix.fullWidth());
    }

    /**
     * A form from the names requests use: {@code format} (a radix name), {@code prefix} (null:
     * none) and {@code width} (null: the radix's full width).
     */
    public static IdForm of(String format, String prefix, Integer width) {
        IdForm form = of(Radix.parse(format)).withPrefix(prefix == null ? "" : prefix);
        return width == null ? form : form.withWidth(width);
    }

    /**
     * The same form with a prefix: up to {@link #MAX_PREFIX} characters of
     * {@code A-Z a-z 0-9 _ -}, written before the digits and required when reading.
     */
    public IdForm withPrefix(String prefix) {
        boolean ok = prefix.length() <= MAX_PREFIX && prefix.chars().allMatch(c ->
                (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
        if (!ok) {
            throw new IllegalArgumentException("a prefix is up to " + MAX_PREFIX + " characters of A-Z a-z 0-9 _ -");
        }
        return new IdForm(radix, prefix, width);
    }

    /** The same form at another width: 0 writes the shortest text (not sortable as text). */
    public IdForm withWidth(int width) {
        if (width < 0 || width > MAX_WIDTH) {
            throw new IllegalArgumentException(width + " is not a width: 0 to " + MAX_WIDTH);
        }
        return new IdForm(radix, prefix, width);
    }

    /** The digits. */
    public Radix radix() {
        return radix;
    }

    /** The prefix (may be empty). */
    public String prefix() {
        return prefix;
    }

    /** The width in digits (0 for the shortest). */
    public int width() {
        return width;
    }

    /**
     * {@code id} as text in this form.
     *
     * @throws IllegalArgumentException for a negative {@code id} (IDs are 1 to 2^63 - 1)
     */
    public String encode(long id) {
        if (id < 0) {
            throw new IllegalArgumentException(id + " is not an ID");
        }
        char[] buffer = new char[64];
        int at = buffer.length;
        int base = radix.base();
        long rest = id;
        do {
            buffer[--at] = radix.digits.charAt((int) (rest % base));
            rest /= base;
        } while (rest != 0);
        int written = buffer.length - at;
        StringBuilder out = new StringBuilder(prefix.length() + Math.max(width, written));
        out.append(prefix);
        for (int i = written; i < width; i++) {
            out.append('0');
        }
        return out.append(buffer, at, written).toString();
    }

    /**
     * The ID {@code text} holds in this form.
     *
     * @throws IllegalArgumentException saying why it is not one
     */
    public long decode(String text) {
        if (text.length() > prefix.length() + MAX_WIDTH + 16) {
            throw new IllegalArgumentException("`" + Resp.shorten(text) + "` is too long to be an ID");
        }
        if (!text.startsWith(prefix)) {
            throw new IllegalArgumentException("`" + Resp.shorten(text) + "` does not start with the prefix `" + prefix + "`");
        }
        long base = radix.base();
        long value = 0;
        int digits = 0;
        for (int i = prefix.length(); i < text.length(); i++) {
            char c = text.charAt(i);
            if (radix == Radix.BASE32 && c == '-') {
                continue;
            }
            int v = c < 128 ? radix.valueOf(c) : -1;
            if (v < 0) {
                throw new IllegalArgumentException("`" + Resp.shorten(text) + "`: character " + (i + 1)
                        + " ('" + c + "') is not a " + radix + " digit");
            }
            if (value > (Long.MAX_VALUE - v) / base) {
                throw new IllegalArgumentException("`" + Resp.shorten(text) + "` is above the largest ID, " + Long.MAX_VALUE);
            }
            value = value * base + v;
            digits++;
        }
        if (digits == 0) {
            throw new IllegalArgumentException("`" + Resp.shorten(text) + "` has no " + radix + " digits");
        }
        return value;
    }

    /** {@code base62}, {@code base62 prefix=ord_ width=12}: the parts that differ from the radix's default. */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder(radix.wireName());
        if (!prefix.isEmpty()) {
            out.append(" prefix=").append(prefix);
        }
        if (width != radix.fullWidth()) {
            out.append(" width=").append(width);
        }
        return out.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IdForm f && f.radix == radix && f.prefix.equals(prefix) && f.width == width;
    }

    @Override
    public int hashCode() {
        return (radix.hashCode() * 31 + prefix.hashCode()) * 31 + width;
    }
}
