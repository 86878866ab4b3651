//! The cost ledger's part of the Stop and SubagentStop hooks (issue 15): charge what the
//! transcripts gained to tasks, fail a task past a per-task cap through the normal failure
//! path, and at a Stop apply the dollar cap and the forecast. Runs under the state lock,
//! on the outcome the guard already decided; the rules themselves are `ledger` and `cost`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use crate::claude::transcript;
use crate::cost::{self, CapHit, Spend};
use crate::error::Result;
use crate::hooks::{self as hook, Decision, Outcome, UsageRead};
use crate::io::project::{Project, Spec};
use crate::model::state::ledger::{self, Ledger, MessageUsage};
use crate::model::state::{self, State};
use crate::model::tasks::TaskList;
use crate::model::tasks_file;
use crate::protocol::{self, FailInput};

/// Where the hook runs and when.
pub(crate) struct Ctx<'a> {
    pub project: &'a Project,
    pub spec: &'a Spec,
    pub head: Option<&'a str>,
    pub now: DateTime<Utc>,
}

/// One transcript read: the guard's totals and the ledger's messages.
#[derive(Default)]
pub(crate) struct Read {
    pub usage: UsageRead,
    pub messages: Vec<MessageUsage>,
    pub invalid_usage: u64,
    /// Output tokens estimated for the bytes past the read bound (in `usage` too).
    pub estimated_output_tokens: u64,
}

/// Bytes of transcript per output token assumed for a span too large to read: a
/// transcript line holds the message's text and much JSON around it, so 4 bytes per
/// output token over-counts (the guard's direction) rather than under-counts.
pub(crate) const BYTES_PER_ESTIMATED_TOKEN: u64 = 4;

/// Read `path` past `offset` (see `transcript::read_usage`).
pub(crate) fn read(path: &str, offset: Option<u64>, last_id: Option<&str>) -> Read {
    let tail = transcript::read_usage(Path::new(path), offset, last_id);
    let estimated = tail.skipped / BYTES_PER_ESTIMATED_TOKEN;
    Read {
        estimated_output_tokens: estimated,
        usage: UsageRead {
            input_tokens: tail.input_tokens,
            output_tokens: tail.output_tokens.saturating_add(estimated),
            next_offset: tail.next_offset,
            last_message_id: tail.last_message_id,
            transcript_path: Some(path.to_string()),
        },
        messages: tail.per_message,
        invalid_usage: tail.invalid_usage,
    }
}

/// Agents read at their own stop and not since: their final message may have been written
/// after that read, so a Stop reads each once more from its stored offset.
pub(crate) fn reread_pending(state: &State) -> Vec<(String, Read)> {
    let Ok(ledger) = state.ledger() else {
        return Vec::new();
    };
    ledger
        .agents
        .iter()
        .filter(|(_, e)| e.pending)
        .filter_map(|(key, e)| {
            let path = e.transcript.as_deref()?;
            let (offset, last) = hook::agent_transcript_start(state, key);
            Some((key.clone(), read(path, Some(offset), last)))
        })
        .collect()
}

/// Add `text` to what the hook says: the user's message on allow, the model's reason on
/// block (a halt already says all).
fn note(outcome: &mut Outcome, text: &str) {
    outcome.decision = match std::mem::replace(&mut outcome.decision, Decision::Allow(None)) {
        Decision::Allow(None) => Decision::Allow(Some(text.to_string())),
        Decision::Allow(Some(m)) => Decision::Allow(Some(format!("{m}\n{text}"))),
        Decision::Block(r) => Decision::Block(format!("{r}\n{text}")),
        halt @ Decision::Halt(_) => halt,
    };
}

/// What the cost part adds to the hook's events.jsonl record (docs/design.md#events). The
/// record is merged into the outcome's event once, at the end: a field the guard wrote
/// already (`decision`, `rule`, `reason`) keeps its place, the others follow in this order,
/// which is the order the rules run in.
#[derive(Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct CostRecord {
    /// Set when a cap decided instead of the guard.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ledger_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid_usage_fields: Option<u64>,
    /// The stopped agent's task at a SubagentStop (null when it is bound to none).
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<Option<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    task_cap_failures: Vec<TaskCapFailure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_warning: Option<String>,
}

/// A task the guard failed past a per-task cap.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskCapFailure {
    task: String,
    kind: &'static str,
    reason: String,
    fix_task: Option<String>,
}

