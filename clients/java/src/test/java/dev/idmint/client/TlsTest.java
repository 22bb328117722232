package dev.idmint.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code rediss://} nodes with a certificate an operator made, trusted through {@code caPem}. */
class TlsTest {
    @Test
    void aNodeWithASelfMadeCertificateIsReachedWithItsCa() throws Exception {
        Path dir = TestNode.tempDir("idmint-java-tls-");
        try {
            Path cert = dir.resolve("node.pem");
            Path key = dir.resolve("node.key");
            Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=idmint-test",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key.toString(), "-out", cert.toString())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            assertEquals(0, openssl.waitFor(), "openssl could not make a certificate");
            try (TestNode node = new TestNode("sqlite://" + dir + "/ids.db", "java-tls",
                    "--tls-cert", cert.toString(), "--tls-key", key.toString())) {
                String pem = Files.readString(cert);
                try (IdMint client = new IdMint(IdMintConfig.builder(node.url()).token(TestNode.TOKEN).caPem(pem).build())) {
                    long first = client.next("tls");
                    assertTrue(client.next("tls") > first);
                    assertTrue(client.snowflake() > 0);
                }
                // Without the CA the certificate is not trusted: the node fails, nothing is handed out.
                try (IdMint client = new IdMint(IdMintConfig.builder(node.url()).token(TestNode.TOKEN)
                        .maxWait(Duration.ofMillis(500)).build())) {
                    UnavailableException e = assertThrows(UnavailableException.class, () -> client.next("tls"));
                    assertTrue(e.getMessage().contains("SSL") || e.getMessage().contains("certif"), e.getMessage());
                }
            }
        } finally {
            TestNode.deleteTree(dir);
        }
    }
}
