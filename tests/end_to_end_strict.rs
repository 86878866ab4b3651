//! Strict mode end to end: the plugin's hooks module (`plugin/hooks/strict.ts`, Claude
//! Code's in-process `agent.spawn` event, 2.1.287 and later) puts every agent spawn to
//! specrun's PreToolUse guard, a Workflow script's `agent()` calls included, which no
//! PreToolUse hook sees. Opt-in: the person starts Claude Code with SPECRUN_STRICT=1.

use serde_json::{json, Value};

use crate::e2e::fake_model::{bash, text, tool, Agent, Block, Rule};
use crate::e2e::runner::{Run, Session};
use crate::e2e::{Harness, SESSION};

const FIRST: &str = "WF_FIRST do the first part";
const SECOND: &str = "WF_SECOND do the second part";

/// A Workflow of two agents in turn; the script reports what the second `agent()` call gave
/// or threw, so the notification shows the refusal the script saw.
fn workflow() -> Block {
    let script = format!(
        "export const meta = {{ name: 'demo', description: 'demo tasks', phases: ['run'] }};\n\
         const a = await agent('{FIRST}', {{}});\n\
         let b;\n\
         try {{ b = await agent('{SECOND}', {{}}); }} catch (e) {{ b = 'THREW: ' + String(e && e.message || e); }}\n\
         return {{ a, b }};"
    );
    tool(
        "Workflow",
        json!({ "description": "demo tasks", "script": script }),
    )
}

/// The coordinator launches the workflow and waits; its first agent runs `first` (a Bash
/// command) and reports; the second reports at once; the notification ends the session.
fn rules(first: &str) -> Vec<Rule> {
    vec![
        Rule::main().turn(0).reply([workflow()]),
        Rule::sub().first_user("WF_FIRST").reply([bash(first)]),
        Rule::sub()
            .first_user("WF_FIRST")
            .turn(1)
            .reply([text("FIRST_DONE")]),
        Rule::sub()
            .first_user("WF_SECOND")
            .reply([text("SECOND_DONE")]),
        Rule::main()
            .result("Dynamic workflow")
            .times(0)
            .reply([text("The workflow ended; ending the turn.")]),
        Rule::main()
            .turn(1)
            .reply([text("Waiting for the workflow.")]),
    ]
}

/// The workflow's result line, as the coordinator's notification carried it.
fn workflow_result(run: &Run) -> String {
    run.requests_of(Agent::Main)
        .iter()
        .flat_map(|r| r.delivered.iter())
        .find(|d| d.contains("Dynamic workflow"))
        .cloned()
        .unwrap_or_else(|| panic!("no workflow notification\n{}", run.describe()))
}

fn ran(run: &Run, marker: &str) -> bool {
    run.requests_of(Agent::Sub)
        .iter()
        .any(|r| r.first_user.contains(marker))
}

/// Strict mode (hooks modules: 2.1.287 and later): the workflow started before the execution was cancelled (PreToolUse let it
/// through), its first agent cancels, and its second `agent()` call is refused by the
/// guard with the cancellation's reason; the refusal is in events.jsonl.
#[test]
fn e2e_strict_refuses_a_running_workflows_agents_after_a_cancel() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &[]);
    let run = h.run(
        rules("specrun cancel --spec demo"),
        Session::new("Continue the demo spec.")
            .session_id(SESSION)
            .env("SPECRUN_STRICT", "1"),
    );
    assert!(
        ran(&run, "WF_FIRST"),
        "the first agent did not run\n{}",
        run.describe()
    );
    assert_eq!(h.state()["phase"], "cancelled", "{}", run.describe());
    if !h.client.loads_hooks_modules() {
        // 2.1.197 runs the Workflow but loads no hooks module: the plugin (its `modules`
        // key ignored) works as without strict mode, and the running workflow's second
        // agent still starts. Strict mode cannot close this on that release.
        assert!(ran(&run, "WF_SECOND"), "{}", run.describe());
        assert!(
            workflow_result(&run).contains("SECOND_DONE"),
            "{}",
            run.describe()
        );
        return;
    }
    assert!(
        !ran(&run, "WF_SECOND"),
        "the second agent ran in a cancelled execution\n{}",
        run.describe()
    );
    let result = workflow_result(&run);
    assert!(
        result.contains("THREW: Workflow agent spawn denied by a plugin: specrun: do not start new work (Workflow starts work): spec 'demo' was cancelled"),
        "the script did not see specrun's refusal: {result}\n{}",
        run.describe()
    );
    let denials: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["decision"] == "deny" && e["tool"] == "Workflow")
        .collect();
    assert_eq!(denials.len(), 1, "events: {:#?}", h.events());
    assert_eq!(denials[0]["rule"], "cancelled");
}

/// The honest controls. Without SPECRUN_STRICT the same cancel does not stop the running
/// workflow's second agent (the gap strict mode closes); with it and no cancel, both agents
/// run and the guard refuses nothing.
#[test]
fn e2e_strict_controls_off_lets_the_workflow_run_on_and_on_refuses_nothing_honest() {
    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &[]);
    let off = h.run(
        rules("specrun cancel --spec demo"),
        Session::new("Continue the demo spec.").session_id(SESSION),
    );
    assert!(ran(&off, "WF_SECOND"), "{}", off.describe());
    assert!(
        workflow_result(&off).contains("SECOND_DONE"),
        "{}",
        off.describe()
    );

    let Some(h) = Harness::new() else {
        return;
    };
    h.init_execution(SESSION, &[]);
    let on = h.run(
        rules("git status --short"),
        Session::new("Continue the demo spec.")
            .session_id(SESSION)
            .env("SPECRUN_STRICT", "1"),
    );
    assert!(
        ran(&on, "WF_FIRST") && ran(&on, "WF_SECOND"),
        "{}",
        on.describe()
    );
    let result = workflow_result(&on);
    assert!(
        result.contains("FIRST_DONE")
            && result.contains("SECOND_DONE")
            && !result.contains("THREW"),
        "an honest workflow was refused: {result}\n{}",
        on.describe()
    );
    assert!(
        !h.events().iter().any(|e| e["decision"] == "deny"),
        "events: {:#?}",
        h.events()
    );
}
