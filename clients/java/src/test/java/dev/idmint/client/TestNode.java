package dev.idmint.client;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** One {@code idmint serve} process on loopback, started from {@code $IDMINT_BIN}, stopped by its PID. */
final class TestNode implements AutoCloseable {
    static final String TOKEN = "java-unit-test-token";

    final String store;
    final String name;
    final List<String> extra;
    final int resp;
    final int http;
    private Process process;

    TestNode(String store, String name, String... extra) {
        this.store = store;
        this.name = name;
        this.extra = List.of(extra);
        this.resp = freePort();
        this.http = freePort();
        start();
    }

    /** The idmint binary under test: without IDMINT_BIN the tests fail, never skip. */
    static String binary() {
        String bin = System.getenv("IDMINT_BIN");
        if (bin == null || bin.isBlank()) {
            throw new IllegalStateException("set IDMINT_BIN to the idmint binary (nothing is skipped)");
        }
        return bin;
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static Path tempDir(String prefix) {
        try {
            return Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static void deleteTree(Path dir) {
        if (dir == null) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // A temporary directory left behind.
        }
    }

    String url() {
        return (extra.contains("--tls-cert") ? "rediss://" : "redis://") + "127.0.0.1:" + resp;
    }

    void start() {
        List<String> args = new ArrayList<>(List.of(binary(), "serve", "--store", store, "--node-name", name,
                "--resp", "127.0.0.1:" + resp, "--http", "127.0.0.1:" + http, "--admin-token", TOKEN));
        args.addAll(extra);
        try {
            process = new ProcessBuilder(args)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + args, e);
        }
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (true) {
            if (extra.contains("--tls-cert") ? listening() : pings()) {
                return;
            }
            if (!process.isAlive() || System.nanoTime() > deadline) {
                kill();
                throw new IllegalStateException("idmint node " + name + " did not start");
            }
            Nodes.sleepNanos(50_000_000);
        }
    }

    private boolean pings() {
        try {
            return "PONG".equals(command("PING"));
        } catch (IOException e) {
            return false;
        }
    }

    private boolean listening() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", resp), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** One command on a new connection with the admin token; the reply as {@link Resp} reads it. */
    Object command(Object... args) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", resp), 1000);
            s.setSoTimeout(5000);
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            out.write(Resp.encode(List.of("AUTH", TOKEN)));
            out.write(Resp.encode(List.of(args)));
            out.flush();
            Object auth = Resp.read(in);
            if (!"OK".equals(auth)) {
                throw new IOException("AUTH answered " + Resp.show(auth));
            }
            return Resp.read(in);
        }
    }

    /** Two commands on one new connection with the admin token; both replies. */
    Object commandPair(List<?> first, List<?> second) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", resp), 1000);
            s.setSoTimeout(5000);
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            out.write(Resp.encode(List.of("AUTH", TOKEN)));
            out.write(Resp.encode(first));
            out.write(Resp.encode(second));
            out.flush();
            Object auth = Resp.read(in);
            if (!"OK".equals(auth)) {
                throw new IOException("AUTH answered " + Resp.show(auth));
            }
            return List.of(Resp.read(in), Resp.read(in));
        }
    }

    /** Kills the process (SIGKILL), by its handle. */
    void kill() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        kill();
    }
}
