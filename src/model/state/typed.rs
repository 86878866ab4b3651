//! The typed execution state (docs/design.md#state): every known field typed, every unknown
//! one kept in a flattened map in its order, at the top level and in each known sub-object.
//!
//! Reading: `typecheck` runs first on the JSON, so a mistyped known field gives the same
//! `Error::FieldType` text as before; the document that passed is then moved into the
//! records (`Owned`, `read_map`). The check is derived from these records (check.rs: each
//! field's type, or the check declared after `=>`), so the schema is written once. Fields
//! it leaves alone (`startedAt`, `halt.at`, the guard's record) are read leniently: a
//! garbled value is kept as it was and reads as unknown.
//!
//! Nulls and absences are kept apart (`Nullable`), so `to_value` gives back the document
//! that was read, with known fields in this file's order and unknown ones after them.

use indexmap::IndexMap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::check::{self, join, Check, Checked, LooseRecord, LooseRecords, Records, Unchecked};
use super::time::Timestamp;
use super::{DEFAULT_MAX_GLOBAL_ITERATIONS, DEFAULT_MAX_STALL_STOPS, DEFAULT_MAX_TASK_ITERATIONS};
use crate::error::{Error, Result};
use crate::support::json::merge_into;

/// A field that may be absent, `null`, or set; absent and `null` read the same but are
/// written back as they were.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Nullable<T> {
    #[default]
    Absent,
    Null,
    Set(T),
}

impl<T> Nullable<T> {
    pub fn get(&self) -> Option<&T> {
        match self {
            Nullable::Set(v) => Some(v),
            _ => None,
        }
    }
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }
}

impl<T> From<Option<T>> for Nullable<T> {
    fn from(v: Option<T>) -> Nullable<T> {
        v.map_or(Nullable::Null, Nullable::Set)
    }
}

impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Option::<T>::deserialize(d).map(Nullable::from)
    }
}

/// A field nothing type-checks (the guard's record): a value of the wrong type is kept as
/// it was and reads as absent, so a hand edit never makes the state unreadable.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Loose<T> {
    #[default]
    Absent,
    Typed(T),
    Raw(Value),
}

impl<T> Loose<T> {
    pub fn get(&self) -> Option<&T> {
        match self {
            Loose::Typed(v) => Some(v),
            _ => None,
        }
    }
    pub fn is_absent(&self) -> bool {
        matches!(self, Loose::Absent)
    }
}

impl<T: Serialize> Loose<T> {
    /// The value as recorded, whatever its type; `None` when absent.
    pub fn to_json(&self) -> Option<Value> {
        match self {
            Loose::Absent => None,
            Loose::Typed(v) => serde_json::to_value(v).ok(),
            Loose::Raw(v) => Some(v.clone()),
        }
    }
}

impl<T: Serialize> Serialize for Loose<T> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Loose::Typed(v) => v.serialize(s),
            Loose::Raw(v) => v.serialize(s),
            Loose::Absent => s.serialize_none(),
        }
    }
}

impl<'de, T: for<'a> Deserialize<'a>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let raw = Value::deserialize(d)?;
        Ok(match T::deserialize(&raw) {
            Ok(v) => Loose::Typed(v),
            Err(_) => Loose::Raw(raw),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Planning,
    Execution,
    Completed,
    Cancelled,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Planning => "planning",
            Phase::Execution => "execution",
            Phase::Completed => "completed",
            Phase::Cancelled => "cancelled",
        }
    }
}

/// Who drives the loop (`executionDriver`); `manual` when unset. Also `--driver`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Driver {
    NativeGoal,
    StopHook,
    #[default]
    Manual,
}

impl Driver {
    pub fn as_str(self) -> &'static str {
        match self {
            Driver::NativeGoal => "native-goal",
            Driver::StopHook => "stop-hook",
            Driver::Manual => "manual",
        }
    }
}

/// An owned JSON value turned into a field's type, moving what it can (serde's
/// `Deserialize` from a `Value` rebuilds every object and array it passes through).
trait Owned: Sized {
    fn from_owned(v: Value) -> serde_json::Result<Self>;
}

/// Scalars (and the enums and `Timestamp`): serde reads them from a `Value` without copying
/// much.
macro_rules! owned_via_serde {
    ($($t:ty),*) => {
        $(impl Owned for $t {
            fn from_owned(v: Value) -> serde_json::Result<Self> {
                <$t>::deserialize(v)
            }
        })*
    };
}
owned_via_serde!(u64, bool, String, Number, Phase, Driver, Timestamp);

fn expected(what: &str) -> serde_json::Error {
    serde::de::Error::custom(format!("expected {what}"))
}

impl Owned for Value {
    fn from_owned(v: Value) -> serde_json::Result<Self> {
        Ok(v)
    }
}

impl Owned for Map<String, Value> {
    fn from_owned(v: Value) -> serde_json::Result<Self> {
        match v {
            Value::Object(map) => Ok(map),
            _ => Err(expected("an object")),
        }
    }
}

impl<T: Owned> Owned for Vec<T> {
    fn from_owned(v: Value) -> serde_json::Result<Self> {
        match v {
            Value::Array(items) => items.into_iter().map(T::from_owned).collect(),
            _ => Err(expected("an array")),
        }
    }
}

impl<T: Owned> Owned for IndexMap<String, T> {
    fn from_owned(v: Value) -> serde_json::Result<Self> {
        let map = Map::from_owned(v)?;
        map.into_iter()
            .map(|(k, v)| Ok((k, T::from_owned(v)?)))
            .collect()
    }
}

/// A field of a record: how it reads from its JSON value and says it is absent (and so
/// is not written).
trait Field: Sized + Default {
    fn from_json(v: Value) -> serde_json::Result<Self>;
    fn absent(&self) -> bool;
}

impl<T: Owned> Field for Option<T> {
    fn from_json(v: Value) -> serde_json::Result<Self> {
        match v {
            Value::Null => Ok(None),
            v => T::from_owned(v).map(Some),
        }
    }
    fn absent(&self) -> bool {
        self.is_none()
    }
}

impl<T: Owned> Field for Nullable<T> {
    fn from_json(v: Value) -> serde_json::Result<Self> {
        match v {
            Value::Null => Ok(Nullable::Null),
            v => T::from_owned(v).map(Nullable::Set),
        }
    }
    fn absent(&self) -> bool {
        self.is_absent()
    }
}

