//! Support for the end-to-end tests: the real Claude Code, this repository as its plugin,
//! a scripted fake model, a temp git project and a temp HOME. Test-only code.

pub mod fake_model;
pub mod runner;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::TempProject;
use fake_model::{bash, text, tool, Block, FakeModel, Rule};
use runner::{Client, Session};

/// Session ids are pinned so state can be bound to the session before it starts.
pub const SESSION: &str = "5e55a0d1-0000-4000-8000-000000000001";
pub const OTHER_SESSION: &str = "5e55a0d1-0000-4000-8000-000000000002";

/// Three tasks, the last a `[VERIFY]` task; each has markers a test can look for in what
/// the model was sent.
/// `tasks` with the plan's final check `check` declared under its first heading (a plan
/// cut from a larger one loses the closing [VERIFY] task the final check came from).
pub fn with_final_check(tasks: &str, check: &str) -> String {
    let (title, rest) = tasks.split_once('\n').expect("a heading line");
    format!("{title}\n\n**Final check**: `{check}`\n{rest}")
}

pub const DEMO_TASKS: &str = "# Tasks: demo

## Phase 1: Notes

- [ ] 1.1 Write the alpha note
  - **Do**: Create notes/alpha.txt holding ALPHA (ALPHA_DO_MARKER)
  - **Files**: notes/alpha.txt
  - **Done when**: notes/alpha.txt holds ALPHA
  - **Verify**: `grep -q ALPHA notes/alpha.txt`
  - **Commit**: `feat(notes): alpha`
- [ ] 1.2 Write the beta note
  - **Do**: Create notes/beta.txt holding BETA (BETA_DO_MARKER)
  - **Files**: notes/beta.txt
  - **Done when**: notes/beta.txt holds BETA
  - **Verify**: `grep -q BETA notes/beta.txt`
  - **Commit**: `feat(notes): beta`
- [ ] 1.3 [VERIFY] Check both notes
  - **Do**: Check both notes together (GAMMA_DO_MARKER)
  - **Files**: notes/alpha.txt, notes/beta.txt
  - **Done when**: both notes hold their words
  - **Verify**: `grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt`
  - **Commit**: `chore(notes): verify`
";

pub const ALL_NOTES_VERIFY: &str = "grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt";

/// One scenario: a temp git project holding the demo spec, a temp HOME, and the Claude Code
/// this run of the suite drives (`runner::CLIENT_ENV`).
pub struct Harness {
    pub client: Client,
    pub project: TempProject,
    pub home: tempfile::TempDir,
}

impl Harness {
    pub fn new() -> Option<Harness> {
        // libtest names each test's thread after the test (a lone test thread is "main").
        let current = std::thread::current();
        if let Some(test) = current.name().filter(|n| *n != "main") {
            assert!(
                is_e2e_name(test),
                "{test} drives Claude Code, so its name must start with e2e_ (and its module's \
                 must not hold e2e_): scripts/test runs exactly those once per pinned client"
            );
        }
        let client = runner::client_or_skip(current.name().unwrap_or("an e2e test"))?;
        let project = TempProject::git();
        // The scripted executors commit (HOME is empty, so the identity is the repo's).
        project.git_cmd(&["config", "user.email", "executor@example.com"]);
        project.git_cmd(&["config", "user.name", "executor"]);
        project.spec("demo", DEMO_TASKS);
        project.commit_all("demo spec");
        Some(Harness {
            client,
            project,
            home: tempfile::tempdir().expect("temp HOME"),
        })
    }

    pub fn root(&self) -> PathBuf {
        self.project.root()
    }

