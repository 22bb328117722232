# idmint's image, for machines that reach a registry; scripts/image builds the same image from
# scratch with buildah where none is reachable, and the integration test checks that the two
# declare the same configuration. Build: `docker build -t idmint:0.1.0 .` (or `podman build`,
# `buildah build --format docker`: the health check needs the Docker image format).
#
# Base images are pinned by tag and digest (the digests as published for these tags; they could
# not be fetched from the machines this project is built on, so check them with
# `docker buildx imagetools inspect IMAGE:TAG` when you update a tag).

# The release build. Rust 1.95 (the workspace needs 1.94 or later: sqlx 0.9 does).
FROM rust:1.95.0-bookworm@sha256:6258907abe69656e41cd992e0b705cdcfabcbbe3db374f92ed2d47121282d4a1 AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p idmint \
 && install -D -m 0755 target/release/idmint /out/idmint

# The runtime: Debian 12 slim (glibc and libgcc, which idmint links), the CA certificates of the
# build image, a user of its own and /data for the embedded store.
FROM debian:bookworm-20260918-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251
ARG IDMINT_VERSION=0.1.0
ARG IDMINT_REVISION=unknown
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN groupadd --system --gid 10001 idmint \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home --shell /usr/sbin/nologin idmint \
 && install -d -m 0750 -o 10001 -g 10001 /data
COPY --from=build /out/idmint /usr/local/bin/idmint
LABEL org.opencontainers.image.title="idmint"
LABEL org.opencontainers.image.description="Mints unique 64-bit IDs over HTTP and the Redis protocol"
LABEL org.opencontainers.image.version="${IDMINT_VERSION}"
LABEL org.opencontainers.image.licenses="Apache-2.0"
LABEL org.opencontainers.image.source="https://example.invalid/idmint"
LABEL org.opencontainers.image.revision="${IDMINT_REVISION}"
ENV IDMINT_DATA_DIR=/data
ENV IDMINT_HTTP=0.0.0.0:8080
ENV IDMINT_RESP=0.0.0.0:6380
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080/tcp
EXPOSE 6380/tcp
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/usr/local/bin/idmint", "health"]
ENTRYPOINT ["/usr/local/bin/idmint"]
CMD ["serve"]