impl<T: DeserializeOwned> Field for Loose<T> {
    fn from_json(v: Value) -> serde_json::Result<Self> {
        Ok(match T::deserialize(&v) {
            Ok(t) => Loose::Typed(t),
            Err(_) => Loose::Raw(v),
        })
    }
    fn absent(&self) -> bool {
        self.is_absent()
    }
}

/// `merge_into` of one key of a patch into `map`.
fn merge_key(map: &mut Map<String, Value>, key: &str, pv: &Value) {
    match map.get_mut(key) {
        Some(tv) if tv.is_object() && pv.is_object() => merge_into(tv, pv),
        _ => {
            map.insert(key.to_string(), pv.clone());
        }
    }
}

/// A record of the state: its known fields, each with its JSON key, and the unknown ones in
/// `other` in their order. Reading walks the object once and moves each known value into
/// its field (a derived `Deserialize` with `#[serde(flatten)]` copies the document into an
/// intermediate tree first, about twice the cost of the parse); writing puts the known
/// fields first, then `other`.
macro_rules! record {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident: $ty:ty = $key:literal $(=> $chk:ty)?,)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, Serialize)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(rename = $key, skip_serializing_if = "Field::absent")]
                pub $field: $ty,
            )*
            #[serde(flatten)]
            pub other: Map<String, Value>,
        }

        impl $name {
            fn from_map(map: Map<String, Value>) -> serde_json::Result<Self> {
                $name::read_map(map, false)
            }

            /// `from_map` with each field that does not read dropped (absent).
            #[allow(dead_code)]
            fn from_map_lenient(map: Map<String, Value>) -> Self {
                $name::read_map(map, true).unwrap_or_default()
            }

            /// One pass over the object, each value moved to its field (a removal per known
            /// key would shift the map's entries once per field).
            fn read_map(map: Map<String, Value>, lenient: bool) -> serde_json::Result<Self> {
                let mut out = $name::default();
                for (key, value) in map {
                    match key.as_str() {
                        $($key => match Field::from_json(value) {
                            Ok(v) => out.$field = v,
                            Err(_) if lenient => {}
                            Err(e) => return Err(e),
                        },)*
                        _ => {
                            out.other.insert(key, value);
                        }
                    }
                }
                Ok(out)
            }
        }

        impl Owned for $name {
            fn from_owned(v: Value) -> serde_json::Result<Self> {
                $name::from_map(Map::from_owned(v)?)
            }
        }

        impl $name {
            /// `merge_into` of a JSON merge patch, field by field: only the fields the
            /// patch names are written out, merged and read back.
            #[allow(dead_code)]
            fn merge_map(&mut self, patch: &Map<String, Value>) -> serde_json::Result<()> {
                for (key, pv) in patch {
                    match key.as_str() {
                        $($key => {
                            let mut cur = serde_json::to_value(&self.$field)?;
                            merge_into(&mut cur, pv);
                            self.$field = <$ty as Field>::from_json(cur)?;
                        })*
                        _ => merge_key(&mut self.other, key, pv),
                    }
                }
                Ok(())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let map = Map::deserialize(d)?;
                $name::from_map(map).map_err(serde::de::Error::custom)
            }
        }

        /// The record's type check: an object whose known fields have their types (a
        /// field's check is its type's, or the one declared after `=>`).
        impl Check for $name {
            const EXPECTED: &'static str = "an object";
            const OR_NULL: &'static str = "an object or null";
            fn accepts(v: &Value) -> bool {
                v.is_object()
            }
            fn check_fields(v: &Value, at: &str) -> Checked {
                let Some(map) = v.as_object() else { return Ok(()) };
                $(if let Some(fv) = map.get($key) {
                    check::field::<check_ty!($ty $(, $chk)?)>(fv, &join(at, $key), true)?;
                })*
                Ok(())
            }
            fn check_entries(v: &Value, at: &str) -> Checked {
                let Some(map) = v.as_object() else { return Ok(()) };
                $(if let Some(fv) = map.get($key) {
                    check::field::<check_ty!($ty $(, $chk)?)>(fv, &join(at, $key), false)?;
                })*
                Ok(())
            }
            fn paths(at: &str, out: &mut Vec<String>) {
                $(
                    out.push(join(at, $key));
                    <check_ty!($ty $(, $chk)?)>::paths(&join(at, $key), out);
                )*
            }
        }
    };
}

/// A field's check: its type's, unless the record declares another (`=> Unchecked`).
macro_rules! check_ty {
    ($ty:ty) => {
        $ty
    };
    ($ty:ty, $chk:ty) => {
        $chk
    };
}

mod evidence;
#[cfg(test)]
pub(crate) use evidence::record_for_test;
pub use evidence::{AcceptedOther, EvidenceRecord, MergedFrom, TestsSummary};

record! {
/// `budget`: the caps `state init` and `resume` set.
pub struct Budget {
    max_output_tokens: Nullable<u64> = "maxOutputTokens",
    max_minutes: Nullable<u64> = "maxMinutes",
    max_stall_stops: Nullable<u64> = "maxStallStops",
    max_task_tokens: Nullable<u64> = "maxTaskTokens",
    max_task_minutes: Nullable<u64> = "maxTaskMinutes",
    /// Dollars; a `Number` so `5` is written back as `5`, not `5.0`.
    max_usd: Nullable<Number> = "maxUsd",
    forecast_warn: Nullable<u64> = "forecastWarn",
    forecast_halt: Nullable<u64> = "forecastHalt",
}
}

record! {
/// `usage`: the token counters, how far the transcript was read, and per subagent
/// (`agents`, keyed by agent id or transcript path) how far its transcript was read.
pub struct Usage {
    output_tokens: Option<u64> = "outputTokens",
    input_tokens: Option<u64> = "inputTokens",
    transcript_offset: Nullable<u64> = "transcriptOffset",
    transcript_path: Nullable<String> = "transcriptPath",
    /// Nothing type-checks `agents` as a whole (only the hooks write it): `Loose`; an
    /// entry that is there is an object.
    agents: Loose<IndexMap<String, AgentUsage>> = "agents" => LooseRecords,
}
}

