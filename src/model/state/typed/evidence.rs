//! An evidence record (`taskEvidence.<id>`, `verificationBlocks.<phase>`): the one type
//! the verify verb writes and every reader reads (docs/design.md#evidence).
//!
//! Every field is `Loose`: the check asks only that a record is an object (as it always
//! has), so a hand-garbled field must read as absent and be written back as it was, never
//! make the state unreadable. Unknown fields are kept in `other`, in their order.

use super::*;

record! {
/// The record, fields in the order `verify run` stores them (`RecordFields`, then the
/// task slot's and the merge's).
pub struct EvidenceRecord {
    command: Loose<String> = "command",
    exit_code: Loose<i64> = "exitCode",
    started_at: Loose<String> = "startedAt",
    duration_ms: Loose<u64> = "durationMs",
    /// The fingerprint the command started from.
    tree: Loose<String> = "tree",
    tree_method: Loose<String> = "treeMethod",
    output_tail: Loose<String> = "outputTail",
    timed_out: Loose<bool> = "timedOut",
    task_id: Loose<String> = "taskId",
    /// Paths the fingerprint left out (any JSON: only plain relative strings count).
    excluded_paths: Loose<Vec<Value>> = "excludedPaths",
    tree_changed: Loose<bool> = "treeChanged",
    tree_after: Loose<String> = "treeAfter",
    /// Files changed while the command ran (any JSON: a non-empty list stales the record).
    touched_during_run: Loose<Vec<Value>> = "touchedDuringRun",
    /// What the run's output told about tests (`criteria::write_results`).
    tests: Loose<TestsSummary> = "tests" => LooseRecord<TestsSummary>,
    verify_command: Loose<String> = "verifyCommand",
    own_verify: Loose<bool> = "ownVerify",
    accepted_other: Loose<AcceptedOther> = "acceptedOther" => LooseRecord<AcceptedOther>,
    /// The member worktree it was made in (null once taken to the main checkout).
    worktree: Loose<String> = "worktree",
    /// Where a record taken to the merged tree was made (`verify::merged_record`).
    merged_from: Loose<MergedFrom> = "mergedFrom" => LooseRecord<MergedFrom>,
}
}

record! {
/// `tests`: the digest of the results file beside the state, and the counts.
pub struct TestsSummary {
    digest: Loose<String> = "digest",
    runners: Loose<Vec<Value>> = "runners",
    passed: Loose<u64> = "passed",
    failed: Loose<u64> = "failed",
    skipped: Loose<u64> = "skipped",
    truncated: Loose<bool> = "truncated",
}
}

record! {
/// `acceptedOther`: a person's reason for counting another command than the task's Verify.
pub struct AcceptedOther {
    reason: Loose<String> = "reason",
    at: Loose<String> = "at",
}
}

record! {
/// `mergedFrom`: the worktree (or, for a CI member, the commit) and tree the record was
/// made on, and the merge commit that took it over.
pub struct MergedFrom {
    worktree: Loose<String> = "worktree",
    commit: Loose<String> = "commit",
    tree: Loose<String> = "tree",
    merge_commit: Loose<String> = "mergeCommit",
}
}

impl EvidenceRecord {
    /// A record from its JSON: `None` unless it is an object (what the check demands).
    pub fn from_value(v: Value) -> Option<EvidenceRecord> {
        v.is_object().then(|| EvidenceRecord::from_owned(v).ok())?
    }

