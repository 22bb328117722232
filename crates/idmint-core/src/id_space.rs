//! The ID space: what turns a `(worker, tick, seq)` into a 64-bit value, pinned in the store.
//!
//! The fenced high-water mark (HWM) protects a worker ID's *ticks*: no two holders issue the
//! same tick. But a tick is a different ID under another epoch, layout or datacenter: a node
//! restarted with its epoch moved forward by two seconds issues, at the same wall time, the IDs
//! its previous run issued two seconds earlier. So the settings that decide an ID's value are
//! recorded in the store per namespace, the first time a node serves snowflakes, and every
//! later node must bring the same ones ([`check_pinned`]).
//!
//! A space can still be changed, through [`plan_change`]: the new space is accepted only when
//! the smallest ID it can issue from the moment of the change is above the largest ID the
//! current space can have issued, judged by the highest HWM of any worker ID. The record keeps
//! that smallest ID (`first_id`), so the spaces of a namespace cover ascending, disjoint ranges
//! of values, and an old ID is decoded with the space whose range holds it ([`space_of`]).
//!
//! A permutation key ([`crate::permutation`]) is part of the space too, by its fingerprint:
//! a node that hands out permuted IDs beside one that hands out plain ones, or one with
//! another key, could give one value twice. Unlike the other settings it cannot be changed by
//! [`plan_change`] at all: permuted values are spread over the whole range, so no new space
//! lies above them.
//!
//! The datacenter is part of the space: the nodes of one namespace share one lease table, so
//! they share one datacenter value. Several datacenters on one database use one namespace each
//! (`--namespace`), which gives each its own worker leases and its own pinned space.

use std::fmt;

use crate::error::{Error, Result};
use crate::layout::{format_ms_rfc3339, Layout};
use crate::permutation::Permutation;

/// The settings that decide which 64-bit value an ID gets: layout, epoch, datacenter, and the
/// permutation of the public values.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IdSpace {
    /// The layout's canonical spec (`time:41@1ms,worker:10,seq:12`): presets are resolved, so
    /// `twitter` and its spec with Twitter's epoch are the same space.
    pub layout: String,
    /// The layout's epoch, ms since the Unix epoch.
    pub epoch_ms: u64,
    /// The datacenter placed in every ID (0 for layouts without a `dc` field).
    pub datacenter: u64,
    /// The fingerprint of the key whose permutation every ID is handed out in
    /// ([`Permutation::fingerprint`]), or `None` for plain IDs.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub permutation: Option<String>,
}

impl IdSpace {
    /// The space a node with `layout` and `datacenter` mints in.
    pub fn of(layout: &Layout, datacenter: u64) -> Self {
        Self {
            layout: layout.spec(),
            epoch_ms: layout.epoch_ms(),
            datacenter,
            permutation: None,
        }
    }

    /// The same space with its public IDs in `permutation` (`None`: plain).
    pub fn permuted(mut self, permutation: Option<&Permutation>) -> Self {
        self.permutation = permutation.map(Permutation::fingerprint);
        self
    }

    /// The layout of this space, with its epoch.
    pub fn to_layout(&self) -> Result<Layout> {
        Layout::parse(&self.layout)?.with_epoch(self.epoch_ms)
    }

    /// The names of the settings in which `other` differs from `self`.
    pub fn differences(&self, other: &IdSpace) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.layout != other.layout {
            names.push("layout");
        }
        if self.epoch_ms != other.epoch_ms {
            names.push("epoch");
        }
        if self.datacenter != other.datacenter {
            names.push("datacenter");
        }
        if self.permutation != other.permutation {
            names.push("permutation key");
        }
        names
    }
}

impl fmt::Display for IdSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "layout {}, epoch {} ({} ms), datacenter {}",
            self.layout,
            format_ms_rfc3339(self.epoch_ms),
            self.epoch_ms,
            self.datacenter
        )?;
        match &self.permutation {
            Some(fingerprint) => write!(f, ", permuted by key {fingerprint}"),
            None => Ok(()),
        }
    }
}

