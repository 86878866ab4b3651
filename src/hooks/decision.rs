//! What a hook answers (`Decision`, with what to write down: `Outcome`), and the pieces
//! the hooks' decisions share: the re-prompt that lists what is missing, the SubagentStop
//! input.

use serde::Serialize;
use serde_json::Value;

/// A hook's stdout (docs/design.md#hooks): every field optional, written in this order.
/// Allow with a message: `systemMessage`; block: `decision`, `reason`; halt: `continue`,
/// `stopReason`, `systemMessage`; PreToolUse deny and SessionStart context:
/// `hookSpecificOutput`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub go_on: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookSpecific>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
}

/// `hookSpecificOutput`, tagged by `hookEventName`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "hookEventName", rename_all_fields = "camelCase")]
pub(crate) enum HookSpecific {
    PreToolUse {
        permission_decision: &'static str,
        permission_decision_reason: String,
    },
    SessionStart {
        additional_context: String,
    },
}

impl HookAnswer {
    /// Allow, telling the user `message`.
    pub(crate) fn message(message: impl Into<String>) -> HookAnswer {
        HookAnswer {
            system_message: Some(message.into()),
            ..HookAnswer::default()
        }
    }

    /// Only the hook-specific part.
    pub(crate) fn specific(specific: HookSpecific) -> HookAnswer {
        HookAnswer {
            hook_specific_output: Some(specific),
            ..HookAnswer::default()
        }
    }
}

/// What a hook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Let Claude Code go on; an optional message for the user (never sent to the model).
    Allow(Option<String>),
    /// Re-prompt the model (Stop) or the subagent (SubagentStop) with this reason.
    Block(String),
    /// End the session: a cap was hit or the execution is halted.
    Halt(String),
}

impl Decision {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Decision::Allow(_) => "allow",
            Decision::Block(_) => "block",
            Decision::Halt(_) => "halt",
        }
    }

    /// The hook's stdout for a Stop or SubagentStop; `None` prints nothing.
    pub(crate) fn to_hook_json(&self) -> Option<HookAnswer> {
        match self {
            Decision::Allow(None) => None,
            Decision::Allow(Some(m)) => Some(HookAnswer::message(m.as_str())),
            Decision::Block(r) => Some(HookAnswer {
                decision: Some("block"),
                reason: Some(r.clone()),
                ..HookAnswer::default()
            }),
            Decision::Halt(s) => Some(HookAnswer {
                go_on: Some(false),
                stop_reason: Some(s.clone()),
                system_message: Some(s.clone()),
                ..HookAnswer::default()
            }),
        }
    }

    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Decision::Allow(m) => m.as_deref(),
            Decision::Block(s) | Decision::Halt(s) => Some(s),
        }
    }
}

/// A decision with what to write down.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub decision: Decision,
    /// Which row of the decision order produced it (`cap:stall`, `completion-accepted`, …).
    pub rule: String,
    /// A `state merge` patch; an empty object changes nothing.
    pub patch: Value,
    /// The events.jsonl record's fields from `spec` on; the writer adds `at`, `session` and
    /// the tag (`io::events::Event::Stop`/`SubagentStop`).
    pub event: Value,
    /// Something the user must hear whatever the decision (a broken time cap): shown as
    /// the hook's systemMessage, after the decision's own message.
    pub notice: Option<String>,
}

impl Outcome {
    /// A decision with nothing extra to tell the user.
    pub(crate) fn new(decision: Decision, rule: &str, patch: Value, event: Value) -> Outcome {
        Outcome {
            decision,
            rule: rule.into(),
            patch,
            event,
            notice: None,
        }
    }

    /// The hook's stdout: the decision's JSON with the notice added to its systemMessage.
    pub(crate) fn to_hook_json(&self) -> Option<HookAnswer> {
        match &self.notice {
            None => self.decision.to_hook_json(),
            Some(notice) => Some(with_message(self.decision.to_hook_json(), notice)),
        }
    }
}

/// A hook's `answer` (or an empty one) with `message` added to its systemMessage.
pub(crate) fn with_message(answer: Option<HookAnswer>, message: &str) -> HookAnswer {
    let mut answer = answer.unwrap_or_default();
    answer.system_message = Some(match answer.system_message.take() {
        Some(before) => format!("{before}\n{message}"),
        None => message.to_string(),
    });
    answer
}

/// A hook's record as the map `Outcome::event` holds (the cost part adds fields to it).
pub(crate) fn record(fields: &impl Serialize) -> Value {
    serde_json::to_value(fields).expect("a hook record serializes")
}

/// An empty state patch: the decision changes nothing.
pub(crate) fn no_patch() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A re-prompt that lists what is missing: `head`, a `- item` line each, then `tail`.
pub(crate) fn refusal<'a>(
    head: String,
    items: impl IntoIterator<Item = &'a str>,
    tail: &str,
) -> String {
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
pub(crate) struct SubagentInput<'a> {
    pub agent_id: Option<&'a str>,
    pub stop_hook_active: bool,
}
