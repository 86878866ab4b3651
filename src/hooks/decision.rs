//! What a hook answers (`Decision`, with what to write down: `Outcome`), and the pieces
//! the hooks' decisions share: the re-prompt that lists what is missing, the SubagentStop
//! input.

use serde_json::{json, Value};

/// What a hook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let Claude Code go on; an optional message for the user (never sent to the model).
    Allow(Option<String>),
    /// Re-prompt the model (Stop) or the subagent (SubagentStop) with this reason.
    Block(String),
    /// End the session: a cap was hit or the execution is halted.
    Halt(String),
}

impl Decision {
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Allow(_) => "allow",
            Decision::Block(_) => "block",
            Decision::Halt(_) => "halt",
        }
    }

    /// The hook's stdout for a Stop or SubagentStop; `None` prints nothing.
    pub fn to_hook_json(&self) -> Option<Value> {
        match self {
            Decision::Allow(None) => None,
            Decision::Allow(Some(m)) => Some(json!({"systemMessage": m})),
            Decision::Block(r) => Some(json!({"decision": "block", "reason": r})),
            Decision::Halt(s) => {
                Some(json!({"continue": false, "stopReason": s, "systemMessage": s}))
            }
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Decision::Allow(m) => m.as_deref(),
            Decision::Block(s) | Decision::Halt(s) => Some(s),
        }
    }
}

/// A decision with what to write down.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub decision: Decision,
    /// Which row of the decision order produced it (`cap:stall`, `completion-accepted`, …).
    pub rule: String,
    /// A `state merge` patch; an empty object changes nothing.
    pub patch: Value,
    /// The events.jsonl record (without `at`, which the writer adds).
    pub event: Value,
    /// Something the user must hear whatever the decision (a broken time cap): shown as
    /// the hook's systemMessage, after the decision's own message.
    pub notice: Option<String>,
}

impl Outcome {
    /// A decision with nothing extra to tell the user.
    pub fn new(decision: Decision, rule: &str, patch: Value, event: Value) -> Outcome {
        Outcome {
            decision,
            rule: rule.into(),
            patch,
            event,
            notice: None,
        }
    }

    /// The hook's stdout: the decision's JSON with the notice added to its systemMessage.
    pub fn to_hook_json(&self) -> Option<Value> {
        match &self.notice {
            None => self.decision.to_hook_json(),
            Some(notice) => Some(with_message(self.decision.to_hook_json(), notice)),
        }
    }
}

/// A hook's `answer` (or an empty one) with `message` added to its systemMessage.
pub fn with_message(answer: Option<Value>, message: &str) -> Value {
    let mut answer = answer.unwrap_or_else(|| json!({}));
    let text = match answer.get("systemMessage").and_then(Value::as_str) {
        Some(before) => format!("{before}\n{message}"),
        None => message.to_string(),
    };
    answer["systemMessage"] = json!(text);
    answer
}

/// A re-prompt that lists what is missing: `head`, a `- item` line each, then `tail`.
pub fn refusal<'a>(head: String, items: impl IntoIterator<Item = &'a str>, tail: &str) -> String {
    let mut r = head;
    r.push('\n');
    for item in items {
        r.push_str("- ");
        r.push_str(item);
        r.push('\n');
    }
    r.push_str(tail);
    r
}

/// The SubagentStop stdin fields the decision uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct SubagentInput<'a> {
    pub session_id: Option<&'a str>,
    pub agent_id: Option<&'a str>,
    pub stop_hook_active: bool,
}
