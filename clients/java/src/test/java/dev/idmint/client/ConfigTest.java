package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** Settings that cannot work are refused, each naming its field, before any connection. */
class ConfigTest {
    private static IdMintConfig.Builder base() {
        return IdMintConfig.builder("redis://127.0.0.1:6379");
    }

    @Test
    void eachBadSettingIsNamed() {
        Map<String, Supplier<IdMintConfig.Builder>> cases = Map.ofEntries(
                Map.entry("nodes", () -> IdMintConfig.builder(List.of())),
                Map.entry("token", () -> base().token(" ")),
                Map.entry("minStep", () -> base().steps(0, 10)),
                Map.entry("maxStep", () -> base().steps(20, 10)),
                Map.entry("prefetchAt", () -> base().prefetchAt(1.5)),
                Map.entry("maxWait", () -> base().maxWait(Duration.ZERO)),
                Map.entry("callTimeout", () -> base().callTimeout(Duration.ofMillis(-1))),
                Map.entry("maxBackoff", () -> base().backoff(Duration.ofSeconds(2), Duration.ofSeconds(1))),
                Map.entry("snowflakeBatch", () -> base().snowflakes(0, Duration.ofMillis(5))),
                Map.entry("snowflakeMaxAge", () -> base().snowflakes(5, Duration.ZERO)));
        cases.forEach((field, config) -> {
            ConfigException e = assertThrows(ConfigException.class, () -> config.get().build(), field);
            assertEquals(field, e.field());
            assertTrue(e.getMessage().contains(field), e.getMessage());
        });
        assertTrue(Double.isNaN(Double.NaN));
        assertThrows(ConfigException.class, () -> base().prefetchAt(Double.NaN).build());
    }

    @Test
    void nodeAddressesAreCheckedAndTheTokenStaysHidden() {
        for (String bad : List.of("http://127.0.0.1:1", "127.0.0.1:6379", "redis://user:pw@127.0.0.1:1",
                "redis://127.0.0.1:1/3", "redis://", "redis://127.0.0.1:1?x=1")) {
            ConfigException e = assertThrows(ConfigException.class, () -> IdMintConfig.builder(bad).build(), bad);
            assertEquals("nodes", e.field());
        }
        ConfigException none = assertThrows(ConfigException.class, () -> IdMintConfig.builder("redis://h", null).build());
        assertEquals("nodes", none.field());
        assertEquals(new NodeAddress("::1", 6380, true), NodeAddress.parse("rediss://[::1]:6380"));
        assertEquals(new NodeAddress("h", 6379, false), NodeAddress.parse("redis://h"));
        IdMintConfig config = base().token("s3cret").build();
        assertFalse(config.toString().contains("s3cret"), config.toString());
        ConfigException ca = assertThrows(ConfigException.class, () -> new IdMint(base().caPem("not a pem").build()));
        assertEquals("caPem", ca.field());
    }

    @Test
    void defaultsAreTheRustCratesOnes() {
        IdMintConfig c = base().build();
        assertEquals(100, c.minStep());
        assertEquals(10_000, c.maxStep());
        assertEquals(Duration.ofSeconds(10), c.targetLifetime());
        assertEquals(0.2, c.prefetchAt());
        assertEquals(Duration.ofSeconds(3), c.maxWait());
        assertEquals(Duration.ofSeconds(1), c.callTimeout());
        assertEquals(Duration.ofSeconds(1), c.backoff());
        assertEquals(Duration.ofSeconds(30), c.maxBackoff());
        assertEquals(64, c.snowflakeBatch());
        assertEquals(Duration.ofMillis(100), c.snowflakeMaxAge());
    }
}
