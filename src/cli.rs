//! The command line, and nothing else: clap derive definitions for every subcommand.
//! The docs-contract test parses every `specrun …` line the plugin's markdown shows with
//! these same definitions, so a renamed flag breaks that test.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::Error;

#[derive(Debug, Parser)]
#[command(
    name = "specrun",
    version,
    about = "Drive a planned spec (specs/<name>/tasks.md) to done: tasks, state, evidence and the hooks that enforce them",
    propagate_version = true
)]
pub struct Cli {
    /// Work as if started in DIR (the project root is the nearest ancestor holding specs/ or .git).
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// Selects the spec: a name under specs/, or a path to a spec directory. Default: specs/.current-spec.
#[derive(Debug, Args, Clone, Default)]
pub struct SpecArg {
    /// Spec name (under specs/) or path to a spec directory; default: specs/.current-spec.
    #[arg(long, value_name = "NAME|PATH")]
    pub spec: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create specs/NAME from the templates, make it the active spec, write the ignore rules.
    New(NewArgs),
    /// Complete the execution from a shell: the Stop hook's completion gates, checked in code.
    Finish(FinishArgs),
    /// One short line for Claude Code's statusLine setting (reads its JSON on stdin).
    Statusline,
    /// One execution's story: per task its attempts, durations, tokens, evidence, reviews.
    Report(ReportArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Run a notify command with an event on stdin, killing it after its time bound.
    #[command(hide = true)]
    NotifyRun(NotifyRunArgs),
    /// Print the read-only JSON fact surface of the active spec.
    Snapshot(SnapshotArgs),
    /// Read and tick tasks in tasks.md.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Read and change .specrun-state.json under its lock.
    #[command(subcommand)]
    State(StateCommand),
    /// Human dashboard: progress, caps, halt and the command that resumes.
    Status(StatusArgs),
    /// Claude Code hook entry points (read the hook JSON on stdin).
    Hook(HookArgs),
    /// Run a verification command and record evidence bound to the working tree.
    #[command(subcommand)]
    Verify(VerifyCommand),
    /// Record and inspect self-critique records.
    #[command(subcommand)]
    Critique(CritiqueCommand),
    /// Prepare Claude Code's native /goal driver.
    Goal(GoalArgs),
    /// The coordinator's autopilot contract as JSON.
    LastMile(LastMileArgs),
    /// Check the installation, Claude Code and the project.
    Doctor(DoctorArgs),
    /// Task transitions whose preconditions are checked in code.
    #[command(subcommand)]
    Task(TaskCommand),
    /// Acceptance criteria: list them, map them to tests, confirm by hand, see coverage.
    #[command(subcommand)]
    Ac(AcCommand),
    /// Follow-up items found while executing.
    #[command(subcommand)]
    Followup(FollowupCommand),
    /// Append a learning to .progress.md.
    Learn(LearnArgs),
    /// Clear a halt (raising the cap that caused it) and print the command that continues.
    Resume(ResumeArgs),
    /// Cancel the execution; nothing is deleted.
    Cancel(CancelArgs),
    /// Isolated parallel groups: merge finished members back and verify the merged tree.
    #[command(subcommand)]
    Group(GroupCommand),
    /// The plan frozen at `state init`: show it and what differs; a person accepts a new one.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Unattended runs (CI): a spec through `claude -p`, supervised.
    #[command(subcommand)]
    Headless(HeadlessCommand),
    /// The unchecked tasks as waves (which run side by side, in order): a CI job matrix.
    Waves(WavesArgs),
}

#[derive(Debug, Args)]
pub struct WavesArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Only wave N (1-based): with --json, its `strategy.matrix` (`{"include": [...]}`).
    #[arg(long, value_name = "N")]
    pub wave: Option<usize>,
    /// Print JSON: the whole plan (`waves`, one `matrix`, `problems`), or wave N's matrix.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum HeadlessCommand {
    /// A person's or CI's command: run /specrun:implement through `claude -p` with the
    /// plugin, bounded in time and silence, resumed once on a hang; exit 0 only when the
    /// spec completed.
    Run(HeadlessRunArgs),
    /// The spec's state and evidence (every file under specs/<spec>/) as one JSON bundle with
    /// a digest, for the next job.
    Export(HeadlessExportArgs),
    /// Adopt an exported bundle: its digest and this checkout's tree are checked first.
    Import(HeadlessImportArgs),
    /// The CI merge job: wave members' commits merged into the checked-out branch
    /// (--no-ff, task order) with their bundles' evidence, then the plan's final check run
    /// on the merged tree; safe to re-run after a crash.
    Merge(HeadlessMergeArgs),
    /// The pull request's body: the evidence matrix of the spec as markdown; with --create,
    /// opened through `gh pr create --body-file`.
    Pr(HeadlessPrArgs),
}

#[derive(Debug, Args)]
pub struct HeadlessMergeArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// A member job's bundle (`headless export --task ID`), repeatable; merged in task order.
    #[arg(long, value_name = "FILE", required = true, num_args = 1..)]
    pub bundle: Vec<PathBuf>,
    /// Kill the final check after SECS seconds; default: no limit.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HeadlessPrArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// The pull request's title; default: `specrun: <spec>`.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// The branch the pull request merges into; default: gh's (the repository's default branch).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// The branch holding the work; default: gh's (the current branch).
    #[arg(long, value_name = "BRANCH")]
    pub head: Option<String>,
    /// Open the pull request with `gh pr create` when gh is on PATH; default: print the
    /// body and the gh command.
    #[arg(long)]
    pub create: bool,
}

