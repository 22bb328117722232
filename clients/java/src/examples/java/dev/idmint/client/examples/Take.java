package dev.idmint.client.examples;

import dev.idmint.client.IdMint;
import dev.idmint.client.IdMintConfig;
import dev.idmint.client.IdMintException;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The common example program of idmint's client libraries:
 *
 * <pre>
 * take --nodes HOST:PORT[,HOST:PORT...] [--token T] --kind segment|snowflake [--tag TAG] --count N
 * </pre>
 *
 * <p>Prints N IDs, one per line, in the order the library handed them out, and exits 0; or exits
 * non-zero with one line on stderr saying why (2: a bad command line; 1: the library failed).
 * The output is buffered and flushed at the end, or before the error line.
 */
public final class Take {
    private Take() {}

    /** Runs the program. */
    public static void main(String[] args) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("take: " + e.getMessage());
            System.exit(2);
            return;
        }
        OutputStream out = new BufferedOutputStream(System.out, 1 << 16);
        int status = 0;
        String why = null;
        try (IdMint ids = new IdMint(options.config())) {
            byte[] line = new byte[24];
            for (long i = 0; i < options.count; i++) {
                long id = options.segment ? ids.next(options.tag) : ids.snowflake();
                out.write(line, 0, format(id, line));
            }
        } catch (IdMintException e) {
            status = 1;
            why = e.getMessage();
        } catch (IOException e) {
            status = 1;
            why = "cannot write the IDs: " + e.getMessage();
        }
        try {
            out.flush();
        } catch (IOException e) {
            if (why == null) {
                status = 1;
                why = "cannot write the IDs: " + e.getMessage();
            }
        }
        if (why != null) {
            System.err.println("take: " + why.replace('\n', ' '));
        }
        System.exit(status);
    }

    /** Writes {@code id} and a newline at the start of {@code line}; returns the length. */
    private static int format(long id, byte[] line) {
        String digits = Long.toString(id);
        int n = digits.length();
        for (int i = 0; i < n; i++) {
            line[i] = (byte) digits.charAt(i);
        }
        line[n] = '\n';
        return n + 1;
    }

    /** The command line, checked. */
    private static final class Options {
        final List<String> nodes = new ArrayList<>();
        String token;
        boolean segment;
        String tag;
        long count = -1;

        static Options parse(String[] args) {
            Options o = new Options();
            String kind = null;
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                String value;
                int eq = flag.indexOf('=');
                if (flag.startsWith("--") && eq > 0) {
                    value = flag.substring(eq + 1);
                    flag = flag.substring(0, eq);
                } else {
                    if (!List.of("--nodes", "--token", "--kind", "--tag", "--count").contains(flag)) {
                        throw new IllegalArgumentException("unknown flag `" + flag + "`; usage: take --nodes HOST:PORT[,HOST:PORT...] [--token T] --kind segment|snowflake [--tag TAG] --count N");
                    }
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException(flag + " needs a value");
                    }
                    value = args[++i];
                }
                switch (flag) {
                    case "--nodes":
                        for (String node : value.split(",")) {
                            if (node.isBlank()) {
                                throw new IllegalArgumentException("--nodes: an empty address in `" + value + "`");
                            }
                            String n = node.trim();
                            o.nodes.add(n.contains("://") ? n : "redis://" + n);
                        }
                        break;
                    case "--token":
                        o.token = value;
                        break;
                    case "--kind":
                        kind = value;
                        break;
                    case "--tag":
                        o.tag = value;
                        break;
                    case "--count":
                        try {
                            o.count = Long.parseLong(value);
                        } catch (NumberFormatException e) {
                            o.count = -1;
                        }
                        if (o.count < 0) {
                            throw new IllegalArgumentException("--count: `" + value + "` is not a count (0 or more)");
                        }
                        break;
                    default:
                        throw new IllegalArgumentException("unknown flag `" + flag + "`");
                }
            }
            if (o.nodes.isEmpty()) {
                throw new IllegalArgumentException("--nodes is needed");
            }
            if (kind == null) {
                throw new IllegalArgumentException("--kind is needed: segment or snowflake");
            }
            if (!kind.equals("segment") && !kind.equals("snowflake")) {
                throw new IllegalArgumentException("--kind: `" + kind + "` is neither segment nor snowflake");
            }
            o.segment = kind.equals("segment");
            if (o.segment && o.tag == null) {
                throw new IllegalArgumentException("--tag is needed with --kind segment");
            }
            if (o.count < 0) {
                throw new IllegalArgumentException("--count is needed");
            }
            return o;
        }

        IdMintConfig config() {
            return IdMintConfig.builder(nodes).token(token).build();
        }
    }
}
