//! `Timestamp`: the one parse and the one format of the state's time fields (`startedAt`,
//! `completedAt`, attempt times, `halt.at`, `guard.clockStartedAt`).

use chrono::{DateTime, SecondsFormat, Utc};
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