record! {
/// `usage.agents.<key>`: one subagent's counted output and where its transcript was read
/// to. Only the hook writes it, so a hand-garbled value reads as absent and is kept.
pub struct AgentUsage {
    output_tokens: Loose<u64> = "outputTokens",
    offset: Loose<u64> = "offset",
    last_message_id: Loose<String> = "lastMessageId",
}
}

record! {
/// `halt`: why the execution stopped (`{kind, reason, at}`); other keys are the kind's
/// details (`spentUsd`, `raiseFlag`, `raiseTo`).
pub struct Halt {
    kind: Option<String> = "kind",
    reason: Option<String> = "reason",
    at: Nullable<Timestamp> = "at" => Unchecked,
}
}

record! {
pub struct Isolation {
    sequential: Option<bool> = "sequential",
}
}

record! {
/// One attempt of a task (`attempts.<id>.<i>`), which the task verbs write.
pub struct Attempt {
    n: Option<u64> = "n",
    status: Option<String> = "status",
    started_at: Nullable<Timestamp> = "startedAt",
    ended_at: Nullable<Timestamp> = "endedAt",
    start_commit: Nullable<String> = "startCommit",
    end_commit: Nullable<String> = "endCommit",
    reason: Nullable<String> = "reason",
    fix_task_id: Nullable<String> = "fixTaskId",
    rollback_ref: Nullable<String> = "rollbackRef",
    rolled_back_at: Nullable<Timestamp> = "rolledBackAt",
}
}

record! {
/// One `fixTaskMap.<id>` entry: the fix tasks a failing task spawned.
pub struct FixEntry {
    attempts: Option<u64> = "attempts",
    fix_task_ids: Option<Vec<String>> = "fixTaskIds",
    last_error: Nullable<String> = "lastError",
}
}

record! {
/// `guard`: the Stop hook's own record. Nothing type-checks it (only the hook writes it),
/// so each field is `Loose`: a hand-garbled value reads as absent and is kept.
pub struct GuardRecord {
    last_fingerprint: Loose<String> = "lastFingerprint",
    stall_stops: Loose<u64> = "stallStops",
    blocks: Loose<u64> = "blocks",
    last_block_fingerprint: Loose<String> = "lastBlockFingerprint",
    clock_started_at: Nullable<Timestamp> = "clockStartedAt" => Unchecked,
    uncounted_stops: Loose<u64> = "uncountedStops",
    uncounted_offset: Loose<u64> = "uncountedOffset",
    last_message_id: Loose<String> = "lastMessageId",
}
}

record! {
/// The whole state document. Fields are `Option`/`Nullable` so a round trip writes back
/// exactly what was read; the accessors below give the defaults.
pub struct State {
    version: Option<u64> = "version",
    name: Option<String> = "name",
    phase: Option<Phase> = "phase",
    session_id: Nullable<String> = "sessionId",
    task_index: Option<u64> = "taskIndex",
    total_tasks: Option<u64> = "totalTasks",
    task_iteration: Option<u64> = "taskIteration",
    max_task_iterations: Option<u64> = "maxTaskIterations",
    global_iteration: Option<u64> = "globalIteration",
    max_global_iterations: Option<u64> = "maxGlobalIterations",
    budget: Option<Budget> = "budget",
    /// The cost ledger: `ledger::Ledger::of` owns its shape (and `typecheck` checks it).
    ledger: Nullable<Map<String, Value>> = "ledger" => Nullable<LedgerShape>,
    usage: Option<Usage> = "usage",
    /// Not type-checked: a garbled one must not make the whole state unreadable (the
    /// guard would enforce nothing); `check_times` refuses writing one and the time cap
    /// falls back to another origin (`time_origin`).
    started_at: Nullable<Timestamp> = "startedAt" => Unchecked,
    execution_driver: Option<Driver> = "executionDriver",
    quick_mode: Option<bool> = "quickMode",
    recovery_mode: Option<bool> = "recoveryMode",
    awaiting_approval: Option<bool> = "awaitingApproval",
    /// Per phase, the evidence record `verify run --phase` stores (`EvidenceRecord`; the
    /// check asks only that each is an object).
    verification_blocks: Option<IndexMap<String, EvidenceRecord>> = "verificationBlocks" => Records<EvidenceRecord>,
    /// Per task, the evidence record `verify run --task` stores.
    task_evidence: Option<IndexMap<String, EvidenceRecord>> = "taskEvidence" => Records<EvidenceRecord>,
    attempts: Option<IndexMap<String, Vec<Attempt>>> = "attempts",
    fix_task_map: Option<IndexMap<String, FixEntry>> = "fixTaskMap",
    /// Per task, the files a task may touch: `tasks.rs` owns its shape.
    modification_map: Option<Map<String, Value>> = "modificationMap",
    halt: Nullable<Halt> = "halt",
    completed: Option<bool> = "completed",
    completed_at: Nullable<Timestamp> = "completedAt",
    guard: Option<GuardRecord> = "guard",
    /// The claims the guard could not verify: `claims.rs` owns their shape.
    unverified_claims: Option<Vec<Value>> = "unverifiedClaims",
    isolation: Option<Isolation> = "isolation",
    acceptance_gate: Option<bool> = "acceptanceGate",
    /// Criteria must be shown red at the attempt's start commit (`evidence/red_green.rs`).
    red_green: Option<bool> = "redGreen",
    /// HEAD when `state init` started this execution: where the integrity scan reads the
    /// execution's whole change from.
    base_commit: Nullable<String> = "baseCommit",
    /// Task ids whose box was already ticked at `state init` (any JSON: only strings count).
    checked_at_init: Option<Vec<Value>> = "checkedAtInit",
    /// The plan frozen at `state init` (`model::plan`). `Loose`: a hand-garbled one must
    /// not make the state unreadable, and reads as broken, never as absent.
    plan: Loose<crate::model::plan::Plan> = "plan",
    /// The baseline of tests that must still run: the SHA-256 of `test-results/baseline.json`
    /// and a summary (`evidence::baseline_store` owns its shape).
    test_baseline: Option<Map<String, Value>> = "testBaseline",
    /// Files git ignores that change how tests run, as `state init` found them: path →
    /// SHA-256 (`evidence::ignored_files`); one that differs later is an integrity finding.
    ignored_files: Option<IndexMap<String, String>> = "ignoredFiles",
}
}

