//! Every ID handed out during a scenario, and the checks that make a duplicate impossible to
//! miss: no ID twice (snowflakes across all nodes, segment IDs per tag), IDs strictly
//! increasing per client and kind within one process lifetime, and, per snowflake worker ID,
//! the IDs of different holders in disjoint ranges.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use idmint_core::Layout;

/// The incarnation of a reply that straddled a restart: it counts for duplicates only.
pub const UNKNOWN: u64 = u64::MAX;

/// What was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Snowflake IDs.
    Snowflake,
    /// Segment IDs of a tag.
    Segment(String),
}

/// One successful reply.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The node asked.
    pub node: usize,
    /// Its process lifetime, or [`UNKNOWN`].
    pub incarnation: u64,
    /// The client that asked (one connection at a time, requests one after another).
    pub client: usize,
    /// What was asked.
    pub kind: Kind,
    /// The IDs, in the order given.
    pub ids: Vec<u64>,
}

/// The figures of a scenario.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Requests made.
    pub requests: u64,
    /// IDs checked.
    pub ids: u64,
    /// Failed requests by error code.
    pub failed: BTreeMap<String, u64>,
    /// The slowest request, failed or not.
    pub longest: Duration,
    /// Snowflake worker IDs held by more than one node lifetime in turn.
    pub workers_taken_over: usize,
}

impl Report {
    /// Failed requests in all.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "requests {}, IDs checked {}, duplicates 0, failed requests {} {:?}, longest request {} ms, worker IDs taken over {}",
            self.requests,
            self.ids,
            self.failed_total(),
            self.failed,
            self.longest.as_millis(),
            self.workers_taken_over
        )
    }
}

/// The record of a scenario, shared by its clients.
#[derive(Debug, Default)]
pub struct Ledger {
    batches: Mutex<Vec<Batch>>,
    report: Mutex<Report>,
}

impl Ledger {
    /// Records a successful reply that took `took`.
    pub fn ok(&self, batch: Batch, took: Duration) {
        {
            let mut report = self.report.lock().unwrap();
            report.requests += 1;
            report.ids += batch.ids.len() as u64;
            report.longest = report.longest.max(took);
        }
        self.batches.lock().unwrap().push(batch);
    }

    /// Records a failed request with its error code (HTTP `error.code`, the RESP error, or
    /// what the connection did).
    pub fn failed(&self, code: String, took: Duration) {
        let mut report = self.report.lock().unwrap();
        report.requests += 1;
        report.longest = report.longest.max(took);
        *report.failed.entry(code).or_default() += 1;
    }

    /// How many replies were recorded so far: a mark between the phases of a scenario.
    pub fn batch_count(&self) -> usize {
        self.batches.lock().unwrap().len()
    }

    /// The smallest and largest snowflake recorded since reply number `from`, if any.
    pub fn snowflake_bounds(&self, from: usize) -> Option<(u64, u64)> {
        let batches = self.batches.lock().unwrap();
        let ids = batches
            .iter()
            .skip(from)
            .filter(|b| b.kind == Kind::Snowflake)
            .flat_map(|b| b.ids.iter().copied());
        ids.fold(None, |bounds, id| match bounds {
            None => Some((id, id)),
            Some((low, high)) => Some((low.min(id), high.max(id))),
        })
    }

    /// The figures so far.
    pub fn report(&self) -> Report {
        self.report.lock().unwrap().clone()
    }

    /// Runs every check; panics naming the first violation. Returns the figures.
    pub fn check(&self, layout: &Layout) -> Report {
        let batches = self.batches.lock().unwrap();
        check_unique(&batches);
        check_increasing(&batches, layout);
        let workers_taken_over = check_snowflakes(&batches, layout);
        Report {
            workers_taken_over,
            ..self.report()
        }
    }
}

/// No ID twice: snowflakes across every node, segment IDs per tag.
fn check_unique(batches: &[Batch]) {
    let mut seen: HashMap<&Kind, HashSet<u64>> = HashMap::new();
    for batch in batches {
        let set = seen.entry(&batch.kind).or_default();
        for &id in &batch.ids {
            assert!(
                set.insert(id),
                "DUPLICATE {:?} ID {id} (node {}, incarnation {}, client {})",
                batch.kind,
                batch.node,
                batch.incarnation,
                batch.client
            );
        }
    }
}

/// Per client and process lifetime, IDs strictly increase from reply to reply: per tag, and
/// per worker ID for snowflakes (a node that lost its lease continues on another worker ID,
/// whose IDs may sort below the borrowed time of the lost one).
fn check_increasing(batches: &[Batch], layout: &Layout) {
    let mut last: HashMap<(usize, usize, u64, &Kind, u64), u64> = HashMap::new();
    for batch in batches {
        if batch.incarnation == UNKNOWN {
            continue;
        }
        for &id in &batch.ids {
            let worker = match batch.kind {
                Kind::Snowflake => layout.decode(id).ok().and_then(|d| d.worker).unwrap_or(0),
                Kind::Segment(_) => 0,
            };
            let key = (
                batch.client,
                batch.node,
                batch.incarnation,
                &batch.kind,
                worker,
            );
            if let Some(&previous) = last.get(&key) {
                assert!(
                    id > previous,
                    "{:?} ID {id} after {previous} from node {} in one lifetime (client {})",
                    batch.kind,
                    batch.node,
                    batch.client
                );
            }
            last.insert(key, id);
        }
    }
}