    /// Runs the built `specrun` in the project; panics (with its output) unless it exits 0.
    pub fn specrun(&self, args: &[&str]) -> Output {
        let out = self.specrun_status(args);
        assert!(
            out.status.success(),
            "specrun {args:?} failed ({:?}):\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub fn specrun_status(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_specrun"))
            .current_dir(self.root())
            .args(args)
            .output()
            .expect("run specrun")
    }

    /// Starts an execution owned by `session` (as the implement skill does) with extra flags.
    pub fn init_execution(&self, session: &str, flags: &[&str]) {
        let mut args = vec!["state", "init", "--spec", "demo", "--session-id", session];
        args.extend_from_slice(flags);
        self.specrun(&args);
    }

    pub fn state(&self) -> Value {
        self.project.state("demo")
    }

    /// The final state, which must be `completed` (else it fails showing the state and the run).
    pub fn completed_state(&self, run: &runner::Run) -> Value {
        let state = self.state();
        assert_eq!(
            state["phase"],
            "completed",
            "state: {state:#}\n{}",
            run.describe()
        );
        state
    }

    pub fn state_path(&self) -> PathBuf {
        self.root().join("specs/demo/.specrun-state.json")
    }

    pub fn merge_state(&self, patch: Value) {
        let path = self.state_path();
        self.specrun(&["state", "merge", path.to_str().unwrap(), &patch.to_string()]);
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap_or_default()
    }

    /// `.specrun/events.jsonl`, one object per line.
    pub fn events(&self) -> Vec<Value> {
        self.read(".specrun/events.jsonl")
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `specrun tasks count` as JSON.
    pub fn task_count(&self) -> Value {
        let out = self.specrun(&["tasks", "count", "--spec", "demo"]);
        serde_json::from_slice(&out.stdout).expect("tasks count prints JSON")
    }

    pub fn run(&self, rules: Vec<Rule>, session: Session) -> runner::Run {
        let model = FakeModel::start(rules);
        runner::run_claude(
            &self.client,
            &model,
            &self.root(),
            self.home.path(),
            session,
        )
    }
}

/// What `scripts/test` filters on: `-- --skip e2e_` once, `-- e2e_` once per pinned client
/// (a substring of the test's full name, module path included).
pub const NAME_FILTER: &str = "e2e_";

/// Whether the test named `full` (`module::name`) is an end-to-end test: its own name starts
/// with `e2e_` and its module path holds no `e2e_`. Every test that drives Claude Code must
/// be one, and no other test's full name may hold `e2e_`.
pub fn is_e2e_name(full: &str) -> bool {
    let (module, name) = full.rsplit_once("::").unwrap_or(("", full));
    name.starts_with(NAME_FILTER) && !module.contains(NAME_FILTER)
}

/// How a delegation asks to run (the `Agent` tool's `run_in_background`, which Claude
/// Code 2.1.198 and later honour and 2.1.197 ignores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `run_in_background: false`: a lone sequential task (the coordinator protocol).
    Foreground,
    /// `run_in_background: true`: a member of a `[P]` group (the coordinator protocol).
    Background,
    /// No `run_in_background` at all: the client's default (background since 2.1.198).
    Default,
}

/// The Agent tool call a coordinator makes to delegate one task, in the foreground as the
/// coordinator protocol asks for a lone task.
pub fn delegate(agent: &str, task_id: &str) -> Block {
    delegate_as(agent, task_id, Mode::Foreground)
}

pub fn delegate_as(agent: &str, task_id: &str, mode: Mode) -> Block {
    let mut input = json!({
        "description": format!("Execute task {task_id}"),
        "prompt": format!("[task {task_id}] Execute task {task_id} of spec demo and report TASK_COMPLETE {task_id}."),
        "subagent_type": agent,
    });
    match mode {
        Mode::Foreground => input["run_in_background"] = json!(false),
        Mode::Background => input["run_in_background"] = json!(true),
        Mode::Default => {}
    }
    tool("Agent", input)
}

/// What a background delegation's tool result starts with (Claude Code 2.1.198 and later).
pub const LAUNCHED: &str = "Async agent launched";
/// What the scripted coordinator says when it ends its turn to wait for notifications.
pub const WAITING: &str = "Waiting for the executors' notifications.";

/// The coordinator's waiting turns, as the coordinator protocol says: after launching
/// background members, and on a notification that leaves members still working, end the
/// turn. Put these after a scenario's own rules (they match whatever those leave). A
/// foreground client never sends either request.
pub fn waiting_rules() -> Vec<Rule> {
    vec![
        Rule::main()
            .last_tool_result(LAUNCHED)
            .times(0)
            .reply([text(WAITING)]),
        Rule::main()
            .last_user("<task-notification>")
            .times(0)
            .reply([text(WAITING)]),
    ]
}

