//! The guard's record (issue 23): what the hooks keep about an execution outside the spec,
//! where the ordinary tools do not reach by accident (`io::record` puts it under the user's
//! state directory). A session's binding says which transcript and start commit Claude
//! Code gave it; an execution's record says what the guard last saw (counters, caps, halt,
//! earned boxes). The hooks compare the files the model can touch against it: `mismatch`
//! names the first way they no longer agree, which halts the execution.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::io::record;

use crate::model::state::{Phase, State};

/// The record's format version.
pub(crate) const VERSION: u64 = 1;

/// One Claude Code session as the hooks first saw it (SessionStart, else its first Stop):
/// the transcript path Claude Code gave and the commit HEAD named then. Never rewritten
/// by a later hook call; `state init` only adds the spec it bound.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Binding {
    pub session_id: String,
    pub transcript_path: Option<String>,
    pub start_commit: Option<String>,
    pub bound_at: String,
    /// Which hook bound it: `session-start` or `stop`.
    pub bound_by: String,
    /// The spec whose execution this session owns (set by `state init --session-id`).
    pub spec: Option<String>,
}

/// Caps as the record keeps them (a raise goes through `resume`, which rewrites them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Caps {
    pub max_global_iterations: u64,
    pub max_task_iterations: u64,
    pub max_output_tokens: Option<u64>,
    pub max_minutes: Option<u64>,
    pub max_usd: Option<f64>,
}

/// A halt the record holds: a cap's (mirrored from the state) or the record's own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Halt {
    pub kind: String,
    pub reason: String,
    pub at: String,
}

/// The kind of a halt the record itself decided (the files no longer match it).
pub(crate) const RECORD_HALT: &str = "record";

/// One execution of one spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Record {
    pub version: u64,
    pub spec: String,
    /// The spec directory (absolute) at `state init`.
    pub spec_dir: String,
    pub session_id: Option<String>,
    /// The transcript as Claude Code gave it to the session's first hook.
    pub transcript_path: Option<String>,
    /// The commit the owning session started from (HEAD at `state init` when no hook saw
    /// the session start).
    pub start_commit: Option<String>,
    pub started_at: String,
    /// `execution`, `cancelled`, `completed` (mirrored from the state).
    pub phase: String,
    pub stops: u64,
    pub output_tokens: u64,
    /// Output tokens estimated (bytes / 4) for transcript spans past the read bound.
    pub estimated_output_tokens: u64,
    /// Priced spend; not mirrored yet (the cost ledger in the state holds it).
    pub usd: Option<f64>,
    pub caps: Caps,
    pub halt: Option<Halt>,
    /// Tasks ticked through `task complete` during this execution.
    pub earned: Vec<String>,
    /// The plan's digest at `state init` (`plan_digest`).
    pub plan_digest: Option<String>,
    /// The state's `ignoredFiles` as `state init` took them: the integrity findings read
    /// the state's copy, so one edited there no longer matches this.
    pub ignored_files: Option<indexmap::IndexMap<String, String>>,
    /// Every `testBaseline.digest` specrun wrote in this execution (`state init`, a final
    /// check's run that joined tests, a person's `plan accept-missing`); the state's must
    /// be one of them. Empty: not tracked (an execution from before it, or no final check).
    pub baseline_digests: Vec<String>,
}

impl Record {
    /// Whether the execution is still the guard's to watch (not completed).
    pub(crate) fn open(&self) -> bool {
        self.phase == "execution" || self.phase == "cancelled"
    }

    /// Copy what the guard last saw from the state: counters, caps, halt, phase.
    pub(crate) fn mirror(&mut self, state: &State) {
        self.stops = self.stops.max(state.global_iteration());
        self.output_tokens = self.output_tokens.max(state.output_tokens());
        self.caps = caps_of(state);
        self.phase = phase_name(state).to_string();
        // The record's own halt stays until a person clears it; a cap halt follows the state.
        if self.halt.as_ref().is_none_or(|h| h.kind != RECORD_HALT) {
            self.halt = state.halt().map(|h| Halt {
                kind: h.kind.clone().unwrap_or_default(),
                reason: h.reason.clone().unwrap_or_default(),
                at: String::new(),
            });
        }
    }

