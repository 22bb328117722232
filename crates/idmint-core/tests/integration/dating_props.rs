//! Properties of dated sequences (`idmint_core::dating`): the text form reads back to the ID it
//! wrote, and so does the number; texts of one tag sort as their IDs do; text that is not an ID
//! of the tag is refused, never read as another ID; the periods of any zone follow one another
//! with no gap and no overlap, and the range a node takes never goes below `max_id` nor past
//! its period.

use idmint_core::dating::{DatedForm, Dating, Period};
use proptest::prelude::*;

const ZONES: [&str; 7] = [
    "UTC",
    "Asia/Shanghai",
    "America/Santiago",
    "Europe/London",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/St_Johns",
];

/// Any valid dating.
fn datings() -> impl Strategy<Value = Dating> {
    (
        prop::sample::select(vec![Period::Day, Period::Month, Period::Year]),
        prop::sample::select(ZONES.to_vec()),
        any::<bool>(),
        0u32..=100,
    )
        .prop_map(|(period, zone, numeric, digits)| {
            let digits = 1 + digits % Dating::max_digits(period);
            let form = if numeric {
                DatedForm::Numeric
            } else {
                DatedForm::Text
            };
            Dating::new(period, Dating::zone(zone).unwrap(), digits, form).unwrap()
        })
}

/// Instants from 1970 to 9999, in year 9999 or before in every zone (UTC+14 at the most).
fn instants() -> impl Strategy<Value = u64> {
    0u64..LAST_INSTANT_MS - 14 * 3_600_000
}

/// 9999-12-31T23:59:59.999Z, the last instant of the last year a key can name (in UTC).
const LAST_INSTANT_MS: u64 = 253_402_300_799_999;

/// An ID of `dating`: the period of an instant and a counter of it.
fn id_of(dating: &Dating, at_ms: u64, counter: u64) -> u64 {
    let key = dating.period_at(at_ms).unwrap().key;
    dating.compose(key, 1 + counter % dating.per_period())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn both_forms_read_back(dating in datings(), at in instants(), counter in any::<u64>()) {
        let id = id_of(&dating, at, counter);
        prop_assert!(id < i64::MAX as u64);
        prop_assert_eq!(dating.read(&dating.text(id)).unwrap(), id);
        prop_assert_eq!(dating.read(&id.to_string()).unwrap(), id);
        prop_assert_eq!(dating.read(&dating.render(id)).unwrap(), id);
    }

    #[test]
    fn texts_sort_as_their_ids(
        dating in datings(),
        (a, b) in (instants(), instants()),
        (x, y) in (any::<u64>(), any::<u64>()),
    ) {
        let (first, second) = (id_of(&dating, a, x), id_of(&dating, b, y));
        prop_assert_eq!(
            dating.text(first).cmp(&dating.text(second)),
            first.cmp(&second)
        );
    }

    #[test]
    fn text_that_is_not_an_id_is_refused_or_read_exactly(
        dating in datings(),
        text in "[0-9-]{0,24}|[ -~]{0,24}",
    ) {
        // Whatever is accepted is an ID whose text form (or number) is what was given.
        if let Ok(id) = dating.read(&text) {
            prop_assert!(dating.text(id) == text || id.to_string() == text, "{} read as {}", text, id);
            let (_, counter) = dating.split(id);
            prop_assert!(counter >= 1);
        }
    }

    #[test]
    fn periods_tile_time(dating in datings(), at in instants()) {
        let span = dating.period_at(at).unwrap();
        prop_assert!(span.starts_ms <= at && at < span.ends_ms);
        match dating.period_at(span.ends_ms) {
            Ok(next) => {
                prop_assert_eq!(next.starts_ms, span.ends_ms);
                prop_assert!(next.key > span.key);
            }
            // Only the last period of year 9999 has no next: year 10000 has no key. It ends at
            // 10000-01-01 local time, at most 14 hours before that instant in UTC.
            Err(_) => prop_assert!(span.ends_ms >= LAST_INSTANT_MS + 1 - 14 * 3_600_000),
        }
        if span.starts_ms > 0 {
            let before = dating.period_at(span.starts_ms - 1).unwrap();
            prop_assert!(before.key < span.key);
            prop_assert_eq!(before.ends_ms, span.starts_ms);
        }
    }

    #[test]
    fn ranges_stay_above_max_id_and_inside_their_period(
        dating in datings(),
        at in instants(),
        max_id in 0u64..i64::MAX as u64,
        step in 1u64..=1_000_000,
    ) {
        let span = dating.period_at(at).unwrap();
        let first = dating.compose(span.key, 1);
        let end = dating.base(span.key) + dating.per_period() + 1;
        match dating.range_at("t", max_id, step, at) {
            Ok(range) => {
                prop_assert!(range.start >= max_id && range.start >= first);
                prop_assert!(range.start < range.end && range.end <= end);
                prop_assert!(range.end - range.start <= step);
            }
            Err(_) => prop_assert!(max_id.max(first) >= end),
        }
    }
}
