//! The type check of a state document, derived from the typed records (typed.rs): each
//! field's type says what JSON it accepts (`Check`), and `record!` walks a record's fields
//! in their order. There is no separate table of known fields: the schema is the records.
//!
//! The check runs in two passes, as the verbs have always named a fault: first every
//! known field's own type, with the fields of the known sub-objects right after their
//! parent (`budget`, `budget.maxMinutes`, …); then what the per-task maps hold (the ledger's
//! accounts, each attempt, fix entry, evidence record and subagent entry).
//! Where the check is not the field type's, the record declares it (`=> Unchecked`,
//! `=> Records`, …). The checks of the state's own types (`Nullable`, `Loose`, `Phase`,
//! the records, the ledger) and `typecheck` are in typed.rs, which this file does not
//! import.

use serde_json::{Map, Number, Value};

use indexmap::IndexMap;

use super::time::Timestamp;

/// A field that does not have its type: where (`budget.maxMinutes`) and what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub field: String,
    pub expected: &'static str,
}

pub(crate) type Checked = std::result::Result<(), Fault>;

pub(crate) fn fault(field: String, expected: &'static str) -> Checked {
    Err(Fault { field, expected })
}

/// `at.key`, or `key` at the top level.
pub(crate) fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// What JSON a field's type accepts.
pub(crate) trait Check {
    /// What the value must be, as errors say it ("a non-negative integer").
    const EXPECTED: &'static str;
    /// `EXPECTED` where null is accepted too ("a non-negative integer or null").
    const OR_NULL: &'static str = Self::EXPECTED;
    /// The value's own kind (not what the objects inside it hold).
    fn accepts(v: &Value) -> bool;
    /// The first pass below the value: a known sub-object's own fields.
    fn check_fields(_v: &Value, _at: &str) -> Checked {
        Ok(())
    }
    /// The second pass: the entries of a per-task map, a ledger's accounts.
    fn check_entries(_v: &Value, _at: &str) -> Checked {
        Ok(())
    }
    /// The known fields below the value, as dot paths from `at` with `*` for each task id
    /// or list index (`attempts.*.*.endCommit`): `known_fields`.
    fn paths(_at: &str, _out: &mut Vec<String>) {}
}

/// A field's value checked at `at`: its kind, then `pass` below it.
pub(crate) fn field<C: Check>(v: &Value, at: &str, first_pass: bool) -> Checked {
    if first_pass {
        if !C::accepts(v) {
            return fault(at.to_string(), C::EXPECTED);
        }
        C::check_fields(v, at)
    } else {
        C::check_entries(v, at)
    }
}

impl Check for u64 {
    const EXPECTED: &'static str = "a non-negative integer";
    const OR_NULL: &'static str = "a non-negative integer or null";
    fn accepts(v: &Value) -> bool {
        v.is_u64()
    }
}

/// Dollars (`budget.maxUsd`): fractions allowed, never negative.
impl Check for Number {
    const EXPECTED: &'static str = "a non-negative number";
    const OR_NULL: &'static str = "a non-negative number or null";
    fn accepts(v: &Value) -> bool {
        v.as_f64().is_some_and(|x| x >= 0.0)
    }
}

impl Check for String {
    const EXPECTED: &'static str = "a string";
    const OR_NULL: &'static str = "a string or null";
    fn accepts(v: &Value) -> bool {
        v.is_string()
    }
}

/// A time is checked as text; whether it parses is `check_times`' (a patch) and the
/// reader's (`Timestamp::at`).
impl Check for Timestamp {
    const EXPECTED: &'static str = String::EXPECTED;
    const OR_NULL: &'static str = String::OR_NULL;
    fn accepts(v: &Value) -> bool {
        v.is_string()
    }
}

impl Check for bool {
    const EXPECTED: &'static str = "true or false";
    fn accepts(v: &Value) -> bool {
        v.is_boolean()
    }
}