/// The coordinator's last two turns, as the coordinator protocol says: once `after` matches,
/// the phase check `check` (a `specrun verify run --phase execution` line); once it is
/// recorded, `said` and the completion line.
pub fn phase_check_then_complete(after: Rule, check: &str, said: &str) -> [Rule; 2] {
    [
        after.reply([bash(check)]),
        Rule::main()
            .last_tool_result("recorded in verificationBlocks")
            .reply([text(format!("{said}\nALL_TASKS_COMPLETE"))]),
    ]
}

/// The main-agent requests that delivered a background result (a notification turn).
pub fn notification_turns(run: &runner::Run) -> usize {
    run.requests_of(fake_model::Agent::Main)
        .iter()
        .filter(|r| r.last_user.contains("<task-notification>"))
        .count()
}

/// The background results the coordinator received, counted by `<task-notification>`
/// block: results that finish together may share one notification turn.
pub fn notifications_delivered(run: &runner::Run) -> usize {
    run.requests_of(fake_model::Agent::Main)
        .iter()
        .map(|r| fake_model::notifications(&r.last_user).len())
        .sum()
}

/// A self-critique record as `specrun critique record` takes it: every checklist id of the
/// stage, each passed with a note.
pub fn critique_record(stage: &str) -> Value {
    let ids: &[&str] = if stage == "post-code" {
        &["SC-5.5.1", "SC-5.5.2", "SC-5.5.3", "SC-5.5.4", "SC-5.5.5"]
    } else {
        &[
            "SC-6.5.1", "SC-6.5.2", "SC-6.5.3", "SC-6.5.4", "SC-6.5.5", "SC-6.5.6",
        ]
    };
    let checklist: serde_json::Map<String, Value> = ids
        .iter()
        .map(|id| {
            let note = format!("{id}: read the change against the task's Done when; nothing found");
            (id.to_string(), json!({"result": "pass", "note": note}))
        })
        .collect();
    json!({"checklist": checklist, "issuesFound": [], "issuesFixed": []})
}

/// The command that records a passing self-critique of `stage` for `task_id`.
pub fn critique_command(task_id: &str, stage: &str) -> String {
    format!(
        "specrun critique record --task {task_id} --stage {stage} --file - --spec demo <<'JSON'\n{}\nJSON",
        critique_record(stage)
    )
}

/// The Bash step that records a passing self-critique of `stage` for `task_id`.
pub fn critique_step(task_id: &str, stage: &str) -> Block {
    bash(&critique_command(task_id, stage))
}

/// The commit subject of a demo task: its **Commit** field, as commit-discipline says.
pub fn commit_subject(task_id: &str) -> &'static str {
    match task_id {
        "1.1" => "feat(notes): alpha",
        "1.2" => "feat(notes): beta",
        _ => "chore(notes): verify",
    }
}

/// The Write tool call putting `content` at `file` (relative to `project`).
pub fn write_file(project: &Path, file: &str, content: &str) -> Block {
    tool(
        "Write",
        json!({"file_path": project.join(file).display().to_string(), "content": content}),
    )
}

/// The commands an honest executor runs for one task, in the order the executor workflow
/// (references/executor-workflow.md) and the agent file give them: start the attempt,
/// edit, post-code critique (5.5), record evidence (6), post-test critique (6.5), commit
/// the task's file (12), complete with --check.
pub fn executor_steps(
    project: &Path,
    task_id: &str,
    edit: Option<(&str, &str)>,
    verify: &str,
) -> Vec<Block> {
    let critique = |stage: &str| critique_step(task_id, stage);
    let mut steps = vec![bash(&format!("specrun task start {task_id} --spec demo"))];
    if let Some((file, content)) = edit {
        steps.push(write_file(project, file, content));
    }
    steps.push(critique("post-code"));
    steps.push(bash(&format!(
        "specrun verify run --task {task_id} --command '{verify}' --spec demo"
    )));
    steps.push(critique("post-test"));
    if let Some((file, _)) = edit {
        steps.push(bash(&format!(
            "git add {file} && git commit -q -m '{}' -- {file}",
            commit_subject(task_id)
        )));
    }
    // The demo's criteria are file contents its Verify greps, not named tests: confirmed
    // by hand (recorded as manual), as the executor does when no test runner applies.
    steps.push(bash(&format!(
        "specrun ac confirm {task_id}/AC1 --reason 'checked by the Verify command ({verify}); no test runner applies' --spec demo"
    )));
    steps.push(bash(&format!(
        "specrun task complete {task_id} --check --spec demo"
    )));
    steps
}

