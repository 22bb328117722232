package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** IdForm writes and reads IDs as idmint-core's form.rs does: its own test vectors, and a node's FORMAT replies. */
class FormsTest {
    private static final Radix[] ALL = {Radix.DECIMAL, Radix.BASE62, Radix.BASE36, Radix.BASE32};

    @Test
    void fullWidthsHoldEveryId() {
        int[] widths = {19, 11, 13, 13};
        for (int i = 0; i < ALL.length; i++) {
            assertEquals(widths[i], ALL[i].fullWidth());
            IdForm form = IdForm.of(ALL[i]);
            assertEquals(widths[i], form.encode(Long.MAX_VALUE).length());
            assertEquals(Long.MAX_VALUE, form.decode(form.encode(Long.MAX_VALUE)));
        }
    }

    @Test
    void formRsKnownValues() {
        assertEquals("0000000000z", IdForm.of(Radix.BASE62).encode(61));
        assertEquals("z", IdForm.of(Radix.BASE36).withWidth(0).encode(35));
        IdForm ulid = IdForm.of(Radix.BASE32).withWidth(0);
        assertEquals("10", ulid.encode(32));
        assertEquals(32, ulid.decode("1o"));
        assertEquals(33, ulid.decode("i-L"));
        assertThrows(IllegalArgumentException.class, () -> ulid.decode("1U"));
        IdForm order = IdForm.of(Radix.DECIMAL).withPrefix("ord_");
        assertEquals("ord_0000000000000000042", order.encode(42));
        assertEquals(42, order.decode("ord_42"));
        assertEquals("base62 prefix=ord_ width=12", IdForm.of("62", "ord_", 12).toString());
    }

    @Test
    void badTextIsRefusedWithAReason() {
        IdForm form = IdForm.of(Radix.BASE62).withPrefix("u_");
        assertTrue(message(form, "x_1").contains("prefix `u_`"));
        assertTrue(message(form, "u_").contains("no base62 digits"));
        assertTrue(message(form, "u_1!").contains("character 4"));
        assertTrue(message(form, "u_zzzzzzzzzzzz").contains("above the largest ID"));
        assertThrows(IllegalArgumentException.class, () -> IdForm.of(Radix.BASE62).withPrefix("é"));
        assertThrows(IllegalArgumentException.class, () -> IdForm.of(Radix.BASE62).withPrefix("x".repeat(17)));
        assertThrows(IllegalArgumentException.class, () -> IdForm.of(Radix.BASE62).withWidth(33));
        assertThrows(IllegalArgumentException.class, () -> Radix.parse("base64"));
        assertThrows(IllegalArgumentException.class, () -> IdForm.DECIMAL.encode(-1));
        assertEquals(Radix.BASE32, Radix.parse(" ULID "));
    }

    private static String message(IdForm form, String text) {
        return assertThrows(IllegalArgumentException.class, () -> form.decode(text)).getMessage();
    }

    @Test
    void textSortsAsNumbersAtFullWidth() {
        Random random = new Random(7);
        for (Radix radix : ALL) {
            IdForm form = IdForm.of(radix);
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                ids.add(random.nextLong() & Long.MAX_VALUE);
            }
            ids.sort(null);
            for (int i = 1; i < ids.size(); i++) {
                assertTrue(form.encode(ids.get(i - 1)).compareTo(form.encode(ids.get(i))) <= 0);
            }
        }
    }

    /** A node writes its IDs in each form (IDMINT.FORMAT): IdForm reads them back and writes them the same. */
    @Test
    void theNodesFormsAgree() throws Exception {
        Path dir = TestNode.tempDir("idmint-java-forms-");
        try (TestNode node = new TestNode("sqlite://" + dir + "/ids.db", "java-forms")) {
            String[][] forms = {{"DECIMAL", "decimal"}, {"BASE62", "base62"}, {"BASE36", "base36"}, {"BASE32", "base32"}};
            for (String[] f : forms) {
                for (String[] extra : new String[][] {{}, {"PREFIX", "ord_"}, {"PREFIX", "x-", "WIDTH", "0"}, {"WIDTH", "25"}}) {
                    List<Object> args = new ArrayList<>(List.of("IDMINT.FORMAT", f[0]));
                    args.addAll(List.of(extra));
                    String prefix = extra.length >= 2 && extra[0].equals("PREFIX") ? extra[1] : null;
                    Integer width = extra.length >= 2 && extra[extra.length - 2].equals("WIDTH") ? Integer.valueOf(extra[extra.length - 1]) : null;
                    IdForm form = IdForm.of(f[1], prefix, width);
                    List<?> pair = (List<?>) node.commandPair(args, List.of("IDMINT.SNOWFLAKE", "COUNT", "3"));
                    for (Object text : (List<?>) pair.get(1)) {
                        String s = text instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(text);
                        long id = form.decode(s);
                        assertTrue(id > 0);
                        assertEquals(s, form.encode(id), form + " " + s);
                    }
                }
            }
        } finally {
            TestNode.deleteTree(dir);
        }
    }
}