/// An open object (`modificationMap`): any keys, any values.
impl Check for Map<String, Value> {
    const EXPECTED: &'static str = "an object";
    const OR_NULL: &'static str = "an object or null";
    fn accepts(v: &Value) -> bool {
        v.is_object()
    }
}

/// A list of anything (`unverifiedClaims`, `checkedAtInit`).
impl Check for Vec<Value> {
    const EXPECTED: &'static str = "an array";
    fn accepts(v: &Value) -> bool {
        v.is_array()
    }
}

impl Check for Vec<String> {
    const EXPECTED: &'static str = "an array of strings";
    fn accepts(v: &Value) -> bool {
        v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
    }
}

/// A per-task map (`attempts`, `fixTaskMap`): the map is checked in the first pass, its
/// entries in the second.
impl<T: Check> Check for IndexMap<String, T> {
    const EXPECTED: &'static str = "an object";
    fn accepts(v: &Value) -> bool {
        v.is_object()
    }
    fn check_entries(v: &Value, at: &str) -> Checked {
        for (key, entry) in v.as_object().into_iter().flatten() {
            field::<T>(entry, &join(at, key), true)?;
        }
        Ok(())
    }
    fn paths(at: &str, out: &mut Vec<String>) {
        T::paths(&join(at, "*"), out)
    }
}

impl<T: Check> Check for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn accepts(v: &Value) -> bool {
        T::accepts(v)
    }
    fn check_fields(v: &Value, at: &str) -> Checked {
        T::check_fields(v, at)
    }
    fn check_entries(v: &Value, at: &str) -> Checked {
        T::check_entries(v, at)
    }
    fn paths(at: &str, out: &mut Vec<String>) {
        T::paths(at, out)
    }
}

/// A field the check leaves alone though its type is known: a garbled `startedAt`, `halt.at`
/// or `guard.clockStartedAt` must not make the whole state unreadable (the guard would
/// enforce nothing); `check_times` refuses writing one and the time cap falls back to
/// another origin.
pub(crate) struct Unchecked;

impl Check for Unchecked {
    const EXPECTED: &'static str = "anything";
    fn accepts(_: &Value) -> bool {
        true
    }
}

/// A map of open records `T` (`taskEvidence`, `verificationBlocks`): every entry an
/// object, its fields not checked (`T`'s are all `Loose`) but named (`paths`).
pub(crate) struct Records<T>(std::marker::PhantomData<T>);

impl<T: Check> Check for Records<T> {
    const EXPECTED: &'static str = "an object";
    fn accepts(v: &Value) -> bool {
        v.is_object()
    }
    fn check_entries(v: &Value, at: &str) -> Checked {
        entries_are_objects(v, at)
    }
    fn paths(at: &str, out: &mut Vec<String>) {
        T::paths(&join(at, "*"), out)
    }
}

/// A `Loose` field holding a record `T`: anything is accepted, as for `Loose`, and `T`'s
/// fields are named (`paths`).
pub(crate) struct LooseRecord<T>(std::marker::PhantomData<T>);

impl<T: Check> Check for LooseRecord<T> {
    const EXPECTED: &'static str = "anything";
    fn accepts(_: &Value) -> bool {
        true
    }
    fn paths(at: &str, out: &mut Vec<String>) {
        T::paths(at, out)
    }
}

/// `usage.agents`: not checked as a whole (only the hooks write it), but an entry that is
/// there is an object.
pub(crate) struct LooseRecords;

impl Check for LooseRecords {
    const EXPECTED: &'static str = "anything";
    fn accepts(_: &Value) -> bool {
        true
    }
    fn check_entries(v: &Value, at: &str) -> Checked {
        entries_are_objects(v, at)
    }
}

fn entries_are_objects(v: &Value, at: &str) -> Checked {
    for (key, entry) in v.as_object().into_iter().flatten() {
        if !entry.is_object() {
            return fault(join(at, key), "an object");
        }
    }
    Ok(())
}
