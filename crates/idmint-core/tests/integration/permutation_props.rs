//! Properties of the ID permutation: with any key, every ID comes back from its public value,
//! public values stay in `1..2^63`, two IDs never share a public value, and the public values
//! of consecutive IDs keep neither their order nor their distance.

use std::collections::HashSet;

use idmint_core::Permutation;
use proptest::prelude::*;

const TOP: u64 = 1 << 63;

fn keys() -> impl Strategy<Value = Permutation> {
    any::<[u8; 16]>().prop_map(Permutation::from_bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn every_id_comes_back_and_stays_in_range(key in keys(), id in 1..TOP) {
        let public = key.permute(id);
        prop_assert!((1..TOP).contains(&public));
        prop_assert_eq!(key.restore(public), id);
        // Both ways round: every value in range is some ID's public value.
        prop_assert_eq!(key.permute(key.restore(id)), id);
    }

    #[test]
    fn another_key_gives_other_values_and_reads_them_wrong(a in keys(), b in keys(), id in 1..TOP) {
        prop_assume!(a != b);
        let public = a.permute(id);
        // With 2^63 values, the same image under two keys is a 2^-63 event per ID.
        prop_assert_ne!(b.permute(id), public);
        prop_assert_ne!(b.restore(public), id);
    }
}

proptest! {
    // 4,096 IDs per case.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_run_of_ids_gets_distinct_values_in_no_order(key in keys(), start in 1..TOP - 4_096) {
        let publics: Vec<u64> = (start..start + 4_096).map(|id| key.permute(id)).collect();
        let distinct: HashSet<u64> = publics.iter().copied().collect();
        prop_assert_eq!(distinct.len(), publics.len());
        // Of 4,095 neighbouring pairs about half rise: 2,047 with a standard deviation of 18.5
        // for a random order, so the bounds below are 12 deviations out.
        let rising = publics.windows(2).filter(|w| w[0] < w[1]).count();
        prop_assert!((1_811..=2_284).contains(&rising), "{} of 4,095 rise", rising);
    }
}

/// The top bit of a 63-bit value is set for half of all values: a time-ordered ID's public
/// value must not keep its high bits (which would show its time).
#[test]
fn public_values_of_one_second_spread_over_the_whole_range() {
    let key = Permutation::from_bytes(*b"sixteen byte key");
    // A second of twitter-layout snowflakes on worker 1: same high bits everywhere.
    let base = 1_970_000_000_000u64 << 22 | 1 << 12;
    let top_bits: HashSet<u64> = (0..1_000)
        .map(|ms| key.permute(base + (ms << 22)) >> 59)
        .collect();
    // 16 values of the top four bits: every one of them shows up in 1,000 draws.
    assert_eq!(top_bits.len(), 16);
}
