package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The client against two real idmint nodes on one SQLite file. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClientTest {
    private Path dir;
    private String store;
    private TestNode a;
    private TestNode b;

    @BeforeAll
    void start() {
        dir = TestNode.tempDir("idmint-java-");
        store = "sqlite://" + dir + "/ids.db";
        a = new TestNode(store, "java0");
        b = new TestNode(store, "java1");
    }

    @AfterAll
    void stop() {
        if (a != null) {
            a.kill();
        }
        if (b != null) {
            b.kill();
        }
        TestNode.deleteTree(dir);
    }

    private IdMintConfig.Builder config(String... nodes) {
        return IdMintConfig.builder(nodes.length == 0 ? new String[] {a.url(), b.url()} : nodes).token(TestNode.TOKEN);
    }

    static void assertIncreasing(List<Long> ids) {
        for (int i = 1; i < ids.size(); i++) {
            if (ids.get(i) <= ids.get(i - 1)) {
                throw new AssertionError("not increasing at " + i + ": " + ids.get(i - 1) + " then " + ids.get(i));
            }
        }
    }

    @Test
    void idsAreUniqueAndIncreasePerThreadAcrossThreadsAndClientsWhileRefillsRace() throws Exception {
        ConcurrentLinkedQueue<Long> all = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try (IdMint one = new IdMint(config().steps(10, 50).targetLifetime(Duration.ofMillis(20)).build());
                IdMint two = new IdMint(config(b.url(), a.url()).steps(10, 50).prefetchAt(0.0).build())) {
            List<Thread> threads = new ArrayList<>();
            for (IdMint client : List.of(one, one, one, two, two, two)) {
                threads.add(new Thread(() -> {
                    try {
                        List<Long> mine = new ArrayList<>();
                        for (int i = 0; i < 20_000; i++) {
                            mine.add(client.next("unique"));
                        }
                        assertIncreasing(mine);
                        all.addAll(mine);
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join();
            }
            assertTrue(one.stats().ranges() > 10, one.stats().toString());
        }
        assertTrue(failures.isEmpty(), failures.toString());
        assertEquals(120_000, all.size());
        assertEquals(all.size(), new HashSet<>(all).size(), "an ID was handed out twice");
    }

    @Test
    void closeGivesTheUnusedTailBackAndTheNextClientFollowsOn() {
        long first;
        IdMint client = new IdMint(config(a.url()).steps(1000, 1000).build());
        first = client.next("giveback");
        client.close();
        assertTrue(client.stats().givenBack() >= 999, client.stats().toString());
        assertThrows(ClosedException.class, () -> client.next("giveback"));
        assertThrows(ClosedException.class, client::snowflake);
        ExecutionException late = assertThrows(ExecutionException.class, () -> client.nextAsync("giveback").get());
        assertInstanceOf(ClosedException.class, late.getCause());
        try (IdMint again = new IdMint(config(a.url()).steps(10, 10).build())) {
            assertEquals(first + 1, again.next("giveback"));
        }
    }

    @Test
    void closeGivesBackBothRangesWhenTheNextOneIsLoaded() throws Exception {
        long last = 0;
        IdMint client = new IdMint(config(a.url()).steps(100, 100).prefetchAt(0.0).build());
        for (int i = 0; i < 5; i++) {
            last = client.next("giveback2");
        }
        // The prefetch at the first claim: wait until it is in.
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (client.stats().ranges() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        client.close();
        assertEquals(195, client.stats().givenBack(), client.stats().toString());
        try (IdMint again = new IdMint(config(a.url()).steps(10, 10).build())) {
            assertEquals(last + 1, again.next("giveback2"));
        }
    }

    @Test
    void everyTagGivesBackAtClose() {
        // A node remembers the last runs of a connection's last 8 tags: 8 tags, all given back.
        IdMint client = new IdMint(config(a.url()).steps(100, 100).build());
        List<Long> firsts = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            firsts.add(client.next("many" + t));
        }
        client.close();
        assertEquals(8 * 99, client.stats().givenBack(), client.stats().toString());
        try (IdMint again = new IdMint(config(a.url()).steps(10, 10).build())) {
            for (int t = 0; t < 8; t++) {
                assertEquals(firsts.get(t) + 1, again.next("many" + t), "tag many" + t);
            }
        }
    }

    @Test
    void closeRacingNewTagsLeavesOnlyClosedErrors() throws Exception {
        IdMint client = new IdMint(config().steps(10, 10).build());
        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentLinkedQueue<Throwable> odd = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> ids = new ConcurrentLinkedQueue<>();
        CountDownLatch started = new CountDownLatch(2);
        List<Thread> threads = new ArrayList<>();
        for (int k = 0; k < 2; k++) {
            int seed = k;
            threads.add(new Thread(() -> {
                started.countDown();
                for (int i = seed; !stop.get(); i++) {
                    try {
                        String tag = "late" + (i % 40);
                        ids.add(tag + ":" + client.next(tag));
                    } catch (ClosedException expected) {
                        // After close: what every call gets.
                    } catch (Throwable t) {
                        odd.add(t);
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        started.await();
        Thread.sleep(50);
        client.close();
        Thread.sleep(20);
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        assertTrue(odd.isEmpty(), odd.toString());
        assertTrue(!ids.isEmpty());
        assertEquals(ids.size(), new HashSet<>(ids).size());
        assertThrows(ClosedException.class, () -> client.next("late-after"));
        assertThrows(ClosedException.class, () -> client.next("late1"));
    }

    @Test
    void failsOverWhenANodeDiesAndKeepsIncreasing() {
        try (TestNode extra = new TestNode(store, "java-extra")) {
            try (IdMint client = new IdMint(config(extra.url(), a.url(), b.url()).steps(10, 10)
                    .backoff(Duration.ofMillis(200), Duration.ofSeconds(2)).callTimeout(Duration.ofMillis(500)).build())) {
                List<Long> ids = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    ids.add(client.next("failover"));
                }
                assertEquals("127.0.0.1:" + extra.resp, client.stats().currentNode());
                extra.kill();
                for (int i = 0; i < 100; i++) {
                    ids.add(client.next("failover"));
                }
                assertIncreasing(ids);
                assertEquals(200, new HashSet<>(ids).size());
                IdMintStats stats = client.stats();
                assertTrue(stats.failovers() >= 1, stats.toString());
                assertTrue(stats.nodeFailures().get("127.0.0.1:" + extra.resp) >= 1, stats.toString());
                assertNotEquals("127.0.0.1:" + extra.resp, stats.currentNode());
            }
        }
    }

    @Test
    void aRestartedNodeIsUsedAgain() {
        try (TestNode extra = new TestNode(store, "java-restart")) {
            try (IdMint client = new IdMint(config(extra.url()).steps(5, 5).maxWait(Duration.ofSeconds(10))
                    .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build())) {
                List<Long> ids = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    ids.add(client.next("restart"));
                }
                extra.kill();
                extra.start();
                for (int i = 0; i < 20; i++) {
                    ids.add(client.next("restart"));
                }
                assertIncreasing(ids);
            }
        }
    }

    @Test
    void noNodeIsUnavailableWithinMaxWaitNamingTheCause() {
        String dead = "redis://127.0.0.1:" + TestNode.freePort();
        try (IdMint client = new IdMint(IdMintConfig.builder(dead).maxWait(Duration.ofMillis(500))
                .backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build())) {
            long start = System.nanoTime();
            UnavailableException e = assertThrows(UnavailableException.class, () -> client.next("nowhere"));
            assertTrue(System.nanoTime() - start < 2_000_000_000L);
            assertTrue(e.getMessage().contains("Connection refused"), e.getMessage());
            assertTrue(e.isRetryable());
            assertEquals(ErrorCode.STORE_UNAVAILABLE, e.code().orElseThrow());
            assertThrows(UnavailableException.class, client::snowflake);
        }
    }

    @Test
    void aRefusedTokenIsAnAuthErrorAtOnce() {
        try (IdMint client = new IdMint(IdMintConfig.builder(a.url(), b.url()).token("wrong").build())) {
            long start = System.nanoTime();
            AuthException e = assertThrows(AuthException.class, () -> client.next("auth"));
            assertTrue(System.nanoTime() - start < 2_000_000_000L, "not after waiting out max_wait");
            assertEquals(ErrorCode.UNAUTHORIZED, e.code().orElseThrow());
            assertTrue(e.reply().startsWith("WRONGPASS"), e.reply());
        }
        try (IdMint client = new IdMint(IdMintConfig.builder(a.url()).build())) {
            assertThrows(AuthException.class, client::snowflake);
        }
    }

    @Test
    void aFullNodeIsAFailureNotAnAuthError() throws Exception {
        try (TestNode full = new TestNode(store, "java-full", "--max-connections", "1");
                java.net.Socket holder = takeTheOnlyConnection(full)) {
            try (IdMint client = new IdMint(config(full.url()).maxWait(Duration.ofMillis(500))
                    .backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build())) {
                UnavailableException e = assertThrows(UnavailableException.class, () -> client.next("full"));
                assertTrue(client.stats().nodeFailures().get("127.0.0.1:" + full.resp) >= 1, e.getMessage());
            }
            try (IdMint client = new IdMint(config(full.url(), a.url()).backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build())) {
                assertTrue(client.next("full") > 0);
            }
        }
    }

    /** The node's one connection, once the start-up check has left it. */
    private static java.net.Socket takeTheOnlyConnection(TestNode node) throws Exception {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            java.net.Socket holder = new java.net.Socket("127.0.0.1", node.resp);
            holder.getOutputStream().write(Resp.encode(List.of("AUTH", TestNode.TOKEN)));
            Object reply = Resp.read(new java.io.BufferedInputStream(holder.getInputStream()));
            if ("OK".equals(reply)) {
                return holder;
            }
            holder.close();
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the node's one connection stayed taken: " + Resp.show(reply));
            }
            Thread.sleep(50);
        }
    }

    @Test
    void theNodesLargestCountIsLearnedFromTheirRefusal() {
        try (TestNode small = new TestNode(store, "java-small", "--max-count", "50");
                IdMint client = new IdMint(config(small.url()).steps(100, 1000).build())) {
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                ids.add(client.next("maxcount"));
            }
            assertIncreasing(ids);
            IdMintStats stats = client.stats();
            assertTrue(stats.rangeIds() <= 50 * stats.ranges(), stats.toString());
            long[] flakes = client.snowflakes(120);
            assertEquals(120, flakes.length);
        }
        // Snowflakes first: the limit is learned from IDMINT.SNOWFLAKE's own refusal ("COUNT must be").
        try (TestNode small = new TestNode(store, "java-small2", "--max-count", "50");
                IdMint client = new IdMint(config(small.url()).snowflakes(64, Duration.ofMillis(100)).build())) {
            assertEquals(120, client.snowflakes(120).length);
            assertTrue(client.snowflake() > 0);
        }
    }

    @Test
    void badTagsAndCountsAreRefusedTyped() {
        try (IdMint client = new IdMint(config().build())) {
            for (String bad : List.of("", " lead", "trail ", "line\nbreak", "x".repeat(129))) {
                RefusedException e = assertThrows(RefusedException.class, () -> client.next(bad), bad);
                assertEquals(ErrorCode.INVALID_TAG, e.code().orElseThrow());
            }
            assertTrue(client.next("订单 eu/1") > 0);
            for (int n : new int[] {0, -1, 10_001}) {
                RefusedException e = assertThrows(RefusedException.class, () -> client.snowflakes(n));
                assertEquals(ErrorCode.INVALID_ARGUMENT, e.code().orElseThrow());
            }
            assertEquals(10_000, client.snowflakes(10_000).length);
        }
    }

    @Test
    void snowflakesIncreaseAndStaleBatchesAreDropped() throws Exception {
        try (IdMint client = new IdMint(config().snowflakes(64, Duration.ofMillis(20)).build())) {
            List<Long> ids = new ArrayList<>();
            for (long id : client.snowflakes(1000)) {
                ids.add(id);
            }
            ids.add(client.snowflake());
            assertIncreasing(ids);
            long batches = client.stats().snowflakeBatches();
            Thread.sleep(60);
            ids.add(client.snowflake());
            assertIncreasing(ids);
            assertEquals(batches + 1, client.stats().snowflakeBatches(), "the stale batch was asked again");
        }
    }

    @Test
    void theAsynchronousCallsServe() throws Exception {
        try (IdMint client = new IdMint(config().steps(10, 10).build())) {
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                ids.add(client.nextAsync("async").get());
            }
            assertIncreasing(ids);
            long[] flakes = client.snowflakesAsync(10).get();
            assertTrue(client.snowflakeAsync().get() > flakes[9]);
            CompletionException e = assertThrows(CompletionException.class, () -> client.nextAsync("bad\ntag").join());
            assertInstanceOf(RefusedException.class, e.getCause());
        }
    }

    @Test
    void theTagHandleDrawsTheSameSequence() {
        try (IdMint client = new IdMint(config().steps(10, 10).build())) {
            IdMint.TagIds handle = client.tag("handle");
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                ids.add(i % 2 == 0 ? handle.next() : client.next("handle"));
            }
            assertIncreasing(ids);
            client.close();
            assertThrows(ClosedException.class, handle::next);
        }
    }
}
