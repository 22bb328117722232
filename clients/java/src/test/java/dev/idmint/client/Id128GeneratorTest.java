package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The generators' guarantees: strictly increasing across threads, the counter's overflow and lead, a clock stepped back, node fields. */
class Id128GeneratorTest {
    /** A clock moved by hand; sleeping moves it. */
    static final class HandClock implements MillisClock {
        volatile long now;
        volatile long slept;

        HandClock(long now) {
            this.now = now;
        }

        @Override
        public long millis() {
            return now;
        }

        @Override
        public synchronized void sleep(long ms) {
            slept += ms;
            now += ms;
        }
    }

    /** A broken random source: the same bits every time. */
    static RandomBits fixed(long bits) {
        return () -> bits;
    }

    private static final long T = 1_764_201_600_000L;

    /** 8 threads draw at once, each appending under one lock as it gets an ID: the list is in generation order. */
    @Test
    void strictlyIncreasingAcrossEightThreadsInIssueOrder() throws Exception {
        for (Supplier<Id128> gen : List.<Supplier<Id128>>of(Uuid7Generator.create()::next, UlidGenerator.create()::next)) {
            List<Id128> issued = new ArrayList<>();
            Object lock = new Object();
            runThreads(8, () -> {
                for (int i = 0; i < 20_000; i++) {
                    synchronized (lock) {
                        issued.add(gen.get());
                    }
                }
            });
            assertEquals(160_000, issued.size());
            assertStrictlyIncreasing(issued);
        }
    }

