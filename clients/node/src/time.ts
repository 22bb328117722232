/** Timers the client waits on. */

/**
 * Resolves after `ms`. A background wait (`background`: a refill's pause between retries)
 * does not keep the process alive on its own; a caller's wait does.
 */
export function sleep(ms: number, background = false): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    if (background) {
      timer.unref();
    }
  });
}

/** Milliseconds on a clock that never goes back. */
export function nowMs(): number {
  return performance.now();
}
