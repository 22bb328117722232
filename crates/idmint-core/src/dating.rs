//! Dated sequences: segment IDs that start again every day, month or year, with the date in
//! front (`20261123-000042`, or the number `20261123000042`): the order numbers of shops and
//! ledgers.
//!
//! A dated tag stores its IDs *composed*: the ID handed out is `key × 10^digits + counter`,
//! where `key` is the period (`20261123` for a day, `202611` for a month, `2026` for a year) in
//! the tag's time zone, and `counter` counts from 1 within it. The tag's `max_id` holds the
//! composed value like any tag's, so it only grows, and uniqueness is the same monotonic
//! `max_id` as for every other tag: a range is taken at `max(max_id, base of the store's
//! current period)`, never below what was handed out, and never past the period's last counter.
//! See docs/ARCHITECTURE.md, "Dated sequences".
//!
//! This module is the calendar: which period an instant falls in, where that period starts
//! and ends, and the text form. It reads no clock; callers pass instants (the store's clock).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::error::{Error, Result};
use crate::store::MAX_SEGMENT_ID;

/// How long a dated tag's counter runs before it starts again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    /// Every local midnight: keys `YYYYMMDD`.
    Day,
    /// Every first of the month: keys `YYYYMM`.
    Month,
    /// Every first of January: keys `YYYY`.
    Year,
}

impl Period {
    /// The name used in settings (`day`, `month`, `year`).
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
            Period::Year => "year",
        }
    }

    /// How many decimal digits a key of this period has.
    pub fn key_digits(self) -> u32 {
        match self {
            Period::Day => 8,
            Period::Month => 6,
            Period::Year => 4,
        }
    }

    /// The first date of the period `date` falls in.
    fn first_date(self, date: NaiveDate) -> Option<NaiveDate> {
        match self {
            Period::Day => Some(date),
            Period::Month => date.with_day(1),
            Period::Year => NaiveDate::from_ymd_opt(date.year(), 1, 1),
        }
    }

    /// The first date of the period after the one starting on `first`.
    fn next_first(self, first: NaiveDate) -> Option<NaiveDate> {
        match self {
            Period::Day => first.succ_opt(),
            Period::Month => first.checked_add_months(chrono::Months::new(1)),
            Period::Year => NaiveDate::from_ymd_opt(first.year() + 1, 1, 1),
        }
    }

    /// The key of the period starting on `first`, or `None` outside years 1 to 9999.
    fn key_of(self, first: NaiveDate) -> Option<u64> {
        let year = u64::try_from(first.year())
            .ok()
            .filter(|y| (1..=9999).contains(y))?;
        let (month, day) = (u64::from(first.month()), u64::from(first.day()));
        Some(match self {
            Period::Day => year * 10_000 + month * 100 + day,
            Period::Month => year * 100 + month,
            Period::Year => year,
        })
    }

    /// The first date of the period with key `key`, if it names one.
    fn date_of(self, key: u64) -> Option<NaiveDate> {
        let (year, month, day) = match self {
            Period::Day => (key / 10_000, key / 100 % 100, key % 100),
            Period::Month => (key / 100, key % 100, 1),
            Period::Year => (key, 1, 1),
        };
        let date = NaiveDate::from_ymd_opt(
            i32::try_from(year).ok()?,
            u32::try_from(month).ok()?,
            u32::try_from(day).ok()?,
        )?;
        self.key_of(date).filter(|k| *k == key).map(|_| date)
    }
}

impl FromStr for Period {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "day" | "daily" => Ok(Period::Day),
            "month" | "monthly" => Ok(Period::Month),
            "year" | "yearly" => Ok(Period::Year),
            _ => Err(Error::InvalidArgument {
                name: "period",
                reason: format!(
                    "`{}` is not a period: use day, month or year",
                    text.chars().take(32).collect::<String>()
                ),
            }),
        }
    }
}

/// How a dated tag's IDs are shown: with a dash between the date and the counter, or as the
/// one number they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatedForm {
    /// `20261123-000042`.
    Text,
    /// `20261123000042`.
    Numeric,
}

impl DatedForm {
    /// The name used in settings (`text`, `numeric`).
    pub fn as_str(self) -> &'static str {
        match self {
            DatedForm::Text => "text",
            DatedForm::Numeric => "numeric",
        }
    }
}

impl FromStr for DatedForm {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "text" => Ok(DatedForm::Text),
            "numeric" | "number" => Ok(DatedForm::Numeric),
            _ => Err(Error::InvalidArgument {
                name: "form",
                reason: format!(
                    "`{}` is not a dated form: use text or numeric",
                    text.chars().take(32).collect::<String>()
                ),
            }),
        }
    }
}

