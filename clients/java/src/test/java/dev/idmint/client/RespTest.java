package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The RESP2 codec: what it writes, what it reads, what it refuses. */
class RespTest {
    private static Object read(String wire) throws IOException {
        return Resp.read(new ByteArrayInputStream(wire.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void commandsAreArraysOfBulkStrings() {
        assertEquals("*3\r\n$12\r\nIDMINT.RANGE\r\n$6\r\n订单\r\n$3\r\n100\r\n",
                new String(Resp.encode(List.of("IDMINT.RANGE", "订单", 100L)), StandardCharsets.UTF_8));
    }

    @Test
    void everyReplyKindIsRead() throws IOException {
        assertEquals("OK", read("+OK\r\n"));
        assertEquals(new Resp.Error("WRONGPASS", "invalid username-password pair"), read("-WRONGPASS invalid username-password pair\r\n"));
        assertEquals(new Resp.Error("ERR", "tag_exhausted tag `t` is exhausted"), read("-ERR tag_exhausted tag `t` is exhausted\r\n"));
        assertEquals(42L, read(":42\r\n"));
        assertEquals(-7L, read(":-7\r\n"));
        assertEquals(Long.MAX_VALUE, read(":9223372036854775807\r\n"));
        assertEquals(Long.MIN_VALUE, read(":-9223372036854775808\r\n"));
        // IDs are unsigned in the protocol: read, to be refused as IDs by the client.
        assertEquals(new BigInteger("9223372036854775808"), read(":9223372036854775808\r\n"));
        assertEquals(new BigInteger("18446744073709551615"), read(":18446744073709551615\r\n"));
        assertArrayEquals("a\r\nb".getBytes(StandardCharsets.UTF_8), (byte[]) read("$4\r\na\r\nb\r\n"));
        assertNull(read("$-1\r\n"));
        assertNull(read("*-1\r\n"));
        assertEquals(List.of(1L, 2L), read("*2\r\n:1\r\n:2\r\n"));
        assertEquals(List.of(List.of(), "x"), read("*2\r\n*0\r\n+x\r\n"));
    }

    @Test
    void brokenRepliesAreProtocolErrors() {
        for (String bad : List.of(":18446744073709551616\r\n", ":-9223372036854775809\r\n", ":1x\r\n", ":\r\n",
                "$5\r\nabc\r\n", "$3\r\nabcXY", "?what\r\n", "+OK\rX", "*99999999999\r\n", "$" + (Resp.MAX_BULK + 1) + "\r\n",
                "*1\r\n".repeat(Resp.MAX_DEPTH + 1) + ":1\r\n")) {
            IOException e = assertThrows(IOException.class, () -> read(bad), bad);
            if (!(e instanceof Resp.ProtocolException) && !(e instanceof EOFException)) {
                throw new AssertionError(bad + ": " + e);
            }
        }
        assertThrows(EOFException.class, () -> read(""));
        assertThrows(EOFException.class, () -> read("*2\r\n:1\r\n"));
    }
}