    /** No lock around the draws: each thread's IDs increase, and no ID comes twice across threads. */
    @Test
    void racingThreadsNeverShareAnIdAndEachSeesItsOwnIncrease() throws Exception {
        Uuid7Generator gen = Uuid7Generator.create();
        List<List<Id128>> perThread = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            perThread.add(new ArrayList<>());
        }
        int[] next = {0};
        runThreads(8, () -> {
            List<Id128> mine;
            synchronized (perThread) {
                mine = perThread.get(next[0]++);
            }
            for (int i = 0; i < 100_000; i++) {
                mine.add(gen.next());
            }
        });
        Set<Id128> all = new HashSet<>();
        for (List<Id128> ids : perThread) {
            assertStrictlyIncreasing(ids);
            all.addAll(ids);
        }
        assertEquals(800_000, all.size(), "an ID was issued twice");
    }

    @Test
    void theFirstIdOfAMillisecondSeedsTheCounterBelowTwoToThe23() {
        HandClock clock = new HandClock(T);
        Uuid7Generator gen = Uuid7Generator.builder().clock(clock).random(fixed(-1L)).build();
        DecodedId128 first = gen.next().decode(0);
        assertEquals(T, first.millis());
        assertEquals((1 << 23) - 1, first.counter()); // all ones, cut to 23 bits
        assertEquals((1 << 23), gen.next().decode().counter());
        clock.now++;
        assertEquals((1 << 23) - 1, gen.next().decode().counter());
        for (int i = 0; i < 1000; i++) {
            HandClock c = new HandClock(T);
            int counter = UlidGenerator.builder().clock(c).build().next().decode().counter();
            assertTrue(counter >= 0 && counter < 1 << 23, "seed " + counter);
        }
    }

    @Test
    void counterOverflowBorrowsTheNextMillisecond() {
        for (Id128.Kind kind : Id128.Kind.values()) {
            HandClock clock = new HandClock(T);
            Id128Engine engine;
            Supplier<Id128> gen;
            if (kind == Id128.Kind.UUIDV7) {
                Uuid7Generator g = Uuid7Generator.builder().clock(clock).random(fixed(0)).build();
                engine = g.engine();
                gen = g::next;
            } else {
                UlidGenerator g = UlidGenerator.builder().clock(clock).random(fixed(0)).build();
                engine = g.engine();
                gen = g::next;
            }
            engine.restoreForTest(T, (1 << 24) - 3);
            List<Id128> ids = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ids.add(gen.get());
            }
            assertStrictlyIncreasing(ids);
            assertEquals(List.of(T, T, T + 1, T + 1), ids.stream().map(Id128::millis).toList(), kind.toString());
            assertEquals(List.of((1 << 24) - 2, (1 << 24) - 1, 0, 1),
                    ids.stream().map(id -> id.decode().counter()).toList(), kind.toString());
            assertEquals(0, clock.slept, "a borrow within the lead does not wait");
        }
    }

    @Test
    void borrowingPastTheLeadWaitsForTheClock() {
        HandClock clock = new HandClock(T);
        Uuid7Generator gen = Uuid7Generator.builder().clock(clock).random(fixed(0)).maxLeadMs(2).build();
        gen.engine().restoreForTest(T + 2, (1 << 24) - 1);
        Id128 id = gen.next();
        // T + 3 is 3 ms ahead of the clock: it was handed out once the clock reached T + 1.
        assertEquals(T + 3, id.millis());
        assertEquals(0, id.decode().counter());
        assertEquals(T + 1, clock.now);
        assertEquals(1, clock.slept);
        assertTrue(gen.next().compareTo(id) > 0);
    }

    @Test
    void aClockSteppedBackNeverRepeatsNorDecreases() {
        HandClock clock = new HandClock(T);
        UlidGenerator gen = UlidGenerator.builder().clock(clock).random(fixed(0x5555_5555_5555_5555L)).build();
        List<Id128> ids = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            ids.add(gen.next());
        }
        clock.now = T - 5_000; // stepped back 5 s
        for (int i = 0; i < 100_000; i++) {
            ids.add(gen.next());
        }
        assertEquals(T, ids.get(ids.size() - 1).millis(), "counts on from the last millisecond");
        assertEquals(0, clock.slept, "no wait while the counter lasts");
        clock.now = T + 1; // caught up
        ids.add(gen.next());
        assertEquals(T + 1, ids.get(ids.size() - 1).millis());
        assertStrictlyIncreasing(ids);
        assertEquals(ids.size(), new HashSet<>(ids).size());
    }

    @Test
    void distinctNodeFieldsNeverCollideEvenWithABrokenRandomSource() throws Exception {
        HandClock clock = new HandClock(T);
        Set<Id128> seen = new HashSet<>(); // of both kinds: the kind is part of an Id128's identity
        int made = 0;
        for (int node = 0; node < 4; node++) {
            Uuid7Generator gen = Uuid7Generator.builder().nodeBits(8).node(node).clock(clock).random(fixed(0)).build();
            UlidGenerator ulid = UlidGenerator.builder().nodeBits(8).node(node).clock(clock).random(fixed(0)).build();
            for (int i = 0; i < 1000; i++) {
                Id128 id = gen.next();
                assertEquals(node, id.decode(8).node());
                seen.add(id);
                seen.add(ulid.next());
                made += 2;
            }
        }
        // Every generator started on the same clock with the same "random" bits: only the node fields tell them apart.
        assertEquals(made, seen.size(), "two nodes made the same ID");
    }

    @Test
    void nodeSettingsAreChecked() {
        assertEquals("nodeBits", assertThrows(ConfigException.class, () -> Uuid7Generator.builder().nodeBits(25).build()).field());
        assertEquals("nodeBits", assertThrows(ConfigException.class, () -> UlidGenerator.builder().nodeBits(-1).build()).field());
        ConfigException e = assertThrows(ConfigException.class, () -> Uuid7Generator.builder().nodeBits(8).node(256).build());
        assertEquals("node", e.field());
        assertTrue(e.getMessage().contains("0..255"), e.getMessage());
        assertEquals("node", assertThrows(ConfigException.class, () -> UlidGenerator.builder().node(1).build()).field());
        assertThrows(ConfigException.class, () -> Uuid7Generator.builder().nodeBits(4).node(-1).build());
        Uuid7Generator full = Uuid7Generator.builder().nodeBits(24).node((1 << 24) - 1).build();
        assertEquals((1 << 24) - 1, full.next().decode(24).node());
        assertThrows(ConfigException.class, () -> full.next().decode(25));
    }

    @Test
    void javaUtilUuidReadsVersion7AndTheRfcVariant() {
        Uuid7Generator gen = Uuid7Generator.create();
        for (int i = 0; i < 1000; i++) {
            Id128 id = gen.next();
            UUID uuid = id.toUuid();
            assertEquals(7, uuid.version());
            assertEquals(2, uuid.variant());
            assertEquals(id.toString(), uuid.toString());
            assertEquals(id, Id128.fromUuid(UUID.fromString(id.toString())));
            assertTrue(Math.abs(id.millis() - System.currentTimeMillis()) < 10_000);
        }
        Id128FormatException e = assertThrows(Id128FormatException.class,
                () -> Id128.parseUuid7(UUID.randomUUID().toString()));
        assertTrue(e.reason().contains("version 4"), e.getMessage());
    }

    @Test
    void sortingTextsOrBytesGivesGenerationOrder() {
        for (Supplier<Id128> gen : List.<Supplier<Id128>>of(Uuid7Generator.create()::next, UlidGenerator.create()::next)) {
            List<Id128> ids = new ArrayList<>();
            for (int i = 0; i < 20_000; i++) {
                ids.add(gen.get());
            }
            List<Id128> shuffled = new ArrayList<>(ids);
            java.util.Collections.shuffle(shuffled, new java.util.Random(31));
            assertEquals(ids, shuffled.stream().sorted().toList());
            assertEquals(ids.stream().map(Id128::toUuidString).toList(),
                    shuffled.stream().map(Id128::toUuidString).sorted().toList());
            assertEquals(ids.stream().map(Id128::toUlidString).toList(),
                    shuffled.stream().map(Id128::toUlidString).sorted().toList());
            assertEquals(ids.stream().map(Id128::toHexString).toList(),
                    shuffled.stream().map(Id128::toHexString).sorted().toList());
            List<byte[]> bytes = new ArrayList<>(shuffled.stream().map(Id128::toBytes).toList());
            bytes.sort(Arrays::compareUnsigned);
            for (int i = 0; i < ids.size(); i++) {
                assertEquals(ids.get(i), Id128.fromBytes(bytes.get(i), ids.get(i).kind()));
            }
            assertEquals(ids, shuffled.stream().sorted(Comparator.comparing(Id128::toUuid, Id128GeneratorTest::unsigned)).toList());
        }
    }

    @Test
    void bytesOfTheWrongLengthAreRefused() {
        assertThrows(Id128FormatException.class, () -> Id128.fromBytes(new byte[15], Id128.Kind.ULID));
        assertThrows(Id128FormatException.class, () -> Id128.fromBytes(null, Id128.Kind.ULID));
        assertThrows(Id128FormatException.class, () -> Id128.parse(null));
        Id128FormatException e = assertThrows(Id128FormatException.class, () -> Id128.parse("x".repeat(1000)));
        assertTrue(e.getMessage().length() < 300, "a long text is cut in the message");
        assertTrue(e.getMessage().contains("36") && e.getMessage().contains("26"), e.getMessage());
    }

    @Test
    void theClientMakesThemLocally() {
        try (IdMint ids = IdMint.connect("redis://127.0.0.1:1")) { // no node: none is asked
            Id128 a = ids.uuid7();
            Id128 b = ids.uuid7();
            assertTrue(a.compareTo(b) < 0 && a.isUuid7());
            Id128 u = ids.ulid();
            assertEquals(Id128.Kind.ULID, u.kind());
            assertNotEquals(u, ids.ulid());
        }
    }

    /** UUIDs compared as unsigned 128-bit numbers (java.util.UUID's own compareTo is signed). */
    private static int unsigned(UUID a, UUID b) {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    }

    static void assertStrictlyIncreasing(List<Id128> ids) {
        for (int i = 1; i < ids.size(); i++) {
            if (ids.get(i - 1).compareTo(ids.get(i)) >= 0) {
                throw new AssertionError("not increasing at " + i + ": " + ids.get(i - 1) + " then " + ids.get(i));
            }
        }
    }

    static void runThreads(int n, Runnable body) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        Throwable[] failed = new Throwable[1];
        for (int t = 0; t < n; t++) {
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    body.run();
                } catch (Throwable e) {
                    synchronized (failed) {
                        failed[0] = e;
                    }
                }
            });
            thread.start();
            threads.add(thread);
        }
        start.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        if (failed[0] != null) {
            throw new AssertionError(failed[0]);
        }
    }
}
