//! The node's 128-bit generators, one UUIDv7 and one ULID, held with the worker lease.
//!
//! Without `--id128-node` they carry no node field, and a new lease keeps them as they are.
//! With it, each ID carries the node's leased identity (its datacenter and worker ID, as wide
//! as the layout's `dc` and `worker` fields together), so two nodes of one namespace never give
//! the same ID even if their random bits met; a lease on another worker ID then replaces them
//! with generators of the new node field that start above the old ones' last ID, so the node's
//! IDs keep increasing across the change.

use std::sync::Arc;

use idmint_core::{Clock, Error, FieldKind, Id128Generator, Id128Kind, Layout, Result};

/// Where this node's 128-bit IDs get their node field from, and how its generators are bounded:
/// fixed for the node's life.
#[derive(Debug, Clone)]
pub(crate) struct Id128Settings {
    /// Bits of the node field: the layout's `dc` and `worker` bits together, or 0 without
    /// `--id128-node`.
    pub(crate) node_bits: u32,
    /// Bits of the worker ID within the node field (the datacenter sits above it).
    worker_bits: u32,
    /// The datacenter placed above the worker ID.
    datacenter: u64,
    clock: Arc<dyn Clock>,
    max_lead: std::time::Duration,
}

impl Id128Settings {
    /// The settings for `layout` and `datacenter`: with `node` on, a node field of the
    /// layout's `dc` and `worker` bits, refused when they are more than the 24 bits a node
    /// field may take or none at all.
    pub(crate) fn new(
        node: bool,
        layout: &Layout,
        datacenter: u64,
        clock: Arc<dyn Clock>,
        max_lead: std::time::Duration,
    ) -> Result<Self> {
        let worker_bits = layout
            .field(FieldKind::Worker)
            .map_or(0, |field| field.bits);
        let node_bits = if node { node_field_width(layout)? } else { 0 };
        Ok(Self {
            node_bits,
            worker_bits,
            // Only a layout with a dc field places one (the setting is 0 otherwise).
            datacenter: if layout.field(FieldKind::Dc).is_some() {
                datacenter
            } else {
                0
            },
            clock,
            max_lead,
        })
    }

    /// The node field of `worker_id`: the datacenter above the worker ID.
    fn node(&self, worker_id: u64) -> u32 {
        let node = self.datacenter << self.worker_bits | worker_id;
        // Both fit the layout, whose fields together are `node_bits` <= 24 wide.
        u32::try_from(node).unwrap_or(u32::MAX)
    }

    /// The generators of a lease on `worker_id` that may issue from `first_ms` on (above the
    /// previous holder's high-water mark). `previous`, those of this node's lease before.
    ///
    /// Without a node field they are kept: nothing in them depends on the lease. With one,
    /// they are always replaced, by generators that start above `previous` (this node's order
    /// holds) and not before `first_ms`: another node that held the worker ID in between put
    /// the same node field in IDs up to its high-water mark, and these start after it, as the
    /// lease's snowflakes do (`Ids::id128s` bounds them from above by its granted mark).
    pub(crate) fn generators(
        &self,
        worker_id: u64,
        first_ms: u64,
        previous: Option<&Arc<Id128Generators>>,
    ) -> Result<Arc<Id128Generators>> {
        let node = if self.node_bits == 0 {
            if let Some(previous) = previous {
                return Ok(Arc::clone(previous));
            }
            0
        } else {
            self.node(worker_id)
        };
        let build = |kind: Id128Kind, before: Option<&Id128Generator>| {
            let mut builder = Id128Generator::builder(kind)
                .node(self.node_bits, node)
                .clock(Arc::clone(&self.clock))
                .max_lead(self.max_lead)
                // The ID service waits for the clock itself, asynchronously (`Ids::id128s`):
                // a generator that would have to wait says so at once.
                .max_wait(std::time::Duration::ZERO);
            if let Some(before) = before {
                builder = builder.after(before);
            }
            if self.node_bits > 0 {
                builder = builder.not_before_ms(first_ms);
            }
            builder.build()
        };
        Ok(Arc::new(Id128Generators {
            uuid7: build(Id128Kind::Uuid7, previous.map(|p| &p.uuid7))?,
            ulid: build(Id128Kind::Ulid, previous.map(|p| &p.ulid))?,
        }))
    }
}

/// The width of the node field `--id128-node` gives 128-bit IDs on `layout`: its `dc` and
/// `worker` fields' bits together, refused when there is nothing to put in it or when it would
/// take more than the 24 bits a node field may.
pub fn node_field_width(layout: &Layout) -> Result<u32> {
    let bits = |kind| layout.field(kind).map_or(0, |field| field.bits);
    let bits = bits(FieldKind::Dc) + bits(FieldKind::Worker);
    let refused = |reason: String| Error::InvalidArgument {
        name: "id128-node",
        reason,
    };
    if bits == 0 {
        return Err(refused(
            "the layout has neither a dc nor a worker field: there is no node identity to put \
             in 128-bit IDs"
                .to_owned(),
        ));
    }
    if bits > idmint_core::id128::MAX_NODE_BITS {
        return Err(refused(format!(
            "the layout's dc and worker fields take {bits} bits together, and the node field \
             of a 128-bit ID holds at most {}: use a layout with fewer worker (or dc) bits, or \
             leave --id128-node off",
            idmint_core::id128::MAX_NODE_BITS
        )));
    }
    Ok(bits)
}

