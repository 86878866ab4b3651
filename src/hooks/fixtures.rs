//! Fixtures the hooks' unit tests share: a state, a tasks.md, a Stop decided on them.

pub(super) use chrono::{DateTime, Utc};
pub(super) use serde_json::{json, Value};

pub(super) use super::*;
pub(super) use crate::evidence::verify::Freshness;
pub(super) use crate::hooks::decision::{Decision, Outcome};
pub(super) use crate::model::state::State;
pub(super) use crate::model::tasks;
pub(super) use crate::next::completion::{Blocker, Gates as CompletionGates};

/// The spec the decisions are about, where specrun keeps it.
pub(super) const DEMO: crate::io::project::SpecPlace<'static> = crate::io::project::SpecPlace {
    name: "demo",
    folder: "specs/demo",
};

pub(super) const TASKS: &str = "## Phase 1\n- [x] 1.1 First\n- [ ] 1.2 Second\n  - **Do**: write it\n  - **Files**: src/a.rs\n  - **Verify**: `cargo test a`\n";

pub(super) const DONE: &str = "## Phase 1\n- [x] 1.1 First\n- [x] 1.2 Second\n";

/// The typed state the decisions take, from a test's JSON document.
pub(super) fn typed(doc: &Value) -> State {
    State::from_value(doc).expect("a well-typed test state")
}

pub(super) fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

pub(super) fn state() -> Value {
    json!({
        "version": 1, "name": "demo", "phase": "execution", "sessionId": "s1",
        "taskIndex": 1, "totalTasks": 2, "taskIteration": 0, "maxTaskIterations": 5,
        "globalIteration": 0, "maxGlobalIterations": 30,
        "budget": {"maxOutputTokens": null, "maxMinutes": null, "maxStallStops": 5},
        "usage": {"outputTokens": 0, "inputTokens": 0},
        "startedAt": "2026-01-01T00:00:00Z", "executionDriver": "manual",
        "halt": null, "guard": {}, "checkedAtInit": ["1.1", "1.2"]
    })
}

pub(super) fn decide(
    state: &Value,
    tasks_md: &str,
    msg: Option<&str>,
    active: bool,
    gates: Option<CompletionGates>,
) -> Outcome {
    decide_with(state, tasks_md, msg, active, gates, &[])
}

pub(super) fn decide_with(
    state: &Value,
    tasks_md: &str,
    msg: Option<&str>,
    active: bool,
    gates: Option<CompletionGates>,
    running_agents: &[String],
) -> Outcome {
    let list = tasks::parse(tasks_md);
    let facts = StopFacts {
        spec: DEMO,
        tasks: &list,
        head: Some("abc"),
        usage: UsageRead::default(),
        completion: gates,
        now: now(),
        missed: Default::default(),
    };
    let input = StopInput {
        stop_hook_active: active,
        last_assistant_message: msg,
        running_agents,
    };
    decide_stop(&input, &typed(state), &facts)
}

pub(super) fn good_gates() -> Option<CompletionGates> {
    Some(CompletionGates {
        evidence: Freshness::Fresh,
        blockers: Ok(vec![]),
        criteria: vec![],
        proposed: vec![],
        baseline: vec![],
    })
}

pub(super) fn halt_of(o: &Outcome) -> &str {
    match &o.decision {
        Decision::Halt(s) => s,
        d => panic!("expected a halt, got {d:?}"),
    }
}

pub(super) fn block_text(o: &Outcome) -> &str {
    match &o.decision {
        Decision::Block(r) => r,
        d => panic!("expected a block, got {d:?}"),
    }
}
