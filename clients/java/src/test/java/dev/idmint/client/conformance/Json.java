package dev.idmint.client.conformance;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON the conformance conductor speaks, read into maps, lists, strings, longs, doubles,
 * booleans and null, and written back. Test-only: the library has no use for JSON.
 */
public final class Json {
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    public static Object parse(String text) {
        Json json = new Json(text);
        Object value = json.value();
        json.space();
        if (json.at != text.length()) {
            throw json.error("text after the value");
        }
        return value;
    }

    private Object value() {
        space();
        if (at >= text.length()) {
            throw error("end of text");
        }
        char c = text.charAt(at);
        switch (c) {
            case '{': {
                at++;
                Map<String, Object> map = new LinkedHashMap<>();
                space();
                if (peek('}')) {
                    return map;
                }
                do {
                    space();
                    String key = string();
                    space();
                    expect(':');
                    map.put(key, value());
                    space();
                } while (peek(','));
                expect('}');
                return map;
            }
            case '[': {
                at++;
                List<Object> list = new ArrayList<>();
                space();
                if (peek(']')) {
                    return list;
                }
                do {
                    list.add(value());
                    space();
                } while (peek(','));
                expect(']');
                return list;
            }
            case '"':
                return string();
            default:
                if (text.startsWith("true", at)) {
                    at += 4;
                    return Boolean.TRUE;
                }
                if (text.startsWith("false", at)) {
                    at += 5;
                    return Boolean.FALSE;
                }
                if (text.startsWith("null", at)) {
                    at += 4;
                    return null;
                }
                return number();
        }
    }

    private Object number() {
        int start = at;
        while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
            at++;
        }
        String n = text.substring(start, at);
        if (n.isEmpty()) {
            throw error("a value");
        }
        if (n.matches("-?[0-9]+")) {
            return Long.parseLong(n);
        }
        return Double.parseDouble(n);
    }

    private String string() {
        expect('"');
        StringBuilder out = new StringBuilder();
        while (true) {
            if (at >= text.length()) {
                throw error("an unterminated string");
            }
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char e = text.charAt(at++);
            switch (e) {
                case 'n' -> out.append('\n');
                case 't' -> out.append('\t');
                case 'r' -> out.append('\r');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'u' -> {
                    out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    at += 4;
                }
                default -> out.append(e);
            }
        }
    }

    private void space() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private boolean peek(char c) {
        if (at < text.length() && text.charAt(at) == c) {
            at++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!peek(c)) {
            throw error("`" + c + "`");
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON: expected " + what + " at " + at);
    }

    /** {@code value} as JSON text. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            out.append('"');
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            out.append('"');
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.append(first ? "" : ",");
                first = false;
                write(String.valueOf(e.getKey()), out);
                out.append(':');
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                out.append(i == 0 ? "" : ",");
                write(list.get(i), out);
            }
            out.append(']');
        } else {
            out.append(value);
        }
    }
}
