package dev.idmint.client;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.LongFunction;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * A client of idmint nodes that hands IDs out of its own memory and fails over between nodes.
 *
 * <pre>{@code
 * try (IdMint ids = new IdMint(IdMintConfig.builder("redis://10.0.0.1:6379", "redis://10.0.0.2:6379").build())) {
 *     long orderId = ids.next("orders");   // from memory nearly always
 *     long eventId = ids.snowflake();
 * }                                        // close() gives unused IDs back
 * }</pre>
 *
 * <h2>What it promises</h2>
 * <ul>
 *   <li><b>Unique, always.</b> Every ID comes from a range or batch a node handed out once; the
 *       client never makes one up. When no node can serve within {@code maxWait} a call fails
 *       with {@link UnavailableException}.
 *   <li><b>Increasing per client.</b> A tag's IDs from one client strictly increase, across
 *       failovers too (each range is asked for above the last: {@code IDMINT.RANGE tag n ABOVE id}),
 *       and so do its snowflakes. Across clients they only trend upwards: each holds its own
 *       range. On nodes that hand out permuted IDs there is no order: snowflakes come in the
 *       node's order, and segment IDs, which the client takes in runs, are refused with
 *       {@link PermutedException}.
 *   <li><b>Dated tags</b> (made with a {@code period} on the nodes: IDs such as
 *       {@code 20261123000042} that start again every day) are not kept: the nodes refuse them a
 *       range, and the client takes each of their IDs from a node ({@code IDMINT.NEXT}), one
 *       round trip each. They are unique and dated by the store's clock, and increase while the
 *       client talks to one node.
 *   <li><b>What a crash loses.</b> A process that dies loses the IDs it held (at most two ranges
 *       per tag): never reissued, a gap. A client closed gives them back where the node can
 *       still take them.
 * </ul>
 *
 * <p>Thread-safe: share one client across the threads of a program. {@code next} is one atomic
 * add nearly every time; a background thread fetches the next range once {@code prefetchAt} of
 * the current one is used, its size following the rate so a range lasts about
 * {@code targetLifetime}. IDs are Java {@code long}s: the nodes hand out IDs below 2^63, and a
 * reply outside {@code 1..Long.MAX_VALUE} is refused, never handed out.
 */
public final class IdMint implements AutoCloseable {
    private final Core core;
    private final ConcurrentHashMap<String, TagBuffer> buffers = new ConcurrentHashMap<>();
    private final Object adding = new Object();
    private final Snowflakes snowflakes;
    private final Uuid7Generator uuid7 = Uuid7Generator.create();
    private final UlidGenerator ulid = UlidGenerator.create();

    /**
     * A client of {@code config.nodes()}. Opens no connection yet: the first call does.
     *
     * @throws ConfigException when the certificate authority cannot be read
     */
    public IdMint(IdMintConfig config) {
        Objects.requireNonNull(config, "config");
        SSLSocketFactory tls = tlsFactory(config);
        Nodes nodes = new Nodes(config, tls);
        this.core = new Core(config, nodes, executor(), asyncExecutor());
        this.snowflakes = new Snowflakes(core);
    }

    /** A client of these nodes with the default settings. */
    public static IdMint connect(String... nodes) {
        return new IdMint(IdMintConfig.builder(nodes).build());
    }

    /**
     * The next segment ID of {@code tag}: strictly above every ID this client handed out for it
     * before, unique across every client and node. From memory nearly always; else waits at most
     * {@code maxWait} for a range. A dated tag's ID comes from a node, one round trip each.
     *
     * @throws UnavailableException no node could serve within {@code maxWait}
     * @throws TagExhaustedException the tag's IDs are used up
     * @throws PermutedException the nodes hand out permuted IDs
     * @throws PeriodUnavailableException a dated tag's period is used up
     * @throws AuthException the token was refused
     * @throws RefusedException another refusal (an invalid or unknown tag, the nodes' tag cap)
     * @throws ClosedException the client was closed
     */
    public long next(String tag) {
        TagBuffer buffer = buffers.get(tag);
        if (buffer != null) {
            long id = buffer.tryNext();
            return id != 0 ? id : buffer.nextSlow();
        }
        return buffer(tag).next();
    }

