package dev.idmint.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * RESP2, the Redis protocol's version 2, as far as a client of idmint needs it: commands go out
 * as arrays of bulk strings; replies come back as simple strings, errors, integers, bulk
 * strings and arrays.
 *
 * <p>Replies are read into plain values: a simple string is a {@link String}, an error a
 * {@link Error}, an integer a {@link Long} (or, for the unsigned values above
 * {@link Long#MAX_VALUE} that IDs may be in the protocol, a {@link BigInteger}), a bulk string a
 * {@code byte[]}, an array a {@code List<Object>}, a null bulk or array {@code null}. A reply
 * that does not parse is a {@link ProtocolException}: the connection is out of step and must be
 * dropped. Lengths are bounded, so a broken node cannot make the client allocate without limit.
 */
final class Resp {
    /** The longest bulk string read (IDs and short texts come back; 1 MiB is far above). */
    static final int MAX_BULK = 1 << 20;
    /** The most elements of one array (snowflake batches of up to the nodes' max count). */
    static final int MAX_ARRAY = 1 << 20;
    /** How deep arrays may nest. */
    static final int MAX_DEPTH = 8;
    /** The longest line (a simple string, an error, a length). */
    static final int MAX_LINE = 64 * 1024;
    /** The most bytes of one reply to a command other than a snowflake batch (far above any). */
    static final long MAX_REPLY = 256 * 1024;
    /** The most bytes one snowflake of a batch takes on the wire ({@code :} 20 digits CRLF). */
    static final long SNOWFLAKE_BYTES = 23;

    private static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private Resp() {}

    /** An error reply: its first word (the code: {@code ERR}, {@code WRONGPASS}, {@code TRYAGAIN}) and the rest. */
    record Error(String code, String detail) {
        static Error of(String line) {
            int space = line.indexOf(' ');
            return space < 0 ? new Error(line, "") : new Error(line.substring(0, space), line.substring(space + 1));
        }

        /** The reply as the node wrote it. */
        String text() {
            return detail.isEmpty() ? code : code + " " + detail;
        }
    }

    /** A reply that does not parse as RESP2. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }

    /** The command {@code args} as RESP2 bytes: each argument a bulk string (numbers in decimal). */
    static byte[] encode(List<?> args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        header(out, '*', args.size());
        for (Object arg : args) {
            byte[] bytes = arg instanceof byte[] b ? b : String.valueOf(arg).getBytes(StandardCharsets.UTF_8);
            header(out, '$', bytes.length);
            out.write(bytes, 0, bytes.length);
            out.write('\r');
            out.write('\n');
        }
        return out.toByteArray();
    }

    private static void header(ByteArrayOutputStream out, char kind, int n) {
        out.write(kind);
        byte[] digits = Integer.toString(n).getBytes(StandardCharsets.US_ASCII);
        out.write(digits, 0, digits.length);
        out.write('\r');
        out.write('\n');
    }

    /**
     * The most bytes a reply to {@code args} may take: a snowflake batch of {@code n} IDs needs
     * about {@code 23 n}; every other reply of the protocol is short. A reply past it is refused
     * as it is read, so a node cannot make the client hold a flood of small items (each costs
     * far more memory than its bytes on the wire) before the reply's shape is checked.
     */
    static long replyBound(List<?> args) {
        if (args.size() == 3 && "IDMINT.SNOWFLAKE".equals(args.get(0)) && args.get(2) instanceof Long n && n > 0) {
            return Math.max(MAX_REPLY, 64 + SNOWFLAKE_BYTES * Math.min(n, Integer.MAX_VALUE));
        }
        return MAX_REPLY;
    }

    /** The bytes a reply has left to take. */
    private static final class Budget {
        private final long bound;
        private long left;

        Budget(long bound) {
            this.bound = bound;
            this.left = bound;
        }

        void spend(long n) throws ProtocolException {
            left -= n;
            if (left < 0) {
                throw new ProtocolException("a reply longer than " + bound + " bytes");
            }
        }
    }

    /** Reads one reply of at most {@link #MAX_REPLY} bytes. */
    static Object read(InputStream in) throws IOException {
        return read(in, MAX_REPLY);
    }

    /** Reads one reply of at most {@code maxBytes} bytes. */
    static Object read(InputStream in, long maxBytes) throws IOException {
        return read(in, 0, new Budget(maxBytes));
    }

    private static Object read(InputStream in, int depth, Budget budget) throws IOException {
        int kind = in.read();
        if (kind < 0) {
            throw new java.io.EOFException("the node closed the connection");
        }
        budget.spend(1);
        switch (kind) {
            case '+':
                return line(in, budget);
            case '-':
                return Error.of(line(in, budget));
            case ':':
                return integer(line(in, budget));
            case '$': {
                long n = length(line(in, budget), MAX_BULK);
                if (n < 0) {
                    return null;
                }
                budget.spend(n + 2);
                byte[] bytes = in.readNBytes((int) n);
                if (bytes.length != n) {
                    throw new java.io.EOFException("the node closed the connection inside a reply");
                }
                expectCrLf(in);
                return bytes;
            }
            case '*': {
                long n = length(line(in, budget), MAX_ARRAY);
                if (n < 0) {
                    return null;
                }
                if (depth >= MAX_DEPTH) {
                    throw new ProtocolException("arrays nested deeper than " + MAX_DEPTH);
                }
                List<Object> items = new ArrayList<>((int) Math.min(n, 1024));
                for (long i = 0; i < n; i++) {
                    items.add(read(in, depth + 1, budget));
                }
                return Collections.unmodifiableList(items);
            }
            default:
                throw new ProtocolException("a reply starting with byte " + kind + " is not RESP2");
        }
    }

    /** An integer reply: signed 64-bit, or unsigned up to 2^64 - 1 (IDs are unsigned in the protocol). */
    static Object integer(String text) throws ProtocolException {
        if (!text.matches("-?[0-9]{1,20}")) {
            throw new ProtocolException("`" + shorten(text) + "` is not an integer");
        }
        BigInteger value = new BigInteger(text);
        if (value.bitLength() < 64) {
            return value.longValue();
        }
        if (value.signum() > 0 && value.compareTo(U64_MAX) <= 0) {
            return value;
        }
        throw new ProtocolException("`" + text + "` is outside 64 bits");
    }

    private static long length(String text, int max) throws ProtocolException {
        if (text.equals("-1")) {
            return -1;
        }
        if (!text.matches("[0-9]{1,10}")) {
            throw new ProtocolException("`" + shorten(text) + "` is not a length");
        }
        long n = Long.parseLong(text);
        if (n > max) {
            throw new ProtocolException("a length of " + n + " is above the client's bound " + max);
        }
        return n;
    }

    private static void expectCrLf(InputStream in) throws IOException {
        if (in.read() != '\r' || in.read() != '\n') {
            throw new ProtocolException("a bulk string not ended by CRLF");
        }
    }

    private static String line(InputStream in, Budget budget) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream(32);
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new java.io.EOFException("the node closed the connection inside a reply");
            }
            budget.spend(1);
            if (b == '\r') {
                if (in.read() != '\n') {
                    throw new ProtocolException("a CR not followed by LF");
                }
                return line.toString(StandardCharsets.UTF_8);
            }
            if (line.size() >= MAX_LINE) {
                throw new ProtocolException("a line longer than " + MAX_LINE + " bytes");
            }
            line.write(b);
        }
    }

    /** At most 40 characters of {@code text}, for messages. */
    static String shorten(String text) {
        return text.length() <= 40 ? text : text.substring(0, 40) + "…";
    }

    /** A reply as messages show it. */
    static String show(Object reply) {
        if (reply == null) {
            return "(nil)";
        }
        if (reply instanceof byte[] bytes) {
            return "\"" + shorten(new String(bytes, StandardCharsets.UTF_8)) + "\"";
        }
        if (reply instanceof Error error) {
            return "-" + shorten(error.text());
        }
        if (reply instanceof List<?> list) {
            StringBuilder out = new StringBuilder("[");
            for (int i = 0; i < list.size() && i < 4; i++) {
                out.append(i == 0 ? "" : ", ").append(show(list.get(i)));
            }
            return out.append(list.size() > 4 ? ", …]" : "]").toString();
        }
        return String.valueOf(reply);
    }
}
