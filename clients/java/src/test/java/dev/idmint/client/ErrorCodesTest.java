package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The client knows exactly the codes the nodes answer with, in their order, and reads refusals by them. */
class ErrorCodesTest {
    /** The repository's crates/idmint-core/src/error_code.rs, from clients/java (the test script passes its path). */
    private static Path errorCodeRs() {
        String javaDir = System.getProperty("idmint.java.dir", ".");
        return Path.of(javaDir).resolve("../../crates/idmint-core/src/error_code.rs").normalize();
    }

    @Test
    void theListIsErrorCodeAllOfTheServer() throws Exception {
        String source = Files.readString(errorCodeRs());
        String body = source.substring(source.indexOf("codes! {"));
        Matcher m = Pattern.compile("(?m)^\\s*[A-Za-z]+ => \"([a-z_]+)\",").matcher(body);
        List<String> server = new ArrayList<>();
        while (m.find()) {
            server.add(m.group(1));
        }
        assertTrue(server.size() > 40, "parsed " + server);
        assertEquals(server, ErrorCode.ALL);
    }

    @Test
    void refusalsAreReadByTheirCodeOrRedisWording() {
        NodeAddress node = new NodeAddress("127.0.0.1", 1, false);
        Object[][] cases = {
            {"ERR tag_exhausted tag `t` is exhausted: ...", TagExhaustedException.class, ErrorCode.TAG_EXHAUSTED},
            {"ERR period_unavailable tag `t`: the period 20261127 is used up", PeriodUnavailableException.class, ErrorCode.PERIOD_UNAVAILABLE},
            {"ERR dated tag `t` is dated: ...", DatedTagException.class, ErrorCode.DATED},
            {"ERR permuted this node hands out its IDs permuted", PermutedException.class, ErrorCode.PERMUTED},
            {"ERR too_many_tags too many tags: ...", RefusedException.class, ErrorCode.TOO_MANY_TAGS},
            {"ERR tag_quota tag quota: ...", RefusedException.class, ErrorCode.TAG_QUOTA},
            {"ERR unknown tag `t`", RefusedException.class, ErrorCode.UNKNOWN_TAG},
            {"ERR invalid tag `\\n`", RefusedException.class, ErrorCode.INVALID_TAG},
            {"ERR count must be between 1 and 50", RefusedException.class, ErrorCode.INVALID_COUNT},
            {"ERR COUNT must be between 1 and 50, got 64", RefusedException.class, ErrorCode.INVALID_COUNT},
            {"ERR syntax error", RefusedException.class, ErrorCode.INVALID_ARGUMENT},
            {"WRONGPASS invalid username-password pair", AuthException.class, ErrorCode.UNAUTHORIZED},
            {"NOAUTH Authentication required.", AuthException.class, ErrorCode.UNAUTHORIZED},
            {"NOPERM this token may not use the tag 'x'", AuthException.class, ErrorCode.FORBIDDEN},
            {"ERR AUTH <password> called without any password configured", AuthException.class, ErrorCode.UNAUTHORIZED},
        };
        for (Object[] c : cases) {
            RefusedException e = Nodes.refusal(node, Resp.Error.of((String) c[0]));
            assertEquals(c[1], e == null ? null : e.getClass(), (String) c[0]);
            assertEquals(c[2], e.code().orElseThrow(), (String) c[0]);
            assertEquals(c[0], e.reply());
        }
        // A damaged store is that node's trouble, and a retryable error any node's: not refusals.
        for (String failure : List.of("ERR store_corrupt store corrupt: malformed", "ERR max number of clients reached",
                "ERR tag_exhaustedness is not a code", "TRYAGAIN idmint is temporarily unavailable: ...")) {
            assertNull(Nodes.refusal(node, Resp.Error.of(failure)), failure);
        }
        assertEquals(50, Nodes.largestCount(Nodes.refusal(node, Resp.Error.of("ERR count must be between 1 and 50"))));
        assertEquals(50, Nodes.largestCount(Nodes.refusal(node, Resp.Error.of("ERR COUNT must be between 1 and 50, got 64"))));
    }
}