impl CostRecord {
    /// A cap decided: the event names it, and says why when the decision has a reason.
    fn decided(&mut self, outcome: &Outcome, reason: Option<&str>) {
        self.decision = Some(outcome.decision.name());
        self.rule = Some(outcome.rule.clone());
        if let Some(reason) = reason {
            self.reason = Some(reason.to_string());
        }
    }

    /// Add the fields to the outcome's event (an object: `decision::record`'s).
    fn write_into(self, outcome: &mut Outcome) {
        crate::support::json::merge_into(&mut outcome.event, &hook::record(&self));
    }
}

/// Add `patch` to the outcome's and to `after`, the state as the outcome leaves it.
fn apply(outcome: &mut Outcome, after: &mut State, patch: &Value) -> Result<()> {
    state::merge_into(&mut outcome.patch, patch);
    after.apply(patch)
}

fn done_or_halted(after: &State) -> bool {
    after.halt().is_some() || !hook::executing(after)
}

/// The state as `outcome`'s patch leaves it.
fn state_after(state: &State, outcome: &Outcome) -> Result<State> {
    let mut after = state.clone();
    after.apply(&outcome.patch)?;
    Ok(after)
}

/// After the guard decided a Stop: charge the coordinator's messages and the pending
/// agents' late lines, fail tasks past their caps, then the dollar cap and the forecast.
pub(crate) fn after_stop(
    ctx: &Ctx<'_>,
    state: &State,
    outcome: &mut Outcome,
    coordinator: &Read,
    agents: Vec<(String, Read)>,
    list: &TaskList,
) -> Result<()> {
    let mut record = CostRecord::default();
    stop_costs(ctx, state, outcome, &mut record, coordinator, agents, list)?;
    record.write_into(outcome);
    Ok(())
}

fn stop_costs(
    ctx: &Ctx<'_>,
    state: &State,
    outcome: &mut Outcome,
    record: &mut CostRecord,
    coordinator: &Read,
    agents: Vec<(String, Read)>,
    list: &TaskList,
) -> Result<()> {
    let mut after = state_after(state, outcome)?;
    let mut ledger = match state.ledger() {
        Ok(l) => l,
        Err(e) => {
            note(outcome, &format!("specrun: the cost ledger is unusable ({e}); costs are not counted until it is fixed (`specrun state merge <state file> '{{\"$unset\": [\"ledger\"]}}'` starts it afresh)."));
            return Ok(());
        }
    };
    ledger::charge_coordinator(&mut ledger, &coordinator.messages, list, &after);
    let mut invalid = coordinator.invalid_usage;
    for (key, read) in agents {
        let task = ledger.agents.get(&key).and_then(|e| e.task.clone());
        ledger::charge_agent(&mut ledger, task.as_deref(), &read.messages, &after);
        if let Some(e) = ledger.agents.get_mut(&key) {
            e.pending = false;
        }
        if read.usage.next_offset.is_some() {
            let p = hook::subagent_usage_patch(&after, &key, &read.usage);
            apply(outcome, &mut after, &p)?;
        }
        invalid += read.invalid_usage;
    }
    apply(outcome, &mut after, &json!({"ledger": ledger.to_value()}))?;
    record_totals(record, &ledger, invalid);
    if done_or_halted(&after) {
        return Ok(());
    }
    let result = fail_over_caps(ctx, &mut after, record, outcome, &ledger);
    let failed = or_note(outcome, record, result);
    if !failed.is_empty() {
        let text = failures_text(&failed);
        halt_or_note(ctx, &after, outcome, record, &text);
    }
    if done_or_halted(&after) {
        return Ok(());
    }
    let result = spend(ctx, &mut after, outcome, record, &ledger);
    or_note(outcome, record, result.map(|()| Vec::new()));
    Ok(())
}

/// A cost rule that could not run (tasks.md unreadable, a fix task not written) must not
/// cost the stop its count: say so and go on with what was decided.
fn or_note(outcome: &mut Outcome, record: &mut CostRecord, result: Result<Failed>) -> Failed {
    result.unwrap_or_else(|e| {
        let m = format!("specrun: the cost rules could not run ({e}); tokens were counted.");
        record.cost_error = Some(e.to_string());
        note(outcome, &m);
        Vec::new()
    })
}

type Failed = Vec<(CapHit, protocol::Transition)>;

