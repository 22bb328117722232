//! The stable codes a client sees, defined once.
//!
//! The HTTP API answers `{"error": {"code": "tag_exhausted", ...}}`, the Redis protocol
//! `-ERR tag_exhausted ...` for the codes a client program must tell apart, and the client
//! libraries (idmint-client, clients/python) read them back. Every one of those words is an
//! [`ErrorCode`]: the server maps codes to HTTP statuses and RESP prefixes, the clients parse
//! them with [`str::parse`], and a test of the suite checks that the Python client knows exactly
//! [`ErrorCode::ALL`]. [`Error::code`](crate::Error::code) gives the code of each error of this
//! crate; the others are the HTTP API's own refusals (a bad query, a missing token, ...).

use std::fmt;
use std::str::FromStr;

/// Declares the enum, its words and [`ErrorCode::ALL`] from one list, so a code cannot be
/// added to one and forgotten in another.
macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident => $text:literal,)+) => {
        /// A code of the wire protocols: what a client acts on, stable across releases (its
        /// message is for people and may change). New codes may be added, hence
        /// `#[non_exhaustive]`; a client meeting a word it does not know treats the error by
        /// the protocol's own class (an HTTP status, `-TRYAGAIN` or `-ERR`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* $name,)+
        }

        impl ErrorCode {
            /// Every code, in the order of their declaration.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)+];

            /// The code as it goes over the wire (`tag_exhausted`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $text,)+
                }
            }
        }

        impl FromStr for ErrorCode {
            type Err = UnknownCode;

            fn from_str(text: &str) -> Result<Self, UnknownCode> {
                match text {
                    $($text => Ok(ErrorCode::$name),)+
                    _ => Err(UnknownCode),
                }
            }
        }
    };
}

codes! {
    // What the ID service refuses as bad input.
    /// A layout spec that does not parse or breaks a layout rule.
    InvalidLayout => "invalid_layout",
    /// An epoch that does not parse or cannot be used.
    InvalidEpoch => "invalid_epoch",
    /// An argument out of range (other than a shard or an ID, which have their own codes).
    InvalidArgument => "invalid_argument",
    /// A shard too wide for the layout's field.
    InvalidShard => "invalid_shard",
    /// An ID that does not parse or that the layout cannot decode.
    InvalidId => "invalid_id",
    /// A tag name that breaks the rule for tags.
    InvalidTag => "invalid_tag",
    // Limits that never lift.
    /// The layout's time field ran out: no more snowflakes with this layout.
    LayoutExhausted => "layout_exhausted",
    /// The clock reads a time before the layout's epoch.
    ClockBeforeEpoch => "clock_before_epoch",
    // Waits that ran out, and stores in trouble: retryable.
    /// The clock is behind the next tick the generator may issue (or behind the high-water
    /// mark of the worker ID a node was given). Retryable: the clock catches up.
    ClockBehind => "clock_behind",
    /// The store has not yet confirmed the high-water mark the next tick needs.
    HwmNotGranted => "hwm_not_granted",
    /// A tag's buffers are empty and the store delivered no range within the wait.
    SegmentUnavailable => "segment_unavailable",
    /// The store could not be reached or did not answer in time.
    StoreUnavailable => "store_unavailable",
    /// A conditional write of the store lost a race.
    StoreConflict => "store_conflict",
    /// The node's worker lease was lost; it takes another.
    LeaseLost => "lease_lost",
    /// The node is shutting down (its generator is closed).
    ShuttingDown => "shutting_down",
    /// Every worker ID of the layout is held by a live node.
    NoWorkerFree => "no_worker_free",
    // The store's own trouble, not retryable.
    /// The store holds data that breaks an invariant, or refused a request as invalid.
    StoreInvalid => "store_invalid",
    /// The store's data is damaged: restore it from a backup.
    StoreCorrupt => "store_corrupt",
    /// The worker ID a node was given is held by another live node.
    WorkerHeld => "worker_held",
    // Tags.
    /// The tag does not exist (and is not created on first use).
    UnknownTag => "unknown_tag",
    /// The tag exists already, or a setting only its creation takes was given.
    TagExists => "tag_exists",
    /// The tag's IDs are used up, or too few are left for the request: start a new tag.
    TagExhausted => "tag_exhausted",
    /// The node serves as many tags as it may (`--max-tags`).
    TooManyTags => "too_many_tags",
    /// The token has as many tags as its `max_tags` allows.
    TagQuota => "tag_quota",
    /// A dated tag cannot hand out an ID now: its period is used up, or the store's clock went
    /// back into an earlier one. Lifts when the next period begins, not at a retry.
    PeriodUnavailable => "period_unavailable",
    /// A range kept by the client was asked of a dated tag: take its IDs one call at a time.
    Dated => "dated",
    /// A run of consecutive IDs was asked of a node that hands its IDs out permuted.
    Permuted => "permuted",
    // ID spaces (start-up and the operator's commands).
    /// The node's layout, epoch, datacenter or key differs from the namespace's ID space.
    IdSpaceMismatch => "id_space_mismatch",
    /// The namespace has leases from before ID spaces were recorded.
    IdSpaceUnrecorded => "id_space_unrecorded",
    /// A change of ID space was refused.
    IdSpaceRefused => "id_space_refused",
    /// The namespace's ID space changed under a running node: restart it.
    IdSpaceChanged => "id_space_changed",
    // The HTTP API's refusals of a request.
    /// `format=` (or `prefix`, `width`) that is not one of the forms.
    InvalidFormat => "invalid_format",
    /// `count=` out of range.
    InvalidCount => "invalid_count",
    /// `size=` of a segment lease out of range, or missing.
    InvalidSize => "invalid_size",
    /// A query string that does not parse, or an unknown parameter.
    InvalidQuery => "invalid_query",
    /// A body that is not valid JSON for the route.
    InvalidJson => "invalid_json",
    /// A body that could not be read.
    InvalidBody => "invalid_body",
    /// A tag's `step` out of range.
    InvalidStep => "invalid_step",
    /// A tag's description too long or not text.
    InvalidDescription => "invalid_description",
    /// A tag's `first_id` out of range.
    InvalidFirstId => "invalid_first_id",
    /// A tag's `period` (or its form) that cannot be used.
    InvalidDating => "invalid_dating",
    /// Any other refused request (a rejection of the HTTP machinery).
    BadRequest => "bad_request",
    /// No `Authorization: Bearer` token where one is needed.
    Unauthorized => "unauthorized",
    /// A token that is not valid, of another scope, or not for the tag.
    Forbidden => "forbidden",
    /// No route for the path.
    NotFound => "not_found",
    /// `/metrics` on a server that runs without metrics.
    MetricsDisabled => "metrics_disabled",
    /// A known path asked with another method.
    MethodNotAllowed => "method_not_allowed",
    /// A request body over the limit.
    PayloadTooLarge => "payload_too_large",
    /// A request that did not complete in time.
    Timeout => "timeout",
    /// The node holds no confirmed worker lease (`/readyz`).
    LeaseNotHeld => "lease_not_held",
    /// A connection beyond the server's limit (answered, then closed).
    TooManyConnections => "too_many_connections",
    /// Something that should not happen: a bug, logged by the server.
    Internal => "internal",
}