/// One period of a dated tag: its key and the instants it spans, in ms since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodSpan {
    /// `YYYYMMDD`, `YYYYMM` or `YYYY`.
    pub key: u64,
    /// The first instant of the period.
    pub starts_ms: u64,
    /// The first instant of the next period.
    pub ends_ms: u64,
}

/// A dated tag's settings: its period, the time zone its boundaries are judged in, how many
/// digits its counter has, and how its IDs are shown. Fixed when the tag is created: another
/// period, zone or width would compose other values over the ones handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dating {
    period: Period,
    zone: Tz,
    digits: u32,
    form: DatedForm,
    /// `10^digits`.
    scale: u64,
}

impl Dating {
    /// Checks the settings: `digits` from 1 up to what keeps every composed ID of the period
    /// below 2^63 (18 digits in all: 10 for a day, 12 for a month, 14 for a year).
    pub fn new(period: Period, zone: Tz, digits: u32, form: DatedForm) -> Result<Self> {
        let most = Self::max_digits(period);
        if !(1..=most).contains(&digits) {
            return Err(Error::InvalidArgument {
                name: "digits",
                reason: format!(
                    "a {} sequence's counter has 1 to {most} digits (the date and the counter \
                     must fit in a 63-bit ID), got {digits}",
                    period.as_str()
                ),
            });
        }
        Ok(Self {
            period,
            zone,
            digits,
            form,
            scale: 10u64.pow(digits),
        })
    }

    /// The widest counter a `period` sequence can have.
    pub fn max_digits(period: Period) -> u32 {
        18 - period.key_digits()
    }

    /// A time zone by its IANA name (`Asia/Shanghai`, `UTC`), refused with the name of the
    /// setting when unknown.
    pub fn zone(name: &str) -> Result<Tz> {
        name.parse::<Tz>().map_err(|_| Error::InvalidArgument {
            name: "time_zone",
            reason: format!(
                "`{}` is not an IANA time zone name (such as UTC, Europe/Berlin, Asia/Shanghai)",
                name.chars().take(64).collect::<String>()
            ),
        })
    }

    /// The period.
    pub fn period(&self) -> Period {
        self.period
    }

    /// The time zone the period's boundaries are judged in.
    pub fn time_zone(&self) -> Tz {
        self.zone
    }

    /// Digits of the counter.
    pub fn digits(&self) -> u32 {
        self.digits
    }

    /// How IDs are shown.
    pub fn form(&self) -> DatedForm {
        self.form
    }

    /// Most IDs one period can hand out: `10^digits − 1` (counters start at 1).
    pub fn per_period(&self) -> u64 {
        self.scale - 1
    }

