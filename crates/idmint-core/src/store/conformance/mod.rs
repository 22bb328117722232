//! The store conformance suite (feature `conformance`): what every implementation of
//! [`SegmentStore`] and [`WorkerLeases`] must do, written once over the two traits and run
//! against every store idmint has (the backends of idmint-store, a store set, [`MemoryStore`],
//! the server's wrappers), as object_store exports its own tests to the crates that implement
//! its trait.
//!
//! What it checks is what uniqueness rests on (docs/ARCHITECTURE.md, "Uniqueness"): ranges
//! never overlap, two holders never share a worker ID, a stale holder can change nothing, a new
//! holder starts above the old one's HWM, an ID space is recorded once per version and fences
//! the leases of the old one.
//!
//! # Using it
//!
//! Each check is a `pub async fn` taking a [`Subject`] (both traits of one store, empty: a
//! fresh namespace or database); a check panics when the store does not conform, like an
//! assertion in a test. [`run_all`] runs every check that applies to a [`Profile`], each on a
//! fresh store it asks for, so a test per store is one call:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use idmint_core::store::conformance::{run_all, Profile, Subject};
//! use idmint_core::store::MemoryStore;
//! use idmint_core::SystemClock;
//!
//! run_all(Profile::SINGLE, || async {
//!     Subject::of(Arc::new(MemoryStore::new(Arc::new(SystemClock::new()))))
//! })
//! .await;
//! # }
//! ```
//!
//! A test per check calls the checks one by one instead (idmint-store does, so a failing
//! backend names the check in the test's name).
//!
//! # What a store must give the suite
//!
//! - Concurrency: the checks spawn tokio tasks, so they run inside a tokio runtime; several
//!   checks race tasks against each other, which a multi-threaded runtime makes real.
//! - A clock that advances with real time: lease expiry is judged by the store's clock, and
//!   [`stale_tokens_change_nothing_and_hwm_is_handed_over`] waits 400 ms of real time for a
//!   200 ms lease to expire (a [`MemoryStore`] on a `ManualClock` would never see it expire).
//!
//! # Checks that hold only for some stores
//!
//! [`Profile`] says which store is under test; [`run_all`] leaves out what does not apply, and
//! a check given a profile asserts only what holds for it:
//! - **One store or a set** ([`Profile::set`]). A store set (`idmint_store::open_set`) cuts IDs
//!   into blocks owned by its stores, so a tag's end is not [`MAX_SEGMENT_ID`] on every store:
//!   the end-of-tag checks ([`the_end_of_a_tag_is_served_exactly_then_exhausted`],
//!   [`racers_at_the_end_split_the_rest_exactly`]) are for single stores (a set's own rules
//!   are tested in idmint-store's `store_sets.rs`). A set refuses dated tags, and its stores
//!   choose worker IDs each among their own, so the order automatic acquirers get them in is
//!   not the single store's smallest first. The set must ask store 0 first (`--home-store 0`),
//!   so that ranges start at a tag's first ID.
//! - **The machine's clock** ([`Profile::machine_clock`]): the store's clock reads within 5 s
//!   of this machine's. True of every real store on one machine; not of a store whose clock a
//!   test moves.
//!
//! Backend-specific checks (opening a namespace concurrently, re-running migrations) need a
//! URL, not the traits, and stay in idmint-store's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod id_spaces;
mod leases;
mod segments;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use self::id_spaces::{id_spaces_are_recorded_and_fence_leases, one_first_space_wins};
pub use self::leases::{
    a_node_gets_its_previous_worker_id_back, a_static_worker_id_is_refused_while_held,
    acquirers_never_share_a_worker_id, an_hwm_past_the_signed_range_is_refused,
    stale_tokens_change_nothing_and_hwm_is_handed_over,
};
pub use self::segments::{
    a_max_id_past_the_end_is_refused, concurrent_allocations_tile_without_overlap,
    give_back_only_when_nobody_allocated_after, racers_at_the_end_split_the_rest_exactly,
    tags_are_case_sensitive, tags_are_managed_and_unknown_ones_refused,
    tags_of_any_text_are_kept_apart, the_end_of_a_tag_is_served_exactly_then_exhausted,
};
#[cfg(doc)]
use super::MemoryStore;
#[cfg(doc)]
use super::MAX_SEGMENT_ID;
use super::{LeaseRequest, Partition, SegmentStore, WorkerLeases};
use crate::tag::Tag;

