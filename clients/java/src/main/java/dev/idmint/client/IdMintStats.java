package dev.idmint.client;

import java.util.Map;

/**
 * A snapshot of a client's counters ({@link IdMint#stats()}).
 *
 * @param ranges ranges of segment IDs taken from nodes
 * @param rangeIds IDs in those ranges
 * @param snowflakeBatches snowflake batches taken
 * @param failovers times the client moved to another node
 * @param givenBack IDs given back at close
 * @param nodeFailures each node ({@code host:port}) and the failures counted against it
 * @param currentNode the node the client talks to now ({@code host:port})
 */
public record IdMintStats(
        long ranges,
        long rangeIds,
        long snowflakeBatches,
        long failovers,
        long givenBack,
        Map<String, Long> nodeFailures,
        String currentNode) {}
