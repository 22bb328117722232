package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/**
 * Replies that break the protocol's contract are refused, never handed out. These need a node
 * that misbehaves, which a real one does not: a scripted RESP server on loopback stands in for
 * it (every other test runs against real nodes).
 */
class BrokenNodeTest {
    /** A RESP server answering each command with {@code script(name, count of that name so far)}. */
    private static final class Scripted implements AutoCloseable {
        final ServerSocket server;
        final Thread thread;

        Scripted(BiFunction<String, Integer, String> script) throws IOException {
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            AtomicInteger ranges = new AtomicInteger();
            thread = new Thread(() -> {
                while (!server.isClosed()) {
                    try (Socket s = server.accept()) {
                        InputStream in = new BufferedInputStream(s.getInputStream());
                        OutputStream out = s.getOutputStream();
                        while (true) {
                            List<?> cmd = (List<?>) Resp.read(in);
                            String name = new String((byte[]) cmd.get(0), StandardCharsets.UTF_8).toUpperCase();
                            int n = name.equals("IDMINT.RANGE") ? ranges.incrementAndGet() : 0;
                            out.write(script.apply(name, n).getBytes(StandardCharsets.UTF_8));
                            out.flush();
                        }
                    } catch (IOException | RuntimeException e) {
                        // The client hung up, or the server closed.
                    }
                }
            });
            thread.setDaemon(true);
            thread.start();
        }

        String url() {
            return "redis://127.0.0.1:" + server.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    private static IdMint client(Scripted node) {
        return new IdMint(IdMintConfig.builder(node.url()).steps(10, 10).maxWait(Duration.ofMillis(500))
                .backoff(Duration.ofMillis(50), Duration.ofMillis(100)).build());
    }

    @Test
    void rangesThatAreNotARunAboveTheLastAreRefused() throws Exception {
        for (String reply : List.of("*2\r\n:5\r\n:3\r\n", "*2\r\n:0\r\n:3\r\n", "*2\r\n:1\r\n:11\r\n", "*2\r\n:-5\r\n:3\r\n",
                "*2\r\n:9223372036854775808\r\n:9223372036854775810\r\n", "*2\r\n:9223372036854775800\r\n:18446744073709551615\r\n")) {
            try (Scripted node = new Scripted((name, n) -> reply); IdMint client = client(node)) {
                RefusedException e = assertThrows(RefusedException.class, () -> client.next("t"), reply);
                assertEquals(ErrorCode.STORE_INVALID, e.code().orElseThrow(), e.getMessage());
                assertTrue(e.getMessage().contains("not a run of at most 10"), e.getMessage());
            }
        }
    }

    @Test
    void aRangeAtOrBelowTheLastOneIsRefusedAfterTheGoodOnesAreUsed() throws Exception {
        try (Scripted node = new Scripted((name, n) -> n == 1 ? "*2\r\n:1\r\n:10\r\n" : "*2\r\n:5\r\n:14\r\n");
                IdMint client = client(node)) {
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                ids.add(client.next("t"));
            }
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L), ids);
            RefusedException e = assertThrows(RefusedException.class, () -> client.next("t"));
            assertTrue(e.getMessage().contains("above 10"), e.getMessage());
        }
    }

    @Test
    void aReplyOfTheWrongShapeIsTheNodesFailure() throws Exception {
        for (String reply : List.of("+OK\r\n", "*1\r\n:1\r\n", "$2\r\n12\r\n", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n")) {
            try (Scripted node = new Scripted((name, n) -> reply); IdMint client = client(node)) {
                UnavailableException e = assertThrows(UnavailableException.class, () -> client.next("t"), reply);
                assertTrue(e.getMessage().contains("expected [first, last]"), e.getMessage());
                assertTrue(client.stats().nodeFailures().values().iterator().next() >= 1);
            }
        }
    }

    @Test
    void snowflakesOutsideTheIdsOfALongAreRefused() throws Exception {
        for (String batch : List.of("*2\r\n:5\r\n:0\r\n", "*1\r\n:-3\r\n", "*1\r\n:9223372036854775808\r\n",
                "*" + 65 + "\r\n" + ":1\r\n".repeat(65))) {
            BiFunction<String, Integer, String> script = (name, n) -> name.equals("IDMINT.SPACE")
                    ? "-ERR unknown command 'IDMINT.SPACE'\r\n" : batch;
            try (Scripted node = new Scripted(script); IdMint client = client(node)) {
                RefusedException e = assertThrows(RefusedException.class, client::snowflake, batch);
                assertEquals(ErrorCode.STORE_INVALID, e.code().orElseThrow());
            }
        }
    }
}
