package dev.idmint.client.conformance;

import dev.idmint.client.AuthException;
import dev.idmint.client.ClosedException;
import dev.idmint.client.DatedTagException;
import dev.idmint.client.IdMint;
import dev.idmint.client.IdMintConfig;
import dev.idmint.client.PeriodUnavailableException;
import dev.idmint.client.PermutedException;
import dev.idmint.client.TagExhaustedException;
import dev.idmint.client.UnavailableException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The client libraries' conformance suite ({@code clients/conformance}), played with this
 * library: one dynamic test per scenario of the conductor at {@code IDMINT_CONFORMANCE_URL}, named
 * by it. The conductor starts and kills the nodes; this runner plays the clients' steps and the
 * checks, and sends the others to the conductor as they are.
 */
class ConformanceTest {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @TestFactory
    Stream<DynamicTest> scenarios() throws Exception {
        String url = System.getenv("IDMINT_CONFORMANCE_URL");
        if (url == null || url.isBlank()) {
            throw new IllegalStateException("set IDMINT_CONFORMANCE_URL to the conformance conductor (clients/conformance/run sets it)");
        }
        Conductor conductor = new Conductor(url.replaceAll("/+$", ""));
        List<?> scenarios = (List<?>) conductor.get("/scenarios");
        List<DynamicTest> tests = new ArrayList<>();
        for (Object s : scenarios) {
            Map<?, ?> scenario = (Map<?, ?>) s;
            String name = (String) scenario.get("name");
            tests.add(DynamicTest.dynamicTest(name, () -> new Play(conductor, scenario).run()));
        }
        return tests.stream();
    }

    /** The conductor's HTTP API. */
    record Conductor(String url) {
        Object get(String path) throws Exception {
            return send(HttpRequest.newBuilder(URI.create(url + path)).GET());
        }

        Object post(String path, Object body) throws Exception {
            return send(HttpRequest.newBuilder(URI.create(url + path))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(Json.write(body))));
        }