impl State {
    /// Read a state document, type-checking it first so a mistyped known field is named
    /// exactly as `typecheck` names it (errors say `state`; see `parse` for a file name).
    pub fn from_value(doc: &Value) -> Result<State> {
        State::parse(doc, "state")
    }

    /// `from_value` with errors naming `source_name` (the file or patch).
    pub fn parse(doc: &Value, source_name: &str) -> Result<State> {
        typecheck(doc, source_name)?;
        State::from_checked(doc.clone(), source_name)
    }

    /// The document with each top-level known field that does not read dropped, the rest
    /// read as it is: for readers of an unchecked file that must keep
    /// what is readable — `state init`'s baseline of boxes ticked before the execution,
    /// which a garbled unrelated field must not reset — and for messages built from a
    /// document checked elsewhere. Not an object: empty.
    pub fn lenient(doc: &Value) -> State {
        State::lenient_owned(doc.clone())
    }

    /// `lenient` on a document the caller no longer needs (no copy).
    /// Each top-level field is read as the checked read reads it, and dropped when it does
    /// not read; the checks beyond the types (`maxUsd`'s sign, the ledger's and the
    /// evidence maps' inner shapes) are the accessors' to meet (`ledger()` names a bad
    /// ledger; an evidence entry that is not an object leaves its map unread). No type check runs
    /// first: the status line reads this way on every refresh.
    pub fn lenient_owned(doc: Value) -> State {
        match doc {
            Value::Object(map) => State::from_map_lenient(map),
            _ => State::default(),
        }
    }

    /// The hot path: the parsed document is moved into the typed state, not copied.
    pub fn from_json(doc: Value, source_name: &str) -> Result<State> {
        typecheck(&doc, source_name)?;
        State::from_checked(doc, source_name)
    }

    /// A document `typecheck` (or `apply_patch`) has just passed.
    pub(crate) fn from_checked(doc: Value, source_name: &str) -> Result<State> {
        State::from_owned(doc).map_err(|e| shape_error(source_name, e))
    }

    /// The document: known fields in this struct's order, unknown ones after them in
    /// theirs.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.get().map(String::as_str)
    }
    pub fn task_index(&self) -> u64 {
        self.task_index.unwrap_or(0)
    }
    pub fn total_tasks(&self) -> u64 {
        self.total_tasks.unwrap_or(0)
    }
    pub fn task_iteration(&self) -> u64 {
        self.task_iteration.unwrap_or(0)
    }
    pub fn max_task_iterations(&self) -> u64 {
        self.max_task_iterations
            .unwrap_or(DEFAULT_MAX_TASK_ITERATIONS)
    }
    pub fn global_iteration(&self) -> u64 {
        self.global_iteration.unwrap_or(0)
    }
    pub fn max_global_iterations(&self) -> u64 {
        self.max_global_iterations
            .unwrap_or(DEFAULT_MAX_GLOBAL_ITERATIONS)
    }
    fn budget_cap(&self, cap: impl Fn(&Budget) -> &Nullable<u64>) -> Option<u64> {
        self.budget.as_ref().and_then(|b| cap(b).get().copied())
    }
    pub fn max_output_tokens(&self) -> Option<u64> {
        self.budget_cap(|b| &b.max_output_tokens)
    }
    pub fn max_minutes(&self) -> Option<u64> {
        self.budget_cap(|b| &b.max_minutes)
    }
    pub fn max_stall_stops(&self) -> u64 {
        self.budget_cap(|b| &b.max_stall_stops)
            .unwrap_or(DEFAULT_MAX_STALL_STOPS)
    }
    pub fn max_task_tokens(&self) -> Option<u64> {
        self.budget_cap(|b| &b.max_task_tokens)
    }
    pub fn max_task_minutes(&self) -> Option<u64> {
        self.budget_cap(|b| &b.max_task_minutes)
    }
    /// `budget.maxUsd` in dollars.
    pub fn max_usd(&self) -> Option<f64> {
        let b = self.budget.as_ref()?;
        b.max_usd.get().and_then(Number::as_f64)
    }
    pub fn output_tokens(&self) -> u64 {
        self.usage
            .as_ref()
            .and_then(|u| u.output_tokens)
            .unwrap_or(0)
    }
    pub fn input_tokens(&self) -> u64 {
        self.usage
            .as_ref()
            .and_then(|u| u.input_tokens)
            .unwrap_or(0)
    }
    pub fn transcript_offset(&self) -> Option<u64> {
        let u = self.usage.as_ref()?;
        u.transcript_offset.get().copied()
    }
    pub fn transcript_path(&self) -> Option<&str> {
        let u = self.usage.as_ref()?;
        u.transcript_path.get().map(String::as_str)
    }
    /// `startedAt` as stored (it may be garbled: `time_origin` decides what counts).
    pub fn started_at(&self) -> Option<&Timestamp> {
        self.started_at.get()
    }
    pub fn completed_at(&self) -> Option<&Timestamp> {
        self.completed_at.get()
    }
    pub fn driver(&self) -> Driver {
        self.execution_driver.unwrap_or_default()
    }
    pub fn quick_mode(&self) -> bool {
        self.quick_mode.unwrap_or(false)
    }
    pub fn recovery_mode(&self) -> bool {
        self.recovery_mode.unwrap_or(false)
    }
    pub fn awaiting_approval(&self) -> bool {
        self.awaiting_approval.unwrap_or(false)
    }
    pub fn completed(&self) -> bool {
        self.completed.unwrap_or(false)
    }
    /// The commit `state init` started this execution from (absent before this field).
    pub fn base_commit(&self) -> Option<&str> {
        self.base_commit.get().map(String::as_str)
    }
    pub fn acceptance_gate(&self) -> bool {
        self.acceptance_gate.unwrap_or(false)
    }
    pub fn red_green(&self) -> bool {
        self.red_green.unwrap_or(false)
    }
    /// `halt` when set: `{kind, reason, at}`.
    pub fn halt(&self) -> Option<&Halt> {
        self.halt.get()
    }
    pub fn halt_kind(&self) -> Option<&str> {
        self.halt()?.kind.as_deref()
    }
    pub fn halt_reason(&self) -> Option<&str> {
        self.halt()?.reason.as_deref()
    }
    /// The guard's record; empty when there is none.
    pub fn guard(&self) -> &GuardRecord {
        static EMPTY: std::sync::OnceLock<GuardRecord> = std::sync::OnceLock::new();
        self.guard
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(GuardRecord::default))
    }
    /// The attempts recorded for task `id`, oldest first.
    pub fn attempts_of(&self, id: &str) -> &[Attempt] {
        let list = self.attempts.as_ref().and_then(|m| m.get(id));
        list.map_or(&[], Vec::as_slice)
    }
    pub fn fix_entry(&self, id: &str) -> Option<&FixEntry> {
        self.fix_task_map.as_ref()?.get(id)
    }
    pub fn task_evidence(&self, id: &str) -> Option<&EvidenceRecord> {
        self.task_evidence.as_ref()?.get(id)
    }
    pub fn verification_block(&self, id: &str) -> Option<&EvidenceRecord> {
        self.verification_blocks.as_ref()?.get(id)
    }
    /// Ids of the tasks whose latest attempt is still running.
    pub fn running_attempts(&self) -> Vec<String> {
        let all = self.attempts.iter().flatten();
        all.filter(|(_, list)| list.last().is_some_and(Attempt::is_running))
            .map(|(id, _)| id.clone())
            .collect()
    }
    /// The latest attempt number of task `id` (0 before any).
    pub fn latest_attempt(&self, id: &str) -> u64 {
        self.attempts_of(id).last().and_then(|a| a.n).unwrap_or(0)
    }
    /// `usage.agents.<key>`: what is stored of one subagent's usage. Looked up key by key,
    /// as a key without an agent id is the transcript path, dots and all.
    pub fn agent_usage(&self, key: &str) -> Option<&AgentUsage> {
        self.usage.as_ref()?.agents.get()?.get(key)
    }
    /// The typed cost ledger (`ledger`; absent or null = empty).
    pub fn ledger(&self) -> std::result::Result<super::ledger::Ledger, String> {
        super::ledger::Ledger::of_state(self)
    }

    /// A merge patch applied as `apply_patch` applies it: the patch is checked as `state
    /// merge` checks one, then merged field by field, so only the fields it names are
    /// written out and read back. (A checked patch merged into a checked state stays
    /// checked: every check is a value's type at a path, and merging keeps it.)
    pub fn merge(&mut self, patch: &Value, file_name: &str) -> Result<()> {
        let Some(map) = patch.as_object().filter(|m| !m.contains_key("$unset")) else {
            let doc = super::apply_patch(Some(self.to_value()), patch, file_name)?;
            *self = State::from_checked(doc, file_name)?;
            return Ok(());
        };
        typecheck(patch, "patch")?;
        super::check_times(patch, chrono::Utc::now())?;
        self.merge_map(map).map_err(|e| shape_error(file_name, e))
    }

    /// `merge` of a patch this binary built (the hooks' own records): not checked again.
    pub fn apply(&mut self, patch: &Value) -> Result<()> {
        match patch.as_object() {
            Some(map) => self.merge_map(map).map_err(|e| shape_error("patch", e)),
            None => Ok(()),
        }
    }

    /// Store task `id`'s evidence record, replacing the one there.
    pub fn put_task_evidence(&mut self, id: &str, record: EvidenceRecord) {
        let map = self.task_evidence.get_or_insert_with(IndexMap::new);
        map.insert(id.to_string(), record);
    }
    /// Store phase `phase`'s verification record, replacing the one there.
    pub fn put_verification_block(&mut self, phase: &str, record: EvidenceRecord) {
        let map = self.verification_blocks.get_or_insert_with(IndexMap::new);
        map.insert(phase.to_string(), record);
    }
    /// The frozen plan: none in a state written before plans were frozen; broken when
    /// the field does not read or its tasks no longer hash to its digest.
    pub fn frozen_plan(&self) -> crate::model::plan::Frozen<'_> {
        use crate::model::plan::Frozen;
        match &self.plan {
            Loose::Absent => Frozen::None,
            Loose::Typed(p) if p.intact() => Frozen::Plan(p),
            _ => Frozen::Broken,
        }
    }
    pub fn sequential(&self) -> bool {
        let iso = self.isolation.as_ref();
        iso.and_then(|i| i.sequential).unwrap_or(false)
    }
}