/// One recorded space of a namespace: the versions count up from 1, the newest is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IdSpaceRecord {
    /// 1 for the space recorded by the first node, then one more per change.
    pub version: u64,
    /// The settings.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub space: IdSpace,
    /// No node of this space issues a tick that starts before this moment (ms since the Unix
    /// epoch): the moment of the change, so a node whose clock is behind it cannot reach back
    /// into the values of the previous space. 0 for the first space.
    pub issues_from_ms: u64,
    /// The smallest ID this space can issue; every ID of the previous spaces is below it.
    pub first_id: u64,
    /// When the store recorded it, by the store's clock (ms since the Unix epoch).
    pub recorded_at_ms: u64,
}

impl IdSpaceRecord {
    /// The record of a namespace's first space: it may issue from any time on.
    pub fn first(space: IdSpace) -> Self {
        Self {
            version: 1,
            space,
            issues_from_ms: 0,
            first_id: 0,
            recorded_at_ms: 0,
        }
    }
}

/// The space in force (the newest record), if it is `given`; otherwise
/// [`Error::IdSpaceMismatch`] naming both. With no record yet, `None`: the caller records
/// `given` as the first space.
pub fn check_pinned<'a>(
    history: &'a [IdSpaceRecord],
    given: &IdSpace,
) -> Result<Option<&'a IdSpaceRecord>> {
    let Some(current) = history.last() else {
        return Ok(None);
    };
    if current.space == *given {
        return Ok(Some(current));
    }
    Err(Error::IdSpaceMismatch {
        differences: current.space.differences(given),
        message: mismatch_message(current, given),
    })
}

/// The message of [`Error::IdSpaceMismatch`]: both spaces, what differs, and the two ways on.
fn mismatch_message(stored: &IdSpaceRecord, given: &IdSpace) -> String {
    let names = stored.space.differences(given);
    if names == ["permutation key"] {
        let shown = |space: &IdSpace| match &space.permutation {
            Some(fingerprint) => format!("key {fingerprint}"),
            None => "no permutation key".to_owned(),
        };
        return format!(
            "this node's permutation key differs from the one pinned in the store for its \
             namespace: stored {}, given {}. Another key (or none) would hand out values the \
             namespace's nodes hand out too, and a namespace's key never changes: start the \
             node with the namespace's key file (`--permutation-key-file`), or give the new \
             key a new namespace (`--namespace`)",
            shown(&stored.space),
            shown(given)
        );
    }
    let verb = if names.len() == 1 {
        "differs"
    } else {
        "differ"
    };
    let differ = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    };
    format!(
        "this node's ID space differs from the one pinned in the store for its namespace \
         (version {}): stored {}; given {given}. The {differ} {verb}, and under other settings \
         the same worker and time would make other IDs, some already issued. Start the node \
         with the stored settings, or move the namespace to the new space with \
         `idmint id-space change` (it accepts only a space whose IDs all lie above those \
         already issued)",
        stored.version, stored.space
    )
}

/// The index in `history` of the record whose range of values holds `id`: the newest one
/// whose `first_id` is at most `id` (ranges ascend with the version).
pub fn space_of(history: &[IdSpaceRecord], id: u64) -> Option<usize> {
    history.iter().rposition(|record| record.first_id <= id)
}

/// A change of space that [`plan_change`] accepted: the record to write and the figures it
/// rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SpaceChange {
    /// The new record (the store fills in `recorded_at_ms`).
    pub record: IdSpaceRecord,
    /// The largest ID the namespace can have issued so far, if any.
    pub issued_up_to: Option<u64>,
    /// The highest HWM of any worker ID the judgement used: the store refuses the change if a
    /// worker's HWM rose above it meanwhile.
    pub hwm_bound_ms: u64,
}

