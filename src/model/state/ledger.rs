//! The cost ledger (issue 15): tokens per task, attributed as transcripts are read, kept in
//! the state under `ledger`, as pure functions over typed data.
//!
//! Attribution rules:
//! - An executor's transcript (SubagentStop) is charged to the task the agent is bound to:
//!   the task its own `specrun task start <id>` named, else the id of its final claim
//!   (`TASK_COMPLETE <id>`, `TASK_FAILED <id>: …`), else the only running attempt. An agent
//!   bound to no task (a reviewer, a stray agent) is charged to `run` (the overhead).
//! - The coordinator's transcript (Stop) is charged message by message to the task(s) of
//!   its latest executor delegation: a message whose `Agent` calls delegate tasks (the task
//!   id follows the word "task" in the prompt) opens that share, and everything the
//!   coordinator spends until its next delegation (waiting, confirming, recording a
//!   failure) is that task's. A message delegating several tasks (a `[P]` group) is split
//!   evenly, the remainder to the first. Before the first delegation, or after a
//!   delegation to a non-executor agent, it is `run`.
//! - Minutes are the task's attempts, start to end (a running one up to now).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::state::{time, State};
use crate::model::tasks::TaskList;

/// Agents whose transcripts belong to one task.
pub const TASK_AGENTS: &[&str] = &["specrun:spec-executor", "specrun:qa-engineer"];

/// The model key of messages whose transcript line names no model.
pub const NO_MODEL: &str = "(no model)";

/// Token counts of one kind of use.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

impl Tokens {
    /// Every token the model processed or wrote: the unit of `maxTaskTokens`.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_creation)
    }

    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_creation = self.cache_creation.saturating_add(other.cache_creation);
    }

    /// `n` shares; the remainder of each field goes to the first.
    fn split(&self, n: u64) -> Vec<Tokens> {
        let n = n.max(1);
        let part = |v: u64| (v / n, v % n);
        let (i, ir) = part(self.input);
        let (o, or) = part(self.output);
        let (r, rr) = part(self.cache_read);
        let (c, cr) = part(self.cache_creation);
        (0..n)
            .map(|k| {
                let first = u64::from(k == 0);
                Tokens {
                    input: i + ir * first,
                    output: o + or * first,
                    cache_read: r + rr * first,
                    cache_creation: c + cr * first,
                }
            })
            .collect()
    }
}

/// What one task (or the run's overhead) has spent.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Account {
    /// Tokens per model (`NO_MODEL` when the transcript named none).
    pub by_model: BTreeMap<String, Tokens>,
    /// The attempt `attempt_tokens` belongs to.
    pub attempt: u64,
    /// Total tokens of that attempt: what `maxTaskTokens` is compared with.
    pub attempt_tokens: u64,
}

impl Account {
    pub fn tokens(&self) -> Tokens {
        let mut sum = Tokens::default();
        for t in self.by_model.values() {
            sum.add(t);
        }
        sum
    }
}

/// Where an agent's transcript is charged, and whether its last read is final.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentEntry {
    pub task: Option<String>,
    pub transcript: Option<String>,
    /// Read at its SubagentStop, not yet re-read at a later Stop: its final message may
    /// have been written after that read.
    pub pending: bool,
}

/// `state.ledger`.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Ledger {
    pub tasks: BTreeMap<String, Account>,
    /// Spent on no task: the coordinator before its first delegation, reviewers.
    pub run: Account,
    /// The tasks the coordinator's share is charged to now (its latest delegation).
    pub coordinator_tasks: Vec<String>,
    pub agents: BTreeMap<String, AgentEntry>,
}

/// One assistant message of a transcript, as the ledger needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageUsage {
    pub model: Option<String>,
    pub tokens: Tokens,
    /// `Agent`/`Task` calls in this message: (subagent_type, prompt).
    pub delegations: Vec<(String, String)>,
    /// Task ids named by `specrun task start <id>` in this message's Bash calls.
    pub task_starts: Vec<String>,
}

impl Ledger {
    /// A `ledger` value (null = empty); a malformed one is an error naming the problem
    /// (`state merge` refuses it, so only a hand edit makes one).
    pub fn parse(ledger: &Value) -> Result<Ledger, String> {
        match ledger {
            Value::Null => Ok(Ledger::default()),
            v => Ledger::deserialize(v).map_err(ledger_error),
        }
    }

