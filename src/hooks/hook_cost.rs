//! The cost ledger's part of the Stop and SubagentStop hooks (issue 15): charge what the
//! transcripts gained to tasks, fail a task past a per-task cap through the normal failure
//! path, and at a Stop apply the dollar cap and the forecast. Runs under the state lock,
//! on the outcome the guard already decided; the rules themselves are `ledger` and `cost`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::cost::{self, CapHit, Spend};
use crate::error::Result;
use crate::hooks::{self as hook, Decision, Outcome, UsageRead};
use crate::io::project::{Project, Spec};
use crate::model::state::ledger::{self, Ledger, MessageUsage};
use crate::model::state::{self, State};
use crate::model::tasks::TaskList;
use crate::model::tasks_file;
use crate::protocol::{self, FailInput};
use crate::{claude::transcript, cost::prices};

/// Where the hook runs and when.
pub struct Ctx<'a> {
    pub project: &'a Project,
    pub spec: &'a Spec,
    pub head: Option<&'a str>,
    pub now: DateTime<Utc>,
}

/// One transcript read: the guard's totals and the ledger's messages.
pub struct Read {
    pub usage: UsageRead,
    pub messages: Vec<MessageUsage>,
    pub invalid_usage: u64,
}

/// Read `path` past `offset` (see `transcript::read_usage`).
pub fn read(path: &str, offset: Option<u64>, last_id: Option<&str>) -> Read {
    let tail = transcript::read_usage(Path::new(path), offset, last_id);
    Read {
        usage: UsageRead {
            input_tokens: tail.input_tokens,
            output_tokens: tail.output_tokens,
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
pub fn reread_pending(state: &State) -> Vec<(String, Read)> {
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
pub fn after_stop(
    ctx: &Ctx<'_>,
    state: &State,
    outcome: &mut Outcome,
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
    record_totals(outcome, &ledger, invalid);
    if done_or_halted(&after) {
        return Ok(());
    }
    let result = fail_over_caps(ctx, &mut after, outcome, &ledger);
    let failed = or_note(outcome, result);
    if !failed.is_empty() {
        let text = failures_text(&failed);
        halt_or_note(ctx, &after, outcome, &text);
    }
    if done_or_halted(&after) {
        return Ok(());
    }
    let result = spend(ctx, &mut after, outcome, &ledger);
    or_note(outcome, result.map(|()| Vec::new()));
    Ok(())
}

/// A cost rule that could not run (tasks.md unreadable, a fix task not written) must not
/// cost the stop its count: say so and go on with what was decided.
fn or_note(outcome: &mut Outcome, result: Result<Failed>) -> Failed {
    result.unwrap_or_else(|e| {
        let m = format!("specrun: the cost rules could not run ({e}); tokens were counted.");
        outcome.event["costError"] = json!(e.to_string());
        note(outcome, &m);
        Vec::new()
    })
}

type Failed = Vec<(CapHit, protocol::Transition)>;

/// The dollar cap and the forecast (prices are read only when they matter: a dollar cap).
fn spend(ctx: &Ctx<'_>, after: &mut State, outcome: &mut Outcome, ledger: &Ledger) -> Result<()> {
    let loaded = match after.max_usd() {
        Some(_) => prices::load(&ctx.project.root),
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
            outcome.event["costWarning"] = json!(w);
            note(outcome, &w);
        }
        Spend::Halt(kind, reason, extra) => {
            let at = crate::model::state::time::format(ctx.now);
            let mut halt = json!({"kind": kind, "reason": reason, "at": at});
            state::merge_into(&mut halt, &extra);
            apply(outcome, after, &json!({"halt": halt}))?;
            let name = &ctx.spec.name;
            let resume = after.resume_command(name);
            let text = format!(
                "specrun halted spec '{name}': {reason}. To let it finish: `{resume}`, then /specrun:implement {name}."
            );
            outcome.rule = format!("cap:{kind}");
            outcome.event["decision"] = json!("halt");
            outcome.event["rule"] = json!(outcome.rule);
            outcome.event["reason"] = json!(text);
            outcome.decision = Decision::Halt(text);
        }
    }
    Ok(())
}

fn record_totals(outcome: &mut Outcome, ledger: &Ledger, invalid: u64) {
    let t = ledger.total();
    outcome.event["ledgerTokens"] = json!(t.total());
    if invalid > 0 {
        outcome.event["invalidUsageFields"] = json!(invalid);
    }
}

/// Fail every task past a per-task cap; returns each hit with the failure's outcome.
fn fail_over_caps(
    ctx: &Ctx<'_>,
    after: &mut State,
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
    if !failed.is_empty() {
        outcome.event["taskCapFailures"] = json!(failed
            .iter()
            .map(
                |(h, o)| json!({"task": h.task, "kind": h.kind, "reason": h.reason,
                                 "fixTask": o.fix.as_ref().map(|f| f.id.clone())})
            )
            .collect::<Vec<_>>());
    }
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
fn halt_or_note(ctx: &Ctx<'_>, after: &State, outcome: &mut Outcome, text: &str) {
    let v = after;
    if v.halt().is_some() {
        let name = &ctx.spec.name;
        let resume = v.resume_command(name);
        let said = format!(
            "{text} specrun halted spec '{name}': {}. To continue: `{resume}`, then /specrun:implement {name}.",
            v.halt_reason().unwrap_or("task cap")
        );
        outcome.rule = format!("cap:{}", v.halt_kind().unwrap_or(state::HALT_TASK));
        outcome.event["decision"] = json!("halt");
        outcome.event["rule"] = json!(outcome.rule);
        outcome.event["reason"] = json!(said);
        outcome.decision = Decision::Halt(said);
    } else {
        note(outcome, text);
    }
}

/// What a SubagentStop knows about the agent that stopped.
pub struct AgentStop<'a> {
    pub key: &'a str,
    pub agent_type: Option<&'a str>,
    pub transcript: &'a str,
    pub last_message: Option<&'a str>,
    pub stop_hook_active: bool,
}

/// After a SubagentStop read the agent's transcript: bind the agent to its task, charge
/// it, mark it for one more read at the next Stop, and fail its task past a cap (the
/// executor is told once to stop and report the failure).
pub fn after_subagent(
    ctx: &Ctx<'_>,
    state: &State,
    outcome: &mut Outcome,
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
    record_totals(outcome, &ledger, read.invalid_usage);
    outcome.event["task"] = json!(task);
    if done_or_halted(&after) {
        return Ok(());
    }
    let result = fail_over_caps(ctx, &mut after, outcome, &ledger);
    let failed = or_note(outcome, result);
    let Some((hit, _)) = failed.iter().find(|(h, _)| Some(&h.task) == task.as_ref()) else {
        if !failed.is_empty() {
            halt_or_note(ctx, &after, outcome, &failures_text(&failed));
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
    outcome.event["decision"] = json!(outcome.decision.name());
    outcome.event["rule"] = json!(hit.kind);
    Ok(())
}
