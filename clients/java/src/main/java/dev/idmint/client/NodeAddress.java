package dev.idmint.client;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * A node's Redis-protocol address: {@code redis://host:port} or {@code rediss://host:port}
 * (TLS). The port defaults to 6379. A token belongs in {@link IdMintConfig.Builder#token}, not in
 * the URL.
 */
record NodeAddress(String host, int port, boolean tls) {
    static NodeAddress parse(String url) {
        if (url == null || url.isBlank()) {
            throw new ConfigException("nodes", "an empty node address");
        }
        URI uri;
        try {
            uri = new URI(url.trim());
        } catch (URISyntaxException e) {
            throw new ConfigException("nodes", "`" + url + "`: not a redis:// or rediss:// URL", e);
        }
        String scheme = uri.getScheme();
        if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
            throw new ConfigException("nodes", "`" + url + "`: not a redis:// or rediss:// URL");
        }
        if (uri.getRawUserInfo() != null) {
            throw new ConfigException("nodes", "`" + url + "`: give the token in `token`, not in the URL");
        }
        String host = uri.getHost();
        if (host == null || host.isEmpty()) {
            throw new ConfigException("nodes", "`" + url + "`: no host");
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        String path = uri.getRawPath();
        if ((path != null && !path.isEmpty() && !path.equals("/") && !path.equals("/0"))
                || uri.getRawQuery() != null) {
            throw new ConfigException("nodes", "`" + url + "`: only redis://host:port (no database, no options)");
        }
        int port = uri.getPort() == -1 ? 6379 : uri.getPort();
        return new NodeAddress(host, port, "rediss".equals(scheme));
    }

    /** {@code host:port}, as messages and counters name the node. */
    @Override
    public String toString() {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}
