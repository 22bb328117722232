package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Nodes that answer in ways no real node does, to hold the client to its bounds: a reply that
 * never ends, a reply far larger than its command needs, a handshake never answered. A scripted
 * RESP server on loopback stands in for them: each connection is served on its own thread by a
 * handler that reads commands and writes what it likes.
 */
class HostileNodeTest {
    /** Serves one connection: reads commands from {@code in}, writes anything to {@code out}. */
    @FunctionalInterface
    interface Handler {
        void serve(InputStream in, OutputStream out) throws IOException, InterruptedException;
    }

    /** A loopback server running {@code handler} on each connection, until closed. */
    static final class Hostile implements AutoCloseable {
        final ServerSocket server;

        Hostile(Handler handler) throws IOException {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread accept = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        Thread conn = new Thread(() -> {
                            try (s) {
                                handler.serve(new BufferedInputStream(s.getInputStream()), s.getOutputStream());
                            } catch (IOException | InterruptedException | RuntimeException e) {
                                // The client hung up.
                            }
                        });
                        conn.setDaemon(true);
                        conn.start();
                    } catch (IOException e) {
                        // The server closed.
                    }
                }
            });
            accept.setDaemon(true);
            accept.start();
        }

        String url() {
            return "redis://127.0.0.1:" + server.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    static String name(Object command) {
        return new String((byte[]) ((List<?>) command).get(0), StandardCharsets.UTF_8).toUpperCase();
    }

    static void write(OutputStream out, String text) throws IOException {
        out.write(text.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    static IdMintConfig.Builder config(Hostile node) {
        return IdMintConfig.builder(node.url()).steps(10, 10).maxWait(Duration.ofMillis(800))
                .callTimeout(Duration.ofMillis(300)).backoff(Duration.ofMillis(50), Duration.ofMillis(100));
    }

    /** Fails unless {@code run} ends within {@code bound} (stopped waiting for there, not hung). */
    static void within(Duration bound, Executable run) {
        assertTimeoutPreemptively(bound, run);
    }

    @Test
    void aReplyDribbledByteByByteIsCutAtTheCallTimeout() throws Exception {
        // Each byte well within the socket's read timeout, the reply never complete.
        Handler dribble = (in, out) -> {
            Resp.read(in);
            write(out, "$200\r\n");
            while (true) {
                Thread.sleep(100);
                write(out, "x");
            }
        };
        try (Hostile node = new Hostile(dribble); IdMint client = new IdMint(config(node).build())) {
            // A snowflake is asked for on the caller's thread: its call must end on time.
            within(Duration.ofSeconds(2), () -> {
                UnavailableException e = assertThrows(UnavailableException.class, client::snowflake);
                assertTrue(e.getMessage().contains("no answer within the call timeout"), e.getMessage());
            });
            within(Duration.ofSeconds(2), () -> assertThrows(UnavailableException.class, () -> client.next("t")));
            within(Duration.ofSeconds(2), client::close);
        }
    }

    @Test
    void aReplyFarLargerThanItsCommandNeedsIsRefusedBeforeItIsRead() throws Exception {
        // 100,000 bulk strings (1.4 MB) for a range, which is two integers: read whole, they
        // would be held in memory before the shape is checked.
        String huge = "*100000\r\n" + "$8\r\nxxxxxxxx\r\n".repeat(100_000);
        Handler flood = (in, out) -> {
            while (true) {
                Resp.read(in);
                write(out, huge);
            }
        };
        try (Hostile node = new Hostile(flood); IdMint client = new IdMint(config(node).build())) {
            UnavailableException e = assertThrows(UnavailableException.class, () -> client.next("t"));
            assertTrue(e.getMessage().contains("longer than"), e.getMessage());
        }
    }

    @Test
    void aNodeThatNeverAnswersAuthIsUnavailableWithinMaxWait() throws Exception {
        Handler silent = (in, out) -> {
            while (true) {
                Resp.read(in);
            }
        };
        try (Hostile node = new Hostile(silent);
                IdMint client = new IdMint(config(node).token("t0ken").build())) {
            within(Duration.ofSeconds(2), () -> assertThrows(UnavailableException.class, () -> client.next("t")));
            within(Duration.ofSeconds(2), () -> assertThrows(UnavailableException.class, client::snowflake));
        }
    }

    static List<Thread> clientThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("idmint-client-")).toList();
    }

    @Test
    void closeEndsWaitingCallsAndLeavesNoThreadRunning() throws Exception {
        Handler silent = (in, out) -> {
            while (true) {
                Resp.read(in);
            }
        };
        try (Hostile node = new Hostile(silent)) {
            IdMint client = new IdMint(config(node).maxWait(Duration.ofSeconds(5)).build());
            List<java.util.concurrent.CompletableFuture<Long>> waiting = new java.util.ArrayList<>();
            for (int i = 0; i < 20; i++) {
                waiting.add(client.nextAsync("t" + (i % 3)));
            }
            java.util.concurrent.CompletableFuture<Long> blocking = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> client.next("t0"));
            Thread.sleep(200);
            within(Duration.ofSeconds(3), client::close);
            within(Duration.ofSeconds(1), client::close);
            for (java.util.concurrent.CompletableFuture<Long> f : waiting) {
                java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> f.get(2, java.util.concurrent.TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof ClosedException, String.valueOf(e.getCause()));
            }
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> blocking.get(2, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof ClosedException, String.valueOf(e.getCause()));
            assertThrows(ClosedException.class, () -> client.next("t0"));
            assertThrows(ClosedException.class, () -> client.next("new"));
            assertThrows(ClosedException.class, client::snowflake);
            java.util.concurrent.ExecutionException late = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> client.nextAsync("t0").get(1, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(late.getCause() instanceof ClosedException, String.valueOf(late.getCause()));
            long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(3);
            while (!clientThreads().isEmpty() && System.nanoTime() < until) {
                Thread.sleep(50);
            }
            assertEquals(List.of(), clientThreads());
        }
    }

    @Test
    void asynchronousCallsWaitingOnANodeDoNotTakeAThreadEach() throws Exception {
        Handler silent = (in, out) -> {
            while (true) {
                Resp.read(in);
            }
        };
        try (Hostile node = new Hostile(silent); IdMint client = new IdMint(config(node).build())) {
            List<java.util.concurrent.CompletableFuture<Long>> waiting = new java.util.ArrayList<>();
            for (int i = 0; i < 500; i++) {
                waiting.add(client.nextAsync("t"));
            }
            int threads = clientThreads().size();
            for (java.util.concurrent.CompletableFuture<Long> f : waiting) {
                java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> f.get(3, java.util.concurrent.TimeUnit.SECONDS));
                assertTrue(e.getCause() instanceof UnavailableException, String.valueOf(e.getCause()));
            }
            assertTrue(threads <= 64, threads + " threads for 500 calls waiting on one tag");
        }
    }

    @Test
    void requestsQueuedBehindASlowButAnsweringNodeDoNotCountAsItsFailures() throws Exception {
        // Each command answered after 150 ms, within the 300 ms call timeout; requests to a node
        // go one at a time, so the fourth of six at once waits longer than a call timeout.
        java.util.concurrent.atomic.AtomicLong next = new java.util.concurrent.atomic.AtomicLong(1);
        Handler slow = (in, out) -> {
            while (true) {
                Object cmd = Resp.read(in);
                Thread.sleep(150);
                if (name(cmd).equals("IDMINT.RANGE")) {
                    long first = next.getAndAdd(10);
                    write(out, "*2\r\n:" + first + "\r\n:" + (first + 9) + "\r\n");
                } else {
                    write(out, "-ERR unknown command\r\n");
                }
            }
        };
        try (Hostile node = new Hostile(slow);
                IdMint client = new IdMint(config(node).maxWait(Duration.ofSeconds(3)).build())) {
            List<java.util.concurrent.CompletableFuture<Long>> calls = new java.util.ArrayList<>();
            for (int i = 0; i < 6; i++) {
                String tag = "t" + i;
                calls.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> client.next(tag)));
            }
            for (java.util.concurrent.CompletableFuture<Long> call : calls) {
                call.get(5, java.util.concurrent.TimeUnit.SECONDS);
            }
            assertEquals(0L, client.stats().nodeFailures().values().iterator().next(), client.stats().toString());
        }
    }
}
