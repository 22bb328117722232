package dev.idmint.client.bench;

import dev.idmint.client.Id128;
import dev.idmint.client.UlidGenerator;
import dev.idmint.client.Uuid7Generator;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cost of a UUIDv7 and a ULID made here ({@link Uuid7Generator#next()},
 * {@link UlidGenerator#next()}) on 1 and 2 threads, against {@link UUID#randomUUID()} and against
 * the floor of any such generator: one {@link AtomicLong#incrementAndGet()} and 64 bits from a
 * per-thread buffer of DRBG output, as the library draws them. In the manner of JMH: warm-up
 * iterations, then measured ones, each a timed loop whose results feed a sink; the median is
 * reported. With 2 threads both run the loop at once, and the figure is each thread's ns per
 * ID (wall time over its own count).
 *
 * <pre>
 * clients/java/bench --id128 [--iterations 10] [--ops 5000000]
 * </pre>
 */
public final class Id128Bench {
    private static volatile long sink;

    private Id128Bench() {}

    public static void main(String[] args) throws Exception {
        int iterations = 10;
        long ops = 5_000_000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
                case "--ops" -> ops = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        for (int threads = 1; threads <= 2; threads++) {
            System.out.printf("-- %d thread%s%n", threads, threads == 1 ? "" : "s");
            Uuid7Generator uuid7 = Uuid7Generator.create();
            UlidGenerator ulid = UlidGenerator.create();
            AtomicLong counter = new AtomicLong();
            measure("Uuid7Generator.next", threads, iterations, ops, n -> uuid7Loop(uuid7, n));
            measure("UlidGenerator.next", threads, iterations, ops, n -> ulidLoop(ulid, n));
            measure("Uuid7 next + toString", threads, iterations, ops, n -> uuid7TextLoop(uuid7, n));
            measure("UUID.randomUUID", threads, iterations, ops / 10, Id128Bench::randomUuidLoop);
            measure("floor: AtomicLong + DRBG", threads, iterations, ops, n -> floorLoop(counter, n));
        }
    }

    @FunctionalInterface
    private interface Loop {
        long run(long ops);
    }

    /** Median ns per call of {@code threads} threads each running {@code loop} at once. */
    private static void measure(String name, int threads, int iterations, long ops, Loop loop) throws Exception {
        double[] results = new double[iterations];
        for (int i = 0; i < 2 * iterations; i++) {
            double r = once(threads, ops, loop);
            if (i >= iterations) {
                results[i - iterations] = r;
            }
        }
        Arrays.sort(results);
        System.out.printf("%-28s %9.2f ns/op  (median of %d x %d ops per thread; min %.2f, max %.2f)%n",
                name, results[iterations / 2], iterations, ops, results[0], results[iterations - 1]);
    }

    private static double once(int threads, long ops, Loop loop) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        Thread[] all = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            all[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                sink ^= loop.run(ops);
            });
            all[t].start();
        }
        start.await();
        long began = System.nanoTime();
        for (Thread t : all) {
            t.join();
        }
        return (double) (System.nanoTime() - began) / ops;
    }

    // One loop method per operation, as JMH compiles one per benchmark: each call site sees one
    // receiver type, so the JIT inlines it.

    private static long uuid7Loop(Uuid7Generator gen, long ops) {
        long acc = 0;
        for (long i = 0; i < ops; i++) {
            Id128 id = gen.next();
            acc ^= id.lo();
        }
        return acc;
    }

    private static long ulidLoop(UlidGenerator gen, long ops) {
        long acc = 0;
        for (long i = 0; i < ops; i++) {
            Id128 id = gen.next();
            acc ^= id.lo();
        }
        return acc;
    }

    private static long uuid7TextLoop(Uuid7Generator gen, long ops) {
        long acc = 0;
        for (long i = 0; i < ops; i++) {
            acc += gen.next().toString().length();
        }
        return acc;
    }

    private static long randomUuidLoop(long ops) {
        long acc = 0;
        for (long i = 0; i < ops; i++) {
            acc ^= UUID.randomUUID().getLeastSignificantBits();
        }
        return acc;
    }

    private static final ThreadLocal<Drbg> DRBG = ThreadLocal.withInitial(Drbg::new);

    private static long floorLoop(AtomicLong counter, long ops) {
        long acc = 0;
        for (long i = 0; i < ops; i++) {
            acc ^= counter.incrementAndGet() ^ DRBG.get().nextLong();
        }
        return acc;
    }

    /** The library's way of drawing random bits, rebuilt here (its class is not public). */
    private static final class Drbg {
        private final SecureRandom random;
        private final byte[] bytes = new byte[4096];
        private int at = bytes.length;

        Drbg() {
            try {
                random = SecureRandom.getInstance("DRBG");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        long nextLong() {
            if (at == bytes.length) {
                random.nextBytes(bytes);
                at = 0;
            }
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v = v << 8 | (bytes[at++] & 0xFF);
            }
            return v;
        }
    }
}