    /// The stored form of these settings, `period:digits:form:zone`
    /// (`day:6:text:Asia/Shanghai`), read back by [`parse`](Self::parse).
    pub fn spec(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.period.as_str(),
            self.digits,
            self.form.as_str(),
            self.zone.name()
        )
    }

    /// Reads [`spec`](Self::spec)'s form.
    pub fn parse(spec: &str) -> Result<Self> {
        let bad = || Error::InvalidArgument {
            name: "dating",
            reason: format!(
                "`{}` is not `period:digits:form:zone`",
                spec.chars().take(96).collect::<String>()
            ),
        };
        let mut parts = spec.splitn(4, ':');
        let (Some(period), Some(digits), Some(form), Some(zone)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let digits = digits.parse::<u32>().map_err(|_| bad())?;
        Self::new(period.parse()?, Self::zone(zone)?, digits, form.parse()?)
    }

    /// The period the instant `ms` falls in, judged in the tag's zone.
    ///
    /// A period starts at the first instant whose local time is at or past its first date's
    /// midnight, so periods follow one another with no gap and no overlap even where a
    /// daylight-saving change skips or repeats midnight: an hour repeated after the next
    /// period began still belongs to the next period, so the key never goes back while the
    /// instants go forward.
    pub fn period_at(&self, ms: u64) -> Result<PeriodSpan> {
        let outside = || Error::InvalidArgument {
            name: "time",
            reason: format!(
                "{ms} ms since the Unix epoch is outside the years 1 to 9999 a dated sequence \
                 can name"
            ),
        };
        let instant = i64::try_from(ms)
            .ok()
            .and_then(DateTime::<Utc>::from_timestamp_millis)
            .ok_or_else(outside)?;
        let local = instant.with_timezone(&self.zone).date_naive();
        let mut first = self.period.first_date(local).ok_or_else(outside)?;
        let mut starts_ms = self.start_of(first).ok_or_else(outside)?;
        let mut next = self.period.next_first(first).ok_or_else(outside)?;
        let mut ends_ms = self.start_of(next).ok_or_else(outside)?;
        if ends_ms <= ms {
            // A repeated local hour after the next period began.
            first = next;
            starts_ms = ends_ms;
            next = self.period.next_first(first).ok_or_else(outside)?;
            ends_ms = self.start_of(next).ok_or_else(outside)?;
        }
        let key = self.period.key_of(first).ok_or_else(outside)?;
        Ok(PeriodSpan {
            key,
            starts_ms,
            ends_ms,
        })
    }

    /// The first instant of the period starting on `first`: its local midnight, the earlier
    /// one when midnight happens twice, or the end of the gap when a daylight-saving change
    /// skips it; 0 for a period begun before 1970. `None` past what `u64` ms hold.
    fn start_of(&self, first: NaiveDate) -> Option<u64> {
        let midnight = first.and_hms_opt(0, 0, 0)?;
        // Gaps in the tz database are whole quarter hours and at most a few hours long.
        (0..=4 * 24).find_map(|quarter| {
            let wall: NaiveDateTime = midnight + chrono::Duration::minutes(15 * quarter);
            match self.zone.from_local_datetime(&wall) {
                LocalResult::Single(at) => Some(at),
                LocalResult::Ambiguous(earlier, _) => Some(earlier),
                LocalResult::None => None,
            }
            // A period begun before 1970 (the first year or month, east of Greenwich) starts,
            // for us, at the Unix epoch: no instant before it can be named.
            .map(|at| u64::try_from(at.timestamp_millis().max(0)).ok())
        })?
    }

    /// The smallest composed value of period `key`: `key × 10^digits` (its counter 0, never
    /// handed out).
    pub fn base(&self, key: u64) -> u64 {
        key.saturating_mul(self.scale)
    }

    /// Whether a range ending (exclusive) at `end` ends with its period: nothing of that
    /// period comes after it.
    pub fn ends_period(&self, end: u64) -> bool {
        end.is_multiple_of(self.scale)
    }

    /// The largest range a node takes of a dated tag whose step is `step`: at most a
    /// hundredth of a period's counters (at least 1), so one node can never take a whole
    /// period (a 3-digit tag with the default step of 1,000 would), and the nodes of a
    /// namespace share it.
    pub fn range_cap(&self, step: u64) -> u64 {
        step.clamp(1, (self.per_period() / 100).max(1))
    }

    /// `(key, counter)` of a composed ID.
    pub fn split(&self, id: u64) -> (u64, u64) {
        (id / self.scale, id % self.scale)
    }

    /// The composed ID of `counter` in period `key`.
    pub fn compose(&self, key: u64, counter: u64) -> u64 {
        self.base(key).saturating_add(counter)
    }

    /// The range a dated tag whose `max_id` is `max_id` hands out for a request of `step`,
    /// when the store's clock reads `now_ms`: from `max(max_id, first ID of the period)`, at
    /// most `step` IDs, cut at the period's last counter. Every backend's allocation of a
    /// dated tag is this decision followed by a compare-and-set of `max_id`, so it only grows.
    ///
    /// Refused with [`Error::PeriodUnavailable`] when the period has no counter left, or when
    /// `max_id` is already past it: the store's clock went back across a boundary (IDs of a
    /// later period were handed out), and no ID may be dated earlier than one already out.
    pub fn range_at(
        &self,
        tag: &str,
        max_id: u64,
        step: u64,
        now_ms: u64,
    ) -> Result<std::ops::Range<u64>> {
        let span = self.period_at(now_ms)?;
        let first = self.compose(span.key, 1);
        let end = self.base(span.key).saturating_add(self.scale);
        let start = max_id.max(first);
        if start >= end || end > MAX_SEGMENT_ID {
            let (stored_key, _) = self.split(max_id.saturating_sub(1));
            let reason = if stored_key > span.key {
                format!(
                    "the store's clock reads period {}, but IDs of period {stored_key} were \
                     handed out already (the clock went back): no ID is handed out until it \
                     reaches {stored_key}",
                    span.key
                )
            } else {
                format!(
                    "all {} IDs of period {} are handed out; the next ones come at the start of \
                     the next period",
                    self.per_period(),
                    span.key
                )
            };
            return Err(Error::PeriodUnavailable {
                tag: tag.to_owned(),
                reason,
            });
        }
        Ok(start..start.saturating_add(step.max(1)).min(end))
    }

    /// `id` as shown in this tag's form: `20261123-000042`, or `20261123000042`.
    pub fn render(&self, id: u64) -> String {
        match self.form {
            DatedForm::Numeric => id.to_string(),
            DatedForm::Text => self.text(id),
        }
    }

    /// `id` with a dash between its key and its zero-padded counter.
    pub fn text(&self, id: u64) -> String {
        let (key, counter) = self.split(id);
        format!(
            "{key:0kw$}-{counter:0cw$}",
            kw = self.period.key_digits() as usize,
            cw = self.digits as usize
        )
    }

    /// Reads an ID in either form: `KEY-COUNTER` with exactly the tag's widths, or the
    /// composed number with no zeros in front. Refused, naming the problem, when the key is not a date of the period
    /// or the counter is 0 or does not fit.
    pub fn read(&self, text: &str) -> Result<u64> {
        let bad = |reason: String| Error::InvalidArgument {
            name: "id",
            reason: format!(
                "`{}` is not an ID of this dated sequence: {reason}",
                text.chars().take(48).collect::<String>()
            ),
        };
        let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (key, counter) = match text.split_once('-') {
            Some((key, counter)) => {
                let (kw, cw) = (self.period.key_digits() as usize, self.digits as usize);
                if key.len() != kw
                    || counter.len() != cw
                    || !digits_only(key)
                    || !digits_only(counter)
                {
                    return Err(bad(format!("expected {kw} digits, a dash and {cw} digits")));
                }
                let number = |s: &str| s.parse::<u64>().map_err(|_| bad("not a number".into()));
                (number(key)?, number(counter)?)
            }
            // The composed number is written as `to_string` writes it: a zero in front
            // would make two texts of one ID (`011` and `11`), and texts are compared.
            None if text.len() > 1 && text.starts_with('0') => {
                return Err(bad("a number has no zeros in front".into()));
            }
            None if digits_only(text) => {
                let id = text.parse::<u64>().map_err(|_| bad("too large".into()))?;
                self.split(id)
            }
            None => return Err(bad("expected digits".into())),
        };
        if self.period.date_of(key).is_none() {
            return Err(bad(format!("{key} is not a {} key", self.period.as_str())));
        }
        if counter == 0 {
            return Err(bad("counters start at 1".into()));
        }
        Ok(self.compose(key, counter))
    }
}