/// Checks a change from `current` to `new` at `now_ms`, when no worker ID's HWM is above
/// `max_hwm_ms` and no lease is live (the caller checks that: a live node could issue above
/// any HWM read now).
///
/// Accepted when the smallest ID `new` can issue from `now_ms` on is above every ID the
/// namespace can have issued: those of `current` up to the tick of `max_hwm_ms`, and those of
/// earlier spaces, which lie below `current.first_id`. Otherwise
/// [`Error::IdSpaceRefused`] with the numbers and, when there is one, the moment from which
/// the same change would be accepted.
pub fn plan_change(
    current: &IdSpaceRecord,
    new: &IdSpace,
    max_hwm_ms: u64,
    now_ms: u64,
) -> Result<SpaceChange> {
    if current.space == *new {
        return Err(Error::IdSpaceRefused {
            reason: format!("the store already pins {new} (version {})", current.version),
        });
    }
    if current.space.permutation != new.permutation {
        return Err(Error::IdSpaceRefused {
            reason: permutation_fixed(&current.space, new),
        });
    }
    let old_layout = current.space.to_layout()?;
    let new_layout = new.to_layout()?;
    new_layout.check_fits(crate::FieldKind::Dc, new.datacenter)?;
    new_layout.check_epoch_not_future(now_ms)?;
    let issued_up_to = issued_up_to(current, &old_layout, max_hwm_ms);
    let first_id = first_id_at(&new_layout, new.datacenter, now_ms)?;
    let above = issued_up_to.is_none_or(|max| first_id > max);
    if !above {
        let max = issued_up_to.unwrap_or(0);
        return Err(Error::IdSpaceRefused {
            reason: refusal(new, &new_layout, first_id, max, max_hwm_ms, now_ms),
        });
    }
    Ok(SpaceChange {
        record: IdSpaceRecord {
            version: current.version + 1,
            space: new.clone(),
            issues_from_ms: now_ms,
            first_id,
            recorded_at_ms: 0,
        },
        issued_up_to,
        hwm_bound_ms: max_hwm_ms,
    })
}

/// The largest ID the namespace can have issued while no HWM passed `max_hwm_ms`: the largest
/// value of `current`'s layout (`layout`) at the tick of `max_hwm_ms`, and, below
/// `current.first_id`, every ID of the earlier spaces; `None` when nothing can have been issued.
///
/// The HWM bounds every tick any holder issued, whichever space it was judged in: an HWM from
/// before `current` only makes the bound larger (safe), and one inside `current`'s first tick
/// (which starts before `issues_from_ms` for coarse units) is covered as its whole tick.
fn issued_up_to(current: &IdSpaceRecord, layout: &Layout, max_hwm_ms: u64) -> Option<u64> {
    let earlier = current.first_id.checked_sub(1);
    let own = layout
        .tick_at(max_hwm_ms)
        .map(|tick| layout.max_id_at(tick.min(layout.max_tick()), current.space.datacenter));
    earlier.max(own)
}

/// The smallest ID `layout` can issue with `datacenter` from `unix_ms` on: the smallest value
/// of that tick (a later tick is larger whatever the fields around the time field hold).
fn first_id_at(layout: &Layout, datacenter: u64, unix_ms: u64) -> Result<u64> {
    let tick = layout.tick_at(unix_ms).ok_or(Error::ClockBeforeEpoch {
        now_ms: unix_ms,
        epoch_ms: layout.epoch_ms(),
    })?;
    if tick > layout.max_tick() {
        return Err(Error::LayoutExhausted {
            ends_at: format_ms_rfc3339(layout.ends_at_ms()),
        });
    }
    Ok(layout.min_id_at(tick, datacenter))
}

