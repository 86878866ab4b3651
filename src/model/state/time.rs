//! `Timestamp`: the one parse and the one format of the state's time fields (`startedAt`,
//! `completedAt`, attempt times, `halt.at`, `guard.clockStartedAt`), and the one place that
//! does arithmetic on times. A time or a duration read from the state may lie anywhere in
//! chrono's range (years -262143 to +262143) or past it; `DateTime + TimeDelta` panics
//! when the sum leaves the range, so every sum here is checked and every difference
//! saturates.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A time as the state file holds it. The stored JSON is kept as it was, so a garbled
/// value (hand-edited text, a number) round-trips unchanged and reads as unknown
/// (`at() == None`) instead of making the state unreadable.
#[derive(Debug, Clone, PartialEq)]
pub struct Timestamp(Value);

impl Timestamp {
    /// A sound time, written in the format every writer uses (RFC 3339, milliseconds, `Z`).
    pub fn from_time(t: DateTime<Utc>) -> Timestamp {
        Timestamp(Value::String(format(t)))
    }

    /// The clock's time, for the edges (commands, hooks); the pure core takes times in.
    pub fn now() -> Timestamp {
        Timestamp::from_time(Utc::now())
    }

    /// The time, or `None` when the stored value is not an RFC 3339 text.
    pub fn at(&self) -> Option<DateTime<Utc>> {
        self.0.as_str().and_then(parse)
    }

    /// The stored text, garbled or not (`None` for a non-string value).
    pub fn text(&self) -> Option<&str> {
        self.0.as_str()
    }

    pub fn to_value(&self) -> Value {
        self.0.clone()
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Timestamp {
        Timestamp::from_time(t)
    }
}

/// Parse an RFC 3339 time into UTC.
pub fn parse(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `t` plus `ms` milliseconds; `None` past the end of the calendar.
pub fn plus_ms(t: DateTime<Utc>, ms: u64) -> Option<DateTime<Utc>> {
    let delta = TimeDelta::try_milliseconds(i64::try_from(ms).ok()?)?;
    t.checked_add_signed(delta)
}

/// `t` plus `minutes` (negative: earlier); `None` past either end of the calendar.
pub fn plus_minutes(t: DateTime<Utc>, minutes: i64) -> Option<DateTime<Utc>> {
    t.checked_add_signed(TimeDelta::try_minutes(minutes)?)
}

/// Whether `t` is no later than `minutes` after `now` (a clock's allowed skew). A bound
/// past the end of the calendar admits every time.
pub fn not_after(t: DateTime<Utc>, now: DateTime<Utc>, minutes: i64) -> bool {
    plus_minutes(now, minutes).is_none_or(|bound| t <= bound)
}

/// Milliseconds from `from` to `to`, 0 when `to` is earlier. Two times in chrono's range
/// are at most about 1.7e16 ms apart, so the difference itself cannot overflow.
pub fn ms_between(from: DateTime<Utc>, to: DateTime<Utc>) -> u64 {
    u64::try_from(to.signed_duration_since(from).num_milliseconds()).unwrap_or(0)
}

/// Whole minutes from `from` to `to`, 0 when `to` is earlier.
pub fn minutes_between(from: DateTime<Utc>, to: DateTime<Utc>) -> u64 {
    ms_between(from, to) / 60_000
}

/// Milliseconds from `from` to `to`, negative when `to` is earlier (a position on a
/// timeline).
pub fn signed_ms(from: DateTime<Utc>, to: DateTime<Utc>) -> i64 {
    to.signed_duration_since(from).num_milliseconds()
}

/// The stored format: RFC 3339 in UTC with milliseconds and `Z`.
pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Whole seconds, for messages (`2026-01-01T00:30:00Z`).
pub fn format_secs(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        Value::deserialize(d).map(Timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_past_the_calendar_are_none_and_differences_saturate() {
        let (max, min) = (DateTime::<Utc>::MAX_UTC, DateTime::<Utc>::MIN_UTC);
        assert_eq!(plus_ms(max, 1000), None);
        assert_eq!(plus_ms(min, u64::MAX), None);
        assert_eq!(plus_minutes(min, -1), None);
        assert!(not_after(max, max, 5));
        assert_eq!(ms_between(max, min), 0);
        assert!(ms_between(min, max) > 16_000_000_000_000_000);
        assert!(minutes_between(min, max) > 0);
        assert!(signed_ms(max, min) < 0);
        let t = parse("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(
            plus_ms(t, 90_000).map(format).as_deref(),
            Some("2026-01-01T00:01:30.000Z")
        );
    }
}