/// The dollar cap and the forecast (prices are read only when they matter: a dollar cap).
fn spend(
    ctx: &Ctx<'_>,
    after: &mut State,
    outcome: &mut Outcome,
    record: &mut CostRecord,
    ledger: &Ledger,
) -> Result<()> {
    let loaded = match after.max_usd() {
        Some(_) => crate::cost::settings::prices(ctx.project, &ctx.spec.name, after),
        None => Ok(None),
    };
    let table = match &loaded {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => Err(e.as_str()),
    };
    // A fix task may have been inserted: count the tasks as they are now.
    let list = tasks_file::load(&ctx.spec.tasks_path())?.list;
    match cost::spend_rule(after, ledger, &list, table, ctx.now) {
        Spend::Ok => {}
        Spend::Warn(w) => {
            note(outcome, &w);
            record.cost_warning = Some(w);
        }
        Spend::Halt(kind, reason, extra) => {
            let at = crate::model::state::time::format(ctx.now);
            let mut halt = json!({"kind": kind, "reason": reason, "at": at});
            state::merge_into(&mut halt, &extra);
            apply(outcome, after, &json!({"halt": halt}))?;
            let text = crate::hooks::halt_text(&ctx.spec.name, &reason);
            outcome.rule = format!("cap:{kind}");
            outcome.decision = Decision::Halt(text);
            record.decided(outcome, outcome.decision.text());
        }
    }
    Ok(())
}

fn record_totals(record: &mut CostRecord, ledger: &Ledger, invalid: u64) {
    record.ledger_tokens = Some(ledger.total().total());
    record.invalid_usage_fields = (invalid > 0).then_some(invalid);
}

/// Fail every task past a per-task cap; returns each hit with the failure's outcome.
fn fail_over_caps(
    ctx: &Ctx<'_>,
    after: &mut State,
    record: &mut CostRecord,
    outcome: &mut Outcome,
    ledger: &Ledger,
) -> Result<Failed> {
    let mut failed = Vec::new();
    let now = crate::model::state::time::format(ctx.now);
    for hit in cost::task_cap_hits(after, ledger, ctx.now) {
        // Re-read per failure: a fix task inserted for the previous one moved the ids.
        let list = tasks_file::load(&ctx.spec.tasks_path())?.list;
        let out = fail_by_guard(
            &ctx.spec.tasks_path(),
            &list,
            after,
            &hit.task,
            &hit.reason,
            ctx.head,
            &now,
        )?;
        if let Some(out) = out {
            if let Some(p) = &out.patch {
                apply(outcome, after, &p.to_value())?;
            }
            failed.push((hit, out));
        }
    }
    record.task_cap_failures = failed
        .iter()
        .map(|(h, o)| TaskCapFailure {
            task: h.task.clone(),
            kind: h.kind,
            reason: h.reason.clone(),
            fix_task: o.fix.as_ref().map(|f| f.id.clone()),
        })
        .collect();
    Ok(failed)
}

/// The guard's failure of task `id` (a per-task cap), on the state already read under its
/// lock: the same transition as `task fail`, with the fix task written in recovery mode
/// (tasks.md first, as the verb does). Returns the outcome, whose patch the caller writes;
/// `None` when the task cannot fail now (never started, already complete).
fn fail_by_guard(
    tasks_path: &Path,
    list: &TaskList,
    state: &State,
    id: &str,
    reason: &str,
    head: Option<&str>,
    now: &str,
) -> Result<Option<protocol::Transition>> {
    let Ok(task) = list.find(id) else {
        return Ok(None);
    };
    let input = |insert| FailInput {
        state,
        list,
        task,
        reason,
        insert,
        head,
        now,
    };
    let recovery = state.recovery_mode();
    // A fix task that cannot be planned (limits) still leaves the failure recorded.
    let out = match protocol::fail(&input(recovery)) {
        Ok(out) => out,
        Err(_) if recovery => match protocol::fail(&input(false)) {
            Ok(out) => out,
            Err(_) => return Ok(None),
        },
        Err(_) => return Ok(None),
    };
    if let Some(fix) = &out.fix {
        tasks_file::insert_fix(tasks_path, id, fix)?;
    }
    Ok(Some(out))
}