    /// The ledger of the typed state; a missing one is empty.
    pub fn of_state(state: &State) -> Result<Ledger, String> {
        match state.ledger.get() {
            None => Ok(Ledger::default()),
            Some(map) => Ledger::deserialize(map).map_err(ledger_error),
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Add `tokens` of `model` to `task` (`None`: the run's overhead). `attempt` is the
    /// task's latest attempt number: the per-attempt count restarts with a new attempt.
    pub fn charge(
        &mut self,
        task: Option<&str>,
        model: Option<&str>,
        tokens: &Tokens,
        attempt: u64,
    ) {
        let account = match task {
            Some(id) => self.tasks.entry(id.to_string()).or_default(),
            None => &mut self.run,
        };
        account
            .by_model
            .entry(model.unwrap_or(NO_MODEL).to_string())
            .or_default()
            .add(tokens);
        if task.is_some() {
            if account.attempt != attempt {
                account.attempt = attempt;
                account.attempt_tokens = 0;
            }
            account.attempt_tokens = account.attempt_tokens.saturating_add(tokens.total());
        }
    }

    /// Everything spent, over every account.
    pub fn total(&self) -> Tokens {
        let mut sum = self.run.tokens();
        for a in self.tasks.values() {
            sum.add(&a.tokens());
        }
        sum
    }

    /// Tokens per model over every account (what prices apply to).
    pub fn by_model(&self) -> BTreeMap<String, Tokens> {
        let mut out: BTreeMap<String, Tokens> = BTreeMap::new();
        for a in std::iter::once(&self.run).chain(self.tasks.values()) {
            for (m, t) in &a.by_model {
                out.entry(m.clone()).or_default().add(t);
            }
        }
        out
    }
}

/// The task a delegation prompt names: the first known task id right after the word
/// "task" (any case, punctuation around either word ignored).
pub fn task_in_prompt(prompt: &str, tasks: &TaskList) -> Option<String> {
    let trim = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    let words: Vec<String> = prompt.split_whitespace().map(trim).collect();
    words.windows(2).find_map(|pair| {
        (pair[0].eq_ignore_ascii_case("task") && tasks.find(&pair[1]).is_ok())
            .then(|| pair[1].clone())
    })
}

/// Charge the coordinator's new messages (see the module rules).
pub fn charge_coordinator(
    ledger: &mut Ledger,
    messages: &[MessageUsage],
    tasks: &TaskList,
    state: &State,
) {
    for m in messages {
        if !m.delegations.is_empty() {
            ledger.coordinator_tasks = m
                .delegations
                .iter()
                .filter(|(agent, _)| TASK_AGENTS.contains(&agent.as_str()))
                .filter_map(|(_, prompt)| task_in_prompt(prompt, tasks))
                .collect();
            ledger.coordinator_tasks.dedup();
        }
        let ids = ledger.coordinator_tasks.clone();
        if ids.is_empty() {
            ledger.charge(None, m.model.as_deref(), &m.tokens, 0);
            continue;
        }
        for (id, share) in ids.iter().zip(m.tokens.split(ids.len() as u64)) {
            let n = state.latest_attempt(id);
            ledger.charge(Some(id), m.model.as_deref(), &share, n);
        }
    }
}

/// Charge an agent's new messages to its task (`None`: the run).
pub fn charge_agent(
    ledger: &mut Ledger,
    task: Option<&str>,
    messages: &[MessageUsage],
    state: &State,
) {
    let n = task.map(|id| state.latest_attempt(id)).unwrap_or(0);
    for m in messages {
        ledger.charge(task, m.model.as_deref(), &m.tokens, n);
    }
}

/// The task an agent works on (see the module rules); `None` for a non-task agent.
pub fn bind_agent(
    agent_type: Option<&str>,
    messages: &[MessageUsage],
    claim: Option<&str>,
    state: &State,
    tasks: &TaskList,
) -> Option<String> {
    if !agent_type.is_some_and(|t| TASK_AGENTS.contains(&t)) {
        return None;
    }
    let known = |id: &String| tasks.find(id).is_ok();
    if let Some(id) = messages
        .iter()
        .flat_map(|m| &m.task_starts)
        .find(|id| known(id))
    {
        return Some(id.clone());
    }
    if let Some(id) = claim.map(str::to_string).filter(known) {
        return Some(id);
    }
    let running = state.running_attempts();
    (running.len() == 1).then(|| running[0].clone())
}

/// The task id of an agent's result line: `TASK_COMPLETE <id>`, `TASK_FAILED <id>: …`,
/// `VERIFICATION_PASS <id>` or `VERIFICATION_FAIL <id>: …`.
pub fn claimed_task(message: Option<&str>) -> Option<String> {
    let line = crate::support::text::final_line(message?)?;
    let rest = [
        "TASK_COMPLETE",
        "TASK_FAILED",
        "VERIFICATION_PASS",
        "VERIFICATION_FAIL",
    ]
    .iter()
    .find_map(|t| line.strip_prefix(t))?;
    let id = rest.trim_start_matches(':').split_whitespace().next()?;
    Some(id.trim_end_matches(':').to_string()).filter(|id| !id.is_empty())
}

/// Milliseconds task `id`'s attempts took (a running one up to `now`).
pub fn task_ms(state: &State, id: &str, now: DateTime<Utc>) -> u64 {
    state
        .attempts_of(id)
        .iter()
        .filter_map(|a| {
            let start = a.started_at.get()?.at()?;
            let end = match a.ended_at.get() {
                Some(e) => e.at()?,
                None if a.is_running() => now,
                None => return None,
            };
            Some(time::ms_between(start, end))
        })
        .fold(0, u64::saturating_add)
}

/// The running attempt of task `id`: (number, whole minutes since it started).
pub fn running_attempt_minutes(state: &State, id: &str, now: DateTime<Utc>) -> Option<(u64, u64)> {
    let last = state.attempts_of(id).last().filter(|a| a.is_running())?;
    let start = last.started_at.get()?.at()?;
    Some((last.n.unwrap_or(0), time::minutes_between(start, now)))
}

fn ledger_error(e: serde_json::Error) -> String {
    format!("field `ledger`: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(doc: &Value) -> State {
        State::from_value(doc).unwrap()
    }
    use crate::model::tasks;
    use serde_json::json;

    const TASKS: &str = "- [ ] 1.1 A\n- [ ] 1.2 B [P]\n- [ ] 1.3 C [P]\n";

    fn t(input: u64, output: u64, read: u64, creation: u64) -> Tokens {
        Tokens {
            input,
            output,
            cache_read: read,
            cache_creation: creation,
        }
    }

    fn msg(tokens: Tokens) -> MessageUsage {
        MessageUsage {
            model: Some("m1".into()),
            tokens,
            ..Default::default()
        }
    }

    fn delegating(tokens: Tokens, prompts: &[(&str, &str)]) -> MessageUsage {
        MessageUsage {
            delegations: prompts
                .iter()
                .map(|(a, p)| (a.to_string(), p.to_string()))
                .collect(),
            ..msg(tokens)
        }
    }

    #[test]
    fn prompts_name_their_task_after_the_word_task() {
        let list = tasks::parse(TASKS);
        assert_eq!(
            task_in_prompt("[task 1.2] Execute it", &list),
            Some("1.2".into())
        );
        assert_eq!(
            task_in_prompt("Do Task 1.3: now.", &list),
            Some("1.3".into())
        );
        assert_eq!(
            task_in_prompt("task 9.9 then task 1.1.", &list),
            Some("1.1".into())
        );
        assert_eq!(task_in_prompt("1.1 without the word", &list), None);
    }

    #[test]
    fn coordinator_share_runs_from_a_delegation_to_the_next_and_splits_groups() {
        let list = tasks::parse(TASKS);
        let state = json!({"attempts": {"1.1": [{"n": 1, "status": "running"}]}});
        let exec = "specrun:spec-executor";
        let msgs = vec![
            msg(t(5, 1, 0, 0)),
            delegating(t(10, 3, 100, 7), &[(exec, "task 1.1")]),
            msg(t(1, 1, 1, 1)),
            delegating(t(11, 5, 0, 0), &[(exec, "task 1.2"), (exec, "task 1.3")]),
            delegating(
                t(2, 2, 0, 0),
                &[("specrun:spec-reviewer", "review task 1.1")],
            ),
        ];
        let mut ledger = Ledger::default();
        charge_coordinator(&mut ledger, &msgs, &list, &st(&state));
        assert_eq!(ledger.run.tokens(), t(7, 3, 0, 0));
        assert_eq!(ledger.tasks["1.1"].tokens(), t(11, 4, 101, 8));
        assert_eq!(ledger.tasks["1.1"].attempt, 1);
        assert_eq!(ledger.tasks["1.1"].attempt_tokens, 124);
        assert_eq!(ledger.tasks["1.2"].tokens(), t(6, 3, 0, 0));
        assert_eq!(ledger.tasks["1.3"].tokens(), t(5, 2, 0, 0));
        assert!(ledger.coordinator_tasks.is_empty());
        assert_eq!(ledger.total(), t(29, 12, 101, 8));
    }

    #[test]
    fn a_new_attempt_restarts_the_attempt_count_only() {
        let mut ledger = Ledger::default();
        ledger.charge(Some("1.1"), None, &t(10, 0, 0, 0), 1);
        ledger.charge(Some("1.1"), None, &t(0, 5, 0, 0), 2);
        let a = &ledger.tasks["1.1"];
        assert_eq!(
            (a.attempt, a.attempt_tokens, a.tokens().total()),
            (2, 5, 15)
        );
        assert_eq!(ledger.by_model()[NO_MODEL], t(10, 5, 0, 0));
    }

    #[test]
    fn agents_bind_to_their_start_then_their_claim_then_the_lone_attempt() {
        let list = tasks::parse(TASKS);
        let exec = Some("specrun:spec-executor");
        let started = MessageUsage {
            task_starts: vec!["1.3".into()],
            ..Default::default()
        };
        let none = json!({});
        assert_eq!(
            bind_agent(
                exec,
                std::slice::from_ref(&started),
                Some("1.2"),
                &st(&none),
                &list
            ),
            Some("1.3".into())
        );
        assert_eq!(
            bind_agent(exec, &[], Some("1.2"), &st(&none), &list),
            Some("1.2".into())
        );
        assert_eq!(bind_agent(exec, &[], Some("7"), &st(&none), &list), None);
        let one = json!({"attempts": {"1.1": [{"n": 1, "status": "done"}], "1.2": [{"n": 2, "status": "running"}]}});
        assert_eq!(
            bind_agent(exec, &[], None, &st(&one), &list),
            Some("1.2".into())
        );
        assert_eq!(
            bind_agent(
                Some("specrun:spec-reviewer"),
                &[started],
                None,
                &st(&one),
                &list
            ),
            None
        );
    }

    #[test]
    fn result_lines_name_their_task() {
        assert_eq!(
            claimed_task(Some("ok\nTASK_FAILED 1.2: too big")),
            Some("1.2".into())
        );
        assert_eq!(claimed_task(Some("TASK_COMPLETE: 3")), Some("3".into()));
        assert_eq!(
            claimed_task(Some("VERIFICATION_PASS 2.1")),
            Some("2.1".into())
        );
        assert_eq!(claimed_task(Some("done")), None);
    }

    #[test]
    fn minutes_come_from_the_attempts() {
        let now = crate::model::state::time::parse("2026-01-01T01:00:00Z").unwrap();
        let s = json!({"attempts": {"1.1": [
            {"n": 1, "status": "failed", "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:10:00Z"},
            {"n": 2, "status": "running", "startedAt": "2026-01-01T00:30:00Z"}]}});
        assert_eq!(task_ms(&st(&s), "1.1", now), 40 * 60_000);
        assert_eq!(running_attempt_minutes(&st(&s), "1.1", now), Some((2, 30)));
        assert_eq!(running_attempt_minutes(&st(&s), "1.2", now), None);
    }

    #[test]
    fn a_malformed_ledger_is_named() {
        let err = Ledger::parse(&json!({"run": {"byModel": {"m": {"input": -1}}}})).unwrap_err();
        assert!(err.contains("ledger"), "{err}");
        assert_eq!(Ledger::parse(&Value::Null).unwrap(), Ledger::default());
    }
}
