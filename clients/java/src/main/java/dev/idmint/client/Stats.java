package dev.idmint.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/** The counters of one client, read as an {@link IdMintStats} snapshot. */
final class Stats {
    private final List<String> nodes;
    private final AtomicLongArray nodeFailures;
    private final AtomicLong ranges = new AtomicLong();
    private final AtomicLong rangeIds = new AtomicLong();
    private final AtomicLong snowflakeBatches = new AtomicLong();
    private final AtomicLong failovers = new AtomicLong();
    private final AtomicLong givenBack = new AtomicLong();

    Stats(List<String> nodes) {
        this.nodes = List.copyOf(nodes);
        this.nodeFailures = new AtomicLongArray(nodes.size());
    }

    void range(long ids) {
        ranges.incrementAndGet();
        rangeIds.addAndGet(ids);
    }

    void snowflakeBatch() {
        snowflakeBatches.incrementAndGet();
    }

    void failover() {
        failovers.incrementAndGet();
    }

    void nodeFailed(int i) {
        nodeFailures.incrementAndGet(i);
    }

    void givenBack(long ids) {
        givenBack.addAndGet(ids);
    }

    IdMintStats snapshot(String currentNode) {
        Map<String, Long> failures = new LinkedHashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            failures.merge(nodes.get(i), nodeFailures.get(i), Long::sum);
        }
        return new IdMintStats(ranges.get(), rangeIds.get(), snowflakeBatches.get(),
                failovers.get(), givenBack.get(), Map.copyOf(failures), currentNode);
    }
}
