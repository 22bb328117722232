//! Lease timings for scenarios that must see a lease renewed, lapse or be taken over within
//! seconds rather than the defaults' minutes, as `idmint serve` flags.

/// A node's lease timing: `--lease-ttl`, `--lease-renew`, `--hwm-lead`, in the flags' own
/// duration syntax. The server's rules hold for all of them: renew well under the TTL, the HWM
/// lead under the TTL, so a frozen node's lease lapses before its promise runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long a lease lasts unrenewed (`--lease-ttl`).
    pub ttl: &'static str,
    /// How often it is renewed (`--lease-renew`).
    pub renew: &'static str,
    /// How far ahead of the clock the high-water mark is promised (`--hwm-lead`).
    pub hwm_lead: &'static str,
}

impl LeaseTiming {
    /// What most scenarios use: a lease lapses 2 s after its node froze or died.
    pub const SHORT: Self = Self {
        ttl: "2s",
        renew: "500ms",
        hwm_lead: "1500ms",
    };

    /// [`Self::SHORT`] with a lead under a second, so a node frozen past its TTL has run out of
    /// promised time before its lease has lapsed.
    pub const SHORT_LEAD: Self = Self {
        hwm_lead: "1s",
        ..Self::SHORT
    };

    /// For store outages of several seconds that the buffers should cover.
    pub const OUTAGE: Self = Self {
        ttl: "5s",
        renew: "1s",
        hwm_lead: "3s",
    };

    /// For store faults that take a store away for a few seconds: the lease outlives them.
    pub const FAULTS: Self = Self {
        ttl: "10s",
        ..Self::SHORT
    };

    /// The timing as `idmint serve` arguments.
    pub fn flags(&self) -> [&'static str; 6] {
        [
            "--lease-ttl",
            self.ttl,
            "--lease-renew",
            self.renew,
            "--hwm-lead",
            self.hwm_lead,
        ]
    }
}
