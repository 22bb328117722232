//! Properties of layouts: every valid layout survives a spec round trip, and composing then
//! decomposing an ID gives back its parts, for arbitrary layouts and values.

use idmint_core::layout::{FieldKind, IdParts, Layout, TimeUnit, MAX_LAYOUT_BITS};
use proptest::prelude::*;

/// A valid layout: time and seq always, dc/worker/shard sometimes, in any order that keeps
/// time above seq, at most 63 bits.
fn layouts() -> impl Strategy<Value = Layout> {
    (
        1u32..=44,
        1u32..=22,
        0u32..=8,
        0u32..=16,
        0u32..=16,
        prop::sample::select(TimeUnit::ALL.to_vec()),
        0u64..(1 << 41),
    )
        .prop_filter("at most 63 bits", |(t, s, d, w, h, _, _)| {
            t + s + d + w + h <= MAX_LAYOUT_BITS
        })
        .prop_flat_map(|(time, seq, dc, worker, shard, unit, epoch)| {
            let mut fields = vec![("time", time), ("seq", seq)];
            fields.extend(
                [("dc", dc), ("worker", worker), ("shard", shard)]
                    .into_iter()
                    .filter(|(_, bits)| *bits > 0),
            );
            (Just(fields).prop_shuffle(), Just(unit), Just(epoch))
        })
        .prop_map(|(mut fields, unit, epoch)| {
            let position = |name| fields.iter().position(|(n, _)| *n == name).unwrap();
            let (t, s) = (position("time"), position("seq"));
            if t > s {
                fields.swap(t, s);
            }
            let spec: Vec<String> = fields
                .iter()
                .map(|(name, bits)| match *name {
                    "time" => format!("time:{bits}@{}", unit.as_str()),
                    _ => format!("{name}:{bits}"),
                })
                .collect();
            Layout::parse(&spec.join(","))
                .unwrap()
                .with_epoch(epoch)
                .unwrap()
        })
}

fn parts_of(layout: &Layout) -> impl Strategy<Value = IdParts> {
    let max = |kind| layout.field(kind).map_or(0, |f| f.max_value());
    (
        0..=max(FieldKind::Time),
        0..=max(FieldKind::Dc),
        0..=max(FieldKind::Worker),
        0..=max(FieldKind::Shard),
        0..=max(FieldKind::Seq),
    )
        .prop_map(|(tick, dc, worker, shard, seq)| IdParts {
            tick,
            dc,
            worker,
            shard,
            seq,
        })
}

fn layout_with_two_parts() -> impl Strategy<Value = (Layout, IdParts, IdParts)> {
    layouts().prop_flat_map(|layout| {
        let a = parts_of(&layout);
        let b = parts_of(&layout);
        (Just(layout), a, b)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn spec_round_trips(layout in layouts()) {
        let again = Layout::parse(&layout.spec()).unwrap().with_epoch(layout.epoch_ms()).unwrap();
        prop_assert_eq!(again, layout);
    }

    #[test]
    fn compose_then_decompose_gives_the_parts_back((layout, parts, _) in layout_with_two_parts()) {
        let id = layout.compose(&parts).unwrap();
        prop_assert!(id < 1u64 << layout.total_bits());
        prop_assert!(i64::try_from(id).is_ok());
        prop_assert_eq!(layout.decompose(id).unwrap(), parts);
        let decoded = layout.decode(id).unwrap();
        prop_assert_eq!(decoded.unix_ms, layout.tick_start_ms(parts.tick));
        prop_assert_eq!(decoded.seq, parts.seq);
    }

    #[test]
    fn ids_of_one_worker_and_shard_order_by_tick_then_seq((layout, a, b) in layout_with_two_parts()) {
        let b = IdParts { dc: a.dc, worker: a.worker, shard: a.shard, ..b };
        let (id_a, id_b) = (layout.compose(&a).unwrap(), layout.compose(&b).unwrap());
        prop_assert_eq!(id_a.cmp(&id_b), (a.tick, a.seq).cmp(&(b.tick, b.seq)));
    }
}