fn failures_text(failed: &Failed) -> String {
    failed
        .iter()
        .map(|(h, o)| {
            let fix = o
                .fix
                .as_ref()
                .map(|f| format!("; fix task {} inserted", f.id))
                .unwrap_or_default();
            format!("specrun failed task {} ({}){fix}.", h.task, h.reason)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A failure that reached `maxTaskIterations` halted the execution: say so and end the
/// session; otherwise add the failure to what the hook says.
fn halt_or_note(
    ctx: &Ctx<'_>,
    after: &State,
    outcome: &mut Outcome,
    record: &mut CostRecord,
    text: &str,
) {
    let v = after;
    if v.halt().is_some() {
        let said = format!(
            "{text} {}",
            crate::hooks::halt_text(&ctx.spec.name, v.halt_reason().unwrap_or("task cap"))
        );
        outcome.rule = format!("cap:{}", v.halt_kind().unwrap_or(state::HALT_TASK));
        outcome.decision = Decision::Halt(said);
        record.decided(outcome, outcome.decision.text());
    } else {
        note(outcome, text);
    }
}

/// What a SubagentStop knows about the agent that stopped.
pub(crate) struct AgentStop<'a> {
    pub key: &'a str,
    pub agent_type: Option<&'a str>,
    pub transcript: &'a str,
    pub last_message: Option<&'a str>,
    pub stop_hook_active: bool,
}

/// After a SubagentStop read the agent's transcript: bind the agent to its task, charge
/// it, mark it for one more read at the next Stop, and fail its task past a cap (the
/// executor is told once to stop and report the failure).
pub(crate) fn after_subagent(
    ctx: &Ctx<'_>,
    state: &State,
    outcome: &mut Outcome,
    agent: &AgentStop<'_>,
    read: &Read,
    list: &TaskList,
) -> Result<()> {
    let mut record = CostRecord::default();
    subagent_costs(ctx, state, outcome, &mut record, agent, read, list)?;
    record.write_into(outcome);
    Ok(())
}

fn subagent_costs(
    ctx: &Ctx<'_>,
    state: &State,
    outcome: &mut Outcome,
    record: &mut CostRecord,
    agent: &AgentStop<'_>,
    read: &Read,
    list: &TaskList,
) -> Result<()> {
    let mut after = state_after(state, outcome)?;
    let Ok(mut ledger) = state.ledger() else {
        return Ok(());
    };
    let entry = ledger.agents.entry(agent.key.to_string()).or_default();
    if entry.task.is_none() {
        let claim = ledger::claimed_task(agent.last_message);
        entry.task = ledger::bind_agent(
            agent.agent_type,
            &read.messages,
            claim.as_deref(),
            state,
            list,
        );
    }
    entry.transcript = Some(agent.transcript.to_string());
    entry.pending = true;
    let task = entry.task.clone();
    ledger::charge_agent(&mut ledger, task.as_deref(), &read.messages, &after);
    apply(outcome, &mut after, &json!({"ledger": ledger.to_value()}))?;
    record_totals(record, &ledger, read.invalid_usage);
    record.task = Some(task.clone());
    if done_or_halted(&after) {
        return Ok(());
    }
    let result = fail_over_caps(ctx, &mut after, record, outcome, &ledger);
    let failed = or_note(outcome, record, result);
    let Some((hit, _)) = failed.iter().find(|(h, _)| Some(&h.task) == task.as_ref()) else {
        if !failed.is_empty() {
            halt_or_note(ctx, &after, outcome, record, &failures_text(&failed));
        }
        return Ok(());
    };
    let text = failures_text(&failed);
    if after.halt().is_some() || agent.stop_hook_active {
        // A subagent's stop cannot end the session; the coordinator's next Stop halts.
        outcome.decision = Decision::Allow(Some(text));
    } else {
        outcome.decision = Decision::Block(format!(
            "{text} Stop working on it now. End with exactly this line: TASK_FAILED {}: {}",
            hit.task, hit.kind
        ));
    }
    outcome.rule = hit.kind.to_string();
    record.decided(outcome, None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_fields_keep_the_guards_in_place_and_follow_in_rule_order() {
        let base = json!({"decision": "allow", "rule": "usage", "agentId": "a", "outputTokens": 3});
        let mut outcome = Outcome::new(Decision::Allow(None), "usage", hook::no_patch(), base);
        let mut record = CostRecord::default();
        record_totals(&mut record, &Ledger::default(), 2);
        record.task = Some(None);
        record.task_cap_failures.push(TaskCapFailure {
            task: "1.1".into(),
            kind: "task-token-cap",
            reason: "spent".into(),
            fix_task: None,
        });
        outcome.rule = "cap:task-cap".into();
        outcome.decision = Decision::Halt("halted".into());
        record.decided(&outcome, outcome.decision.text());
        record.write_into(&mut outcome);
        assert_eq!(
            outcome.event.to_string(),
            r#"{"decision":"halt","rule":"cap:task-cap","agentId":"a","outputTokens":3,"ledgerTokens":0,"invalidUsageFields":2,"task":null,"taskCapFailures":[{"task":"1.1","kind":"task-token-cap","reason":"spent","fixTask":null}],"reason":"halted"}"#
        );
    }
}
