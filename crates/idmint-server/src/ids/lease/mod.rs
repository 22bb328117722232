//! The worker lease of this node, and the snowflake generator it fences.
//!
//! The invariant (docs/ARCHITECTURE.md, "Uniqueness", 1): a node issues only ticks at or below the HWM the
//! store confirmed for its lease token, and a new holder starts strictly above the stored HWM.
//! So the keeper:
//! - on acquire, confirms an HWM ahead of its start point *before* building the generator, which
//!   starts above the previous holder's HWM and may never pass the confirmed one;
//! - every `renew_every`, raises the stored HWM to `now + hwm_lead` (conditional on the token)
//!   and only then raises the generator's gate;
//! - when the store says the lease is lost, stops raising (the old generator halts at its gate,
//!   so callers still holding it stay safe), acquires again (maybe another worker ID) and swaps
//!   in a new generator fenced above that ID's HWM;
//! - on release, writes the highest tick issued and frees the worker ID.
//!
//! This module holds the settings of a lease ([`LeaseConfig`], [`ClockPolicy`]); `take.rs`
//! how a lease is taken (the clock policy, the switch to another worker ID, the wait for a
//! worker ID at start) and `keeper.rs` the keeper's life once it holds one (renewal, loss,
//! moving to another store, release).

use std::time::Duration;

use idmint_core::{Error, Result};

mod keeper;
mod take;

pub use self::keeper::LeaseKeeper;
pub use self::take::Holding;

/// What a node does when the worker ID it was given has a high-water mark further ahead of its
/// clock than `max_lead` (docs/ARCHITECTURE.md, "Clock model"): typically a restart after the clock
/// stepped back, where the previous run issued IDs up to a time this clock has not reached.
/// Uniqueness holds under every policy (the generator starts above the HWM); they differ in
/// what is given up while the clock is behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockPolicy {
    /// Keep the worker ID; snowflake calls fail fast with `clock_behind` (and `/readyz` says
    /// so) until the clock passes the HWM. Segment IDs are served meanwhile.
    Wait,
    /// Take another worker ID whose HWM is below the clock, so snowflakes flow at once; IDs of
    /// the new worker sort below those the old one issued ahead of the clock. Falls back to
    /// `wait` (on the worker with the lowest HWM seen) when none is found after a few tries or
    /// with a static `--worker-id`. The default.
    #[default]
    Switch,
    /// Refuse: the node does not start (and a re-acquire after a lease loss keeps retrying),
    /// for operators who would rather be paged than run on a clock that went back.
    Fail,
}

impl ClockPolicy {
    /// The policy's name as in the settings.
    pub fn as_str(self) -> &'static str {
        match self {
            ClockPolicy::Wait => "wait",
            ClockPolicy::Switch => "switch",
            ClockPolicy::Fail => "fail",
        }
    }
}

impl std::str::FromStr for ClockPolicy {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text.trim() {
            "wait" => Ok(ClockPolicy::Wait),
            "switch" => Ok(ClockPolicy::Switch),
            "fail" => Ok(ClockPolicy::Fail),
            other => Err(format!("`{other}` is not one of wait, switch, fail")),
        }
    }
}

/// How this node holds its worker ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// This node's stable name: it gets its previous worker ID back after a restart.
    pub node_name: String,
    /// A static worker ID (`--worker-id N`), or `None` for `auto`.
    pub worker_id: Option<u64>,
    /// How long the lease lasts unless renewed: how soon another node may take the worker ID
    /// of a node that died. Default 10 s.
    pub ttl: Duration,
    /// How often the lease is renewed and the HWM raised (a failed renewal is retried sooner,
    /// see [`LeaseKeeper::run`]). Default 2 s.
    pub renew_every: Duration,
    /// How far ahead of the clock the HWM is raised: how long snowflakes keep flowing while
    /// the store is down. Must exceed `renew_every`. Default 10 s.
    pub hwm_lead: Duration,
    /// What to do with a worker ID whose HWM is ahead of the clock. Default `switch`.
    pub clock_policy: ClockPolicy,
    /// The version of the namespace's ID space this node mints in: the store grants leases
    /// only under the space in force (see `idmint_core::id_space`). `None` skips the check.
    pub id_space: Option<u64>,
    /// No tick starting before this moment (ms since the Unix epoch) is issued: the moment
    /// the ID space came into force, below which the values of the previous space lie.
    pub issues_from_ms: u64,
    /// How long [`LeaseKeeper::start`] waits for a worker lease to expire when every worker ID
    /// (or the static one) is held by a live lease, before it fails. A node restarted right
    /// after it was killed (by a supervisor, say) finds the dead node's lease live for up to
    /// `ttl`: failing at once would make the restart fail too. Zero fails at once. Default
    /// 10 s, the default `ttl`: the longest a dead node's lease outlives it.
    pub worker_wait: Duration,
    /// Whether this node's 128-bit IDs carry its leased identity (datacenter and worker ID) in
    /// a node field (`--id128-node`). Default off: no node field.
    pub id128_node: bool,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        Self {
            node_name: "idmint".into(),
            worker_id: None,
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_secs(2),
            hwm_lead: Duration::from_secs(10),
            clock_policy: ClockPolicy::default(),
            id_space: None,
            issues_from_ms: 0,
            worker_wait: Duration::from_secs(10),
            id128_node: false,
        }
    }
}

impl LeaseConfig {
    /// Refuses settings that would stall the generator in normal running.
    pub fn validate(&self) -> Result<()> {
        let invalid = |reason: &str| Error::InvalidArgument {
            name: "lease",
            reason: reason.into(),
        };
        if self.renew_every.is_zero() || self.renew_every >= self.ttl {
            return Err(invalid("renew_every must be above zero and below ttl"));
        }
        if self.hwm_lead <= self.renew_every {
            return Err(invalid(
                "hwm_lead must exceed renew_every, or IDs stall between renewals",
            ));
        }
        Ok(())
    }
}

fn duration_ms(duration: Duration) -> u64 {
    idmint_core::clock::duration_ms(duration)
}