/// A holder of a worker ID: a node's process lifetime, `(node, incarnation)`.
type Holder = (usize, u64);

/// The lowest and highest snowflake a holder issued on one worker ID.
type Span = (u64, u64);

/// Snowflakes are positive as i64, decode with the layout, and per worker ID the IDs of each
/// holder (node lifetime) lie in ranges that do not overlap: a new holder starts above
/// everything the previous one issued. Returns how many worker IDs had several holders.
fn check_snowflakes(batches: &[Batch], layout: &Layout) -> usize {
    let mut ranges: BTreeMap<u64, HashMap<Holder, Span>> = BTreeMap::new();
    for batch in batches.iter().filter(|b| b.kind == Kind::Snowflake) {
        for &id in &batch.ids {
            assert!(
                id > 0 && id <= i64::MAX as u64,
                "snowflake {id} is not a positive i64"
            );
            let decoded = layout
                .decode(id)
                .unwrap_or_else(|e| panic!("snowflake {id} does not decode: {e}"));
            if batch.incarnation == UNKNOWN {
                continue;
            }
            let worker = decoded.worker.unwrap_or(0);
            let range = ranges
                .entry(worker)
                .or_default()
                .entry((batch.node, batch.incarnation))
                .or_insert((id, id));
            range.0 = range.0.min(id);
            range.1 = range.1.max(id);
        }
    }
    let mut taken_over = 0;
    for (worker, holders) in ranges {
        taken_over += usize::from(holders.len() > 1);
        let mut spans: Vec<(Holder, Span)> = holders.into_iter().collect();
        spans.sort_by_key(|(_, (low, _))| *low);
        for pair in spans.windows(2) {
            let ((a, (_, a_high)), (b, (b_low, _))) = (pair[0], pair[1]);
            assert!(
                a_high < b_low,
                "worker {worker}: holder {a:?} issued up to {a_high}, holder {b:?} from {b_low}: overlap"
            );
        }
    }
    taken_over
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: &str = "time:41@1ms,worker:3,seq:12";

    /// A snowflake of `worker` at `tick`, sequence `seq`.
    fn id(tick: u64, worker: u64, seq: u64) -> u64 {
        (tick << 15) | (worker << 12) | seq
    }

    fn batch(node: usize, incarnation: u64, kind: Kind, ids: Vec<u64>) -> Batch {
        Batch {
            node,
            incarnation,
            client: node,
            kind,
            ids,
        }
    }

    fn checked(batches: Vec<Batch>) -> Report {
        let ledger = Ledger::default();
        for b in batches {
            ledger.ok(b, Duration::ZERO);
        }
        ledger.check(&Layout::parse(LAYOUT).unwrap())
    }

    #[test]
    fn a_clean_record_passes_and_counts_takeovers() {
        let report = checked(vec![
            batch(0, 0, Kind::Snowflake, vec![id(10, 1, 0), id(10, 1, 1)]),
            batch(1, 0, Kind::Snowflake, vec![id(11, 1, 0)]),
            batch(0, 0, Kind::Segment("t".into()), vec![1, 2]),
            batch(1, 0, Kind::Segment("t".into()), vec![101]),
            batch(1, UNKNOWN, Kind::Segment("u".into()), vec![1]),
        ]);
        assert_eq!((report.ids, report.workers_taken_over), (7, 1));
    }

    #[test]
    #[should_panic(expected = "DUPLICATE")]
    fn a_duplicate_across_nodes_is_caught() {
        checked(vec![
            batch(0, 0, Kind::Segment("t".into()), vec![5]),
            batch(1, UNKNOWN, Kind::Segment("t".into()), vec![5]),
        ]);
    }

    #[test]
    #[should_panic(expected = "in one lifetime")]
    fn a_decrease_within_one_lifetime_is_caught() {
        checked(vec![
            batch(0, 3, Kind::Segment("t".into()), vec![9]),
            batch(0, 3, Kind::Segment("t".into()), vec![8]),
        ]);
    }

    #[test]
    #[should_panic(expected = "overlap")]
    fn interleaved_holders_of_one_worker_are_caught() {
        checked(vec![
            batch(0, 0, Kind::Snowflake, vec![id(10, 2, 0), id(12, 2, 0)]),
            batch(1, 0, Kind::Snowflake, vec![id(11, 2, 0)]),
        ]);
    }
}