    /// The record as stored.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    pub fn command(&self) -> Option<&str> {
        self.command.get().map(String::as_str)
    }
    pub fn exit_code(&self) -> Option<i64> {
        self.exit_code.get().copied()
    }
    /// `exitCode` as recorded, whatever its type (`?` when absent).
    pub fn exit_code_text(&self) -> String {
        let code = self.exit_code.to_json();
        code.map_or_else(|| "?".into(), |c| c.to_string())
    }
    pub fn started_at(&self) -> Option<&str> {
        self.started_at.get().map(String::as_str)
    }
    pub fn duration_ms(&self) -> Option<u64> {
        self.duration_ms.get().copied()
    }
    pub fn tree(&self) -> Option<&str> {
        self.tree.get().map(String::as_str)
    }
    pub fn timed_out(&self) -> bool {
        self.timed_out.get().copied().unwrap_or(false)
    }
    pub fn worktree(&self) -> Option<&str> {
        self.worktree.get().map(String::as_str)
    }
    /// `tests.digest`: the results file's SHA-256 as the run wrote it.
    pub fn tests_digest(&self) -> Option<&str> {
        self.tests.get()?.digest.get().map(String::as_str)
    }
    /// Whether the record names a results digest at all (of whatever type).
    pub fn has_tests_digest(&self) -> bool {
        self.tests.get().is_some_and(|t| !t.digest.is_absent())
    }
    /// `acceptedOther.reason`, when it is text.
    pub fn accepted_reason(&self) -> Option<&str> {
        self.accepted_other.get()?.reason.get().map(String::as_str)
    }
    /// The string items of `excludedPaths` (empty without it).
    pub fn excluded_strings(&self) -> impl Iterator<Item = &str> {
        let items = self.excluded_paths.get().into_iter().flatten();
        items.filter_map(Value::as_str)
    }
    /// Whether `touchedDuringRun` names any change.
    pub fn touched(&self) -> bool {
        self.touched_during_run.get().is_some_and(|t| !t.is_empty())
    }
}

/// A record from a test's JSON object.
#[cfg(test)]
pub(crate) fn record_for_test(v: Value) -> EvidenceRecord {
    EvidenceRecord::from_value(v).expect("a record is an object")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A state file written before (or by hand) reads and writes back as it was: unknown
    /// fields kept in their order, garbled known ones kept as written and read as absent.
    #[test]
    fn a_record_with_unknown_and_garbled_fields_round_trips() {
        let doc = json!({"taskEvidence": {"1.2": {
            "mine": {"x": [1]}, "command": "make", "exitCode": "0", "startedAt": 5,
            "tests": {"digest": "d", "extra": true}, "acceptedOther": {"reason": 7, "by": "p"},
            "excludedPaths": ["a.rs", 3], "worktree": null, "zeta": 1,
            "mergedFrom": {"commit": "c", "note": "n"}, "durationMs": -1}},
            "verificationBlocks": {"execution": {"exitCode": 0, "guardNote": "g"}}});
        let state = State::from_value(&doc).unwrap();
        let back = state.to_value();
        assert_eq!(back, doc);
        let text = serde_json::to_string(&state).unwrap();
        let again: State = State::from_json(serde_json::from_str(&text).unwrap(), "s").unwrap();
        assert_eq!(again, state);
        let r = state.task_evidence("1.2").unwrap();
        let unknown: Vec<&str> = r.other.keys().map(String::as_str).collect();
        assert_eq!(unknown, ["mine", "zeta"]);
        assert_eq!(
            (r.command(), r.exit_code(), r.started_at()),
            (Some("make"), None, None)
        );
        assert_eq!(
            (r.exit_code_text(), r.duration_ms()),
            ("\"0\"".to_string(), None)
        );
        assert_eq!((r.tests_digest(), r.accepted_reason()), (Some("d"), None));
        assert_eq!(r.excluded_strings().collect::<Vec<_>>(), ["a.rs"]);
        assert_eq!(r.worktree(), None);
        let from = r.merged_from.get().unwrap();
        assert_eq!(from.commit.get().map(String::as_str), Some("c"));
        let block = state.verification_block("execution").unwrap();
        assert_eq!(
            (block.exit_code(), block.exit_code_text()),
            (Some(0), "0".into())
        );
        // Not an object: no record (the check refuses it in a checked read).
        assert!(EvidenceRecord::from_value(json!([1])).is_none());
    }
}
