//! The PreToolUse hook's decision: work denied after a halt or a cap, quick mode's question,
//! Claude Code's own isolation, and the guard on Bash, Write and Edit (`tool_guard`).

use chrono::{DateTime, Utc};

use super::stop::{hit_cap, minutes_used};
use crate::hooks::*;
use crate::io::events::Event;
use crate::model::state::{Phase, State};

/// The tools that start work beside the coordinator's own turn: `Agent` (and its old name
/// `Task`) delegates; `Workflow` starts subagents with no PreToolUse for `Agent`;
/// `SendMessage` resumes a finished agent; `ScheduleWakeup` and `CronCreate` queue future
/// turns. hooks/hooks.json's PreToolUse matcher names the same tools.
pub const WORK_TOOLS: [&str; 6] = [
    "Agent",
    "Task",
    "Workflow",
    "SendMessage",
    "ScheduleWakeup",
    "CronCreate",
];

/// PreToolUse on a work-starting tool (`WORK_TOOLS`): once the owned execution is halted,
/// cancelled or has spent a budget, new work is denied, so a coordinator that never ends
/// its turn still stops at the caps and a halted one starts nothing new.
/// `Some((rule, reason))` denies.
pub(crate) fn deny_delegation(
    name: &str,
    state: &State,
    tool_name: Option<&str>,
    session: Option<&str>,
    now: DateTime<Utc>,
) -> Option<(String, String)> {
    let tool = tool_name.filter(|t| WORK_TOOLS.contains(t))?;
    if !owned_by(state, session) {
        return None;
    }
    let v = state;
    if v.phase() == Some(Phase::Cancelled) {
        return Some((
            "cancelled".into(),
            format!(
                "specrun: do not start new work ({tool} starts work): spec '{name}' was cancelled. End your turn now; {}.",
                crate::claude::roles::PERSON_DECIDES
            ),
        ));
    }
    if !executing(state) {
        return None;
    }
    let (rule, why) = match v.halt() {
        Some(_) => (
            "halted".to_string(),
            format!(
                "the execution is halted ({})",
                v.halt_reason().unwrap_or("no reason recorded")
            ),
        ),
        None => {
            let minutes = minutes_used(v, now);
            let (kind, what) = hit_cap(
                v,
                v.global_iteration(),
                v.output_tokens(),
                0,
                minutes.as_ref(),
            )?;
            (format!("cap:{kind}"), what)
        }
    };
    Some((
        rule,
        format!(
            "specrun: do not delegate more work ({tool} starts work): {why}. End your turn now: the Stop hook halts the execution, and {}.",
            crate::claude::roles::PERSON_DECIDES
        ),
    ))
}

/// A PreToolUse decision past the fast path: `deny` is the reason when denied, `rule` the
/// rule that decided, `tool` the tool asked about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolDecision {
    pub deny: Option<String>,
    pub rule: String,
    pub tool: Option<String>,
}

impl ToolDecision {
    /// Its events.jsonl line, for spec `spec`.
    pub(crate) fn event<'a>(&'a self, spec: &'a str) -> Event<'a> {
        Event::PreToolUse {
            spec,
            tool: self.tool.as_deref(),
            decision: if self.deny.is_some() { "deny" } else { "allow" },
            rule: &self.rule,
            reason: self.deny.as_deref(),
        }
    }
}

/// The tool call a PreToolUse hook is asked about: its name and, for `Agent`/`Task`, the
/// `isolation` it asks for (`worktree`, `remote`; Claude Code 2.1.332).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolCall<'a> {
    pub name: Option<&'a str>,
    pub isolation: Option<&'a str>,
    /// For Bash, Write, Edit, MultiEdit, NotebookEdit: what the call does
    /// (`tool_guard::bash`, `tool_guard::file`).
    pub guarded: Option<&'a tool_guard::Call>,
}

/// PreToolUse: an executing spec's delegation that asks Claude Code for its own
/// `isolation`. specrun makes a member's worktree itself (DESIGN-NOTES,
/// "Isolation"): in Claude Code's worktree the executor's verbs find no spec, and a remote
/// agent's hooks never run here.
fn deny_native_isolation(
    name: &str,
    state: &State,
    tool: ToolCall,
    session: Option<&str>,
) -> Option<String> {
    let spec_flag = crate::support::shell::spec_flag(name);
    let isolation = tool.isolation.filter(|i| !i.is_empty())?;
    let applies =
        matches!(tool.name, Some("Agent" | "Task")) && executing(state) && owned_by(state, session);
    applies.then(|| format!(
        "specrun: delegate without `isolation` (\"{isolation}\" asked for): specrun makes the worktree itself. Run `specrun task start <id> --worktree {spec_flag}`, put the path it prints in the brief, and delegate again without `isolation` (references/isolated-groups.md)."
    ))
}