impl fmt::Display for Dating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a new sequence every {} in {}, {}-digit counter, shown as {}",
            self.period.as_str(),
            self.zone.name(),
            self.digits,
            self.form.as_str()
        )
    }
}

#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl serde::Serialize for Dating {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Dating", 4)?;
        s.serialize_field("period", self.period.as_str())?;
        s.serialize_field("time_zone", self.zone.name())?;
        s.serialize_field("digits", &self.digits)?;
        s.serialize_field("form", self.form.as_str())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn dating(period: Period, zone: &str, digits: u32) -> Dating {
        Dating::new(period, Dating::zone(zone).unwrap(), digits, DatedForm::Text).unwrap()
    }

    fn ms(rfc3339: &str) -> u64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .unwrap()
            .timestamp_millis() as u64
    }

    #[test]
    fn a_day_in_shanghai_starts_at_its_local_midnight() {
        let d = dating(Period::Day, "Asia/Shanghai", 6);
        let span = d.period_at(ms("2026-11-23T15:59:59.999Z")).unwrap();
        assert_eq!(span.key, 20261123);
        assert_eq!(span.ends_ms, ms("2026-11-23T16:00:00Z"));
        assert_eq!(span.starts_ms, ms("2026-11-22T16:00:00Z"));
        let next = d.period_at(span.ends_ms).unwrap();
        assert_eq!((next.key, next.starts_ms), (20261124, span.ends_ms));
    }

    #[test]
    fn months_and_years_take_their_first_day() {
        let month = dating(Period::Month, "UTC", 8);
        let span = month.period_at(ms("2024-02-29T23:00:00Z")).unwrap();
        assert_eq!(span.key, 202402);
        assert_eq!(span.ends_ms, ms("2024-03-01T00:00:00Z"));
        let year = dating(Period::Year, "Europe/Berlin", 8);
        let span = year.period_at(ms("2026-12-31T23:30:00Z")).unwrap();
        assert_eq!(span.key, 2027, "already 00:30 on 1 January in Berlin");
    }

    #[test]
    fn a_skipped_midnight_starts_the_day_at_the_end_of_the_gap() {
        // Chile moved its clocks from 00:00 to 01:00 on 2024-09-08 (America/Santiago).
        let d = dating(Period::Day, "America/Santiago", 6);
        let before = d.period_at(ms("2024-09-08T03:59:59Z")).unwrap();
        assert_eq!(before.key, 20240907);
        assert_eq!(before.ends_ms, ms("2024-09-08T04:00:00Z"));
        assert_eq!(d.period_at(before.ends_ms).unwrap().key, 20240908);
    }

    #[test]
    fn a_day_that_ends_by_going_back_an_hour_lasts_25_hours() {
        // Santiago went from 24:00 back to 23:00 on 2024-04-06: the hour before midnight
        // happened twice, and the 7th began at 04:00 UTC.
        let d = dating(Period::Day, "America/Santiago", 6);
        let span = d.period_at(ms("2024-04-07T03:30:00Z")).unwrap();
        assert_eq!(span.key, 20240406);
        assert_eq!(span.ends_ms, ms("2024-04-07T04:00:00Z"));
        assert_eq!(span.ends_ms - span.starts_ms, 25 * 3_600_000);
        assert_eq!(d.period_at(span.ends_ms).unwrap().key, 20240407);
    }

    #[test]
    fn keys_never_go_back_as_time_goes_on() {
        for zone in [
            "America/Santiago",
            "Europe/London",
            "Australia/Lord_Howe",
            "UTC",
        ] {
            let d = dating(Period::Day, zone, 6);
            let mut last = 0;
            let mut t = ms("2024-01-01T00:00:00Z");
            while t < ms("2025-01-01T00:00:00Z") {
                let span = d.period_at(t).unwrap();
                assert!(span.key >= last, "{zone} at {t}");
                assert!(span.starts_ms <= t && t < span.ends_ms, "{zone} at {t}");
                last = span.key;
                t += 17 * 60_000;
            }
        }
    }

    #[test]
    fn ranges_start_above_max_id_and_stop_at_the_period_end() {
        let d = dating(Period::Day, "UTC", 3);
        let noon = ms("2026-11-23T12:00:00Z");
        assert_eq!(
            d.range_at("t", 1, 10, noon).unwrap(),
            20261123001..20261123011
        );
        assert_eq!(
            d.range_at("t", 20261123995, 10, noon).unwrap(),
            20261123995..20261124000
        );
        let full = d.range_at("t", 20261124000, 10, noon).unwrap_err();
        assert!(full.to_string().contains("all 999 IDs"), "{full}");
        let behind = d.range_at("t", 20261124005, 10, noon).unwrap_err();
        assert!(behind.to_string().contains("went back"), "{behind}");
        // Yesterday's max_id: today starts at counter 1.
        assert_eq!(
            d.range_at("t", 20261122500, 2, noon).unwrap(),
            20261123001..20261123003
        );
    }

    #[test]
    fn text_and_numbers_read_back() {
        let d = dating(Period::Day, "UTC", 6);
        let id = d.compose(20261123, 42);
        assert_eq!(d.text(id), "20261123-000042");
        assert_eq!(d.render(id), "20261123-000042");
        assert_eq!(d.read("20261123-000042").unwrap(), id);
        assert_eq!(d.read("20261123000042").unwrap(), id);
        for bad in [
            "20261123-42",
            "20261131-000001",
            "20261123-000000",
            "x",
            "",
            "-",
            "2026-11-23",
            "020261123000042",
        ] {
            assert!(d.read(bad).is_err(), "{bad}");
        }
        let year = dating(Period::Year, "UTC", 14);
        assert_eq!(year.text(year.compose(9999, 1)), "9999-00000000000001");
        assert!(year.compose(9999, year.per_period()) < MAX_SEGMENT_ID);
    }

    #[test]
    fn settings_round_trip_and_refuse_what_does_not_fit() {
        let d = dating(Period::Month, "America/New_York", 12);
        assert_eq!(d.spec(), "month:12:text:America/New_York");
        assert_eq!(Dating::parse(&d.spec()).unwrap(), d);
        assert!(Dating::new(Period::Day, Tz::UTC, 11, DatedForm::Text).is_err());
        assert!(Dating::new(Period::Day, Tz::UTC, 0, DatedForm::Text).is_err());
        assert!(Dating::zone("Mars/Olympus").is_err());
        assert!(Dating::parse("week:6:text:UTC").is_err());
        assert!(Dating::parse("day:6").is_err());
        let widest = Dating::new(Period::Day, Tz::UTC, 10, DatedForm::Numeric).unwrap();
        assert!(widest.compose(99991231, widest.per_period()) < MAX_SEGMENT_ID);
    }
}
