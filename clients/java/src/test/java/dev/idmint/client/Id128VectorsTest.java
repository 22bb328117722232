package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idmint.client.conformance.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The cross-language vectors (clients/conformance/id128_vectors.json): every case composed, rendered and read back exactly. */
class Id128VectorsTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> vectors() throws Exception {
        Path file = Path.of(System.getProperty("idmint.java.dir", "."), "..", "conformance", "id128_vectors.json");
        return (Map<String, Object>) Json.parse(Files.readString(file));
    }

    private static Id128.Kind kind(String label) {
        for (Id128.Kind k : Id128.Kind.values()) {
            if (k.label().equals(label)) {
                return k;
            }
        }
        throw new AssertionError("unknown kind " + label);
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyCaseComposesRendersAndParsesBack() throws Exception {
        List<Map<String, Object>> cases = (List<Map<String, Object>>) vectors().get("cases");
        assertTrue(cases.size() >= 32, "cases: " + cases.size());
        for (Map<String, Object> c : cases) {
            Id128.Kind kind = kind((String) c.get("kind"));
            long ms = (Long) c.get("ms");
            long counter = (Long) c.get("counter");
            int nodeBits = ((Long) c.get("node_bits")).intValue();
            long node = (Long) c.get("node");
            long random = Long.parseUnsignedLong((String) c.get("random_hex"), 16);
            Id128 id = Id128Layout.compose(kind, ms, counter, nodeBits, node, random);
            String what = c.toString();
            assertEquals(c.get("uuid"), id.toUuidString(), what);
            assertEquals(c.get("hex"), id.toHexString(), what);
            assertEquals(c.get("ulid"), id.toUlidString(), what);
            assertEquals(c.get("bytes_hex"), HexFormat.of().formatHex(id.toBytes()), what);
            assertEquals(kind == Id128.Kind.UUIDV7 ? c.get("uuid") : c.get("ulid"), id.toString(), what);
            assertEquals(c.get("uuid"), id.toUuid().toString(), what);

            // Each text reads back as the same bits; the form says the kind.
            assertEquals(id.withKind(Id128.Kind.UUIDV7), Id128.parse((String) c.get("uuid")), what);
            assertEquals(id.withKind(Id128.Kind.UUIDV7), Id128.parse((String) c.get("hex")), what);
            assertEquals(id.withKind(Id128.Kind.ULID), Id128.parse((String) c.get("ulid")), what);
            assertEquals(id, Id128.parse((String) c.get("hex"), kind), what);
            assertEquals(id, Id128.fromBytes(HexFormat.of().parseHex((String) c.get("bytes_hex")), kind), what);
            assertEquals(id.withKind(Id128.Kind.UUIDV7), Id128.fromUuid(UUID.fromString((String) c.get("uuid"))), what);

            DecodedId128 d = id.decode(nodeBits);
            assertEquals(kind, d.kind(), what);
            assertEquals(ms, d.millis(), what);
            assertEquals(counter, d.counter(), what);
            assertEquals(node, d.node(), what);
            assertEquals(nodeBits, d.nodeBits(), what);
            if (kind == Id128.Kind.UUIDV7) {
                assertEquals(7, d.version(), what);
                assertEquals(2, d.variant(), what);
                assertEquals(7, id.toUuid().version(), what);
                assertEquals(2, id.toUuid().variant(), what);
                assertEquals(id, Id128.parseUuid7((String) c.get("uuid")), what);
            } else {
                assertEquals(-1, d.version(), what);
                assertEquals(-1, d.variant(), what);
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void refusedTextsAreRefusedWithAReason() throws Exception {
        List<String> refused = (List<String>) vectors().get("refused");
        assertTrue(refused.size() >= 16);
        for (String text : refused) {
            Id128FormatException e = assertThrows(Id128FormatException.class, () -> Id128.parse(text), text);
            assertEquals(text, e.text());
            assertFalse(e.reason().isEmpty());
            assertTrue(e.getMessage().startsWith("not a 128-bit ID"), e.getMessage());
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void acceptedTextsReadInAnyCase() throws Exception {
        for (Map<String, Object> a : (List<Map<String, Object>>) vectors().get("accepted")) {
            assertEquals(a.get("hex"), Id128.parse((String) a.get("text")).toHexString(), a.toString());
        }
    }
}
