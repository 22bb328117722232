package dev.idmint.client.bench;

import dev.idmint.client.IdMint;
import dev.idmint.client.IdMintConfig;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cost of {@link IdMint#next(String)} from memory, against {@link AtomicLong#incrementAndGet()}
 * and against one {@code INCR} round trip to a real node, in the manner of JMH: warm-up
 * iterations, then measured iterations, each a timed loop whose results feed a sink the JIT
 * cannot drop; the median iteration is reported.
 *
 * <pre>
 * clients/java/bench --node redis://127.0.0.1:6380 [--token T] [--iterations 10] [--ops 20000000] [--incr-ops 20000]
 * </pre>
 *
 * <p>The client is given large ranges ({@code --step}, 1,000,000 by default; start the node with
 * {@code --max-count} at least that) so that the measured loop is memory hits, as it is in use
 * at a steady rate; the background refills still run. The {@code INCR} round trip goes over a
 * plain socket with a hand-written RESP2 request and reply (no Redis client for Java installs
 * here): a lower bound of what any Redis client pays.
 */
public final class NextBench {
    private static long sink;

    private NextBench() {}

    public static void main(String[] args) throws Exception {
        String node = null;
        String token = null;
        int iterations = 10;
        long ops = 20_000_000;
        long incrOps = 20_000;
        long step = 1_000_000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--node" -> node = args[i + 1];
                case "--token" -> token = args[i + 1];
                case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
                case "--ops" -> ops = Long.parseLong(args[i + 1]);
                case "--incr-ops" -> incrOps = Long.parseLong(args[i + 1]);
                case "--step" -> step = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        if (node == null) {
            throw new IllegalArgumentException("--node redis://HOST:PORT is needed");
        }

        AtomicLong counter = new AtomicLong();
        double atomic = measure("AtomicLong.incrementAndGet", n -> atomicLoop(counter, n), iterations, ops);

        double next;
        IdMintConfig config = IdMintConfig.builder(node).token(token).steps(step, step)
                .maxWait(Duration.ofSeconds(10)).build();
        try (IdMint ids = new IdMint(config)) {
            IdMint.TagIds handle = ids.tag("bench_next");
            next = measure("IdMint.next(tag)", n -> nextLoop(ids, "bench_next", n), iterations, ops);
            measure("IdMint.tag(tag).next()", n -> handleLoop(handle, n), iterations, ops);
            System.out.printf("  client: %s%n", ids.stats());
        }

        double incr;
        try (Incr round = new Incr(URI.create(node), token)) {
            incr = measure("INCR round trip", n -> incrLoop(round, n), iterations, incrOps);
        }

        System.out.printf("%nnext() / AtomicLong:   %.2fx the cost (goal: within 3x)%n", next / atomic);
        System.out.printf("INCR / next():         %.0fx faster from memory (goal: at least 50x)%n", incr / next);
        if (sink == 42) {
            System.out.println();
        }
    }

    /** One timed loop of {@code ops} calls; returns ns per call. */
    @FunctionalInterface
    private interface Loop {
        double run(long ops);
    }

    /** Runs {@code iterations} warm-up and {@code iterations} measured loops of {@code ops} calls; prints and returns the median ns per call. */
    private static double measure(String name, Loop loop, int iterations, long ops) {
        for (int i = 0; i < iterations; i++) {
            loop.run(ops);
        }
        double[] results = new double[iterations];
        for (int i = 0; i < iterations; i++) {
            results[i] = loop.run(ops);
        }
        Arrays.sort(results);
        double median = results[iterations / 2];
        System.out.printf("%-28s %10.2f ns/op  (median of %d x %d ops; min %.2f, max %.2f)%n",
                name, median, iterations, ops, results[0], results[iterations - 1]);
        return median;
    }

    // One loop method per operation, as JMH compiles one per benchmark: each call site in a
    // loop sees one receiver type, so the JIT inlines it, and no operation pays for a call
    // site made megamorphic by the others.

    private static double atomicLoop(AtomicLong counter, long ops) {
        long acc = 0;
        long start = System.nanoTime();
        for (long i = 0; i < ops; i++) {
            acc ^= counter.incrementAndGet();
        }
        return done(start, acc, ops);
    }

    private static double nextLoop(IdMint ids, String tag, long ops) {
        long acc = 0;
        long start = System.nanoTime();
        for (long i = 0; i < ops; i++) {
            acc ^= ids.next(tag);
        }
        return done(start, acc, ops);
    }

    private static double handleLoop(IdMint.TagIds handle, long ops) {
        long acc = 0;
        long start = System.nanoTime();
        for (long i = 0; i < ops; i++) {
            acc ^= handle.next();
        }
        return done(start, acc, ops);
    }

    private static double incrLoop(Incr round, long ops) {
        long acc = 0;
        long start = System.nanoTime();
        for (long i = 0; i < ops; i++) {
            acc ^= round.incr();
        }
        return done(start, acc, ops);
    }

    private static double done(long start, long acc, long ops) {
        long took = System.nanoTime() - start;
        sink ^= acc;
        return (double) took / ops;
    }

    /** One connection sending {@code INCR bench_incr} and reading the integer reply. */
    private static final class Incr implements AutoCloseable {
        private static final byte[] REQUEST = "*2\r\n$4\r\nINCR\r\n$10\r\nbench_incr\r\n".getBytes(StandardCharsets.US_ASCII);
        private final Socket socket;
        private final InputStream in;
        private final OutputStream out;

        Incr(URI node, String token) throws IOException {
            socket = new Socket();
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress(node.getHost(), node.getPort() < 0 ? 6379 : node.getPort()));
            in = new BufferedInputStream(socket.getInputStream());
            out = socket.getOutputStream();
            if (token != null) {
                byte[] t = token.getBytes(StandardCharsets.UTF_8);
                out.write(("*2\r\n$4\r\nAUTH\r\n$" + t.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(t);
                out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String reply = line();
                if (!reply.equals("+OK")) {
                    throw new IOException("AUTH answered " + reply);
                }
            }
        }

        long incr() {
            try {
                out.write(REQUEST);
                out.flush();
                String reply = line();
                if (reply.isEmpty() || reply.charAt(0) != ':') {
                    throw new IOException("INCR answered " + reply);
                }
                return Long.parseLong(reply, 1, reply.length(), 10);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        private String line() throws IOException {
            StringBuilder s = new StringBuilder();
            int b;
            while ((b = in.read()) != '\r') {
                if (b < 0) {
                    throw new IOException("connection closed");
                }
                s.append((char) b);
            }
            in.read();
            return s.toString();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