        private Object send(HttpRequest.Builder request) throws Exception {
            HttpResponse<String> answer = HTTP.send(request.timeout(Duration.ofSeconds(120)).build(),
                    HttpResponse.BodyHandlers.ofString());
            Object body = answer.body().isBlank() ? null : Json.parse(answer.body());
            if (answer.statusCode() >= 400) {
                Object why = body instanceof Map<?, ?> m ? m.get("error") : answer.body();
                throw new AssertionError("the conductor refused: " + why);
            }
            return body;
        }
    }

    /** One scenario played. */
    private static final class Play {
        private final Conductor conductor;
        private final Map<?, ?> scenario;
        private final String name;
        private final Map<String, IdMint> clients = new LinkedHashMap<>();
        private final Map<String, List<Long>> lists = new LinkedHashMap<>();
        private List<?> nodes;
        private Map<?, ?> tokens;
        /** The run's own certificate authority, when a node serves TLS. */
        private String caPem;

        Play(Conductor conductor, Map<?, ?> scenario) {
            this.conductor = conductor;
            this.scenario = scenario;
            this.name = (String) scenario.get("name");
        }

        void run() throws Exception {
            Map<?, ?> setup = (Map<?, ?>) conductor.post("/start", Map.of("scenario", name));
            try {
                nodes = (List<?>) setup.get("nodes");
                tokens = (Map<?, ?>) setup.get("tokens");
                caPem = (String) setup.get("ca_pem");
                List<?> steps = (List<?>) scenario.get("steps");
                for (int i = 0; i < steps.size(); i++) {
                    Map<?, ?> step = (Map<?, ?>) steps.get(i);
                    try {
                        play(step);
                    } catch (Throwable e) {
                        AssertionError failed = new AssertionError("scenario " + name + ", step " + (i + 1) + " "
                                + Json.write(step) + ": " + e.getClass().getSimpleName() + ": " + e.getMessage(), e);
                        throw failed;
                    }
                }
            } finally {
                for (IdMint client : clients.values()) {
                    client.close();
                }
                conductor.post("/stop", Map.of("scenario", name));
            }
        }

        private void play(Map<?, ?> step) throws Exception {
            String op = (String) step.get("op");
            switch (op) {
                case "client" -> clients.put((String) step.get("name"), client(step));
                case "take" -> take(step);
                case "fail" -> fail(step);
                case "close" -> client(step.get("client")).close();
                case "sleep" -> Thread.sleep(number(step.get("ms")));
                case "check" -> check(step);
                default -> conductor.post("/act", step);
            }
        }

        private IdMint client(Object name) {
            IdMint client = clients.get((String) name);
            if (client == null) {
                throw new AssertionError("no client `" + name + "`");
            }
            return client;
        }

        private IdMint client(Map<?, ?> step) {
            List<String> urls = new ArrayList<>();
            for (Object i : (List<?>) step.get("nodes")) {
                urls.add((String) nodes.get((int) number(i)));
            }
            Map<?, ?> c = step.get("config") instanceof Map<?, ?> m ? m : Map.of();
            IdMintConfig defaults = IdMintConfig.builder(urls).build();
            IdMintConfig.Builder b = IdMintConfig.builder(urls);
            if (step.get("token") != null) {
                b.token((String) tokens.get(step.get("token")));
            }
            if (Boolean.TRUE.equals(step.get("ca"))) {
                if (caPem == null) {
                    throw new AssertionError("the step asks for the CA, and the conductor gave none");
                }
                b.caPem(caPem);
            }
            b.steps(c.containsKey("min_step") ? number(c.get("min_step")) : defaults.minStep(),
                    c.containsKey("max_step") ? number(c.get("max_step")) : defaults.maxStep());
            b.targetLifetime(millis(c, "target_lifetime_ms", defaults.targetLifetime()));
            if (c.containsKey("prefetch_at")) {
                b.prefetchAt(((Number) c.get("prefetch_at")).doubleValue());
            }
            b.maxWait(millis(c, "max_wait_ms", defaults.maxWait()));
            b.callTimeout(millis(c, "call_timeout_ms", defaults.callTimeout()));
            b.backoff(millis(c, "backoff_ms", defaults.backoff()), millis(c, "max_backoff_ms", defaults.maxBackoff()));
            b.snowflakes(c.containsKey("snowflake_batch") ? (int) number(c.get("snowflake_batch")) : defaults.snowflakeBatch(),
                    millis(c, "snowflake_max_age_ms", defaults.snowflakeMaxAge()));
            return new IdMint(b.build());
        }

        /** One call of the step's kind: the IDs it handed out. */
        private static long[] call(IdMint client, Map<?, ?> step) {
            String kind = (String) step.get("kind");
            return switch (kind) {
                case "segment" -> new long[] {client.next((String) step.get("tag"))};
                case "snowflake" -> new long[] {client.snowflake()};
                case "snowflakes" -> client.snowflakes((int) number(step.get("batch")));
                default -> throw new AssertionError("unknown kind `" + kind + "`");
            };
        }

        private void take(Map<?, ?> step) throws InterruptedException {
            IdMint client = client(step.get("client"));
            List<Long> into = lists.computeIfAbsent((String) step.get("into"), k -> new ArrayList<>());
            long count = number(step.get("count"));
            long sleep = step.containsKey("sleep_ms") ? number(step.get("sleep_ms")) : 0;
            long calls = "snowflakes".equals(step.get("kind")) ? count / number(step.get("batch")) : count;
            for (long i = 0; i < calls; i++) {
                for (long id : call(client, step)) {
                    into.add(id);
                }
                if (sleep > 0) {
                    Thread.sleep(sleep);
                }
            }
        }

        private void fail(Map<?, ?> step) {
            IdMint client = client(step.get("client"));
            String expected = (String) step.get("error");
            long started = System.nanoTime();
            String got;
            String message;
            try {
                long[] ids = call(client, step);
                throw new AssertionError("expected the error " + expected + ", got the IDs " + java.util.Arrays.toString(ids));
            } catch (RuntimeException e) {
                got = category(e);
                message = e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            if (!expected.equals(got)) {
                throw new AssertionError("expected the error " + expected + ", got " + message);
            }
            if (step.containsKey("within_ms") && tookMs > number(step.get("within_ms"))) {
                throw new AssertionError("the error " + expected + " came after " + tookMs + " ms, not within "
                        + step.get("within_ms") + " ms: " + message);
            }
        }

        /** The suite's name of an error's kind. */
        private static String category(RuntimeException e) {
            if (e instanceof UnavailableException) {
                return "unavailable";
            } else if (e instanceof TagExhaustedException) {
                return "tag_exhausted";
            } else if (e instanceof PeriodUnavailableException) {
                return "period_unavailable";
            } else if (e instanceof PermutedException) {
                return "permuted";
            } else if (e instanceof DatedTagException) {
                return "dated";
            } else if (e instanceof AuthException) {
                return "auth";
            } else if (e instanceof ClosedException) {
                return "closed";
            }
            return "other";
        }

        private List<Long> list(Object name) {
            List<Long> list = lists.get((String) name);
            if (list == null) {
                throw new AssertionError("no list `" + name + "`");
            }
            return list;
        }

        private List<Long> joined(Object names) {
            List<Long> all = new ArrayList<>();
            for (Object n : (List<?>) names) {
                all.addAll(list(n));
            }
            return all;
        }

        private void check(Map<?, ?> step) {
            if (step.containsKey("unique")) {
                List<Long> all = joined(step.get("unique"));
                Set<Long> seen = new HashSet<>();
                for (long id : all) {
                    if (!seen.add(id)) {
                        throw new AssertionError("unique " + step.get("unique") + ": " + id + " twice");
                    }
                }
            }
            if (step.containsKey("increasing")) {
                List<Long> all = joined(step.get("increasing"));
                for (int i = 1; i < all.size(); i++) {
                    if (all.get(i) <= all.get(i - 1)) {
                        throw new AssertionError("increasing " + step.get("increasing") + ": " + all.get(i - 1)
                                + " then " + all.get(i) + " at " + i);
                    }
                }
            }
            if (step.get("count") instanceof Map<?, ?> count) {
                int size = list(count.get("list")).size();
                if (size != number(count.get("is"))) {
                    throw new AssertionError("count of " + count.get("list") + ": " + size + ", not " + count.get("is"));
                }
            }
            if (step.get("follows") instanceof Map<?, ?> follows) {
                List<Long> b = list(follows.get("list"));
                List<Long> a = list(follows.get("after"));
                if (a.isEmpty() || b.isEmpty() || b.get(0) != a.get(a.size() - 1) + 1) {
                    throw new AssertionError(follows.get("list") + " does not follow " + follows.get("after") + ": "
                            + (a.isEmpty() ? "[]" : a.get(a.size() - 1)) + " then " + (b.isEmpty() ? "[]" : b.get(0)));
                }
            }
            if (step.get("dated") instanceof Map<?, ?> dated) {
                checkDated(list(dated.get("list")), (int) number(dated.get("digits")), number(dated.get("days")));
            }
        }

        private static void checkDated(List<Long> ids, int digits, long days) {
            long scale = 1;
            for (int i = 0; i < digits; i++) {
                scale *= 10;
            }
            TreeSet<Long> dates = new TreeSet<>();
            long lastDate = 0;
            long lastCounter = 0;
            for (long id : ids) {
                long date = id / scale;
                long counter = id % scale;
                if (counter < 1 || date < 19000101 || date > 99991231) {
                    throw new AssertionError("dated: " + id + " is not yyyymmdd·10^" + digits + " + counter");
                }
                if (date < lastDate) {
                    throw new AssertionError("dated: the date went back at " + id);
                }
                if (date == lastDate && counter <= lastCounter) {
                    throw new AssertionError("dated: the counter did not increase at " + id);
                }
                lastDate = date;
                lastCounter = counter;
                dates.add(date);
            }
            if (dates.size() != days) {
                throw new AssertionError("dated: " + dates.size() + " dates " + dates + ", not " + days);
            }
        }

        private static long number(Object value) {
            return ((Number) value).longValue();
        }

        private static Duration millis(Map<?, ?> config, String key, Duration otherwise) {
            return config.containsKey(key) ? Duration.ofMillis(number(config.get(key))) : otherwise;
        }
    }
}
