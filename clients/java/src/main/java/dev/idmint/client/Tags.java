package dev.idmint.client;

import java.nio.charset.StandardCharsets;

/**
 * Tag names, checked as the nodes check them, so a bad name is refused at once without a
 * round trip: 1 to 128 bytes of UTF-8, no control characters nor the Unicode line and paragraph
 * separators, no space at either end.
 */
final class Tags {
    static final int MAX_LEN = 128;

    private Tags() {}

    static void check(String tag) {
        boolean ok = !tag.isEmpty() && !tag.startsWith(" ") && !tag.endsWith(" ");
        for (int i = 0; ok && i < tag.length(); ) {
            int c = tag.codePointAt(i);
            if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029
                    || (Character.isSurrogate(tag.charAt(i)) && Character.charCount(c) == 1)) {
                ok = false;
            }
            i += Character.charCount(c);
        }
        if (ok && tag.getBytes(StandardCharsets.UTF_8).length > MAX_LEN) {
            ok = false;
        }
        if (!ok) {
            String shown = tag.length() > MAX_LEN ? tag.substring(0, MAX_LEN) : tag;
            throw new RefusedException("invalid tag `" + escape(shown) + "`: 1 to " + MAX_LEN
                    + " bytes of UTF-8, no control characters, no space at either end",
                    ErrorCode.INVALID_TAG, "");
        }
    }

    private static String escape(String text) {
        StringBuilder out = new StringBuilder();
        text.codePoints().forEach(c -> {
            if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029 || Character.isSurrogate((char) c)) {
                out.append(String.format("\\u{%x}", c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.toString();
    }
}
