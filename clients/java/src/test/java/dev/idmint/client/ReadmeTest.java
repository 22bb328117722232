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
        Path readme = Path.of(System.getProperty("idmint.java.dir", ".")).resolve("README.md");
        String text = Files.readString(readme);
        int marker = text.indexOf(MARKER);
        assertTrue(marker >= 0, "the README has no quick start marked " + MARKER);
        int open = text.indexOf("```java\n", marker);
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
}