impl Attempt {
    pub fn is_running(&self) -> bool {
        self.status.as_deref() == Some("running")
    }
}

/// The `plan` field read from its text, as `Loose::from_json` reads its tree: typed
/// straight from the text when it reads so (no tree), else through the tree, which keeps
/// that reading's every outcome (a repeated key, which the typed read refuses, reads as
/// the tree reads it).
pub(crate) fn plan_from_text(text: &str) -> serde_json::Result<Loose<crate::model::plan::Plan>> {
    match serde_json::from_str(text) {
        Ok(plan) => Ok(Loose::Typed(plan)),
        Err(_) => Loose::from_json(serde_json::from_str(text)?),
    }
}

/// Serde refusing a document `typecheck` passed is a bug in this file's types; say so
/// rather than guess a field.
fn shape_error(source_name: &str, e: serde_json::Error) -> Error {
    Error::FieldType {
        source_name: source_name.to_string(),
        field: e.to_string(),
        expected: "the state schema of docs/design.md#state",
    }
}

// The type checks of the state's own types (check.rs has the plain ones).

impl Check for Phase {
    const EXPECTED: &'static str =
        "one of \"planning\", \"execution\", \"completed\", \"cancelled\"";
    fn accepts(v: &Value) -> bool {
        v.as_str().is_some_and(|s| super::PHASES.contains(&s))
    }
}

impl Check for Driver {
    const EXPECTED: &'static str = "one of \"native-goal\", \"stop-hook\", \"manual\"";
    fn accepts(v: &Value) -> bool {
        v.as_str().is_some_and(|s| super::DRIVERS.contains(&s))
    }
}

/// A list of records (a task's attempts): each item a record, named by its index.
impl Check for Vec<Attempt> {
    const EXPECTED: &'static str = "an array";
    fn accepts(v: &Value) -> bool {
        v.is_array()
    }
    fn check_fields(v: &Value, at: &str) -> Checked {
        for (i, item) in v.as_array().into_iter().flatten().enumerate() {
            check::field::<Attempt>(item, &join(at, &i.to_string()), true)?;
        }
        Ok(())
    }
    fn paths(at: &str, out: &mut Vec<String>) {
        Attempt::paths(&join(at, "*"), out);
    }
}

