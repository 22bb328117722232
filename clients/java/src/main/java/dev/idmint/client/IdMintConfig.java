package dev.idmint.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * How an {@link IdMint} reaches idmint and how much it keeps in memory. Immutable; made with
 * {@link #builder(String...)}, every setting having a default that suits a service drawing up
 * to some thousands of IDs a second per tag.
 *
 * @param nodes the nodes' Redis-protocol addresses, {@code redis://host:port} or
 *     {@code rediss://host:port} (TLS), tried in this order; a client stays on the first that works
 * @param token a token of the nodes, sent with {@code AUTH} on each connection (a mint token
 *     suffices), or null
 * @param caPem a PEM certificate authority to trust for {@code rediss://} nodes instead of the
 *     system's, or null
 * @param minStep the smallest range asked for (default 100)
 * @param maxStep the largest range asked for at once (default 10,000, the nodes' default
 *     {@code --max-count}); a crashed client loses at most two ranges
 * @param targetLifetime how long one range should last at the observed rate (default 10 s)
 * @param prefetchAt the share of a range used when the next one is asked for (default 0.2)
 * @param maxWait the longest a call waits for IDs when none are in memory, across every node
 *     tried, before it fails with {@link UnavailableException} (default 3 s)
 * @param callTimeout the longest one request to one node may take, connecting included (default 1 s)
 * @param backoff how long a failed node is avoided at first, doubling at each further failure
 *     up to {@code maxBackoff}, reset when it answers (default 1 s)
 * @param maxBackoff the longest a failing node is avoided (default 30 s)
 * @param snowflakeBatch snowflakes asked for at once (default 64)
 * @param snowflakeMaxAge the age past which a snowflake batch is thrown away unused (default 100 ms)
 */
public record IdMintConfig(
        List<String> nodes,
        String token,
        String caPem,
        long minStep,
        long maxStep,
        Duration targetLifetime,
        double prefetchAt,
        Duration maxWait,
        Duration callTimeout,
        Duration backoff,
        Duration maxBackoff,
        int snowflakeBatch,
        Duration snowflakeMaxAge) {

    /** The settings as given, checked: see {@link Builder#build()}. */
    public IdMintConfig {
        if (nodes == null || nodes.stream().anyMatch(node -> node == null)) {
            throw new ConfigException("nodes", "a null node address");
        }
        nodes = List.copyOf(nodes);
        check(nodes, token, minStep, maxStep, targetLifetime, prefetchAt, maxWait, callTimeout,
                backoff, maxBackoff, snowflakeBatch, snowflakeMaxAge);
    }

    /** A builder with the defaults, for these nodes. */
    public static Builder builder(String... nodes) {
        return new Builder().nodes(nodes);
    }

    /** A builder with the defaults, for these nodes. */
    public static Builder builder(List<String> nodes) {
        return new Builder().nodes(nodes);
    }

    /** The token stays out of logs. */
    @Override
    public String toString() {
        return "IdMintConfig[nodes=" + nodes + ", token=" + (token == null ? "none" : "<hidden>")
                + ", caPem=" + (caPem == null ? "none" : "<set>") + ", minStep=" + minStep
                + ", maxStep=" + maxStep + ", targetLifetime=" + targetLifetime
                + ", prefetchAt=" + prefetchAt + ", maxWait=" + maxWait + ", callTimeout="
                + callTimeout + ", backoff=" + backoff + ", maxBackoff=" + maxBackoff
                + ", snowflakeBatch=" + snowflakeBatch + ", snowflakeMaxAge=" + snowflakeMaxAge + "]";
    }

    private static void check(List<String> nodes, String token, long minStep, long maxStep,
            Duration targetLifetime, double prefetchAt, Duration maxWait, Duration callTimeout,
            Duration backoff, Duration maxBackoff, int snowflakeBatch, Duration snowflakeMaxAge) {
        if (nodes.isEmpty()) {
            throw new ConfigException("nodes", "give at least one node");
        }
        for (String node : nodes) {
            NodeAddress.parse(node);
        }
        if (token != null && token.isBlank()) {
            throw new ConfigException("token", "is empty; leave it out for nodes without tokens");
        }
        if (token != null && (token.indexOf('\r') >= 0 || token.indexOf('\n') >= 0)) {
            throw new ConfigException("token", "holds a line break");
        }
        if (minStep < 1) {
            throw new ConfigException("minStep", "must be at least 1");
        }
        if (maxStep < minStep) {
            throw new ConfigException("maxStep", "must be at least minStep");
        }
        if (!(prefetchAt >= 0.0 && prefetchAt <= 1.0)) {
            throw new ConfigException("prefetchAt", "must be between 0 and 1");
        }
        positive("targetLifetime", targetLifetime);
        positive("maxWait", maxWait);
        positive("callTimeout", callTimeout);
        positive("backoff", backoff);
        positive("maxBackoff", maxBackoff);
        positive("snowflakeMaxAge", snowflakeMaxAge);
        if (maxBackoff.compareTo(backoff) < 0) {
            throw new ConfigException("maxBackoff", "must be at least backoff");
        }
        if (snowflakeBatch < 1) {
            throw new ConfigException("snowflakeBatch", "must be at least 1");
        }
    }

    private static void positive(String field, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new ConfigException(field, "must be above zero");
        }
    }

    /** Builds an {@link IdMintConfig}; every setting is optional but the nodes. Not thread-safe. */
    public static final class Builder {
        private List<String> nodes = List.of();
        private String token;
        private String caPem;
        private long minStep = 100;
        private long maxStep = 10_000;
        private Duration targetLifetime = Duration.ofSeconds(10);
        private double prefetchAt = 0.2;
        private Duration maxWait = Duration.ofSeconds(3);
        private Duration callTimeout = Duration.ofSeconds(1);
        private Duration backoff = Duration.ofSeconds(1);
        private Duration maxBackoff = Duration.ofSeconds(30);
        private int snowflakeBatch = 64;
        private Duration snowflakeMaxAge = Duration.ofMillis(100);

        Builder() {}

        /** The nodes, {@code redis://host:port} or {@code rediss://host:port}, in the order tried. */
        public Builder nodes(String... nodes) {
            this.nodes = new ArrayList<>(Arrays.asList(nodes));
            return this;
        }

        /** The nodes, {@code redis://host:port} or {@code rediss://host:port}, in the order tried. */
        public Builder nodes(List<String> nodes) {
            this.nodes = new ArrayList<>(nodes);
            return this;
        }

        /** Sends {@code token} with {@code AUTH} (null: none). */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /** Trusts this PEM certificate authority for {@code rediss://} nodes (null: the system's). */
        public Builder caPem(String pem) {
            this.caPem = pem;
            return this;
        }

        /** Range sizes: at least {@code min}, at most {@code max} IDs a request. */
        public Builder steps(long min, long max) {
            this.minStep = min;
            this.maxStep = max;
            return this;
        }

        /** How long a range should last at the observed rate. */
        public Builder targetLifetime(Duration lifetime) {
            this.targetLifetime = lifetime;
            return this;
        }

        /** The share of a range used when the next one is asked for, in {@code 0..1}. */
        public Builder prefetchAt(double share) {
            this.prefetchAt = share;
            return this;
        }

        /** How long a call may wait for IDs. */
        public Builder maxWait(Duration wait) {
            this.maxWait = wait;
            return this;
        }

        /** How long one request to one node may take. */
        public Builder callTimeout(Duration timeout) {
            this.callTimeout = timeout;
            return this;
        }

        /** How long a failed node is avoided, at first and at most. */
        public Builder backoff(Duration first, Duration max) {
            this.backoff = first;
            this.maxBackoff = max;
            return this;
        }

        /** Snowflake batches: how many at once, and how old they may get. */
        public Builder snowflakes(int batch, Duration maxAge) {
            this.snowflakeBatch = batch;
            this.snowflakeMaxAge = maxAge;
            return this;
        }

        /**
         * The configuration, checked.
         *
         * @throws ConfigException naming the first setting that cannot work
         */
        public IdMintConfig build() {
            return new IdMintConfig(nodes, token, caPem, minStep, maxStep, targetLifetime,
                    prefetchAt, maxWait, callTimeout, backoff, maxBackoff, snowflakeBatch,
                    snowflakeMaxAge);
        }
    }
}