/// The first tick of `layout` whose smallest ID (with `datacenter`) is above `issued_up_to`, if
/// the layout has one: a binary search, since that smallest ID grows with the tick.
fn first_tick_above(layout: &Layout, datacenter: u64, issued_up_to: u64) -> Option<u64> {
    let (mut low, mut high) = (0, layout.max_tick());
    if layout.min_id_at(high, datacenter) <= issued_up_to {
        return None;
    }
    while low < high {
        let mid = low + (high - low) / 2;
        if layout.min_id_at(mid, datacenter) > issued_up_to {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    Some(low)
}

/// The store's side of [`WorkerLeases::record_id_space`](crate::WorkerLeases::record_id_space),
/// for backends that decide in Rust: whether `record` may be written, given what the store
/// holds inside the same atomic decision (the newest version, how many leases are live, the
/// highest HWM of any worker ID).
pub fn check_record(
    record: &IdSpaceRecord,
    newest: Option<u64>,
    live_leases: u64,
    max_hwm_ms: u64,
    hwm_bound_ms: u64,
) -> Result<()> {
    if newest.unwrap_or(0).checked_add(1) != Some(record.version) {
        return Err(Error::store_conflict(format!(
            "the ID space is at version {} in the store, not {}: it changed meanwhile",
            newest.unwrap_or(0),
            record.version.saturating_sub(1)
        )));
    }
    if record.version == 1 {
        return Ok(());
    }
    if live_leases > 0 {
        return Err(Error::IdSpaceRefused {
            reason: format!(
                "{live_leases} worker lease(s) are live: stop every node of this namespace first, \
             and remove an in-database function (`idmint sql uninstall`) if one is installed \
             (`idmint id-space show` lists them)"
            ),
        });
    }
    if max_hwm_ms > hwm_bound_ms {
        return Err(Error::store_conflict(format!(
            "a worker's high-water mark rose to {max_hwm_ms} ms since the change was judged \
             at {hwm_bound_ms} ms: try again"
        )));
    }
    Ok(())
}

/// The store's side of [`LeaseRequest::id_space`](crate::store::LeaseRequest::id_space): a
/// node may take a worker lease only under the space in force (`newest`, `None` when none is
/// recorded).
pub fn check_lease_space(requested: Option<u64>, newest: Option<u64>) -> Result<()> {
    match requested {
        Some(held) if Some(held) != newest => Err(Error::IdSpaceChanged {
            held,
            stored: newest.unwrap_or(0),
        }),
        _ => Ok(()),
    }
}

/// Why a change is refused, with the numbers, and from when it would be accepted.
fn refusal(
    new: &IdSpace,
    layout: &Layout,
    first_id: u64,
    issued_up_to: u64,
    max_hwm_ms: u64,
    now_ms: u64,
) -> String {
    let mut text = format!(
        "{new} would overlap IDs already issued: its first ID now would be {first_id}, but IDs \
         up to {issued_up_to} may have been issued (the highest worker high-water mark is {} \
         ({max_hwm_ms} ms))",
        format_ms_rfc3339(max_hwm_ms)
    );
    if let Some(tick) = first_tick_above(layout, new.datacenter, issued_up_to) {
        let from = layout.tick_start_ms(tick);
        text.push_str(&format!(
            "; the same change is accepted from {} on (in {}), or choose an earlier epoch",
            format_ms_rfc3339(from),
            rough_duration(from.saturating_sub(now_ms))
        ));
    } else {
        text.push_str("; this layout can never issue above them: choose a wider time field or an earlier epoch");
    }
    text
}

/// Why the permutation key of a namespace cannot change: the public values of its IDs lie all
/// over the range, so those of another key (or plain IDs) would meet them.
fn permutation_fixed(current: &IdSpace, new: &IdSpace) -> String {
    let shown = |space: &IdSpace| match &space.permutation {
        Some(fingerprint) => format!("key {fingerprint}"),
        None => "no permutation".to_owned(),
    };
    format!(
        "the namespace hands out its IDs with {}, and a space with {} is asked for: a \
         permutation key is fixed for the life of a namespace, since the public values of one \
         key are spread over every value and those of another key (or plain IDs) would meet \
         them. Keep the key, or start a new namespace (`--namespace`) with the new one",
        shown(current),
        shown(new)
    )
}

/// A wait for people: seconds up to two minutes, then minutes, hours, days.
fn rough_duration(ms: u64) -> String {
    let seconds = ms.div_ceil(1_000);
    match seconds {
        0..=120 => format!("{seconds} s"),
        121..=7_200 => format!("{} min", seconds.div_ceil(60)),
        7_201..=172_800 => format!("{} h", seconds.div_ceil(3_600)),
        _ => format!("{} days", seconds.div_ceil(86_400)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn space(spec: &str, epoch_ms: u64) -> IdSpace {
        let Ok(layout) = Layout::parse(spec).and_then(|l| l.with_epoch(epoch_ms)) else {
            panic!("bad test layout {spec}");
        };
        IdSpace::of(&layout, 0)
    }

    fn first(spec: &str, epoch_ms: u64) -> IdSpaceRecord {
        IdSpaceRecord::first(space(spec, epoch_ms))
    }

    const SPEC: &str = "time:41@1ms,worker:10,seq:12";
    const EPOCH: u64 = 1_735_689_600_000;

    #[test]
    fn the_same_space_passes_and_another_is_refused_by_name() {
        let history = vec![first(SPEC, EPOCH)];
        assert!(
            matches!(check_pinned(&history, &space(SPEC, EPOCH)), Ok(Some(r)) if r.version == 1)
        );
        assert!(matches!(check_pinned(&[], &space(SPEC, EPOCH)), Ok(None)));
        let moved = space(SPEC, EPOCH + 2_011);
        let Err(Error::IdSpaceMismatch { differences, .. }) = check_pinned(&history, &moved) else {
            panic!("a moved epoch must be refused");
        };
        assert_eq!(differences, ["epoch"]);
        let message = check_pinned(&history, &moved)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            message.contains("1735689600000") && message.contains("1735689602011"),
            "{message}"
        );
        assert!(message.contains("idmint id-space change"), "{message}");
    }

    #[test]
    fn the_permutation_key_is_part_of_the_space_and_never_changes() {
        let Ok(key) = Permutation::from_hex("000102030405060708090a0b0c0d0e0f") else {
            panic!("the key parses");
        };
        let plain = space(SPEC, EPOCH);
        let permuted = plain.clone().permuted(Some(&key));
        assert_eq!(plain.differences(&permuted), ["permutation key"]);
        assert!(permuted
            .to_string()
            .contains("permuted by key feistel63x8-siphash24:"));
        let history = vec![IdSpaceRecord::first(permuted.clone())];
        assert!(matches!(
            check_pinned(&history, &plain),
            Err(Error::IdSpaceMismatch { .. })
        ));
        // Not even with nothing issued, nor with an earlier epoch that would pass otherwise.
        for (from, to) in [(&permuted, &plain), (&plain, &permuted)] {
            let current = IdSpaceRecord::first(from.clone());
            let mut to = to.clone();
            to.epoch_ms = EPOCH - 86_400_000;
            let refused = plan_change(&current, &to, 0, NOW);
            let Err(Error::IdSpaceRefused { reason }) = refused else {
                panic!("a permutation change must be refused: {refused:?}");
            };
            assert!(reason.contains("new namespace"), "{reason}");
        }
        let mut earlier = permuted.clone();
        earlier.epoch_ms = EPOCH - 86_400_000;
        assert!(plan_change(&IdSpaceRecord::first(permuted), &earlier, NOW, NOW).is_ok());
    }

    #[test]
    fn presets_and_their_spec_are_one_space() {
        let (Ok(preset), Ok(spelled)) = (
            Layout::parse("twitter"),
            Layout::parse_with_epoch("time:41@1ms,dc:5,worker:5,seq:12", Some("1288834974657")),
        ) else {
            panic!("layouts must parse");
        };
        assert_eq!(IdSpace::of(&preset, 3), IdSpace::of(&spelled, 3));
        assert_ne!(IdSpace::of(&preset, 3), IdSpace::of(&spelled, 4));
    }

    #[test]
    fn an_epoch_moved_forward_is_refused_with_the_moment_it_would_pass() {
        let current = first(SPEC, EPOCH);
        // The old space's nodes issued up to NOW; the new epoch is 2,011 ms later.
        let refused = plan_change(&current, &space(SPEC, EPOCH + 2_011), NOW, NOW);
        let Err(Error::IdSpaceRefused { reason }) = refused else {
            panic!("an overlapping space must be refused: {refused:?}");
        };
        assert!(reason.contains("accepted from"), "{reason}");
        // 2,011 ms later (plus the last tick's own width) the same change passes.
        assert!(plan_change(&current, &space(SPEC, EPOCH + 2_011), NOW, NOW + 2_011).is_err());
        assert!(plan_change(&current, &space(SPEC, EPOCH + 2_011), NOW, NOW + 2_012).is_ok());
    }

    #[test]
    fn an_earlier_epoch_is_accepted_and_its_first_id_is_above_everything_issued() {
        let current = first(SPEC, EPOCH);
        let Ok(change) = plan_change(&current, &space(SPEC, EPOCH - 86_400_000), NOW, NOW) else {
            panic!("an earlier epoch lies above");
        };
        let Some(issued) = change.issued_up_to else {
            panic!("IDs were issued");
        };
        assert!(change.record.first_id > issued);
        assert_eq!(change.record.version, 2);
        assert_eq!(change.record.issues_from_ms, NOW);
        // Decoding picks the space by value.
        let history = vec![current.clone(), change.record.clone()];
        assert_eq!(space_of(&history, issued), Some(0));
        assert_eq!(space_of(&history, change.record.first_id), Some(1));
    }

    #[test]
    fn a_layout_with_fewer_low_bits_is_refused_and_one_with_more_is_accepted() {
        let current = first(SPEC, EPOCH);
        // Sonyflake's 39-bit 10 ms time at the top of 63 bits starts far lower.
        let sony = plan_change(
            &current,
            &space("time:39@10ms,seq:8,worker:16", EPOCH),
            NOW,
            NOW,
        );
        assert!(
            matches!(sony, Err(Error::IdSpaceRefused { .. })),
            "{sony:?}"
        );
        // Fewer bits below the time field: the same moment is a smaller value.
        let lower = plan_change(&current, &space("time:51@1ms,seq:12", EPOCH), NOW, NOW);
        assert!(
            matches!(lower, Err(Error::IdSpaceRefused { .. })),
            "{lower:?}"
        );
        // One more bit below it: every tick is worth twice as much, so the same time lies higher.
        let higher = plan_change(
            &current,
            &space("time:40@1ms,worker:11,seq:12", EPOCH),
            NOW,
            NOW,
        );
        assert!(higher.is_ok(), "{higher:?}");
    }

    #[test]
    fn nothing_issued_means_any_space_above_the_previous_ones_passes() {
        let current = first(SPEC, EPOCH);
        // No HWM at all: nothing was ever issued.
        let change = plan_change(&current, &space(SPEC, EPOCH + 5_000), 0, NOW);
        let Ok(change) = change else {
            panic!("nothing issued: {change:?}");
        };
        assert_eq!(change.issued_up_to, None);
        // A third space must still lie above the second's first ID.
        let second = change.record;
        let lower = plan_change(&second, &space(SPEC, EPOCH + 10_000), 0, NOW);
        assert!(
            matches!(lower, Err(Error::IdSpaceRefused { .. })),
            "{lower:?}"
        );
        assert!(plan_change(&second, &space(SPEC, EPOCH + 5_000), 0, NOW).is_err());
    }

    #[test]
    fn a_datacenter_change_is_judged_with_the_datacenter_bits() {
        let Ok(layout) = Layout::parse("twitter") else {
            panic!("twitter parses");
        };
        let dc = |n| IdSpace::of(&layout, n);
        let current = IdSpaceRecord::first(dc(1));
        // Same tick: dc 2's IDs lie above dc 1's, dc 0's below them until the next tick.
        assert!(plan_change(&current, &dc(2), NOW, NOW).is_ok());
        assert!(plan_change(&current, &dc(0), NOW, NOW).is_err());
        assert!(plan_change(&current, &dc(0), NOW, NOW + 1).is_ok());
        assert!(matches!(
            plan_change(&current, &dc(32), NOW, NOW + 1),
            Err(Error::InvalidArgument { .. })
        ));
    }

    #[test]
    fn fields_above_the_time_field_count_in_both_bounds() {
        // Worker IDs above the time field: worker 1023 of an old tick outranks worker 0 of most
        // ticks, so moving the time field to the top lies above what was issued only decades
        // later.
        let current = first("worker:10,time:41@1ms,seq:12", EPOCH);
        let refused = plan_change(&current, &space(SPEC, EPOCH), NOW, NOW);
        let Err(Error::IdSpaceRefused { reason }) = refused else {
            panic!("the top bits were issued already: {refused:?}");
        };
        // Only near the end of the new layout's time field (2094) do its IDs pass them.
        assert!(reason.contains("accepted from 2094-"), "{reason}");
    }

    #[test]
    fn the_first_tick_of_a_coarse_space_is_covered_whole() {
        // 1 s ticks: the space came into force 500 ms into tick T, and its nodes issued in T
        // (released with HWM = the start of T, before issues_from).
        const COARSE: &str = "time:31@1s,worker:10,seq:22";
        let Ok(layout) = Layout::parse(COARSE).and_then(|l| l.with_epoch(EPOCH)) else {
            panic!("the layout parses");
        };
        let Some(tick) = layout.tick_at(NOW + 500) else {
            panic!("after the epoch");
        };
        let current = IdSpaceRecord {
            version: 2,
            space: IdSpace::of(&layout, 0),
            issues_from_ms: NOW + 500,
            first_id: layout.min_id_at(tick, 0),
            recorded_at_ms: NOW + 500,
        };
        let hwm = layout.tick_start_ms(tick);
        assert!(hwm < current.issues_from_ms);
        // Same time field and width, still inside T: its first ID would be T's first.
        let same_shift = space("time:31@1s,worker:11,seq:21", EPOCH);
        let refused = plan_change(&current, &same_shift, hwm, NOW + 600);
        assert!(
            matches!(refused, Err(Error::IdSpaceRefused { .. })),
            "{refused:?}"
        );
        assert!(plan_change(&current, &same_shift, hwm, NOW + 1_000).is_ok());
    }
}