impl<T: Check> Check for Nullable<T> {
    const EXPECTED: &'static str = T::OR_NULL;
    fn accepts(v: &Value) -> bool {
        v.is_null() || T::accepts(v)
    }
    fn check_fields(v: &Value, at: &str) -> Checked {
        if v.is_null() {
            return Ok(());
        }
        T::check_fields(v, at)
    }
    fn check_entries(v: &Value, at: &str) -> Checked {
        if v.is_null() {
            return Ok(());
        }
        T::check_entries(v, at)
    }
    fn paths(at: &str, out: &mut Vec<String>) {
        T::paths(at, out)
    }
}

/// The hooks' own records (`guard`'s fields, `usage.agents`' entries): not checked, a
/// garbled value reads as absent.
impl<T> Check for Loose<T> {
    const EXPECTED: &'static str = "anything";
    fn accepts(_: &Value) -> bool {
        true
    }
}

/// The cost ledger: an object (or null) whose accounts `Ledger` reads.
pub(crate) struct LedgerShape;

impl Check for LedgerShape {
    const EXPECTED: &'static str = "an object";
    const OR_NULL: &'static str = "an object or null";
    fn accepts(v: &Value) -> bool {
        v.is_object()
    }
    fn check_entries(v: &Value, _at: &str) -> Checked {
        match super::ledger::Ledger::parse(v) {
            Ok(_) => Ok(()),
            Err(e) => check::fault(
                e.trim_start_matches("field `ledger`: ").to_string(),
                "a ledger: tasks/run accounts of non-negative integer token counts",
            ),
        }
    }
}

/// Check every known field present in `doc` (a state document or a patch): the first that
/// does not have its type is an `Error::FieldType` naming it. `source_name` names the file
/// or patch.
pub fn typecheck(doc: &Value, source_name: &str) -> crate::error::Result<()> {
    let checked = if doc.is_object() {
        <State as Check>::check_fields(doc, "").and_then(|()| State::check_entries(doc, ""))
    } else {
        check::fault("(top level)".into(), "an object")
    };
    checked.map_err(|f| crate::error::Error::FieldType {
        source_name: source_name.to_string(),
        field: f.field,
        expected: f.expected,
    })
}

