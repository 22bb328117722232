package dev.idmint.client;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * The one connection a client keeps to a node, opened on first use and again after a failure.
 * Every request to the node goes over it, one at a time, so {@code IDMINT.GIVEBACK} reaches the
 * connection that took the range (a node takes a run back only there). {@link #generation()}
 * changes with each new connection: a range taken on an older one cannot be given back.
 *
 * <p>The token is sent with {@code AUTH} as the connection's first command, so its answer keeps
 * its code ({@code WRONGPASS}), and a full node's {@code -ERR max number of clients reached} is
 * not taken for a wrong token.
 */
final class NodeConnection {
    /** What a request got: the reply, and the connection generation it came over. */
    record Reply(Object value, int generation) {}

    private final NodeAddress address;
    private final String token;
    private final SSLSocketFactory tls;
    private final ReentrantLock lock = new ReentrantLock();
    private Socket socket;
    /** Under {@link #in}: ends each read at the call's deadline. */
    private DeadlineInput timed;
    private InputStream in;
    private OutputStream out;
    private int generation;
    private boolean closed;

    NodeConnection(NodeAddress address, String token, SSLSocketFactory tls) {
        this.address = address;
        this.token = token;
        this.tls = tls;
    }

    NodeAddress address() {
        return address;
    }

    /**
     * Sends {@code args} and reads the reply, within {@code timeoutNanos} (connecting and
     * authenticating included), after waiting at most as long for the connection to be free. An error reply is returned as a
     * {@link Resp.Error} and keeps the connection; a failure of the connection itself (refused,
     * reset, timed out, a reply that does not parse) throws and drops it. With
     * {@code onlyGeneration >= 0}, sends only over that connection (returns null when it is gone).
     */
    Reply call(List<?> args, long timeoutNanos, int onlyGeneration) throws IOException {
        try {
            if (!lock.tryLock(timeoutNanos, TimeUnit.NANOSECONDS)) {
                throw new Busy(address + " was busy with other requests for the whole call timeout");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted waiting for " + address);
        }
        // The request's own time starts once it has the connection: time queued behind others
        // (bounded above) is not the node's slowness, and counting it would fail a node that
        // answers every request in time.
        long deadline = System.nanoTime() + timeoutNanos;
        try {
            if (closed) {
                throw new IOException("the connection to " + address + " is closed");
            }
            if (onlyGeneration >= 0 && (socket == null || generation != onlyGeneration)) {
                return null;
            }
            try {
                if (socket == null) {
                    open(deadline);
                }
                out.write(Resp.encode(args));
                out.flush();
                timed.deadline = deadline;
                return new Reply(Resp.read(in, Resp.replyBound(args)), generation);
            } catch (SocketTimeoutException e) {
                drop();
                // One wording whichever step ran out (connect, handshake, AUTH, a read).
                SocketTimeoutException timeout = new SocketTimeoutException("no answer within the call timeout ("
                        + Durations.show(java.time.Duration.ofNanos(timeoutNanos)) + ")");
                timeout.initCause(e);
                throw timeout;
            } catch (IOException | RuntimeException e) {
                drop();
                throw e;
            }
        } finally {
            lock.unlock();
        }
    }

    /** The generation of the open connection, or -1 when none is open. */
    int generation() {
        lock.lock();
        try {
            return socket == null ? -1 : generation;
        } finally {
            lock.unlock();
        }
    }

    /** Drops the connection (the next request opens another), unless it is in use. */
    void dropIfIdle() {
        if (lock.tryLock()) {
            try {
                drop();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Closes the connection for good. */
    void close() {
        try {
            if (lock.tryLock(1, TimeUnit.SECONDS)) {
                try {
                    closed = true;
                    drop();
                } finally {
                    lock.unlock();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void open(long deadline) throws IOException {
        Socket plain = new Socket();
        try {
            plain.setTcpNoDelay(true);
            plain.setKeepAlive(true);
            plain.connect(new InetSocketAddress(address.host(), address.port()), remainingMillis(deadline));
            Socket s = plain;
            if (address.tls()) {
                SSLSocket secure = (SSLSocket) tls.createSocket(plain, address.host(), address.port(), true);
                SSLParameters params = secure.getSSLParameters();
                // The certificate must name the host (or IP) the client was given.
                params.setEndpointIdentificationAlgorithm("HTTPS");
                secure.setSSLParameters(params);
                secure.setSoTimeout(remainingMillis(deadline));
                secure.startHandshake();
                s = secure;
            }
            socket = s;
            timed = new DeadlineInput(s);
            timed.deadline = deadline;
            in = new BufferedInputStream(timed, 8192);
            out = s.getOutputStream();
            generation++;
        } catch (IOException | RuntimeException e) {
            plain.close();
            throw e;
        }
        if (token != null) {
            out.write(Resp.encode(List.of("AUTH", token)));
            out.flush();
            Object reply = Resp.read(in);
            if (reply instanceof Resp.Error error) {
                drop();
                throw new AuthRefused(error);
            }
            if (!"OK".equals(reply)) {
                throw new Resp.ProtocolException("AUTH answered " + Resp.show(reply));
            }
        }
    }

    /**
     * The connection stayed in use by other requests for the whole call timeout: no failure of
     * the node (the request holding it fails the node if it is the node's fault).
     */
    static final class Busy extends SocketTimeoutException {
        private static final long serialVersionUID = 1L;

        Busy(String message) {
            super(message);
        }
    }

    /** The node's refusal of {@code AUTH}: an answer, not a failure of the connection. */
    static final class AuthRefused extends IOException {
        private static final long serialVersionUID = 1L;
        final transient Resp.Error reply;

        AuthRefused(Resp.Error reply) {
            super(reply.text());
            this.reply = reply;
        }
    }

    /**
     * The socket's input, each read bounded by what is left until {@code deadline}: a socket's
     * read timeout alone bounds each read, so a node sending one byte at a time, each within
     * it, would hold a request (and the connection) for as long as it liked.
     */
    private static final class DeadlineInput extends InputStream {
        private final Socket socket;
        private final InputStream in;
        /** {@link System#nanoTime()} at which the current request's time is up. */
        long deadline;

        DeadlineInput(Socket socket) throws IOException {
            this.socket = socket;
            this.in = socket.getInputStream();
        }

        @Override
        public int read() throws IOException {
            socket.setSoTimeout(remainingMillis(deadline));
            return in.read();
        }

        @Override
        public int read(byte[] buffer, int off, int len) throws IOException {
            socket.setSoTimeout(remainingMillis(deadline));
            return in.read(buffer, off, len);
        }
    }

    private static int remainingMillis(long deadline) throws SocketTimeoutException {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new SocketTimeoutException("the call timeout ran out");
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left)));
    }

    private void drop() {
        Socket s = socket;
        socket = null;
        timed = null;
        in = null;
        out = null;
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // Closing a broken socket: nothing to do.
            }
        }
    }
}