/// Rules for a subagent working on `task_id` (its Agent prompt holds `[task <id>]`): one step
/// per turn from `first_turn`, then the final report `final_text`.
pub fn subagent_rules(
    task_id: &str,
    first_turn: usize,
    steps: Vec<Block>,
    final_text: &str,
) -> Vec<Rule> {
    marked_subagent_rules(&format!("[task {task_id}]"), first_turn, steps, final_text)
}

/// Rules for the subagent whose Agent prompt holds `marker`: one step per turn from
/// `first_turn`, then the final report `final_text`.
pub fn marked_subagent_rules(
    marker: &str,
    first_turn: usize,
    steps: Vec<Block>,
    final_text: &str,
) -> Vec<Rule> {
    let n = steps.len();
    let mut rules: Vec<Rule> = steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| {
            Rule::sub()
                .first_user(marker)
                .turn(first_turn + i)
                .reply([step])
        })
        .collect();
    rules.push(
        Rule::sub()
            .first_user(marker)
            .turn(first_turn + n)
            .reply([text(final_text)]),
    );
    rules
}

/// The coordinator's first turn: delegate `task_id` to the executor (in the foreground).
pub fn delegate_first(task_id: &str) -> Rule {
    Rule::main()
        .turn(0)
        .reply([delegate("specrun:spec-executor", task_id)])
}

/// A coordinator that delegates task 1.1 and ends its turn once it reports back, and the
/// executor: `steps`, then `claim`; sent back by SubagentStop, it insists with `insisted`.
pub fn insisting_executor(steps: Vec<Block>, claim: &str, insisted: &str) -> Vec<Rule> {
    let n = steps.len();
    let mut rules = vec![
        delegate_first("1.1"),
        Rule::main()
            .turn(1)
            .reply([text("The executor reported back.")]),
    ];
    rules.extend(subagent_rules("1.1", 0, steps, claim));
    rules.push(
        Rule::sub()
            .first_user("[task 1.1]")
            .turn(n + 1)
            .reply([text(insisted)]),
    );
    rules
}

/// An honest executor for a demo task, ending with `TASK_COMPLETE <id>`.
pub fn honest_executor(
    project: &Path,
    task_id: &str,
    edit: Option<(&str, &str)>,
    verify: &str,
) -> Vec<Rule> {
    subagent_rules(
        task_id,
        0,
        executor_steps(project, task_id, edit, verify),
        &format!("Done.\nTASK_COMPLETE {task_id}"),
    )
}

/// What the Stop or SubagentStop hook fed back to `agent`: the last user message of each of
/// its requests that carries hook feedback.
pub fn stop_feedback(run: &runner::Run, agent: fake_model::Agent) -> Vec<String> {
    run.requests_of(agent)
        .into_iter()
        .filter(|r| r.last_user.contains("Stop hook feedback:"))
        .map(|r| r.last_user.clone())
        .collect()
}

/// The one Stop or SubagentStop feedback `agent` was sent, which must hold each of `wants`.
pub fn the_one_feedback(run: &runner::Run, agent: fake_model::Agent, wants: &[&str]) -> String {
    let feedback = stop_feedback(run, agent);
    assert_eq!(feedback.len(), 1, "{}", run.describe());
    for want in wants {
        assert!(
            feedback[0].contains(want),
            "{want:?} not in {}",
            feedback[0]
        );
    }
    feedback[0].clone()
}
