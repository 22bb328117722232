//! A store set: several independent stores behind the two store traits, so that no one of them
//! is a single point of failure (docs/ARCHITECTURE.md, "Store sets").
//!
//! Store `k` of the `--store` list is partition `k`: it leases only its worker IDs and hands
//! out only its blocks of segment IDs, so the stores never need to agree on anything after the
//! set is created. This module routes each call:
//! - ranges from the node's home store, else the next store that answers, always asking for IDs
//!   above the last range this node got of the tag (so a node's IDs keep increasing when it
//!   moves, and a lagging store catches up);
//! - a lease from the home store, else the next one; renewals and releases to the store that
//!   owns the worker ID;
//! - tag changes to every store that answers; reads from the first that answers.
//!
//! Opening checks every store that answers against the list: each must hold the record of this
//! set at its position, or be empty and join it. A store that does not answer is opened (and
//! checked) when a call first needs it; until then, and for [`RETRY_AFTER`] after each failure,
//! calls go to the others first.

mod leases;
mod members;
mod segments;
mod status;

use std::sync::Arc;

use idmint_core::store::{Partition, DEFAULT_BLOCK};

use self::members::Members;
use crate::{Error, Result, Store, StoreOptions};

pub use self::members::RETRY_AFTER;
pub use self::status::{SetStatus, StoreState};

/// How a node uses a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetOptions {
    /// IDs per block of the segment partitions, fixed when the set is created (checked on
    /// every later start). Default [`DEFAULT_BLOCK`].
    pub block: u64,
    /// The store this node asks first (its index in the list), e.g. the one in its own
    /// datacenter. `None`: chosen from the node's name, so the nodes of a cluster spread over
    /// the stores.
    pub home: Option<usize>,
    /// The node's name, for the default home.
    pub node_name: String,
}

impl Default for SetOptions {
    fn default() -> Self {
        Self {
            block: DEFAULT_BLOCK,
            home: None,
            node_name: "idmint".into(),
        }
    }
}

impl SetOptions {
    /// The home store's index in a set of `count`.
    fn home_of(&self, count: usize) -> usize {
        match self.home {
            Some(home) => home,
            // FNV-1a: stable across processes and versions, unlike std's hasher.
            None => {
                let hash = self
                    .node_name
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    });
                (hash % count as u64) as usize
            }
        }
    }
}

/// Opens the stores at `urls` as one set, creating the set on first use.
///
/// One URL is a single store, as [`open`](crate::open), except that a store recorded as a
/// member of a larger set is refused (alone it would hand out IDs of the other stores'
/// partitions). Several URLs: every store that answers must be at its place in one set, or be
/// empty (it then joins). The first start on empty stores creates the set, store 0 first, so
/// that nodes starting at once agree on one set; creating needs store 0 to answer. Fails with
/// [`Error::StoreInvalid`] for a store of another set or at another place, one that holds data
/// of its own, or a block size other than the set's; with [`Error::StoreUnavailable`] when no
/// store answers.
pub async fn open_set(urls: &[String], options: &StoreOptions, set: &SetOptions) -> Result<Store> {
    match urls {
        [] => Err(Error::InvalidArgument {
            name: "store",
            reason: "no store given".into(),
        }),
        [url] => {
            let store = crate::open(url, options).await?;
            if let Some(record) = store.leases.store_set().await? {
                if !record.partition.is_whole() {
                    return Err(Error::store_invalid(format!(
                        "{} is store {} of {} in set {}: give every store of the set, in \
                         order, with --store",
                        store.display_url,
                        record.partition.index,
                        record.partition.count,
                        record.set_id
                    )));
                }
            }
            Ok(store)
        }
        _ => {
            if set.block == 0 {
                return Err(Error::InvalidArgument {
                    name: "store_block",
                    reason: "must be at least 1".into(),
                });
            }
            let home = set.home_of(urls.len());
            if home >= urls.len() {
                return Err(Error::InvalidArgument {
                    name: "home_store",
                    reason: format!("{home} is not a store of the list (0..{})", urls.len()),
                });
            }
            let members = Members::open(urls, options, set.block, home).await?;
            let display_url = members.display();
            Ok(Store {
                segments: Arc::new(segments::SetSegments::new(Arc::clone(&members))),
                leases: Arc::new(leases::SetLeases::new(Arc::clone(&members))),
                display_url,
                set: Some(Arc::new(SetStatus { members })),
            })
        }
    }
}

/// The partition of store `index` in a set of `count` with blocks of `block`.
fn partition(index: usize, count: usize, block: u64) -> Result<Partition> {
    Partition::new(index as u64, count as u64, block)
}
