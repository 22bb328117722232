package dev.idmint.client;

import java.time.Duration;

/** Durations as messages show them: {@code 3s}, {@code 250ms}. */
final class Durations {
    private Durations() {}

    static String show(Duration d) {
        long ms = d.toMillis();
        if (ms >= 1000 && ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        if (ms > 0) {
            return ms + "ms";
        }
        return d.toNanos() / 1000 + "µs";
    }
}
