//! Epochs in and out: parsing what users type, printing instants as RFC 3339.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

use crate::error::{Error, Result};

/// The epoch of custom layouts unless one is given: 2025-01-01T00:00:00Z.
pub const DEFAULT_EPOCH_MS: u64 = 1_735_689_600_000;

/// Parses an epoch: whole milliseconds since the Unix epoch (`1288834974657`), RFC 3339
/// (`2015-01-01T00:00:00Z`) or a date (`2015-01-01`, midnight UTC).
pub fn parse_epoch(text: &str) -> Result<u64> {
    let text = text.trim();
    let invalid = |reason: &str| Error::InvalidEpoch {
        epoch: text.to_owned(),
        reason: reason.to_owned(),
    };
    let ms = if let Ok(ms) = text.parse::<u64>() {
        i64::try_from(ms).map_err(|_| invalid("is too large"))?
    } else if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        date.and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis())
            .ok_or_else(|| invalid("is not a valid date"))?
    } else {
        DateTime::parse_from_rfc3339(text)
            .map_err(|_| invalid("expected milliseconds since 1970, RFC 3339 or YYYY-MM-DD"))?
            .timestamp_millis()
    };
    u64::try_from(ms).map_err(|_| invalid("is before 1970"))
}

/// Formats ms since the Unix epoch as RFC 3339 UTC with milliseconds
/// (`2016-04-30T11:18:25.796Z`).
pub fn format_ms_rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
        .map_or_else(
            || format!("{ms} ms after 1970"),
            |t| t.to_rfc3339_opts(SecondsFormat::Millis, true),
        )
}