/// Decide a PreToolUse: quick mode's question denial, then the work denial, then a
/// delegation asking for Claude Code's own isolation. `None` when the guard has nothing to
/// do with this session's call (another session's or an unowned execution, and no
/// denial): nothing is answered or written.
pub(crate) fn decide_pre_tool_use(
    name: &str,
    state: &State,
    tool: ToolCall,
    session: Option<&str>,
    now: DateTime<Utc>,
) -> Option<ToolDecision> {
    let tool_name = tool.name;
    if let Some(call) = tool.guarded {
        return guard_tool(state, call, session).map(|(rule, reason)| ToolDecision {
            deny: Some(reason),
            rule,
            tool: tool_name.map(str::to_string),
        });
    }
    let (rule, deny) = match deny_question(state, tool_name, session) {
        Some(reason) => ("quick-mode-question".to_string(), Some(reason)),
        None => match deny_delegation(name, state, tool_name, session, now) {
            Some((rule, reason)) => (rule, Some(reason)),
            None => match deny_native_isolation(name, state, tool, session) {
                Some(reason) => ("native-isolation".to_string(), Some(reason)),
                None if owned_by(state, session) => ("allow".to_string(), None),
                None => return None,
            },
        },
    };
    Some(ToolDecision {
        deny,
        rule,
        tool: tool_name.map(str::to_string),
    })
}

