package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The client on dated tags (made with a {@code period}): the nodes refuse them ranges, since a
 * range kept in memory would outlive its period, so the client takes each ID from a node; the
 * IDs are the tag's dated counters, in order, and a plain tag beside it is still served from ranges.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DatedTest {
    private Path dir;
    private TestNode node;

    @BeforeAll
    void start() throws Exception {
        dir = TestNode.tempDir("idmint-java-dated-");
        node = new TestNode("sqlite://" + dir + "/ids.db", "java-dated");
        HttpClient http = HttpClient.newHttpClient();
        for (Object[] tag : new Object[][] {{"orders", 6}, {"tickets", 6}, {"tiny", 1}}) {
            String body = "{\"period\": \"day\", \"time_zone\": \"UTC\", \"digits\": " + tag[1] + ", \"step\": 5}";
            HttpRequest put = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.http + "/v1/tags/" + tag[0]))
                    .header("Authorization", "Bearer " + TestNode.TOKEN)
                    .header("Content-Type", "application/json")
                    .PUT(HttpRequest.BodyPublishers.ofString(body))
                    .build();
            HttpResponse<String> answer = http.send(put, HttpResponse.BodyHandlers.ofString());
            assertEquals(201, answer.statusCode(), answer.body());
        }
    }

    @AfterAll
    void stop() {
        if (node != null) {
            node.kill();
        }
        TestNode.deleteTree(dir);
    }

    private static long today() {
        return Long.parseLong(LocalDate.now(ZoneOffset.UTC).format(DateTimeFormatter.BASIC_ISO_DATE));
    }

    private IdMint client() {
        return new IdMint(IdMintConfig.builder(node.url()).token(TestNode.TOKEN).maxWait(java.time.Duration.ofSeconds(5)).build());
    }

    private static void check(List<Long> ids, long firstCounter) {
        long before = today();
        Set<Long> days = new HashSet<>();
        for (long id : ids) {
            days.add(id / 1_000_000);
        }
        assertTrue(new HashSet<>(List.of(before, today())).containsAll(days), ids.toString());
        if (days.size() == 1) {
            for (int i = 0; i < ids.size(); i++) {
                assertEquals(firstCounter + i, ids.get(i) % 1_000_000, ids.toString());
            }
        }
    }

    @Test
    void aDatedTagIsServedOneIdAtATime() {
        try (IdMint client = client()) {
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                ids.add(client.next("orders"));
            }
            check(ids, 1);
            List<Long> plain = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                plain.add(client.next("plain"));
            }
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L), plain);
            assertTrue(client.stats().ranges() >= 1);
        }
    }

    @Test
    void aUsedUpPeriodIsRefusedAtOnceAndBlamesNoNode() {
        try (IdMint client = client()) {
            for (int i = 1; i <= 9; i++) {
                assertEquals(i, client.next("tiny") % 10);
            }
            long started = System.nanoTime();
            PeriodUnavailableException e = assertThrows(PeriodUnavailableException.class, () -> client.next("tiny"));
            assertTrue(System.nanoTime() - started < 2_000_000_000L);
            assertEquals(ErrorCode.PERIOD_UNAVAILABLE, e.code().orElseThrow());
            started = System.nanoTime();
            client.next("plain2");
            assertTrue(System.nanoTime() - started < 400_000_000L, "the node was avoided");
            assertEquals(0L, client.stats().nodeFailures().get("127.0.0.1:" + node.resp));
        }
    }

    @Test
    void asynchronously() throws Exception {
        try (IdMint client = client()) {
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                ids.add(client.nextAsync("tickets").get());
            }
            check(ids, 1);
        }
    }
}
