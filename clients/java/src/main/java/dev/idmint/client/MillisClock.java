package dev.idmint.client;

/** A generator's clock: the system's in use; a clock the test moves by hand in tests. */
interface MillisClock {
    /** Unix milliseconds. */
    long millis();

    /** Waits about {@code ms} milliseconds (the clock should move meanwhile). */
    void sleep(long ms);

    /** The wall clock: it may step back (NTP, a VM's pause), which the generators absorb. */
    MillisClock SYSTEM = new MillisClock() {
        @Override
        public long millis() {
            return System.currentTimeMillis();
        }

        @Override
        public void sleep(long ms) {
            java.util.concurrent.locks.LockSupport.parkNanos(ms * 1_000_000L);
        }
    };
}
