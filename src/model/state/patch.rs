//! `Patch`: a typed JSON merge patch over the state. Each setter names one field and takes
//! its type; the result is the same patch document (`{…, "$unset": [..]}`) that
//! `apply_patch` and `state merge` take, so every writer keeps `merge_into` semantics:
//! objects merge, arrays and scalars (and `null`) replace.

use serde::Serialize;
use serde_json::{Map, Value};

use super::group::{Group, Member};
use super::time::Timestamp;
use super::typed::{Attempt, Driver, EvidenceRecord, FixEntry, Halt, Phase};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Patch {
    doc: Map<String, Value>,
    unset: Vec<String>,
}

/// `pub fn $name(self, value: $ty) -> Patch` setting the field at `$path`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => [$($seg:literal),+];)*) => {
        $(
            $(#[$doc])*
            pub fn $name(self, value: $ty) -> Patch {
                self.set(&[$($seg),+], value)
            }
        )*
    };
}

impl Patch {
    pub fn new() -> Patch {
        Patch::default()
    }

    setters! {
        name: &str => ["name"];
        phase: Phase => ["phase"];
        session_id: Option<&str> => ["sessionId"];
        task_index: u64 => ["taskIndex"];
        total_tasks: u64 => ["totalTasks"];
        task_iteration: u64 => ["taskIteration"];
        max_task_iterations: u64 => ["maxTaskIterations"];
        global_iteration: u64 => ["globalIteration"];
        max_global_iterations: u64 => ["maxGlobalIterations"];
        max_output_tokens: Option<u64> => ["budget", "maxOutputTokens"];
        max_minutes: Option<u64> => ["budget", "maxMinutes"];
        max_stall_stops: Option<u64> => ["budget", "maxStallStops"];
        max_task_tokens: Option<u64> => ["budget", "maxTaskTokens"];
        max_task_minutes: Option<u64> => ["budget", "maxTaskMinutes"];
        max_usd: Option<f64> => ["budget", "maxUsd"];
        forecast_warn: Option<u64> => ["budget", "forecastWarn"];
        forecast_halt: Option<u64> => ["budget", "forecastHalt"];
        output_tokens: u64 => ["usage", "outputTokens"];
        input_tokens: u64 => ["usage", "inputTokens"];
        transcript_offset: Option<u64> => ["usage", "transcriptOffset"];
        transcript_path: Option<&str> => ["usage", "transcriptPath"];
        started_at: Option<&Timestamp> => ["startedAt"];
        driver: Driver => ["executionDriver"];
        quick_mode: bool => ["quickMode"];
        recovery_mode: bool => ["recoveryMode"];
        awaiting_approval: bool => ["awaitingApproval"];
        /// `None` writes `null`: the halt is lifted.
        halt: Option<&Halt> => ["halt"];
        completed: bool => ["completed"];
        completed_at: Option<&Timestamp> => ["completedAt"];
        acceptance_gate: bool => ["acceptanceGate"];
        sequential: bool => ["isolation", "sequential"];
        unverified_claims: &[Value] => ["unverifiedClaims"];
        stall_stops: u64 => ["guard", "stallStops"];
        last_fingerprint: &str => ["guard", "lastFingerprint"];
        blocks: u64 => ["guard", "blocks"];
        last_block_fingerprint: &str => ["guard", "lastBlockFingerprint"];
        clock_started_at: &Timestamp => ["guard", "clockStartedAt"];
        uncounted_stops: u64 => ["guard", "uncountedStops"];
        uncounted_offset: u64 => ["guard", "uncountedOffset"];
        last_message_id: &str => ["guard", "lastMessageId"];
        /// The frozen plan as a whole (its tasks array replaces the stored one).
        plan: &crate::model::plan::Plan => ["plan"];
        /// The baseline's digest and summary (`evidence::baseline_store`).
        test_baseline: &Value => ["testBaseline"];
    }

    /// A merge patch built as JSON (`{…, "$unset": [..]}`) by a writer not yet typed.
    pub fn from_value(patch: Value) -> Patch {
        let Value::Object(mut doc) = patch else {
            return Patch::default();
        };
        let unset = doc.shift_remove("$unset");
        let unset = unset
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let unset = unset
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        Patch { doc, unset }
    }

    /// Task `id`'s whole attempt list (arrays replace).
    pub fn attempts(self, id: &str, list: &[Attempt]) -> Patch {
        self.set(&["attempts", id], list)
    }
    /// Fields of task `id`'s `fixTaskMap` entry (merged into what is there).
    pub fn fix_entry(self, id: &str, entry: &FixEntry) -> Patch {
        self.set(&["fixTaskMap", id], entry)
    }
    /// Task `id`'s evidence record (merged into what is there).
    pub fn task_evidence(self, id: &str, record: &EvidenceRecord) -> Patch {
        self.set(&["taskEvidence", id], record)
    }
    /// Task `id`'s cost account (`ledger.tasks.<id>`; `ledger.rs` owns its shape).
    pub fn ledger_task(self, id: &str, account: &Value) -> Patch {
        self.set(&["ledger", "tasks", id], account)
    }
    /// Task `id`'s verification block record (merged into what is there).
    pub fn verification_block(self, id: &str, record: &EvidenceRecord) -> Patch {
        self.set(&["verificationBlocks", id], record)
    }
    /// One isolated member's record (`isolation.members.<id>`; worktree.rs owns its shape).
    pub fn isolation_member(self, id: &str, member: &Member) -> Patch {
        self.set(&["isolation", "members", id], member)
    }
    /// The isolated group's record (`isolation.group`).
    pub fn isolation_group(self, group: &Group) -> Patch {
        self.set(&["isolation", "group"], group)
    }
    /// A field this type does not name (a user's field, an open map such as `ledger`).
    pub fn field(self, key: &str, value: Value) -> Patch {
        self.set(&[key], value)
    }
    /// Delete a dot path after the merge (`$unset`).
    pub fn unset(mut self, path: &str) -> Patch {
        self.unset.push(path.to_string());
        self
    }
    /// Merge another patch into this one (later setters win, as in `merge_into`).
    pub fn merge(mut self, other: Patch) -> Patch {
        let mut doc = Value::Object(std::mem::take(&mut self.doc));
        super::merge_into(&mut doc, &Value::Object(other.doc));
        if let Value::Object(map) = doc {
            self.doc = map;
        }
        self.unset.extend(other.unset);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.doc.is_empty() && self.unset.is_empty()
    }

    /// The merge patch document `apply_patch` takes.
    pub fn to_value(&self) -> Value {
        let mut doc = self.doc.clone();
        if !self.unset.is_empty() {
            doc.insert("$unset".into(), self.unset.clone().into());
        }
        Value::Object(doc)
    }

    /// Set `path` (keys, which may hold dots) to `value`, creating the objects on the way.
    fn set(mut self, path: &[&str], value: impl Serialize) -> Patch {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        let Some((last, parents)) = path.split_last() else {
            return self;
        };
        let mut map = &mut self.doc;
        for key in parents {
            let slot = map
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            map = slot.as_object_mut().expect("an object was just put here");
        }
        map.insert(last.to_string(), value);
        self
    }
}