#[cfg(test)]
mod tests {
    use super::super::legacy_check::{typecheck as table_check, ATTEMPT, FIX_ENTRY, KNOWN};
    use super::super::Patch;
    use super::*;
    use serde_json::json;

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    /// The battery's fields (`known_fields`) walk the records: every path the old tables
    /// named is there (task ids and list indices as `*`), and the records' own fields the
    /// check leaves alone (`halt.at`, `guard.*`, `usage.agents`) too, each once.
    #[test]
    fn known_fields_cover_the_tables_and_the_records() {
        let fields = super::super::known_fields();
        let tables = KNOWN.iter().map(|(k, _)| k.to_string());
        let attempt = ATTEMPT.iter().map(|(k, _)| format!("attempts.*.*.{k}"));
        let fix = FIX_ENTRY.iter().map(|(k, _)| format!("fixTaskMap.*.{k}"));
        let others = [
            "halt.at",
            "guard.clockStartedAt",
            "guard.stallStops",
            "usage.agents",
            "taskEvidence.*.exitCode",
            "taskEvidence.*.tests.digest",
            "verificationBlocks.*.treeAfter",
            "verificationBlocks.*.acceptedOther.reason",
        ];
        for path in tables
            .chain(attempt)
            .chain(fix)
            .chain(others.map(String::from))
        {
            assert!(fields.contains(&path), "{path} missing from {fields:?}");
        }
        let mut unique = fields.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), fields.len(), "{fields:?}");
    }

    fn full() -> Value {
        json!({
            "mine": 1, "version": 1, "name": "demo", "phase": "execution", "sessionId": null,
            "zeta": [1], "taskIndex": 2, "totalTasks": 3, "taskIteration": 1,
            "budget": {"x": 1, "maxMinutes": null, "maxUsd": 5, "a": 2, "maxStallStops": 4},
            "ledger": {"tasks": {}}, "usage": {"agents": {"a1": {}}, "outputTokens": 7,
                "transcriptOffset": null},
            "startedAt": "2026-01-01T00:00:00+01:00", "executionDriver": "stop-hook",
            "attempts": {"1.2": [{"b": 1, "n": 1, "status": "failed", "startedAt": null,
                "reason": "r", "a": 2}]},
            "fixTaskMap": {"1.2": {"z": 0, "attempts": 1, "fixTaskIds": ["1.2.1"], "y": 0}},
            "taskEvidence": {"1.2": {"exitCode": 0}}, "halt": {"why": "w", "kind": "stall",
                "at": "later", "raiseTo": 9},
            "guard": {"q": 1, "stallStops": "3", "clockStartedAt": 7, "lastFingerprint": "f"},
            "isolation": {"sequential": true, "group": {"g": 1}}, "checkedAtInit": ["1.1", 2],
            "completedAt": null, "alpha": {"b": 1, "a": 2}
        })
    }

    #[test]
    fn a_round_trip_keeps_every_field_and_the_order_of_unknown_ones() {
        let doc = full();
        let state = State::from_value(&doc).unwrap();
        let back = state.to_value();
        assert_eq!(back, doc);
        let unknown = |v: &Value, known: &[&str]| -> Vec<String> {
            keys(v)
                .into_iter()
                .filter(|k| !known.contains(k))
                .map(str::to_string)
                .collect()
        };
        let mut top: Vec<&str> = KNOWN.iter().map(|(k, _)| *k).collect();
        top.push("startedAt");
        assert_eq!(unknown(&back, &top), ["mine", "zeta", "alpha"]);
        assert_eq!(keys(&back["alpha"]), ["b", "a"]);
        assert_eq!(
            unknown(&back["budget"], &["maxMinutes", "maxUsd", "maxStallStops"]),
            ["x", "a"]
        );
        assert_eq!(back["budget"]["maxUsd"], json!(5), "an integer stays one");
        assert_eq!(
            unknown(
                &back["attempts"]["1.2"][0],
                &["n", "status", "startedAt", "reason"]
            ),
            ["b", "a"]
        );
        assert_eq!(
            unknown(&back["fixTaskMap"]["1.2"], &["attempts", "fixTaskIds"]),
            ["z", "y"]
        );
        assert_eq!(unknown(&back["halt"], &["kind", "at"]), ["why", "raiseTo"]);
        assert_eq!(keys(&back["guard"])[3], "q");
        // Every known field is written in the struct's order, then the unknown ones.
        assert_eq!(keys(&back)[..3], ["version", "name", "phase"]);
        let bytes = serde_json::to_vec(&doc).unwrap();
        let read = State::from_json(serde_json::from_slice(&bytes).unwrap(), "s.json").unwrap();
        assert_eq!(read, state);
    }

    #[test]
    fn accessors_give_the_documented_defaults() {
        for doc in [
            json!({}),
            json!({"budget": {"maxStallStops": null}, "halt": null,
            "usage": {}, "sessionId": null}),
        ] {
            let s = State::from_value(&doc).unwrap();
            assert_eq!((s.phase(), s.name(), s.session_id()), (None, None, None));
            let counters = (s.task_index(), s.total_tasks(), s.task_iteration());
            assert_eq!(counters, (0, 0, 0));
            assert_eq!(
                (s.max_task_iterations(), s.max_global_iterations()),
                (5, 30)
            );
            assert_eq!(
                (s.max_output_tokens(), s.max_minutes(), s.max_stall_stops()),
                (None, None, 5)
            );
            assert_eq!(
                (s.output_tokens(), s.input_tokens(), s.transcript_offset()),
                (0, 0, None)
            );
            assert_eq!(s.driver(), Driver::Manual);
            assert!(
                !(s.quick_mode() || s.recovery_mode() || s.awaiting_approval() || s.completed())
            );
            assert!(s.halt().is_none() && s.halt_kind().is_none());
        }
        let s = State::from_value(&full()).unwrap();
        assert_eq!(
            (s.phase(), s.name()),
            (Some(Phase::Execution), Some("demo"))
        );
        assert_eq!(
            (s.task_index(), s.total_tasks(), s.task_iteration()),
            (2, 3, 1)
        );
        assert_eq!((s.max_stall_stops(), s.output_tokens()), (4, 7));
        assert_eq!(
            s.started_at().and_then(Timestamp::text),
            Some("2026-01-01T00:00:00+01:00")
        );
        assert_eq!(
            (s.driver(), s.halt_kind()),
            (Driver::StopHook, Some("stall"))
        );
    }

    /// A value of the wrong kind for each known field, nested as its path says.
    fn mistyped(path: &str, bad: Value) -> Value {
        path.rsplit('.').fold(bad, |v, key| json!({ key: v }))
    }

    #[test]
    fn a_mistyped_known_field_is_named_as_typecheck_names_it() {
        let bad = [
            json!("x"),
            json!(-1),
            json!(1.5),
            json!(5),
            json!([1]),
            json!(null),
            json!({}),
        ];
        let mut refused = 0;
        for (path, _) in KNOWN {
            for value in &bad {
                let doc = mistyped(path, value.clone());
                let derived = typecheck(&doc, "s.json").map_err(|e| e.to_string());
                let table = table_check(&doc, "s.json").map_err(|e| e.to_string());
                assert_eq!(derived, table, "the records check {doc} as the table did");
                let Err(want) = table_check(&doc, "s.json") else {
                    // What typecheck passes, serde reads and writes back unchanged.
                    let read = State::parse(&doc, "s.json").unwrap();
                    assert_eq!(read.to_value(), doc, "{path}");
                    continue;
                };
                let got = State::parse(&doc, "s.json").unwrap_err();
                assert_eq!(got.to_string(), want.to_string());
                assert!(
                    want.to_string()
                        .starts_with(&format!("s.json: field `{path}`")),
                    "{want}"
                );
                refused += 1;
            }
        }
        assert!(
            refused > KNOWN.len(),
            "every known field refuses some value"
        );
        for (doc, field) in [
            (json!({"attempts": {"1": [{"n": "one"}]}}), "attempts.1.0.n"),
            (json!({"attempts": {"1": {}}}), "attempts.1"),
            (
                json!({"fixTaskMap": {"1": {"fixTaskIds": [1]}}}),
                "fixTaskMap.1.fixTaskIds",
            ),
            (json!({"taskEvidence": {"1": 2}}), "taskEvidence.1"),
            (json!({"ledger": {"tasks": 1}}), "a ledger"),
        ] {
            let got = State::parse(&doc, "s").unwrap_err().to_string();
            assert_eq!(got, table_check(&doc, "s").unwrap_err().to_string());
            assert!(got.contains(field), "{got}");
        }
        let err = State::from_value(&json!({"taskIndex": "3"}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "state: field `taskIndex` must be a non-negative integer"
        );
    }

    #[test]
    fn garbled_times_and_guard_fields_read_as_unknown_and_round_trip() {
        let doc = json!({"startedAt": "yesterday", "halt": {"at": 5}, "completedAt": "soon",
            "guard": {"clockStartedAt": "", "stallStops": -1, "blocks": 2},
            "attempts": {"1": [{"startedAt": "x", "endedAt": "2026-01-01T00:00:00Z"}]}});
        let s = State::from_value(&doc).unwrap();
        assert_eq!(s.to_value(), doc);
        // `usage.agents` is the hooks' own record: garbled, it reads as absent and is kept.
        for agents in [json!(5), json!({"a": {"offset": "x"}})] {
            let doc = json!({"usage": {"agents": agents}});
            let read = State::from_value(&doc).unwrap();
            assert_eq!(
                (
                    read.to_value(),
                    read.agent_usage("a").and_then(|a| a.offset.get())
                ),
                (doc, None)
            );
        }
        assert_eq!(s.started_at().map(Timestamp::at), Some(None));
        assert_eq!(s.started_at().and_then(Timestamp::text), Some("yesterday"));
        assert_eq!(s.halt().unwrap().at.get().unwrap().at(), None);
        assert_eq!(s.completed_at().unwrap().at(), None);
        let g = s.guard();
        assert_eq!(
            (g.clock_started_at.get().unwrap().at(), g.stall_stops.get()),
            (None, None)
        );
        assert_eq!(g.blocks.get(), Some(&2));
        let attempt = &s.attempts_of("1")[0];
        assert_eq!(attempt.started_at.get().unwrap().at(), None);
        let ended = attempt.ended_at.get().unwrap().at().unwrap();
        assert_eq!(
            Timestamp::from(ended).text(),
            Some("2026-01-01T00:00:00.000Z")
        );
    }

    #[test]
    fn a_patch_is_the_merge_patch_writers_wrote() {
        let halt = Halt {
            kind: Some("stall".into()),
            reason: Some("r".into()),
            ..Halt::default()
        };
        let attempt = Attempt {
            n: Some(1),
            status: Some("running".into()),
            ..Attempt::default()
        };
        let patch = Patch::new()
            .phase(Phase::Execution)
            .task_index(2)
            .max_minutes(None)
            .max_stall_stops(Some(3))
            .stall_stops(0)
            .halt(Some(&halt))
            .attempts("1.2", &[attempt])
            .field("mine", json!(true))
            .unset("guard.lastFingerprint");
        assert_eq!(
            patch.to_value(),
            json!({
                "phase": "execution", "taskIndex": 2,
                "budget": {"maxMinutes": null, "maxStallStops": 3},
                "guard": {"stallStops": 0}, "halt": {"kind": "stall", "reason": "r"},
                "attempts": {"1.2": [{"n": 1, "status": "running"}]}, "mine": true,
                "$unset": ["guard.lastFingerprint"]
            })
        );
        assert_eq!(
            Patch::from_value(patch.to_value()),
            patch,
            "JSON patches convert losslessly"
        );
        let base = json!({"guard": {"lastFingerprint": "f", "blocks": 1}, "halt": null});
        let doc = super::super::apply_patch(Some(base), &patch.to_value(), "s").unwrap();
        let s = State::from_value(&doc).unwrap();
        assert_eq!(
            (s.halt_kind(), s.task_index(), s.max_stall_stops()),
            (Some("stall"), 2, 3)
        );
        assert_eq!(doc["guard"], json!({"blocks": 1, "stallStops": 0}));
        let lifted = Patch::new().halt(None).merge(Patch::new().completed(true));
        assert_eq!(lifted.to_value(), json!({"halt": null, "completed": true}));
    }

    #[test]
    fn a_typed_merge_writes_what_the_json_merge_writes() {
        let patches = [
            json!({"usage": {"outputTokens": 9, "agents": {"a1": {"offset": 5}}}}),
            json!({"halt": {"kind": "stall", "reason": "r"}, "taskIndex": 1, "new": {"x": 1}}),
            json!({"halt": null, "ledger": {"run": {"attempt": 0}}, "mine": 2}),
            json!({"attempts": {"1.2": [{"n": 2, "status": "running"}]}, "guard": {"blocks": 1}}),
            json!({"sessionId": "s2", "budget": {"maxUsd": 7}, "$unset": ["zeta"]}),
        ];
        for patch in patches {
            let want = super::super::apply_patch(Some(full()), &patch, "s").unwrap();
            let mut typed = State::from_value(&full()).unwrap();
            typed.merge(&patch, "s").unwrap();
            assert_eq!(typed, State::from_value(&want).unwrap(), "{patch}");
            let mut applied = State::from_value(&full()).unwrap();
            if patch.get("$unset").is_none() {
                applied.apply(&patch).unwrap();
                assert_eq!(applied, typed, "{patch}");
            }
        }
        let mut s = State::from_value(&full()).unwrap();
        let err = s.merge(&json!({"taskIndex": "3"}), "s").unwrap_err();
        assert_eq!(
            err.to_string(),
            "patch: field `taskIndex` must be a non-negative integer"
        );
        assert_eq!(
            s,
            State::from_value(&full()).unwrap(),
            "a refused patch changes nothing"
        );
    }

    #[test]
    fn the_records_check_the_per_task_maps_as_the_table_did() {
        let bad = [
            json!("x"),
            json!(-1),
            json!(1.5),
            json!([1]),
            json!(null),
            json!({}),
        ];
        let attempt = json!({"n": 1, "status": "done", "startedAt": "2026-01-01T00:00:00Z",
            "endedAt": null, "startCommit": "a", "endCommit": null, "reason": null,
            "fixTaskId": null, "rollbackRef": null, "rolledBackAt": null});
        let fix = json!({"attempts": 1, "fixTaskIds": ["1.1"], "lastError": null});
        let mut docs = Vec::new();
        for key in keys(&attempt) {
            for v in &bad {
                let mut a = attempt.clone();
                a[key] = v.clone();
                docs.push(json!({"attempts": {"1.1": [attempt.clone(), a]}}));
            }
        }
        for key in keys(&fix) {
            for v in &bad {
                let mut f = fix.clone();
                f[key] = v.clone();
                docs.push(json!({"fixTaskMap": {"1": fix.clone(), "1.2": f}}));
            }
        }
        for v in &bad {
            docs.push(json!({"attempts": {"1": v}}));
            docs.push(json!({"attempts": {"1": [v]}}));
            docs.push(json!({"fixTaskMap": {"1": v}}));
            docs.push(json!({"taskEvidence": {"1": {}, "2": v}}));
            docs.push(json!({"verificationBlocks": {"p": v}}));
            docs.push(json!({"usage": {"agents": {"a": {}, "b": v}}}));
            docs.push(json!({"usage": {"agents": v}}));
            docs.push(json!({"ledger": {"tasks": {"1": {"byModel": {"m": {"input": v}}}}}}));
            docs.push(json!({"ledger": {"run": v}}));
            docs.push(json!({"guard": {"stallStops": v, "clockStartedAt": v}}));
            docs.push(json!({"halt": {"kind": "k", "at": v}, "startedAt": v}));
            // Two faults in the first pass, or one in each: the first pass's is named.
            docs.push(json!({"taskIndex": v, "budget": {"maxMinutes": v}, "halt": v}));
            docs.push(json!({"attempts": {"1": v}, "usage": {"outputTokens": v}}));
        }
        docs.push(full());
        docs.push(json!([]));
        let mut refused = 0;
        for doc in docs {
            let derived = typecheck(&doc, "s").map_err(|e| e.to_string());
            assert_eq!(
                derived,
                table_check(&doc, "s").map_err(|e| e.to_string()),
                "{doc}"
            );
            refused += usize::from(derived.is_err());
        }
        assert!(refused > 60, "{refused}");
    }
}
