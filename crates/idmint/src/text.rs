//! Small helpers for text meant for people: grouped digits, spans of years and days.

use chrono::{DateTime, Months, Utc};

/// Milliseconds in a day.
const DAY_MS: u64 = 86_400_000;

/// `n` with its digits grouped by thousands: `4096000` becomes `4,096,000`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `count` followed by `unit`, plural unless `count` is 1: `1 year`, `2 days`.
fn plural(count: u64, unit: &str) -> String {
    if count == 1 {
        format!("1 {unit}")
    } else {
        format!("{} {unit}s", group_digits(count))
    }
}

/// The whole calendar years and remaining whole days from `from_ms` to `to_ms` (ms since the
/// Unix epoch; taken in whichever order makes the span positive).
fn years_and_days(from_ms: u64, to_ms: u64) -> (u64, u64) {
    let (from_ms, to_ms) = (from_ms.min(to_ms), from_ms.max(to_ms));
    let to_datetime = |ms: u64| {
        i64::try_from(ms)
            .ok()
            .and_then(DateTime::<Utc>::from_timestamp_millis)
    };
    if let (Some(from), Some(to)) = (to_datetime(from_ms), to_datetime(to_ms)) {
        let years = to.years_since(from).unwrap_or(0);
        let anniversary = from.checked_add_months(Months::new(years.saturating_mul(12)));
        if let Some(anniversary) = anniversary {
            let days = u64::try_from((to - anniversary).num_days()).unwrap_or(0);
            return (u64::from(years), days);
        }
    }
    // Beyond the calendar chrono knows (year 262143): average Gregorian years are close enough.
    let days = (to_ms - from_ms) / DAY_MS;
    let years = days.saturating_mul(400) / 146_097;
    (years, days - years.saturating_mul(146_097) / 400)
}

/// The span between two instants in words: `53 years 231 days`, `1 year`, `12 days`, or
/// `less than a day`.
pub fn span(from_ms: u64, to_ms: u64) -> String {
    match years_and_days(from_ms, to_ms) {
        (0, 0) => "less than a day".to_owned(),
        (0, days) => plural(days, "day"),
        (years, 0) => plural(years, "year"),
        (years, days) => format!("{} {}", plural(years, "year"), plural(days, "day")),
    }
}

/// Lays `rows` out in columns two spaces apart, each as wide as its widest cell; columns
/// whose flag in `right` is true are right-aligned. Trailing spaces are trimmed.
pub fn table(rows: &[Vec<String>], right: &[bool]) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(c, (cell, &width))| {
                    if right.get(c).copied().unwrap_or(false) {
                        format!("{cell:>width$}")
                    } else {
                        format!("{cell:<width$}")
                    }
                })
                .collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits_by_thousands() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1_000), "1,000");
        assert_eq!(group_digits(4_096_000), "4,096,000");
        assert_eq!(group_digits(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn spans_count_calendar_years_then_days() {
        // 2024-11-20T21:24:16Z to 2026-11-21T00:00:00Z.
        assert_eq!(span(1_732_137_856_000, 1_795_219_200_000), "2 years");
        // The order of the instants does not matter.
        assert_eq!(span(1_795_219_200_000, 1_732_137_856_000), "2 years");
        // 2025-01-01 to 2026-01-02 (a leap-free year plus one day).
        assert_eq!(span(1_735_689_600_000, 1_767_312_000_000), "1 year 1 day");
        assert_eq!(span(0, DAY_MS * 3), "3 days");
        assert_eq!(span(0, DAY_MS - 1), "less than a day");
    }

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["a".to_owned(), "1".to_owned(), "x".to_owned()],
            vec!["long".to_owned(), "100".to_owned(), "y".to_owned()],
        ];
        assert_eq!(
            table(&rows, &[false, true]),
            ["a       1  x", "long  100  y"]
        );
    }

    #[test]
    fn spans_beyond_the_calendar_are_approximate_but_do_not_fail() {
        let words = span(0, i64::MAX as u64);
        assert!(words.contains("years"), "{words}");
    }
}
