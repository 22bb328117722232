package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The README's quick start, compiled and run as written (the JDK's source launcher) against a real node. */
class ReadmeTest {
    private static final String MARKER = "<!-- quick start: QuickStart.java -->";

    static String quickStart() throws Exception {
        return block(MARKER);
    }

    /** The Java block after {@code marker} in the README. */
    static String block(String marker) throws Exception {
        Path readme = Path.of(System.getProperty("idmint.java.dir", ".")).resolve("README.md");
        String text = Files.readString(readme);
        int at = text.indexOf(marker);
        assertTrue(at >= 0, "the README has no block marked " + marker);
        int open = text.indexOf("```java\n", at);
        int close = text.indexOf("\n```", open + 8);
        return text.substring(open + 8, close + 1);
    }

    @Test
    void theQuickStartRunsAsWritten() throws Exception {
        Path dir = TestNode.tempDir("idmint-java-readme-");
        try (TestNode node = new TestNode("sqlite://" + dir + "/ids.db", "java-readme")) {
            Path program = dir.resolve("QuickStart.java");
            Files.writeString(program, quickStart());
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            // The library as built (its jar here, Maven's target/classes there): what a user puts on -cp.
            String library = Path.of(IdMint.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            ProcessBuilder run = new ProcessBuilder(java, "-cp", library,
                    program.toString(), node.url()).redirectErrorStream(true);
            run.environment().put("IDMINT_TOKEN", TestNode.TOKEN);
            Process p = run.start();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the quick start did not end");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertEquals(0, p.exitValue(), out);
            String[] fields = out.split(" ");
            assertEquals(4, fields.length, out);
            long orderId = Long.parseLong(fields[0]);
            assertTrue(orderId > 0 && Long.parseLong(fields[1]) > 0, out);
            assertEquals("100", fields[2]);
            assertEquals(orderId, IdForm.of(Radix.BASE62).withPrefix("ord_").decode(fields[3]));
        } finally {
            TestNode.deleteTree(dir);
        }
    }

    /** The "UUIDv7 and ULID" example, compiled and run as written: it needs no node. */
    @Test
    void theId128ExampleRunsAsWritten() throws Exception {
        Path dir = TestNode.tempDir("idmint-java-readme128-");
        try {
            Path program = dir.resolve("Ids128.java");
            Files.writeString(program, block("<!-- id128 example: Ids128.java -->"));
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String library = Path.of(IdMint.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            Process p = new ProcessBuilder(java, "-cp", library, program.toString()).redirectErrorStream(true).start();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the example did not end");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertEquals(0, p.exitValue(), out);
            String[] fields = out.split(" ");
            assertEquals(5, fields.length, out);
            assertTrue(Id128.parseUuid7(fields[0]).isUuid7(), out);
            assertEquals("7", fields[1]);
            assertEquals(Id128.Kind.ULID, Id128.parse(fields[2]).kind(), out);
            assertEquals(26, fields[2].length());
            assertEquals("true", fields[3]);
            assertEquals("42", fields[4]);
        } finally {
            TestNode.deleteTree(dir);
        }
    }
}