/// The store under test: both traits of one store, which holds no tag, lease, ID space or
/// set record when a check starts.
#[derive(Debug, Clone)]
pub struct Subject {
    /// Range allocation per tag.
    pub segments: Arc<dyn SegmentStore>,
    /// Worker leases with fenced high-water marks.
    pub leases: Arc<dyn WorkerLeases>,
}

impl Subject {
    /// One value implementing both traits, as both.
    pub fn of<T: SegmentStore + WorkerLeases + 'static>(store: Arc<T>) -> Self {
        Self {
            segments: Arc::clone(&store) as Arc<dyn SegmentStore>,
            leases: store,
        }
    }
}

/// Which kind of store is under test: what the checks that hold only for some stores may
/// assert (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Profile {
    /// A store set (asking store 0 first) rather than one store.
    pub set: bool,
    /// The store's clock is this machine's, within 5 s.
    pub machine_clock: bool,
}

impl Profile {
    /// One store on this machine's clock: every check applies.
    pub const SINGLE: Self = Self {
        set: false,
        machine_clock: true,
    };

    /// A store set on this machine's clock.
    pub const SET: Self = Self {
        set: true,
        machine_clock: true,
    };

    /// This profile, with the store's clock this machine's or not.
    pub const fn with_machine_clock(self, machine_clock: bool) -> Self {
        Self {
            machine_clock,
            ..self
        }
    }
}

/// Runs every check that applies to `profile`, one after the other, each on a store `fresh`
/// makes (empty, see [`Subject`]). Panics at the first check the store fails; the check's
/// name is printed before it runs, so the failing one is the last name in the test's output.
pub async fn run_all<F, Fut>(profile: Profile, mut fresh: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Subject>,
{
    macro_rules! check {
        ($name:ident $(, $profile:expr)?) => {{
            eprintln!("conformance: {}", stringify!($name));
            let started = std::time::Instant::now();
            $name(fresh().await $(, $profile)?).await;
            eprintln!("conformance: {} passed in {:?}", stringify!($name), started.elapsed());
        }};
    }
    check!(concurrent_allocations_tile_without_overlap, profile);
    check!(give_back_only_when_nobody_allocated_after, profile);
    check!(tags_are_managed_and_unknown_ones_refused, profile);
    check!(tags_are_case_sensitive);
    check!(tags_of_any_text_are_kept_apart);
    check!(a_max_id_past_the_end_is_refused, profile);
    if !profile.set {
        check!(the_end_of_a_tag_is_served_exactly_then_exhausted);
        check!(racers_at_the_end_split_the_rest_exactly);
    }
    check!(acquirers_never_share_a_worker_id);
    check!(a_static_worker_id_is_refused_while_held, profile);
    check!(stale_tokens_change_nothing_and_hwm_is_handed_over);
    check!(a_node_gets_its_previous_worker_id_back);
    check!(an_hwm_past_the_signed_range_is_refused);
    check!(id_spaces_are_recorded_and_fence_leases, profile);
    check!(one_first_space_wins);
}

fn tag(name: &str) -> Tag {
    Tag::new(name).unwrap()
}

fn request(node: &str, worker_id: Option<u64>, count: u64, ttl: Duration) -> LeaseRequest {
    LeaseRequest {
        node_name: node.into(),
        worker_count: count,
        worker_id,
        ttl,
        id_space: None,
        partition: Partition::WHOLE,
    }
}