/// The two 128-bit generators of one lease.
#[derive(Debug)]
pub struct Id128Generators {
    uuid7: Id128Generator,
    ulid: Id128Generator,
}

impl Id128Generators {
    /// Whether their IDs carry the lease's worker ID, and so are fenced by its high-water mark.
    pub fn fenced(&self) -> bool {
        self.uuid7.node().0 > 0
    }

    /// The generator of `kind`.
    #[inline]
    pub fn of(&self, kind: Id128Kind) -> &Id128Generator {
        match kind {
            Id128Kind::Uuid7 => &self.uuid7,
            Id128Kind::Ulid => &self.ulid,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::Duration;

    use idmint_core::ManualClock;

    use super::*;

    fn settings(node: bool, layout: &str) -> Result<Id128Settings> {
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(1_750_000_000_000));
        Id128Settings::new(
            node,
            &Layout::parse(layout).unwrap(),
            2,
            clock,
            Duration::from_secs(1),
        )
    }

    #[test]
    fn the_node_field_is_the_datacenter_above_the_worker() {
        let settings = settings(true, "time:41@1ms,dc:5,worker:5,seq:12").unwrap();
        assert_eq!(settings.node_bits, 10);
        let generators = settings.generators(7, 0, None).unwrap();
        let id = generators.of(Id128Kind::Uuid7).next_id().unwrap();
        let decoded = id.decode(None, 10).unwrap();
        assert_eq!(decoded.node, Some(2 << 5 | 7));
        let id = generators.of(Id128Kind::Ulid).next_id().unwrap();
        assert_eq!(id.decode(Some(Id128Kind::Ulid), 10).unwrap().node, Some(71));
    }

    #[test]
    fn a_node_field_too_wide_or_empty_is_refused_and_off_is_none() {
        let wide = settings(true, "time:31@1ms,dc:10,worker:15,seq:7").unwrap_err();
        assert!(wide.to_string().contains("25 bits"), "{wide}");
        let none = settings(true, "time:41@1ms,seq:22").unwrap_err();
        assert!(none.to_string().contains("neither"), "{none}");
        let off = settings(false, "time:31@1ms,dc:10,worker:15,seq:7").unwrap();
        assert_eq!(off.node_bits, 0);
        let generators = off.generators(5, 0, None).unwrap();
        assert_eq!(generators.of(Id128Kind::Uuid7).node(), (0, 0));
    }

    #[test]
    fn a_new_worker_replaces_the_generators_above_the_old_ones() {
        let settings = settings(true, "time:41@1ms,worker:10,seq:12").unwrap();
        let old = settings.generators(3, 0, None).unwrap();
        let before: Vec<_> = (0..1000)
            .map(|_| old.of(Id128Kind::Uuid7).next_id().unwrap())
            .collect();
        // The same worker again (another node may have held it since): new generators, above.
        let same = settings.generators(3, 0, Some(&old)).unwrap();
        assert!(!Arc::ptr_eq(&old, &same));
        assert!(before
            .iter()
            .all(|id| *id < same.of(Id128Kind::Uuid7).next_id().unwrap()));
        // Another worker, in the same millisecond of a clock that does not move: above.
        let new = settings.generators(4, 0, Some(&old)).unwrap();
        let after = new.of(Id128Kind::Uuid7).next_id().unwrap();
        assert!(before.iter().all(|id| *id < after));
        assert_eq!(after.decode(None, 10).unwrap().node, Some(4));
        let ulid_before = old.of(Id128Kind::Ulid).next_id().unwrap();
        let new = settings.generators(5, 0, Some(&old)).unwrap();
        assert!(ulid_before < new.of(Id128Kind::Ulid).next_id().unwrap());
    }

    #[test]
    fn without_a_node_field_a_new_lease_keeps_the_generators() {
        let settings = settings(false, "time:41@1ms,worker:10,seq:12").unwrap();
        let old = settings.generators(3, 0, None).unwrap();
        let new = settings.generators(9, 0, Some(&old)).unwrap();
        assert!(Arc::ptr_eq(&old, &new));
    }

    #[test]
    fn with_a_node_field_a_lease_starts_after_the_previous_holders_mark() {
        let settings = settings(true, "time:41@1ms,worker:10,seq:12").unwrap();
        // The clock reads 1_750_000_000_000; the previous holder's mark is 2 s later.
        let generators = settings.generators(3, 1_750_000_002_000, None).unwrap();
        let id = generators.of(Id128Kind::Ulid).next_ids(1);
        assert!(
            id.is_err(),
            "issued before the clock reached the previous holder's mark"
        );
    }
}