/// The guard on Bash, Write, Edit, MultiEdit and NotebookEdit of the owning session: a
/// forbidden call while the execution runs, halted or cancelled; after a halt or a cancel
/// also any call that may change the code (read-only ones never reach here). `None`
/// allows, unrecorded (a line per Bash call would flood the events).
fn guard_tool(
    state: &State,
    call: &tool_guard::Call,
    session: Option<&str>,
) -> Option<(String, String)> {
    if !owned_by(state, session) {
        return None;
    }
    let stopped = state.halt().is_some() || state.phase() == Some(Phase::Cancelled);
    let steps = "What you may do: fail the task (`specrun task fail <id> --reason \"…\"`), record a follow-up (`specrun followup add …`), or end your turn";
    match call {
        tool_guard::Call::Forbidden(rule, why) => Some((
            (*rule).to_string(),
            format!(
                "specrun guard: denied during an execution: {why}. {steps}; {}.",
                crate::claude::roles::PERSON_DECIDES
            ),
        )),
        tool_guard::Call::Changes if stopped => Some((
            "stopped-no-changes".to_string(),
            format!(
                "specrun guard: the execution is {} ({}): tools that may change the code are denied until a person lifts it; read-only commands stay allowed. End your turn; {}.",
                if state.phase() == Some(Phase::Cancelled) { "cancelled" } else { "halted" },
                state.halt_reason().unwrap_or("no reason recorded"),
                crate::claude::roles::PERSON_DECIDES
            ),
        )),
        _ => None,
    }
}
/// PreToolUse: in quick mode, AskUserQuestion is denied with this reason.
pub(crate) fn deny_question(
    state: &State,
    tool_name: Option<&str>,
    session: Option<&str>,
) -> Option<String> {
    let applies = tool_name == Some("AskUserQuestion")
        && executing(state)
        && state.quick_mode()
        && (state.session_id().is_none() || owned_by(state, session));
    applies.then(|| {
        "specrun quick mode: do not ask the user. Decide yourself from the spec (requirements, design, tasks.md), pick the most reasonable option, note the assumption in .progress.md, and continue.".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::fixtures::*;

    #[test]
    fn delegation_is_denied_only_when_halted_cancelled_or_a_budget_is_spent() {
        let mut s = state();
        let deny = |s: &Value, tool: &str, session: &str| {
            deny_delegation("demo", &typed(s), Some(tool), Some(session), now()).map(|(_, r)| r)
        };
        assert_eq!(deny(&s, "Agent", "s1"), None);
        s["budget"]["maxOutputTokens"] = json!(1000);
        s["usage"] = json!({"outputTokens": 1000});
        let m = deny(&s, "Agent", "s1").expect("token budget spent");
        assert!(
            m.contains("output tokens 1000 >= budget.maxOutputTokens 1000"),
            "{m}"
        );
        for tool in WORK_TOOLS {
            let m = deny(&s, tool, "s1").unwrap_or_else(|| panic!("{tool} allowed"));
            assert!(m.contains(&format!("({tool} starts work)")), "{m}");
        }
        for tool in ["Bash", "TaskStop", "ListAgents", "Monitor"] {
            assert_eq!(deny(&s, tool, "s1"), None, "{tool}");
        }
        assert_eq!(deny(&s, "Agent", "other-session"), None);
        s["usage"] = json!({"outputTokens": 1});
        s["halt"] = json!({"kind": "stall", "reason": "5 stops without progress"});
        let m = deny(&s, "Agent", "s1").expect("halted");
        assert!(m.contains("halted (5 stops without progress)"), "{m}");
        // Cancelled: the phase is no longer execution, and new work is still denied.
        s["phase"] = json!("cancelled");
        s["halt"] = json!({"kind": "cancelled", "reason": "cancelled by `specrun cancel`"});
        let (rule, m) =
            deny_delegation("demo", &typed(&s), Some("Agent"), Some("s1"), now()).unwrap();
        assert_eq!(rule, "cancelled");
        assert!(
            m.contains("a person decides at a shell") && !m.contains("resume"),
            "{m}"
        );
        s["phase"] = json!("completed");
        assert_eq!(deny(&s, "Agent", "s1"), None);
    }

    #[test]
    fn every_pre_tool_use_decision_of_the_owner_is_an_event() {
        let s = state();
        let d = decide_pre_tool_use("demo", &typed(&s), agent(None), Some("s1"), now()).unwrap();
        assert_eq!(d.deny, None);
        assert_eq!(
            (d.rule.as_str(), d.tool.as_deref()),
            ("allow", Some("Agent"))
        );
        assert_eq!(
            decide_pre_tool_use("demo", &typed(&s), agent(None), Some("s2"), now()),
            None
        );
        let mut quick = state();
        quick["quickMode"] = json!(true);
        quick["sessionId"] = Value::Null;
        let d = decide_pre_tool_use(
            "demo",
            &typed(&quick),
            ToolCall {
                name: Some("AskUserQuestion"),
                isolation: None,
                guarded: None,
            },
            Some("s2"),
            now(),
        )
        .unwrap();
        assert!(d.deny.is_some());
        assert_eq!(d.rule, "quick-mode-question");
    }

    fn agent(isolation: Option<&str>) -> ToolCall<'_> {
        ToolCall {
            name: Some("Agent"),
            isolation,
            guarded: None,
        }
    }

    #[test]
    fn a_delegation_asking_for_claude_codes_own_isolation_is_denied_with_the_way() {
        let s = state();
        let d = decide_pre_tool_use(
            "demo",
            &typed(&s),
            agent(Some("worktree")),
            Some("s1"),
            now(),
        )
        .unwrap();
        assert_eq!(d.rule, "native-isolation");
        let reason = d.deny.expect("denied");
        assert!(
            reason.contains("`specrun task start <id> --worktree --spec demo`"),
            "{reason}"
        );
        assert!(
            decide_pre_tool_use("demo", &typed(&s), agent(Some("remote")), Some("s1"), now())
                .unwrap()
                .deny
                .is_some()
        );
        // Without isolation, from another session, or with nothing executing: allowed.
        assert_eq!(
            decide_pre_tool_use("demo", &typed(&s), agent(None), Some("s1"), now())
                .unwrap()
                .deny,
            None
        );
        assert_eq!(
            decide_pre_tool_use(
                "demo",
                &typed(&s),
                agent(Some("worktree")),
                Some("s2"),
                now()
            ),
            None
        );
        let mut done = state();
        done["phase"] = json!("completed");
        assert!(decide_pre_tool_use(
            "demo",
            &typed(&done),
            agent(Some("worktree")),
            Some("s1"),
            now()
        )
        .is_none_or(|d| d.deny.is_none()));
    }

    #[test]
    fn questions_denied_only_in_quick_mode() {
        let mut s = state();
        assert!(deny_question(&typed(&s), Some("AskUserQuestion"), Some("s1")).is_none());
        s["quickMode"] = json!(true);
        assert!(deny_question(&typed(&s), Some("AskUserQuestion"), Some("s1")).is_some());
        assert!(deny_question(&typed(&s), Some("Bash"), Some("s1")).is_none());
        assert!(deny_question(&typed(&s), Some("AskUserQuestion"), Some("s2")).is_none());
    }
}