#[derive(Debug, Args)]
pub struct HeadlessExportArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Write the bundle to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A wave member's job: the task it ran; the bundle then carries HEAD, which must hold
    /// all its work, for `headless merge`. Default: none (a whole checkout's bundle).
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
}

#[derive(Debug, Args)]
pub struct HeadlessImportArgs {
    /// The bundle `headless export` wrote.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct HeadlessRunArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// The Claude Code to run; default: `claude` on PATH.
    #[arg(long, value_name = "PATH", default_value = "claude")]
    pub claude: PathBuf,
    /// The plugin directory; default: the project's plugin/, else the one beside this binary's checkout.
    #[arg(long, value_name = "DIR")]
    pub plugin_dir: Option<PathBuf>,
    /// The session id (a UUID) the run uses; default: a new one.
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// Wall-clock bound of the whole run, resume included, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 6 * 3600)]
    pub timeout: u64,
    /// No-progress bound: an attempt with no stream line for SECS seconds is stopped.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub idle_timeout: u64,
    /// Passed to `claude --max-turns`.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u64>,
    /// Passed to `claude --max-budget-usd`.
    #[arg(long, value_name = "USD", value_parser = non_negative_usd)]
    pub max_budget_usd: Option<f64>,
    /// Permissions as `claude --allowedTools LIST` instead of `--dangerously-skip-permissions`.
    #[arg(long, value_name = "LIST")]
    pub allowed_tools: Option<String>,
    /// A wave member's job: only task ID (`/specrun:implement S --manual --task ID`); exit 0
    /// once it is ticked with passing evidence. Default: the whole spec.
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Print the run's summary as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Each frozen task and how tasks.md differs from it (exit 1 when it differs).
    Show {
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A person's decision, from their own shell: tasks.md as it stands becomes the plan;
    /// with --missing-test, a baseline test that no longer runs is accepted instead.
    Accept {
        #[command(flatten)]
        spec: SpecArg,
        /// A test of the baseline (what the final check ran before the first task) that no
        /// longer runs and need not (repeatable); tasks.md is not frozen anew.
        #[arg(long, value_name = "NAME", requires = "reason")]
        missing_test: Vec<String>,
        /// Why the missing tests need not run.
        #[arg(long, value_name = "WHY", requires = "missing_test")]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Merge the group's finished members into the base branch (--no-ff, task-id order),
    /// then verify the merged tree; safe to re-run.
    Merge(GroupMergeArgs),
}

#[derive(Debug, Args)]
pub struct GroupMergeArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Verification command when no [VERIFY] task follows the group (default: the
    /// command of verificationBlocks.execution, else the members' Verify commands).
    #[arg(long, value_name = "C")]
    pub command: Option<String>,
    /// Kill the verification command after SECS seconds; default: no limit.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The spec's name: letters, digits, `-`, `_` and `.`, not starting with `.`.
    pub name: String,
    /// The goal, written into .progress.md; default: a line to fill in.
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,
}

#[derive(Debug, Args)]
pub struct FinishArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Md,
    Html,
    Json,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print the completion script for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

#[derive(Debug, Args)]
pub struct NotifyRunArgs {
    /// Kill the command's process group after MS milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// The command, run with sh -c.
    pub command: String,
}

/// A cap: a positive integer (a cap of 0 would halt before the first step).
fn cap(text: &str) -> crate::Result<u64> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err(Error::Usage(
            "a cap of 0 would halt before the first step: give 1 or more".into(),
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(Error::Usage(format!("{text:?} is not a whole number"))),
    }
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub spec: SpecArg,
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// Print {"total","completed","pending","nextIndex","unread"} of a tasks.md (always JSON);
    /// lines that look like tasks but are not read as tasks are counted in "unread" and
    /// named on stderr.
    Count {
        /// Path to a tasks.md; default: the active spec's.
        file: Option<PathBuf>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON (the default and only output; accepted for symmetry).
        #[arg(long)]
        json: bool,
    },
    /// Check a tasks.md against the format: each finding with its line and the fix. Exit 0
    /// when no finding is an error, 1 when one is.
    Lint {
        /// Path to a tasks.md; default: the active spec's.
        file: Option<PathBuf>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List every task.
    List(TasksReadArgs),
    /// Show the next unchecked task (and its parallel group).
    Next(TasksReadArgs),
    /// Show one task's block.
    Show {
        /// The task id (as in tasks.md, e.g. 1.2).
        id: String,
        #[command(flatten)]
        read: TasksReadArgs,
    },
    /// Tick (or with --undo untick) exactly one checkbox, preserving every other byte.
    Check {
        /// The task id (as in tasks.md, e.g. 1.2).
        id: String,
        /// Untick instead of tick.
        #[arg(long)]
        undo: bool,
        #[command(flatten)]
        spec: SpecArg,
        /// Path to a tasks.md instead of the spec's.
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct TasksReadArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Path to a tasks.md instead of the spec's.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Merge a JSON patch into a state file (objects recurse; `$unset` deletes dot paths).
    Merge {
        /// The state file (inside the project; --cwd picks another project).
        file: PathBuf,
        /// The patch as JSON text, or - to read it from stdin.
        patch: String,
    },
    /// Print the state (or the value at a dot path) as JSON.
    Get {
        /// The state file.
        file: PathBuf,
        /// A dot path into it; default: the whole document.
        path: Option<String>,
    },
    /// Start an execution (or continue the one in progress), keeping every other field.
    Init(StateInitArgs),
}

#[derive(Debug, Args)]
pub struct StateInitArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Failed attempts at one task before the execution halts; default 5 (a continued execution keeps its own).
    #[arg(long, value_name = "N", value_parser = cap)]
    pub max_task_iterations: Option<u64>,
    /// Stops (turn ends) of the session before the execution halts; default 30 (a continued execution keeps its own).
    #[arg(long, value_name = "N", value_parser = cap)]
    pub max_global_iterations: Option<u64>,
    /// Output tokens (session and subagents) before the execution halts; default: no cap (a continued execution keeps its own).
    #[arg(long, value_name = "N", value_parser = cap)]
    pub max_output_tokens: Option<u64>,
    /// Minutes since the start before the execution halts; default: no cap (a continued execution keeps its own).
    #[arg(long, value_name = "N", value_parser = cap)]
    pub max_minutes: Option<u64>,
    /// Stops in a row without progress before the execution halts (0 turns the check off); default 5.
    #[arg(long, value_name = "N")]
    pub max_stall_stops: Option<u64>,
    /// Fail a task whose attempt spends N tokens (input, output and cache, coordinator
    /// share and executors together): `task-token-cap`; default: no cap (a continued execution keeps its own).
    #[arg(long, value_name = "N", value_parser = cap)]
    pub max_task_tokens: Option<u64>,
    /// Fail a task whose attempt runs N minutes: `task-time-cap`; default: no cap (a continued execution keeps its own).
    #[arg(long, value_name = "N", value_parser = cap)]
    pub max_task_minutes: Option<u64>,
    /// Halt when the priced spend reaches USD (needs prices in .specrun/config.json); default: no cap (a continued execution keeps its own).
    #[arg(long, value_name = "USD", value_parser = non_negative_usd)]
    pub max_usd: Option<f64>,
    /// Warn when the forecast reaches PCT % of a budget; default 80 (a continued execution keeps its own).
    #[arg(long, value_name = "PCT")]
    pub forecast_warn: Option<u64>,
    /// Halt when the forecast passes a budget by more than PCT %; default 50 (a continued execution keeps its own).
    #[arg(long, value_name = "PCT")]
    pub forecast_halt: Option<u64>,
    /// The Claude Code session that owns this execution (the guard ignores other sessions); default: none, and the hooks leave the execution alone.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Quick mode: no questions to the user.
    #[arg(long)]
    pub quick: bool,
    /// Let sequential tasks run isolated too (`task start ID --worktree`); [P] members always may.
    #[arg(long)]
    pub isolate: bool,
    /// Recovery mode: failed tasks get fix tasks.
    #[arg(long)]
    pub recovery_mode: bool,
    /// Do not run a task's criteria tests at its start commit (red before, green after) at
    /// `task complete`; a person's choice, recorded for the execution (`redGreen`).
    #[arg(long)]
    pub no_red_green: bool,
    /// The Verify of every task that has none, for a spec from spec-kit, Kiro or OpenSpec
    /// (whose formats have no Verify per task); kept in the spec's `.specrun-defaults.json`.
    /// A person's choice: refused inside Claude Code.
    #[arg(long, value_name = "CMD")]
    pub(crate) default_verify: Option<String>,
    /// Who re-prompts between tasks; default manual (a person, or /specrun:implement).
    #[arg(long, value_enum)]
    pub driver: Option<Driver>,
    /// Replace a corrupt state file (the old one is kept as <file>.corrupt-<timestamp>).
    #[arg(long)]
    pub force: bool,
    /// Start a new execution even when one is running, halted or cancelled: counters,
    /// caps and the halt start over. Without it, init continues that execution.
    #[arg(long)]
    pub restart: bool,
}

/// `--driver`: the state's own `executionDriver` type.
pub(crate) use crate::model::state::Driver;

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Print JSON (every figure the text shows) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Redraw whenever the spec changes, until it is complete, halted or cancelled.
    #[arg(long, conflicts_with = "json")]
    pub watch: bool,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event whose JSON arrives on stdin.
    pub event: HookEvent,
}

/// The commands Claude Code runs on every turn, read without clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastPath {
    Hook(HookEvent),
    Statusline,
}

/// A command line that is exactly `hook <event>` (what hooks/hooks.json runs) or
/// `statusline` (Claude Code's statusLine command), read without building the whole clap
/// command tree: that build was half of the idle hook's instructions. Anything else,
/// `--cwd` included, goes to clap.
pub(crate) fn fast_path(args: &[std::ffi::OsString]) -> Option<FastPath> {
    match args {
        [verb, event] if verb == "hook" => HookEvent::from_str(event.to_str()?, false)
            .ok()
            .map(FastPath::Hook),
        [verb] if verb == "statusline" => Some(FastPath::Statusline),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookEvent {
    Stop,
    SubagentStop,
    SessionStart,
    PreToolUse,
}

#[derive(Debug, Subcommand)]
pub enum VerifyCommand {
    /// Run C with sh -c in the project root and record the evidence.
    Run {
        /// The command to run; with --task and no --command, the task's **Verify** command.
        #[arg(long, value_name = "C")]
        command: Option<String>,
        /// With --task: count a command other than the task's Verify as its evidence, for
        /// this reason. A person's decision: refused inside Claude Code (CLAUDECODE set).
        #[arg(long, value_name = "REASON", requires = "task")]
        accept_other: Option<String>,
        /// Evidence slot (verificationBlocks.<P>); default execution.
        #[arg(long, value_name = "P")]
        phase: Option<String>,
        /// Record as task evidence (taskEvidence.<ID>) instead of a phase's; default: none.
        #[arg(long, value_name = "ID")]
        task: Option<String>,
        /// Run the plan's frozen final check into the execution evidence: the one run that
        /// completes the spec.
        #[arg(long = "final", conflicts_with_all = ["command", "phase", "task"])]
        final_check: bool,
        #[command(flatten)]
        spec: SpecArg,
        /// Kill the command's process group after SECS seconds (exit 124); default: no limit.
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
    },
    /// Say whether evidence is fresh, stale, failed or missing (exit 0 only for fresh and passing).
    Status {
        /// Evidence slot (verificationBlocks.<P>); default execution.
        #[arg(long, value_name = "P")]
        phase: Option<String>,
        /// A task's evidence (taskEvidence.<ID>) instead of a phase's.
        #[arg(long, value_name = "ID")]
        task: Option<String>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CritiqueCommand {
    /// Validate a self-critique record and write it under the spec's critique/.
    Record {
        /// The task the record reviews.
        #[arg(long, value_name = "ID")]
        task: String,
        /// Which review: after the code, or after the tests ran.
        #[arg(long, value_enum)]
        stage: CritiqueStage,
        /// The record as a JSON file, or - for stdin (default: stdin).
        #[arg(long, value_name = "F")]
        file: Option<String>,
        #[command(flatten)]
        spec: SpecArg,
    },
    /// Print a blank record for a stage (every checklist id, its question, an empty
    /// note) to fill in and pass to `critique record`.
    Skeleton {
        /// Which review: after the code, or after the tests ran.
        #[arg(long, value_enum)]
        stage: CritiqueStage,
    },
    /// Say which critique records exist for a task.
    Status {
        /// The task whose records to list.
        #[arg(long, value_name = "ID")]
        task: String,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CritiqueStage {
    PostCode,
    PostTest,
}

impl CritiqueStage {
    pub fn as_str(self) -> &'static str {
        match self {
            CritiqueStage::PostCode => "post-code",
            CritiqueStage::PostTest => "post-test",
        }
    }
}

#[derive(Debug, Args)]
pub struct GoalArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Turn budget to name in the goal condition (a positive integer); default: none named.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_turns: Option<u64>,
}

#[derive(Debug, Args)]
pub struct LastMileArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Append the result to .specrun/events.jsonl.
    #[arg(long)]
    pub record: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Start an attempt at the current task (or a member of the current parallel group).
    Start {
        #[command(flatten)]
        verb: TaskVerbArgs,
        /// Run it isolated: its own branch specrun/<spec>/<id> in its own worktree (path
        /// printed last); a [P] member always may, a sequential task after `state init --isolate`.
        #[arg(long)]
        worktree: bool,
    },
    /// Complete a task once its evidence and critique records are in order.
    Complete {
        #[command(flatten)]
        verb: TaskVerbArgs,
        /// Tick the task's checkbox as part of completing it.
        #[arg(long)]
        check: bool,
    },
    /// Record a failed attempt (halts at maxTaskIterations).
    Fail {
        #[command(flatten)]
        verb: TaskVerbArgs,
        /// What failed, in one line.
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// In recovery mode, write the fix task into tasks.md.
        #[arg(long)]
        insert: bool,
    },
    /// Record why an integrity finding of the task's change is legitimate (F from `task complete`).
    Justify {
        #[command(flatten)]
        verb: TaskVerbArgs,
        /// The finding's id, as `task complete` printed it.
        #[arg(long, value_name = "F")]
        finding: String,
        /// Why the finding does not apply, in a sentence.
        #[arg(long, value_name = "TEXT")]
        reason: String,
    },
    /// Return the tree to the attempt's start commit, saving the discarded work to a ref first.
    Rollback {
        #[command(flatten)]
        verb: TaskVerbArgs,
        /// Roll back even when changes lie outside the task's Files.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AcCommand {
    /// List the criteria (Done when bullets of tasks.md, AC-… items of requirements.md) with their ids.
    List {
        /// Only this task's criteria; default: every criterion.
        #[arg(long, value_name = "ID")]
        task: Option<String>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Map a criterion to the tests that prove it (replaces its earlier mapping).
    Map {
        /// Criterion id (`1.2/AC1`, `AC-1.1`).
        id: String,
        /// A test name as the runner prints it (a trailing part after `::`, `/`, ` > ` is enough); repeatable.
        #[arg(long = "test", value_name = "NAME", required = true, num_args = 1..)]
        test: Vec<String>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Propose a criterion no command can check for a person to confirm by hand; it counts
    /// once a person confirms it (`ac confirm` at a shell). The model's verb.
    Propose(ManualArgs),
    /// Cover a criterion no automated test can check by hand; recorded and shown as manual.
    /// A person's decision: refused inside Claude Code (CLAUDECODE set).
    Confirm(ManualArgs),
    /// The matrix: criterion, tests, passed/failed/stale/missing (exit 0 only when all covered).
    Status {
        /// Only this task's criteria; default: every criterion.
        #[arg(long, value_name = "ID")]
        task: Option<String>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `ac propose` and `ac confirm`: a criterion covered by hand.
#[derive(Debug, Args)]
pub struct ManualArgs {
    /// Criterion id (`1.2/AC1`, `AC-1.1`).
    pub id: String,
    /// How it was checked by hand, and why no test or command can.
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    #[command(flatten)]
    pub spec: SpecArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TaskVerbArgs {
    /// The task id (as in tasks.md, e.g. 1.2).
    pub id: String,
    #[command(flatten)]
    pub spec: SpecArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum FollowupCommand {
    /// Add a follow-up.
    Add {
        /// VERIFY (blocks completion at high priority), REFAC or IDEA.
        #[arg(long, value_enum)]
        category: FollowupCategory,
        /// How much it matters.
        #[arg(long, value_enum)]
        priority: FollowupPriority,
        /// What to do, in one line.
        #[arg(long, value_name = "T")]
        title: String,
        /// The task it was found in; default: none.
        #[arg(long, value_name = "ID")]
        task: Option<String>,
        /// Files it concerns; default: none.
        #[arg(long, value_name = "FILE", num_args = 1..)]
        files: Vec<String>,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List follow-ups.
    List {
        /// Only open ones.
        #[arg(long)]
        open: bool,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Resolve a follow-up.
    Resolve {
        /// The follow-up's id (F1, F2, …).
        fid: String,
        /// What was done about it.
        #[arg(long, value_name = "T")]
        note: String,
        #[command(flatten)]
        spec: SpecArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum FollowupCategory {
    Verify,
    Refac,
    Idea,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FollowupPriority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Args)]
pub struct LearnArgs {
    /// The learning, one fact.
    pub text: String,
    /// The task it was learned in; default: none.
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    #[command(flatten)]
    pub spec: SpecArg,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// New maxGlobalIterations; default: unchanged.
    #[arg(long, value_name = "N", value_parser = cap)]
    pub raise_global: Option<u64>,
    /// New maxTaskIterations; default: unchanged.
    #[arg(long, value_name = "N", value_parser = cap)]
    pub raise_task: Option<u64>,
    /// New budget.maxOutputTokens; default: unchanged.
    #[arg(long, value_name = "N", value_parser = cap)]
    pub raise_tokens: Option<u64>,
    /// New budget.maxMinutes; default: unchanged.
    #[arg(long, value_name = "N", value_parser = cap)]
    pub raise_minutes: Option<u64>,
    /// New budget.maxUsd; default: unchanged.
    #[arg(long, value_name = "USD", value_parser = non_negative_usd)]
    pub raise_usd: Option<f64>,
    /// Bind the execution to this Claude Code session; default: unchanged.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Accept the spec's files as they are now over the guard's record (which halted the
    /// execution because they no longer matched it): a person's decision, at a shell.
    #[arg(long, conflicts_with_all = ["raise_global", "raise_task", "raise_tokens", "raise_minutes", "raise_usd", "session_id"])]
    pub accept_record: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub spec: SpecArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

impl Command {
    /// The person's decision this command line is, whatever the state (`claude::roles`):
    /// refused inside Claude Code before anything runs. Forms that are a person's only in
    /// some states (`state init --restart`, `followup resolve` of a blocking one) are
    /// checked where they run.
    pub fn person_decision(&self) -> Option<crate::claude::roles::Decision> {
        use crate::claude::roles::Decision;
        match self {
            Command::Resume(_) => Some(Decision::ClearHalt),
            Command::Task(TaskCommand::Justify { .. }) => Some(Decision::JustifyFinding),
            Command::Ac(AcCommand::Confirm(_)) => Some(Decision::ConfirmCriterion),
            Command::Plan(PlanCommand::Accept { missing_test, .. }) if !missing_test.is_empty() => {
                Some(Decision::AcceptMissingTest)
            }
            Command::Plan(PlanCommand::Accept { .. }) => Some(Decision::AcceptPlan),
            Command::Headless(HeadlessCommand::Merge(_) | HeadlessCommand::Pr(_)) => {
                Some(Decision::Deliver)
            }
            Command::Headless(_) => Some(Decision::RunHeadless),
            Command::State(StateCommand::Init(a)) if a.no_red_green => Some(Decision::SkipRedGreen),
            Command::Verify(VerifyCommand::Run {
                accept_other: Some(_),
                ..
            }) => Some(Decision::AcceptOther),
            _ => None,
        }
    }
}

/// A dollar amount: a finite number, zero or more.
fn non_negative_usd(s: &str) -> crate::Result<f64> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(Error::Usage(format!(
            "`{s}` is not a non-negative amount of USD"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The fast path reads exactly what clap reads, and only `hook <event>` and `statusline`.
    #[test]
    fn the_fast_path_agrees_with_clap() {
        let os = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        for event in HookEvent::value_variants() {
            let name = event.to_possible_value().unwrap().get_name().to_string();
            let fast = fast_path(&os(&["hook", &name]));
            let parsed = Cli::try_parse_from(["specrun", "hook", &name]).unwrap();
            match parsed.command {
                Command::Hook(args) => assert_eq!(fast, Some(FastPath::Hook(args.event))),
                other => panic!("{other:?}"),
            }
        }
        let parsed = Cli::try_parse_from(["specrun", "statusline"]).unwrap();
        assert!(matches!(parsed.command, Command::Statusline));
        assert_eq!(fast_path(&os(&["statusline"])), Some(FastPath::Statusline));
        for other in [
            &["hook", "Stop"][..],
            &["hook", "stop", "--cwd", "/x"],
            &["--cwd", "/x", "hook", "stop"],
            &["hook"],
            &["status"],
            &["hook", "nope"],
            &["statusline", "--help"],
        ] {
            assert_eq!(fast_path(&os(other)), None, "{other:?}");
        }
    }

    /// Every verb has a role (`claude::roles::VERBS`), the table names no verb clap lacks,
    /// and a person's verb is refused by `person_decision` in every form.
    #[test]
    fn every_verb_has_a_role_and_a_persons_verb_is_refused() {
        use crate::claude::roles::{role, Role, VERBS};
        fn leaves(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
            let subs: Vec<_> = cmd.get_subcommands().collect();
            if subs.is_empty() || path == "hook" {
                out.push(path.to_string());
            }
            for sub in subs {
                let name = sub.get_name();
                let next = if path.is_empty() {
                    name.to_string()
                } else {
                    format!("{path} {name}")
                };
                leaves(sub, &next, out);
            }
        }
        let mut verbs = Vec::new();
        leaves(&Cli::command(), "", &mut verbs);
        verbs.retain(|v| !v.is_empty() && !v.ends_with("help"));
        let missing: Vec<&String> = verbs.iter().filter(|v| role(v).is_none()).collect();
        assert!(
            missing.is_empty(),
            "verbs with no role in claude::roles::VERBS: {missing:?}"
        );
        for (v, _) in VERBS {
            assert!(
                verbs.iter().any(|c| c == v),
                "VERBS names {v:?}, which clap lacks"
            );
        }
        // A minimal command line of each person's verb is refused as one.
        let lines: &[&[&str]] = &[
            &["resume"],
            &["task", "justify", "1", "--finding", "F1", "--reason", "r"],
            &["ac", "confirm", "1/AC1", "--reason", "r"],
            &["plan", "accept"],
            &["headless", "run", "--spec", "demo"],
            &["headless", "export", "--spec", "demo"],
            &["headless", "import", "--file", "b.json"],
            &["headless", "merge", "--bundle", "b.json"],
            &["headless", "pr"],
        ];
        let persons: Vec<&str> = VERBS
            .iter()
            .filter(|(_, r)| *r == Role::Person)
            .map(|(v, _)| *v)
            .collect();
        assert_eq!(persons.len(), lines.len(), "{persons:?}");
        for line in lines {
            let cli = Cli::try_parse_from(std::iter::once("specrun").chain(line.iter().copied()))
                .unwrap();
            assert!(cli.command.person_decision().is_some(), "{line:?}");
        }
        let other = Cli::try_parse_from([
            "specrun",
            "verify",
            "run",
            "--task",
            "1",
            "--command",
            "true",
            "--accept-other",
            "r",
        ])
        .unwrap();
        assert!(other.command.person_decision().is_some());
        let own = Cli::try_parse_from(["specrun", "verify", "run", "--task", "1"]).unwrap();
        assert!(own.command.person_decision().is_none());
    }

    /// Every option says what it does, and an optional value says what happens without it.
    #[test]
    fn every_option_has_a_description_and_its_default() {
        fn walk(cmd: &clap::Command, path: &str, problems: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if help.trim().is_empty() {
                    problems.push(format!("{path} {id}: no description"));
                    continue;
                }
                let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
                let optional = !arg.is_required_set() && !arg.is_positional();
                let has_default = !arg.get_default_values().is_empty();
                let enumerated = !arg.get_possible_values().is_empty();
                if takes_value
                    && optional
                    && !has_default
                    && !enumerated
                    && !help.contains("default")
                {
                    problems.push(format!("{path} --{id}: no default named: {help:?}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), problems);
            }
        }
        let mut problems = Vec::new();
        walk(&Cli::command(), "specrun", &mut problems);
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
