//! The type check as it was written before it was derived from the records: a table of
//! known fields beside the typed records. Kept for the tests only, as the oracle the
//! derived check (check.rs) must agree with on every single fault it names.

use serde_json::Value;

use super::{get_path, ledger, DRIVERS, PHASES};
use crate::error::{Error, Result};

#[derive(Clone, Copy)]
pub(super) enum Kind {
    UInt,
    OptUInt,
    /// A non-negative number (fractions allowed: dollars) or null.
    OptNumber,
    Str,
    OptStr,
    Bool,
    Object,
    OptObject,
    Array,
    StrArray,
    OneOf(&'static [&'static str]),
}

impl Kind {
    fn accepts(self, v: &Value) -> bool {
        match self {
            Kind::UInt => v.is_u64(),
            Kind::OptUInt => v.is_u64() || v.is_null(),
            Kind::OptNumber => v.is_null() || v.as_f64().is_some_and(|x| x >= 0.0),
            Kind::Str => v.is_string(),
            Kind::OptStr => v.is_string() || v.is_null(),
            Kind::Bool => v.is_boolean(),
            Kind::Object => v.is_object(),
            Kind::OptObject => v.is_object() || v.is_null(),
            Kind::Array => v.is_array(),
            Kind::StrArray => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            Kind::OneOf(options) => v.as_str().is_some_and(|s| options.contains(&s)),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::UInt => "a non-negative integer",
            Kind::OptUInt => "a non-negative integer or null",
            Kind::OptNumber => "a non-negative number or null",
            Kind::Str => "a string",
            Kind::OptStr => "a string or null",
            Kind::Bool => "true or false",
            Kind::Object => "an object",
            Kind::OptObject => "an object or null",
            Kind::Array => "an array",
            Kind::StrArray => "an array of strings",
            Kind::OneOf(options) if options == PHASES => {
                "one of \"planning\", \"execution\", \"completed\", \"cancelled\""
            }
            Kind::OneOf(_) => "one of \"native-goal\", \"stop-hook\", \"manual\"",
        }
    }
}

/// The known fields and their types; everything else is the user's and passes through.
pub(super) const KNOWN: &[(&str, Kind)] = &[
    ("version", Kind::UInt),
    ("name", Kind::Str),
    ("phase", Kind::OneOf(PHASES)),
    ("sessionId", Kind::OptStr),
    ("baseCommit", Kind::OptStr),
    ("taskIndex", Kind::UInt),
    ("totalTasks", Kind::UInt),
    ("taskIteration", Kind::UInt),
    ("maxTaskIterations", Kind::UInt),
    ("globalIteration", Kind::UInt),
    ("maxGlobalIterations", Kind::UInt),
    ("budget", Kind::Object),
    ("budget.maxOutputTokens", Kind::OptUInt),
    ("budget.maxMinutes", Kind::OptUInt),
    ("budget.maxStallStops", Kind::OptUInt),
    ("budget.maxTaskTokens", Kind::OptUInt),
    ("budget.maxTaskMinutes", Kind::OptUInt),
    ("budget.maxUsd", Kind::OptNumber),
    ("budget.forecastWarn", Kind::OptUInt),
    ("budget.forecastHalt", Kind::OptUInt),
    ("ledger", Kind::OptObject),
    ("usage", Kind::Object),
    ("usage.outputTokens", Kind::UInt),
    ("usage.inputTokens", Kind::UInt),
    ("usage.transcriptOffset", Kind::OptUInt),
    ("usage.transcriptPath", Kind::OptStr),
    // `startedAt` is not type-checked here: a garbled one must not make the whole state
    // unreadable (the guard would enforce nothing); `check_times` refuses writing one and
    // the time cap falls back to another origin (`time_origin`).
    ("executionDriver", Kind::OneOf(DRIVERS)),
    ("quickMode", Kind::Bool),
    ("recoveryMode", Kind::Bool),
    ("awaitingApproval", Kind::Bool),
    ("verificationBlocks", Kind::Object),
    ("taskEvidence", Kind::Object),
    ("attempts", Kind::Object),
    ("fixTaskMap", Kind::Object),
    ("modificationMap", Kind::Object),
    ("halt", Kind::OptObject),
    ("halt.kind", Kind::Str),
    ("halt.reason", Kind::Str),
    ("completed", Kind::Bool),
    ("completedAt", Kind::OptStr),
    ("guard", Kind::Object),
    ("unverifiedClaims", Kind::Array),
    ("isolation", Kind::Object),
    ("isolation.sequential", Kind::Bool),
    ("acceptanceGate", Kind::Bool),
    ("redGreen", Kind::Bool),
    ("checkedAtInit", Kind::Array),
];