    /** {@link #next(String)}, completed at once when the ID is in memory, else on the client's threads. */
    public CompletableFuture<Long> nextAsync(String tag) {
        TagBuffer buffer = buffers.get(tag);
        if (buffer != null) {
            long id = buffer.tryNext();
            if (id != 0) {
                return CompletableFuture.completedFuture(id);
            }
        }
        return async(started -> {
            TagBuffer b = buffer(tag);
            long id = b.tryNext();
            return id != 0 ? id : b.nextSlow(started);
        });
    }

    /** A handle on one tag, for a loop that draws many IDs: no lookup by name per call. */
    public TagIds tag(String tag) {
        return new TagIds(buffer(tag));
    }

    /**
     * One snowflake, taken from a batch no older than {@code snowflakeMaxAge}; above every
     * snowflake this client handed out (unless the nodes permute their IDs).
     *
     * @throws UnavailableException no node could serve within {@code maxWait}
     * @throws ClosedException the client was closed
     */
    public long snowflake() {
        return snowflakes(1)[0];
    }

    /**
     * {@code n} snowflakes ({@code 1..10000}), increasing.
     *
     * @throws RefusedException {@code n} is out of range (code {@code invalid_argument}, as the Rust crate)
     * @throws UnavailableException no node could serve within {@code maxWait}
     * @throws ClosedException the client was closed
     */
    public long[] snowflakes(int n) {
        checkOpen();
        return snowflakes.take(n);
    }

    /** {@link #snowflake()} on the client's threads. */
    public CompletableFuture<Long> snowflakeAsync() {
        return async(started -> {
            checkOpen();
            return snowflakes.take(1, started)[0];
        });
    }

    /** {@link #snowflakes(int)} on the client's threads. */
    public CompletableFuture<long[]> snowflakesAsync(int n) {
        return async(started -> {
            checkOpen();
            return snowflakes.take(n, started);
        });
    }

    /**
     * A UUIDv7 made here, with no round trip: above every one this client made before (see
     * {@link Uuid7Generator}; no node field). Needs no node, so it works after {@link #close()} too.
     */
    public Id128 uuid7() {
        return uuid7.next();
    }

    /**
     * A ULID made here, with no round trip: above every one this client made before (see
     * {@link UlidGenerator}; no node field). Needs no node, so it works after {@link #close()} too.
     */
    public Id128 ulid() {
        return ulid.next();
    }

    /** The client's counters. */
    public IdMintStats stats() {
        return core.nodes.stats.snapshot(core.nodes.current());
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return core.isClosed();
    }

