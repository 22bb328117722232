//! The process's allocator: jemalloc, with its background threads purging freed memory.
//!
//! With the system's allocator (glibc), the buffers of closed connections stayed in its
//! per-thread arenas for good: a node went from 18 MB to 168 MB RSS after one connection flood,
//! 255 MB after three, and never gave any back (SECURITY.md, "Connection floods"). jemalloc
//! returns dirty pages to the system as they age (`dirty_decay_ms`, 10 s by default); its
//! background threads do that work on their own, so memory comes back even when the threads
//! that freed it (connection threads after a flood) allocate nothing more.

/// The allocator of every `idmint` command.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Starts jemalloc's background purging threads, for a long-running `serve`. Short commands
/// need none: they exit before their memory ages.
pub fn purge_in_background() {
    if let Err(error) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!(%error, "jemalloc's background threads did not start: memory freed after a connection flood is returned only as the node allocates again");
    }
}