/// The fields of one attempt (`attempts.<id>.<i>`), which the task verbs rewrite.
pub(super) const ATTEMPT: &[(&str, Kind)] = &[
    ("n", Kind::UInt),
    ("status", Kind::Str),
    ("startedAt", Kind::OptStr),
    ("endedAt", Kind::OptStr),
    ("startCommit", Kind::OptStr),
    ("endCommit", Kind::OptStr),
    ("reason", Kind::OptStr),
    ("fixTaskId", Kind::OptStr),
    ("rollbackRef", Kind::OptStr),
    ("rolledBackAt", Kind::OptStr),
];

/// The fields of one `fixTaskMap.<id>` entry.
pub(super) const FIX_ENTRY: &[(&str, Kind)] = &[
    ("attempts", Kind::UInt),
    ("fixTaskIds", Kind::StrArray),
    ("lastError", Kind::OptStr),
];

/// Check every known field present in `doc`. `source_name` names the file or patch.
pub(super) fn typecheck(doc: &Value, source_name: &str) -> Result<()> {
    if !doc.is_object() {
        return Err(Error::FieldType {
            source_name: source_name.to_string(),
            field: "(top level)".into(),
            expected: "an object",
        });
    }
    for (path, kind) in KNOWN {
        if let Some(v) = get_path(doc, path) {
            if !kind.accepts(v) {
                return Err(field_error(source_name, path.to_string(), kind.describe()));
            }
        }
    }
    let ledger = doc.get("ledger").map(ledger::Ledger::parse);
    if let Some(Err(e)) = ledger {
        return Err(Error::FieldType {
            source_name: source_name.to_string(),
            field: e.trim_start_matches("field `ledger`: ").to_string(),
            expected: "a ledger: tasks/run accounts of non-negative integer token counts",
        });
    }
    check_entries(doc, source_name)
}

fn field_error(source_name: &str, field: String, expected: &'static str) -> Error {
    Error::FieldType {
        source_name: source_name.to_string(),
        field,
        expected,
    }
}

/// Check the known `fields` present in `entry` (named `at` in errors).
fn check_fields(entry: &Value, at: &str, fields: &[(&str, Kind)], source: &str) -> Result<()> {
    let Some(map) = entry.as_object() else {
        return Err(field_error(source, at.to_string(), "an object"));
    };
    for (key, kind) in fields {
        if map.get(*key).is_some_and(|v| !kind.accepts(v)) {
            return Err(field_error(source, format!("{at}.{key}"), kind.describe()));
        }
    }
    Ok(())
}

/// One level into the per-task maps the verbs index into: every `attempts.<id>` a list of
/// attempt objects, every `fixTaskMap.<id>`, evidence record and subagent entry an object.
fn check_entries(doc: &Value, source: &str) -> Result<()> {
    let entries = |key: &str| {
        doc.get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    };
    for (id, list) in entries("attempts") {
        let Some(items) = list.as_array() else {
            return Err(field_error(source, format!("attempts.{id}"), "an array"));
        };
        for (i, attempt) in items.iter().enumerate() {
            check_fields(attempt, &format!("attempts.{id}.{i}"), ATTEMPT, source)?;
        }
    }
    for (id, entry) in entries("fixTaskMap") {
        check_fields(entry, &format!("fixTaskMap.{id}"), FIX_ENTRY, source)?;
    }
    for key in ["taskEvidence", "verificationBlocks"] {
        for (id, record) in entries(key) {
            check_fields(record, &format!("{key}.{id}"), &[], source)?;
        }
    }
    let agents = doc.get("usage").and_then(|u| u.get("agents"));
    for (key, entry) in agents.and_then(Value::as_object).into_iter().flatten() {
        check_fields(entry, &format!("usage.agents.{key}"), &[], source)?;
    }
    Ok(())
}
