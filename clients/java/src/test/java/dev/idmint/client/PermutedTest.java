package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The client on nodes that hand out permuted IDs ({@code serve --permutation-key-file}):
 * snowflakes come in the node's order, every one handed out; segment IDs are refused with the reason.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PermutedTest {
    private Path dir;
    private TestNode node;

    @BeforeAll
    void start() throws Exception {
        dir = TestNode.tempDir("idmint-java-permuted-");
        Path key = dir.resolve("ids.key");
        Process p = new ProcessBuilder(TestNode.binary(), "permutation-key")
                .redirectOutput(key.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        assertEquals(0, p.waitFor());
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        node = new TestNode("sqlite://" + dir + File.separator + "ids.db", "java-permuted", "--permutation-key-file", key.toString());
    }

    @AfterAll
    void stop() {
        if (node != null) {
            node.kill();
        }
        TestNode.deleteTree(dir);
    }

    @Test
    void snowflakesAreAllHandedOutInTheNodesOrder() {
        for (int batch : new int[] {1, 64}) {
            try (IdMint client = new IdMint(IdMintConfig.builder(node.url()).token(TestNode.TOKEN)
                    .snowflakes(batch, java.time.Duration.ofMillis(100)).build())) {
                List<Long> ids = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    for (long id : client.snowflakes(3)) {
                        ids.add(id);
                    }
                }
                assertEquals(300, new HashSet<>(ids).size());
                int descents = 0;
                for (int i = 1; i < ids.size(); i++) {
                    descents += ids.get(i) < ids.get(i - 1) ? 1 : 0;
                }
                assertTrue(descents > 50, "permuted IDs come unordered: " + descents + " descents");
            }
        }
    }

    @Test
    void segmentIdsAreRefusedWithTheReason() {
        try (IdMint client = new IdMint(IdMintConfig.builder(node.url()).token(TestNode.TOKEN)
                .maxWait(java.time.Duration.ofSeconds(10)).build())) {
            long started = System.nanoTime();
            PermutedException e = assertThrows(PermutedException.class, () -> client.next("orders"));
            assertTrue(System.nanoTime() - started < 5_000_000_000L);
            assertTrue(e.getMessage().contains("permuted") && e.getMessage().contains("IDMINT.NEXT"), e.getMessage());
            assertEquals(ErrorCode.PERMUTED, e.code().orElseThrow());
            assertTrue(client.snowflake() > 0, "snowflakes are still served");
        }
    }
}