    /// Halt the record for `reason` (kept if it is already halted by the record).
    pub(crate) fn halt_for(&mut self, reason: &str, at: &str) {
        if self.record_halt().is_none() {
            self.halt = Some(Halt {
                kind: RECORD_HALT.into(),
                reason: reason.into(),
                at: at.into(),
            });
        }
    }

    /// The record's own halt reason, when it halted the execution.
    pub(crate) fn record_halt(&self) -> Option<&str> {
        self.halt
            .as_ref()
            .filter(|h| h.kind == RECORD_HALT)
            .map(|h| h.reason.as_str())
    }
}

fn phase_name(state: &State) -> &'static str {
    match state.phase() {
        _ if state.completed() => "completed",
        Some(Phase::Execution) => "execution",
        Some(Phase::Cancelled) => "cancelled",
        _ => "other",
    }
}

pub(crate) fn caps_of(state: &State) -> Caps {
    Caps {
        max_global_iterations: state.max_global_iterations(),
        max_task_iterations: state.max_task_iterations(),
        max_output_tokens: state.max_output_tokens(),
        max_minutes: state.max_minutes(),
        max_usd: state.max_usd(),
    }
}

/// What the hooks found where the record says the execution is.
pub(crate) enum Found<'a> {
    /// `.current-spec` names no spec, or another one.
    CurrentSpec(Option<&'a str>),
    /// The spec directory the record names is gone.
    SpecDirGone,
    /// The state file is gone.
    StateGone,
    /// The state file cannot be read.
    StateGarbled(&'a str),
    /// The state as read.
    State(&'a State),
}

/// The first way the files no longer match the record, as the halt's reason; `None` when
/// they match.
pub(crate) fn mismatch(record: &Record, found: Found<'_>) -> Option<String> {
    let name = &record.spec;
    let state = match found {
        Found::CurrentSpec(None) => {
            return Some(format!(
                "specs/.current-spec no longer names spec '{name}' (removed or emptied)"
            ))
        }
        Found::CurrentSpec(Some(other)) => {
            return Some(format!(
                "specs/.current-spec names '{other}', not the executing spec '{name}'"
            ))
        }
        Found::SpecDirGone => {
            return Some(format!(
                "the spec directory {} is gone (moved or deleted)",
                record.spec_dir
            ))
        }
        Found::StateGone => return Some(format!("spec '{name}''s state file was deleted")),
        Found::StateGarbled(e) => {
            return Some(format!("spec '{name}''s state file cannot be read ({e})"))
        }
        Found::State(s) => s,
    };
    if state.session_id() != record.session_id.as_deref() {
        return Some(format!(
            "the state names session {:?}, the record {:?}",
            state.session_id().unwrap_or("none"),
            record.session_id.as_deref().unwrap_or("none")
        ));
    }
    if state.global_iteration() < record.stops {
        return Some(format!(
            "the state's stop count went backwards ({} < {} recorded)",
            state.global_iteration(),
            record.stops
        ));
    }
    if state.output_tokens() < record.output_tokens {
        return Some(format!(
            "the state's output tokens went backwards ({} < {} recorded)",
            state.output_tokens(),
            record.output_tokens
        ));
    }
    let caps = caps_of(state);
    if caps != record.caps {
        return Some(format!(
            "the state's caps differ from the record's ({} stops max, record {})",
            caps.max_global_iterations, record.caps.max_global_iterations
        ));
    }
    let frozen = matches!(state.frozen_plan(), crate::model::plan::Frozen::Plan(_));
    if record.plan_digest.is_some() && !frozen {
        return Some("the state's frozen plan was removed or broken".to_string());
    }
    let baseline = baseline_digest(state);
    let known = |d: &str| record.baseline_digests.iter().any(|k| k == d);
    if !record.baseline_digests.is_empty() && !baseline.is_some_and(known) {
        return Some(
            "the state's baseline of tests that must still run (`testBaseline`) is not one specrun wrote (removed or edited)"
                .to_string(),
        );
    }
    if record.ignored_files.is_some() && state.ignored_files != record.ignored_files {
        return Some(
            "the state's snapshot of ignored files (`ignoredFiles`) is not the one `state init` took"
                .to_string(),
        );
    }
    let cap_halt = record.halt.as_ref().filter(|h| h.kind != RECORD_HALT);
    if let (Some(h), None) = (cap_halt, state.halt()) {
        return Some(format!(
            "the halt ({}) was cleared without a person's decision",
            h.reason
        ));
    }
    None
}

/// The halt text the model sees for a record halt. It names no person's verb: a person
/// decides at a shell (`specrun status` shows them what happened and what to run).
pub(crate) fn halt_message(name: &str, reason: &str) -> String {
    format!(
        "specrun halted spec '{name}': {reason}. The guard's record no longer matches the spec's files, so nothing more runs. End your turn; a person decides at a shell (`specrun status --spec {name}` shows what happened)."
    )
}

/// The session's binding, when a hook bound it.
pub(crate) fn binding(root: &Path, session: &str) -> Option<Binding> {
    record::load(record::session_path(root, session).as_deref())
}

/// Bind `session` as a hook first saw it; an existing binding is kept as it is (the
/// transcript and start commit are the first ones Claude Code gave), except that a binding
/// `state init` made before any hook ran takes the first transcript a hook gives.
pub(crate) fn bind(root: &Path, binding: &Binding) -> Result<()> {
    let Some(path) = record::session_path(root, &binding.session_id) else {
        return Ok(());
    };
    match record::read::<Binding>(Some(&path)) {
        record::Read::Valid(b) if b.transcript_path.is_some() => Ok(()),
        record::Read::Valid(mut b) if binding.transcript_path.is_some() => {
            b.transcript_path = binding.transcript_path.clone();
            record::save(&path, &b)
        }
        record::Read::Valid(_) => Ok(()),
        _ => record::save(&path, binding),
    }
}

/// Rewrite a binding (the first Stop adds the transcript no SessionStart gave).
pub(crate) fn rebind(root: &Path, binding: &Binding) -> Result<()> {
    match record::session_path(root, &binding.session_id) {
        Some(path) => record::save(&path, binding),
        None => Ok(()),
    }
}

/// Set the spec a session's execution is of (`state init`, `resume --session-id`),
/// binding the session first when no hook did.
pub(crate) fn bind_spec(root: &Path, session: &str, spec: &str, now: &str) -> Result<Binding> {
    let Some(path) = record::session_path(root, session) else {
        return Ok(Binding::default());
    };
    let mut b = match record::read::<Binding>(Some(&path)) {
        record::Read::Valid(b) => b,
        _ => Binding {
            session_id: session.to_string(),
            bound_at: now.to_string(),
            bound_by: "state-init".into(),
            start_commit: crate::io::git::head_fast(root),
            ..Binding::default()
        },
    };
    b.spec = Some(spec.to_string());
    record::save(&path, &b)?;
    Ok(b)
}

/// The execution record of spec `name`.
pub(crate) fn execution(root: &Path, name: &str) -> record::Read<Record> {
    record::read(record::execution_path(root, name).as_deref())
}

pub(crate) fn save(root: &Path, rec: &Record) -> Result<()> {
    match record::execution_path(root, &rec.spec) {
        Some(path) => record::save(&path, rec),
        None => Ok(()),
    }
}

/// Note that task `id` was ticked through `task complete` (an execution with no record,
/// from before the record existed, has nothing to note).
pub(crate) fn earn(root: &Path, name: &str, id: &str) -> Result<()> {
    let record::Read::Valid(mut rec) = execution(root, name) else {
        return Ok(());
    };
    if rec.earned.iter().any(|e| e == id) {
        return Ok(());
    }
    rec.earned.push(id.to_string());
    save(root, &rec)
}

/// The digest of the baseline file the state vouches for (`testBaseline.digest`).
pub(crate) fn baseline_digest(state: &State) -> Option<&str> {
    state.test_baseline.as_ref()?.get("digest")?.as_str()
}

/// Note a baseline digest specrun is about to write into spec `name`'s state, before the
/// state is written: at every moment the state's digest is one the record knows.
pub(crate) fn allow_baseline(root: &Path, name: &str, digest: &str) -> Result<()> {
    let record::Read::Valid(mut rec) = execution(root, name) else {
        return Ok(());
    };
    if rec.baseline_digests.is_empty() || rec.baseline_digests.iter().any(|d| d == digest) {
        return Ok(());
    }
    rec.baseline_digests.push(digest.to_string());
    save(root, &rec)
}

/// Bring spec `name`'s record up to `state` after a person's verb changed it (resume's
/// raises, a new session): counters, caps, halt and session follow.
pub(crate) fn follow(root: &Path, name: &str, state: &State) -> Result<()> {
    let record::Read::Valid(mut rec) = execution(root, name) else {
        return Ok(());
    };
    rec.mirror(state);
    rec.session_id = state.session_id().map(str::to_string);
    if let Some(sid) = state.session_id() {
        bind_spec(root, sid, name, &rec.started_at.clone())?;
    }
    save(root, &rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(patch: serde_json::Value) -> State {
        let mut doc = json!({"version": 1, "name": "demo", "phase": "execution",
            "sessionId": "s1", "globalIteration": 3, "maxGlobalIterations": 30,
            "maxTaskIterations": 5, "usage": {"outputTokens": 100}, "halt": null});
        crate::model::state::merge_into(&mut doc, &patch);
        State::from_json(doc, "state").unwrap()
    }

    fn record() -> Record {
        let mut rec = Record {
            spec: "demo".into(),
            spec_dir: "/p/specs/demo".into(),
            session_id: Some("s1".into()),
            ..Record::default()
        };
        rec.mirror(&state(json!({})));
        rec
    }

    #[test]
    fn the_state_the_record_mirrored_matches_it() {
        assert_eq!(mismatch(&record(), Found::State(&state(json!({})))), None);
        // Counters that went on are the hooks' own progress.
        let later = state(json!({"globalIteration": 9, "usage": {"outputTokens": 900}}));
        assert_eq!(mismatch(&record(), Found::State(&later)), None);
    }

    #[test]
    fn each_way_the_files_stop_matching_is_named() {
        let rec = record();
        let why = |found| mismatch(&rec, found).unwrap();
        assert!(why(Found::CurrentSpec(None)).contains(".current-spec"));
        assert!(why(Found::CurrentSpec(Some("x"))).contains("'x'"));
        assert!(why(Found::SpecDirGone).contains("/p/specs/demo"));
        assert!(why(Found::StateGone).contains("deleted"));
        assert!(why(Found::StateGarbled("bad")).contains("bad"));
        let rewound = state(json!({"globalIteration": 1}));
        assert!(why(Found::State(&rewound)).contains("stop count went backwards"));
        let fewer = state(json!({"usage": {"outputTokens": 5}}));
        assert!(why(Found::State(&fewer)).contains("output tokens went backwards"));
        let other = state(json!({"sessionId": "s2"}));
        assert!(why(Found::State(&other)).contains("\"s2\""));
        let raised = state(json!({"maxGlobalIterations": 1000}));
        assert!(why(Found::State(&raised)).contains("caps"));
    }

    #[test]
    fn a_cap_halt_cleared_outside_resume_and_a_record_halt_are_kept() {
        let mut rec = record();
        rec.mirror(&state(
            json!({"halt": {"kind": "stall", "reason": "5 stops"}}),
        ));
        let cleared = state(json!({}));
        assert!(mismatch(&rec, Found::State(&cleared))
            .unwrap()
            .contains("5 stops"));
        rec.halt_for("gone", "t");
        rec.halt_for("later", "t");
        assert_eq!(rec.record_halt(), Some("gone"));
        // Mirroring a state without a halt keeps the record's own.
        rec.mirror(&cleared);
        assert_eq!(rec.record_halt(), Some("gone"));
    }

    /// The baseline of tests that must still run: a digest specrun wrote (the first, or one
    /// a later join or accept added) matches; one removed or put there by hand does not.
    #[test]
    fn a_baseline_the_record_does_not_know_is_a_mismatch() {
        let mut rec = record();
        let with = |d: &str| state(json!({"testBaseline": {"digest": d, "tests": 3}}));
        // Not tracked: any baseline, or none, matches.
        assert_eq!(mismatch(&rec, Found::State(&with("x"))), None);
        rec.baseline_digests = vec!["a".into(), "b".into()];
        assert_eq!(mismatch(&rec, Found::State(&with("a"))), None);
        assert_eq!(mismatch(&rec, Found::State(&with("b"))), None);
        for forged in [
            with("c"),
            state(json!({})),
            state(json!({"testBaseline": {}})),
        ] {
            let why = mismatch(&rec, Found::State(&forged)).unwrap();
            assert!(why.contains("`testBaseline`"), "{why}");
        }
    }

    #[test]
    fn the_halt_text_names_no_persons_verb() {
        let m = halt_message("demo", "why");
        assert!(!m.contains("resume") && !m.contains("state init"), "{m}");
    }
}