    /**
     * Stops handing out IDs and gives every tag's unused IDs back to the node that handed them
     * out, where it can still take them (nothing taken there since), then closes the
     * connections. Waits at most about {@code maxWait}. Later calls fail with
     * {@link ClosedException}. Idempotent.
     */
    @Override
    public void close() {
        List<TagBuffer> all;
        synchronized (adding) {
            if (core.isClosed()) {
                return;
            }
            core.markClosed();
            // Under the lock buffers are added with: a buffer is in this snapshot or never made.
            all = new ArrayList<>(buffers.values());
        }
        // Every tag at once: a node that hangs costs one wait, not one per tag.
        List<Future<Boolean>> closing = new ArrayList<>();
        for (TagBuffer buffer : all) {
            try {
                closing.add(core.executor.submit(buffer::close));
            } catch (RejectedExecutionException e) {
                buffer.close();
            }
        }
        long deadline = System.nanoTime() + core.config.maxWait().toNanos() + core.config.callTimeout().toNanos();
        for (Future<Boolean> f : closing) {
            try {
                f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (Exception e) {
                // A give-back that failed or did not finish: those IDs are a gap, never reissued.
            }
        }
        snowflakes.clear();
        core.executor.shutdown();
        core.asyncExecutor.shutdown();
        core.nodes.close();
    }

    @Override
    public String toString() {
        return "IdMint[nodes=" + core.config.nodes() + ", tags=" + buffers.size() + ", closed=" + isClosed() + "]";
    }

    private void checkOpen() {
        if (core.isClosed()) {
            throw new ClosedException();
        }
    }

    /** The buffer of {@code tag}, made on first use. */
    private TagBuffer buffer(String tag) {
        TagBuffer buffer = buffers.get(Objects.requireNonNull(tag, "tag"));
        if (buffer != null) {
            return buffer;
        }
        checkOpen();
        Tags.check(tag);
        synchronized (adding) {
            // Checked again under the lock close() takes: no buffer is added after its snapshot.
            checkOpen();
            return buffers.computeIfAbsent(tag, t -> new TagBuffer(t, core));
        }
    }

    /**
     * {@code call} on the asynchronous calls' threads, given when it was made: a call that
     * waited for a thread has that much less of {@code maxWait} left, so every future completes
     * within about {@code maxWait} however many wait.
     */
    private <T> CompletableFuture<T> async(LongFunction<T> call) {
        if (core.isClosed()) {
            return CompletableFuture.failedFuture(new ClosedException());
        }
        long started = System.nanoTime();
        try {
            return CompletableFuture.supplyAsync(() -> call.apply(started), core.asyncExecutor);
        } catch (RejectedExecutionException e) {
            return CompletableFuture.failedFuture(new ClosedException());
        }
    }

    /** Daemon threads, made when needed and ended when idle: refills and the asynchronous calls' slow paths. */
    private static ExecutorService executor() {
        AtomicInteger count = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS,
                new SynchronousQueue<>(), runnable -> {
                    Thread thread = new Thread(runnable, "idmint-client-" + count.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        return pool;
    }

    /** The threads the asynchronous calls wait on. */
    static final int ASYNC_THREADS = 16;

    /**
     * Daemon threads for the asynchronous calls' slow paths: at most {@link #ASYNC_THREADS},
     * the other calls queued (a thread each would make thousands of threads while a node is
     * down and calls keep coming), ended when idle.
     */
    private static ExecutorService asyncExecutor() {
        AtomicInteger count = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(ASYNC_THREADS, ASYNC_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), runnable -> {
                    Thread thread = new Thread(runnable, "idmint-client-async-" + count.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** The TLS socket factory for {@code rediss://} nodes: the system's trust, or the configured CA's. */
    private static SSLSocketFactory tlsFactory(IdMintConfig config) {
        if (config.caPem() == null) {
            return (SSLSocketFactory) SSLSocketFactory.getDefault();
        }
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            int i = 0;
            for (Certificate cert : factory.generateCertificates(
                    new ByteArrayInputStream(config.caPem().getBytes(StandardCharsets.US_ASCII)))) {
                trust.setCertificateEntry("ca-" + i++, cert);
            }
            if (i == 0) {
                throw new ConfigException("caPem", "holds no certificate");
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return context.getSocketFactory();
        } catch (GeneralSecurityException | java.io.IOException e) {
            throw new ConfigException("caPem", "not a PEM certificate: " + e.getMessage(), e);
        }
    }

    /** One tag's IDs, for a loop that draws many: see {@link IdMint#tag(String)}. Stops (with {@link ClosedException}) once the client is closed. */
    public static final class TagIds {
        private final TagBuffer buffer;

        private TagIds(TagBuffer buffer) {
            this.buffer = buffer;
        }

        /** The next ID of the tag: see {@link IdMint#next(String)}. */
        public long next() {
            long id = buffer.tryNext();
            return id != 0 ? id : buffer.nextSlow();
        }

        /** The tag. */
        public String tag() {
            return buffer.tag;
        }
    }
}