impl ErrorCode {
    /// True when the same request may succeed later without any change by the client: a
    /// bounded wait ran out, a store or lease is in trouble, the node is busy or stopping.
    /// [`Error::is_retryable`](crate::Error::is_retryable) is this of its
    /// [`code`](crate::Error::code).
    ///
    /// [`ErrorCode::ClockBehind`] is retryable also when it stands for
    /// [`Error::ClockBehindHwm`](crate::Error::ClockBehindHwm): the clock only has to reach
    /// the high-water mark, and nothing else must change (the lease keeper retries it while
    /// re-acquiring; a node refused at start under `--clock-policy fail` starts when tried
    /// again once the clock has caught up). [`ErrorCode::PeriodUnavailable`] is not: it lifts
    /// at the next period, which can be a day away, and every node answers the same meanwhile.
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::ClockBehind
                | ErrorCode::HwmNotGranted
                | ErrorCode::SegmentUnavailable
                | ErrorCode::StoreUnavailable
                | ErrorCode::StoreConflict
                | ErrorCode::LeaseLost
                | ErrorCode::ShuttingDown
                | ErrorCode::NoWorkerFree
                | ErrorCode::Timeout
                | ErrorCode::LeaseNotHeld
                | ErrorCode::TooManyConnections
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not one of the [`ErrorCode`]s (from a newer server, or not a code at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownCode;

impl fmt::Display for UnknownCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not an idmint error code")
    }
}

impl std::error::Error for UnknownCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_and_is_written_once() {
        let mut seen = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(code));
            assert_eq!(code.to_string(), code.as_str());
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert!(
                code.as_str()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code}"
            );
        }
        assert_eq!("TAG_EXHAUSTED".parse::<ErrorCode>(), Err(UnknownCode));
        assert_eq!("unknown tag".parse::<ErrorCode>(), Err(UnknownCode));
    }

    #[test]
    fn waits_and_outages_are_retryable_refusals_are_not() {
        assert!(ErrorCode::ClockBehind.is_retryable());
        assert!(ErrorCode::StoreUnavailable.is_retryable());
        assert!(!ErrorCode::PeriodUnavailable.is_retryable());
        assert!(!ErrorCode::TagExhausted.is_retryable());
        assert!(!ErrorCode::StoreCorrupt.is_retryable());
    }
}
