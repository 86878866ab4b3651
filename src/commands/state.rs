//! `specrun state merge|get|init`.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::cli::{StateCommand, StateInitArgs};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::io::events::now_rfc3339;
use crate::io::output;
use crate::io::project::Project;
use crate::io::store;
use crate::model::state::{self, InitParams, Loose, Nullable, State};
use crate::support::shell::word as shell_word;

pub(crate) fn run(cwd: Option<&Path>, cmd: StateCommand) -> Result<ExitStatus> {
    // Discovering the project first makes a missing --cwd an error and gives the root that
    // every written path must stay inside.
    let project = Project::discover(cwd)?;
    match cmd {
        StateCommand::Merge { file, patch } => {
            let patch_arg = patch.clone();
            let patch_text = if patch == "-" {
                store::read_stdin("patch", store::MAX_READ)?
            } else {
                patch
            };
            let patch_text = patch_text.strip_prefix('\u{feff}').unwrap_or(&patch_text);
            let patch: Value = serde_json::from_str(patch_text)
                .map_err(|e| Error::bad_input("patch", format!("not valid JSON: {e}")))?;
            let path = project
                .inside(&project.cwd.join(&file))
                .map_err(|e| outside_hint(e, &project.cwd.join(&file), &patch_arg))?;
            refuse_model_patch(&path, &patch)?;
            let merged = state::merge_file(&path, &patch)?;
            follow_record(&project, &path, merged);
            Ok(ExitStatus::Success)
        }
        StateCommand::Get { file, path } => {
            let file = project.cwd.join(&file);
            let doc = store::parse_json(&file, &store::read_user_file(&file, "state file")?)?;
            match path.as_deref() {
                None => output::json_pretty(&doc),
                Some(p) => match state::get_path(&doc, p) {
                    Some(v) => output::json_pretty(v),
                    // Absent is a well-formed "no", distinct from a field that holds null.
                    None => {
                        output::note(&format!("`{p}` is not set in {}", file.display()));
                        return Ok(ExitStatus::No);
                    }
                },
            }
            Ok(ExitStatus::Success)
        }
        StateCommand::Init(args) => init(&project, args),
    }
}

/// Inside Claude Code, a spec's state file takes only `MODEL_MERGEABLE` fields: the rest is
/// the guard's record, which only the verbs (and a person at a shell) change.
fn refuse_model_patch(path: &Path, patch: &Value) -> Result<()> {
    let is_state = path
        .file_name()
        .is_some_and(|n| n == crate::io::project::STATE_FILE);
    let fields = state::guarded_fields(patch);
    if !is_state || fields.is_empty() || !crate::claude::releases::inside() {
        return Ok(());
    }
    Err(Error::Refused {
        message: format!(
            "state merge refused inside Claude Code: {} {} the execution's record, which only specrun's verbs change (a person can run this from their own shell); the model may set only {}",
            fields.join(", "),
            if fields.len() == 1 { "is part of" } else { "are part of" },
            state::MODEL_MERGEABLE.join(", ")
        ),
    })
}

/// A person's `state merge` at a shell of an executing spec's state is what the guard's
/// record follows (caps, halt, session: their decision), except counters, which never go
/// back in the record: a merge that rewinds them still halts at the next hook. Inside
/// Claude Code the model merges only fields the record does not keep.
fn follow_record(project: &Project, path: &Path, merged: Value) {
    use crate::io::record::Read;
    let is_state = path
        .file_name()
        .is_some_and(|n| n == crate::io::project::STATE_FILE);
    let (Some(dir), false) = (path.parent(), crate::claude::releases::inside()) else {
        return;
    };
    let Some(name) = dir
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| is_state)
    else {
        return;
    };
    let Read::Valid(rec) = crate::model::record::execution(&project.root, name) else {
        return;
    };
    let same_dir = |a: &Path, b: &Path| a.canonicalize().ok() == b.canonicalize().ok();
    if !rec.open() || !same_dir(Path::new(&rec.spec_dir), dir) {
        return;
    }
    // The document this merge wrote (type-checked by it), not a second read of the file.
    if let Ok(s) = State::from_checked(merged, &path.display().to_string()) {
        let _ = crate::model::record::follow(&project.root, name, &s);
    }
}

/// A file outside the project: name the `--cwd` that reaches its project.
fn outside_hint(err: Error, file: &Path, patch: &str) -> Error {
    let Error::OutsideProject { path, root } = err else {
        return err;
    };
    let dir = file
        .ancestors()
        .skip(1)
        .find(|d| d.is_dir())
        .unwrap_or(Path::new("/"));
    Error::Usage(format!(
        "{} lies outside the project root {}: to change a file of another project, run the command there: `specrun --cwd {} state merge {} {}`",
        path.display(),
        root.display(),
        crate::support::shell::path(dir),
        crate::support::shell::path(file),
        shell_word(patch)
    ))
}

fn init(project: &Project, args: StateInitArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    if let Some(cmd) = args.default_verify.as_deref() {
        // What shows every such task done is the person's to choose, never the model's.
        crate::claude::roles::person_only(crate::claude::roles::Decision::DefaultVerify)?;
        if cmd.trim().is_empty() {
            return Err(Error::Usage("--default-verify needs a command".to_string()));
        }
        crate::model::tasks_file::save_default_verify(&ex.spec.dir, cmd.trim())?;
    }
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    if let Some(refusal) = check_plan(&spec.name, &loaded) {
        output::error(&format!("{}: {refusal}", loaded.path.display()));
        return Ok(ExitStatus::No);
    }
    let counts = loaded.list.counts();
    let params = InitParams {
        name: spec.name.clone(),
        max_task_iterations: args.max_task_iterations,
        max_global_iterations: args.max_global_iterations,
        max_output_tokens: args.max_output_tokens,
        max_minutes: args.max_minutes,
        max_stall_stops: args.max_stall_stops,
        max_task_tokens: args.max_task_tokens,
        max_task_minutes: args.max_task_minutes,
        max_usd: args.max_usd,
        forecast_warn: args.forecast_warn,
        forecast_halt: args.forecast_halt,
        session_id: args.session_id.clone().filter(|s| !s.is_empty()),
        quick: args.quick,
        recovery_mode: args.recovery_mode,
        driver: args.driver.map(|d| d.as_str()),
        isolate: args.isolate,
        base_commit: crate::io::git::head(&project.root),
        no_red_green: args.no_red_green,
    };
    if args.no_red_green {
        crate::claude::roles::person_only(crate::claude::roles::Decision::SkipRedGreen)?;
    }
    refuse_unseen_session(project, params.session_id.as_deref())?;
    let path = spec.state_path();
    if args.force && std::fs::symlink_metadata(&path).is_ok() {
        crate::claude::roles::person_only(crate::claude::roles::Decision::ReplaceState)?;
    }
    let now = now_rfc3339();
    let (mut typed, continued) = {
        let _lock = store::lock(&path, store::DEFAULT_LOCK_WAIT)?;
        if let Some(detail) = refuse_laundering(project, &spec.name, &path) {
            output::error(&detail);
            let decision = crate::claude::roles::Decision::ReplaceState;
            return Err(crate::claude::roles::refuse_person(decision));
        }
        let existing = match state::read_document(&path) {
            Ok(Some(v)) if !v.is_object() => {
                let problem = format!("{} is not a JSON object", path.display());
                set_aside(&path, &problem, args.force)?;
                None
            }
            Ok(v) => v,
            Err(err @ (Error::Json { .. } | Error::NotUtf8 { .. })) => {
                set_aside(&path, &err.to_string(), args.force)?;
                None
            }
            Err(e) => return Err(e),
        };
        // The existing document is not type-checked yet: a mistyped field is dropped, the
        // rest read (a garbled field must not launder hand-ticked boxes into the baseline).
        let earlier = existing.as_ref().map(State::lenient);
        refuse_persons_init(earlier.as_ref(), &args)?;
        let baseline = crate::next::completion::baseline_at_init(earlier.as_ref(), &loaded.list);
        let mut continued = earlier
            .as_ref()
            .is_some_and(|s| !args.restart && state::is_resumable(s));
        let mut doc = match existing {
            Some(doc) if continued => {
                state::continue_execution(doc, &params, counts.next_index, counts.total)
            }
            other => state::init_execution(other, &params, counts.next_index, counts.total, &now),
        };
        // A field init does not rewrite may still hold the wrong type: refuse, or with
        // --force set the file aside and start from nothing.
        if let Err(err) = state::typecheck(&doc, &path.display().to_string()) {
            set_aside(&path, &err.to_string(), args.force)?;
            doc = state::init_execution(None, &params, counts.next_index, counts.total, &now);
            continued = false;
        }
        // The boxes ticked before this execution started: the completion gate excepts
        // them from "ticked through `task complete`". Inside Claude Code a fresh
        // execution's box counts only if it was ticked in the commit the session started
        // from: a box the model ticked (or a ticked spec it copied) is not in that commit.
        let session = params.session_id.as_deref();
        let start = start_commit(project, session);
        let carried = crate::next::completion::carries_baseline(earlier.as_ref());
        let baseline = match (carried, crate::claude::releases::inside()) {
            (false, true) => ticked_at(project, spec, start.as_deref(), baseline),
            _ => baseline,
        };
        // The document passed the check: the rest of init writes the typed state.
        let mut typed = State::from_json(doc, &path.display().to_string())?;
        typed.checked_at_init = Some(baseline.into_iter().map(Value::String).collect());
        if !continued || moved_to_another_transcript(&typed, project, session) {
            count_from_start(&mut typed, project, session);
        }
        freeze_contract(
            project,
            &mut typed,
            &loaded.list,
            continued,
            start.as_deref(),
        );
        // Stops a previous execution missed are not this one's to count; a continued
        // execution keeps its own offset (its missed stops are still to be counted).
        let ledger_end = crate::hooks::uncounted::end(project, &spec.name);
        if ledger_end > 0 && !continued {
            let guard = typed.guard.get_or_insert_with(Default::default);
            guard.uncounted_offset = Loose::Typed(ledger_end);
        }
        store::write_atomic(&path, &store::to_pretty_bytes(&typed))?;
        (typed, continued)
    };
    // A continued execution keeps what its first init took.
    let baseline = if !continued || typed.test_baseline.is_none() {
        take_baseline(project, spec, &typed, &loaded.list)?
    } else {
        None
    };
    let ignored = if !continued || typed.ignored_files.is_none() {
        ignored_files_now(project)?
    } else {
        None
    };
    if baseline.is_some() || ignored.is_some() {
        typed = keep_taken(spec, typed, baseline, ignored)?;
    }
    write_record(project, spec, &typed, continued)?;
    report_init(&spec.name, &typed, counts, continued);
    if let Some(gate) = crate::model::plan::unmet(
        &spec.name,
        typed.total_tasks(),
        typed.frozen_plan(),
        &loaded.list,
    ) {
        output::warn(&gate.detail);
    }
    if args.isolate && !crate::io::git::is_repo(&project.root) {
        output::warn(&format!(
            "isolation unavailable: {} is not a git repository; --isolate is recorded, but every task (a [P] group too) runs in the shared tree until it is one",
            project.root.display()
        ));
    }
    Ok(ExitStatus::Success)
}

/// The baseline of tests that must still run, taken at `state init` rather than at the
/// first `task start`: it belongs with the plan it is part of, on the tree the plan was
/// agreed on, and a parallel group's first starts would race to be "first". A continued
/// execution keeps its own. `None` without a final check.
fn take_baseline(
    project: &Project,
    spec: &crate::io::project::Spec,
    typed: &State,
    list: &crate::model::tasks::TaskList,
) -> Result<Option<Map<String, Value>>> {
    let Some(check) = crate::model::plan::final_check_of(typed.frozen_plan(), list) else {
        return Ok(None);
    };
    let command = check.command.as_str();
    output::note(&format!(
        "running the final check `{command}` once: the tests it runs now must still run and pass at completion"
    ));
    let at = crate::io::events::now_rfc3339();
    let ran = crate::evidence::verify_run::execute_in(&project.tree, command, None, &[])?;
    match crate::evidence::baseline_store::take(spec, command, &at, &ran.tests)? {
        Value::Object(map) => Ok(Some(map)),
        _ => Ok(None),
    }
}

/// The ignored runner files as the execution starts (`evidence::ignored_files`), after
/// the baseline run (what an honest run leaves is part of the start). Outside git there is
/// nothing git could hide.
fn ignored_files_now(project: &Project) -> Result<Option<IndexMap<String, String>>> {
    if !crate::io::git::is_repo(&project.root) {
        return Ok(None);
    }
    crate::evidence::ignored_files::snapshot(&project.root).map(Some)
}

/// What `state init` took as the execution starts, written in one update.
fn keep_taken(
    spec: &crate::io::project::Spec,
    typed: State,
    baseline: Option<Map<String, Value>>,
    ignored: Option<IndexMap<String, String>>,
) -> Result<State> {
    state::update(&spec.state_path(), store::DEFAULT_LOCK_WAIT, |current| {
        let Some(mut doc) = current else {
            return Ok((None, typed));
        };
        doc.test_baseline = baseline.or(doc.test_baseline);
        doc.ignored_files = ignored.or(doc.ignored_files);
        Ok((Some(doc.clone()), doc))
    })
}

/// What this execution is held to, taken as it starts: the plan (a continued execution
/// keeps its own, so a tasks.md rewritten since is judged against it; only a person accepts
/// a change) and the prices and notify command in force (`cost::settings`).
fn freeze_contract(
    project: &Project,
    doc: &mut State,
    list: &crate::model::tasks::TaskList,
    continued: bool,
    start: Option<&str>,
) {
    // The plan is frozen as this execution starts; a continued one keeps its own, so
    // a tasks.md rewritten since is judged against it (only a person accepts a change).
    if !continued || doc.plan.is_absent() {
        doc.plan = Loose::Typed(crate::model::plan::Plan::freeze(list));
    }
    // The prices and notify command in force: a person's, taken now (a continued
    // execution inside Claude Code keeps its own: the model may have changed them).
    use crate::cost::settings::Asker;
    let inside = crate::claude::releases::inside();
    if !(continued && inside && doc.other.contains_key("settings")) {
        let asker = if inside {
            Asker::Model(start)
        } else {
            Asker::Person
        };
        let kept = crate::cost::settings::snapshot(&project.root, asker);
        let kept = serde_json::to_value(kept).unwrap_or(Value::Null);
        doc.other.insert("settings".into(), kept);
    }
    // totalTasks counts the frozen plan (a continued execution's, not tasks.md's now).
    if let Some(plan) = doc.plan.get() {
        doc.total_tasks = Some(plan.tasks.len() as u64);
    }
}

/// A plan the format misreads is refused before any state is written (a box that is not
/// read, a fence that hides the rest, a misspelled field, duplicate ids, no task at all), and
/// so is an unchecked task with neither `**Verify**` nor `**No verify**: reason`: nothing
/// could show it done: the refusal (exit 1) names them and the fix. Warnings are counted.
fn check_plan(name: &str, loaded: &crate::model::tasks_file::LoadedTasks) -> Option<String> {
    use crate::model::tasks::lint::{self, Severity};
    let findings = lint::lint(&loaded.text, &loaded.list);
    let see = format!(
        "`specrun tasks lint {}`",
        crate::support::shell::spec_flag(name)
    );
    let mut refusals = Vec::new();
    let unverified: Vec<String> = loaded
        .list
        .tasks
        .iter()
        .filter(|t| !t.checked && t.verify_command().is_none() && t.no_verify.is_none())
        .map(|t| format!("{} (line {})", t.label(), t.line_start))
        .collect();
    if !unverified.is_empty() && loaded.format.is_foreign() {
        let ask = if crate::claude::releases::inside() {
            "the spec's default Verify (what shows a task done) is a person's choice: ask the person for it"
        } else {
            "a person gives every such task one with `specrun state init --default-verify CMD`"
        };
        refusals.push(format!(
            "read as {}, whose format has no Verify per task: {ask}",
            loaded.format.name()
        ));
    }
    if !unverified.is_empty() {
        refusals.push(format!(
            "{} task(s) have no **Verify**, so nothing can show them done: {}; add a line `  - **Verify**: <the command that shows it done, in backticks>` under each, or `  - **No verify**: <why no command can check it>`",
            unverified.len(),
            first_of(&unverified, 10, ", ")
        ));
    }
    if loaded.list.final_check().is_none() {
        refusals.push(no_final_check(loaded.format.is_foreign()));
    }
    let errors: Vec<String> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error && f.code != "missing-verify")
        .map(|f| format!("line {}: {} (fix: {})", f.line, f.message, f.fix))
        .collect();
    if !errors.is_empty() {
        refusals.push(format!(
            "{} error(s): {}",
            errors.len(),
            first_of(&errors, 3, "; ")
        ));
    }
    if !refusals.is_empty() {
        return Some(format!(
            "state init refused: {}; {see} lists every finding",
            refusals.join("; ")
        ));
    }
    let warnings = findings.len();
    if warnings > 0 {
        output::warn(&format!(
            "{}: {warnings} warning(s) in the plan, {see} lists them",
            loaded.path.display()
        ));
    }
    None
}

/// Why a plan without a final check is refused, and the line that gives it one: only the
/// final check's run completes the spec, so the plan must say which command it is.
fn no_final_check(foreign: bool) -> String {
    let line = crate::model::tasks::FINAL_CHECK_LINE;
    let default = match (foreign, crate::claude::releases::inside()) {
        (false, _) => "",
        (true, true) => "; or the spec's default Verify serves, which is a person's choice",
        (true, false) => "; or a person's `specrun state init --default-verify CMD` serves",
    };
    format!(
        "the plan declares no final check (the one command whose fresh passing run completes the spec): add the line {line} before the first task, or end the plan with a [VERIFY] task whose **Verify** is that command{default}"
    )
}

/// The first `n` of `items` joined by `sep`, then how many more there are.
fn first_of(items: &[String], n: usize, sep: &str) -> String {
    let shown = items[..items.len().min(n)].join(sep);
    match items.len().saturating_sub(n) {
        0 => shown,
        more => format!("{shown}{sep}and {more} more"),
    }
}

/// Inside Claude Code, a person's forms of `state init` are refused (`claude::roles`):
/// `--restart` over an execution (its counters and caps start over), and a cap above the
/// one in force (the continued execution's, else the default). `--force` over an existing
/// file is refused before the file is read (`init`).
fn refuse_persons_init(existing: Option<&State>, args: &StateInitArgs) -> Result<()> {
    use crate::claude::roles::{person_only, Decision};
    if args.restart && existing.is_some_and(|s| s.phase().is_some()) {
        person_only(Decision::Restart)?;
    }
    let continued = existing.filter(|s| !args.restart && state::is_resumable(s));
    let base = continued.cloned().unwrap_or_default();
    if raises_a_cap(&base, continued.is_some(), args) {
        person_only(Decision::RaiseCap)?;
    }
    Ok(())
}

/// Whether `args` loosens a cap of `base` (the continued execution, or a default state):
/// a higher limit, a cap removed (a stall cap of 0), or — on a continued execution — an
/// optional cap above the one it has. Setting an optional cap where there was none
/// tightens.
fn raises_a_cap(base: &State, continued: bool, args: &StateInitArgs) -> bool {
    let above = |new: Option<u64>, old: u64| new.is_some_and(|n| n > old);
    let above_opt = |new: Option<u64>, old: Option<u64>| match (new, old) {
        (Some(n), Some(o)) => n > o,
        _ => false,
    };
    // A stall cap of 0 is off: turning it off loosens, setting one where it was off does not.
    let stall = base.max_stall_stops();
    let stall_loosened = args
        .max_stall_stops
        .is_some_and(|n| stall > 0 && (n == 0 || n > stall));
    let (_, halt_at) = crate::cost::forecast_levels(base);
    let usd = match (args.max_usd, base.max_usd()) {
        (Some(n), Some(o)) => n > o,
        _ => false,
    };
    above(args.max_task_iterations, base.max_task_iterations())
        || above(args.max_global_iterations, base.max_global_iterations())
        || stall_loosened
        || above(args.forecast_halt, halt_at)
        || (continued
            && (above_opt(args.max_output_tokens, base.max_output_tokens())
                || above_opt(args.max_minutes, base.max_minutes())
                || above_opt(args.max_task_tokens, base.max_task_tokens())
                || above_opt(args.max_task_minutes, base.max_task_minutes())
                || usd))
}

fn report_init(name: &str, v: &state::State, counts: crate::model::tasks::Counts, continued: bool) {
    let at = counts.next_index.min(counts.total) + usize::from(counts.next_index < counts.total);
    let what = if continued {
        format!(
            "execution continued at task {at}/{} ({}/{} stops used, {} iterations of the current task; counters kept; starting over is a person's decision)",
            counts.total,
            v.global_iteration(),
            v.max_global_iterations(),
            v.task_iteration()
        )
    } else {
        format!("execution initialised at task {at}/{}", counts.total)
    };
    output::line(&format!(
        "{name}: {what} (max {} per task, {} stops, driver {})",
        v.max_task_iterations(),
        v.max_global_iterations(),
        v.driver().as_str()
    ));
    if let Some(kind) = v.halt_kind() {
        output::warn(&format!(
            "the execution is halted ({kind}): nothing runs until {}",
            crate::claude::roles::for_person(&v.resume_command(name))
        ));
    }
}

/// A state file `init` cannot build on: refused without `--force`; with it, copied to
/// `<file>.corrupt-<timestamp>` first so nothing is lost.
fn set_aside(path: &Path, problem: &str, force: bool) -> Result<()> {
    if !force {
        return Err(Error::Refused {
            message: format!("{problem}; rerun with --force to keep a copy and start fresh"),
        });
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".corrupt-{stamp}"));
    let backup = path.with_file_name(name);
    let bytes = store::read_optional(path)?.unwrap_or_default();
    store::write_new(&backup, &bytes)?;
    output::warn(&format!("kept the unusable state as {}", backup.display()));
    Ok(())
}

/// Inside Claude Code, an execution the guard's record shows under way is not started
/// again over a state that was deleted, garbled (`--force` sets it aside) or no longer
/// matches the record: its boxes would count as ticked before the run (issue 23,
/// "laundering"). A person's `state init` at a shell keeps today's rule.
fn refuse_laundering(project: &Project, name: &str, path: &Path) -> Option<String> {
    use crate::io::record::Read;
    if !crate::claude::releases::inside() {
        return None;
    }
    let rec = match crate::model::record::execution(&project.root, name) {
        Read::Absent => return None,
        Read::Valid(r) if !r.open() => return None,
        Read::Valid(r) => Some(r),
        Read::Invalid(_) => None,
    };
    let halted = rec.as_ref().and_then(|r| r.record_halt());
    let why = match state::read_document(path) {
        _ if halted.is_some() => Some(format!(
            "the guard halted it ({})",
            halted.unwrap_or_default()
        )),
        Ok(None) => Some("its state file was deleted".to_string()),
        Ok(Some(doc)) => match State::from_json(doc, &path.display().to_string()) {
            Err(e) => Some(format!("its state file cannot be used ({e})")),
            Ok(s) => rec.as_ref().and_then(|r| {
                let found = crate::model::record::Found::State(&s);
                let m = crate::model::record::mismatch(r, found)?;
                // Continuing in a new session rebinds it; anything else no longer matches.
                (!m.starts_with("the state names session")).then_some(m)
            }),
        },
        Err(e) => Some(format!("its state file cannot be read ({e})")),
    };
    let why = why?;
    let shown = rec
        .as_ref()
        .map_or("its record cannot be read".to_string(), |r| {
            format!("{} stops counted, {} tasks earned", r.stops, r.earned.len())
        });
    // The detail; the refusal itself is roles' one text (the caller adds it).
    Some(format!(
        "state init: the guard's record shows spec '{name}' under way ({shown}) and {why}; starting it again would count its ticked boxes as done before the run"
    ))
}

/// Inside Claude Code an execution is bound only to a session a hook saw start here (or a
/// person bound at a shell): a made-up id, or another session's, would leave this session's
/// turns unguarded (its hooks judge only the execution they own) and give a start commit of
/// the model's choosing (HEAD now, after it committed ticked boxes).
fn refuse_unseen_session(project: &Project, session: Option<&str>) -> Result<()> {
    let Some(sid) = session.filter(|_| crate::claude::releases::inside()) else {
        return Ok(());
    };
    let nowhere = crate::io::record::session_path(&project.root, sid).is_none();
    if nowhere || crate::model::record::binding(&project.root, sid).is_some() {
        return Ok(());
    }
    Err(Error::Refused {
        message: format!(
            "state init refused: specrun's SessionStart hook has not seen session `{sid}` in this project, so the execution cannot be bound to it (its turns would go unguarded); pass this session's id as Claude Code gives it (`${{CLAUDE_SESSION_ID}}`). If the plugin was enabled after the session started, end the turn and ask the person to start the session again (`claude --continue`) so the hook sees it"
        ),
    })
}

/// The commit the session started from, as a hook saw it (its binding). Inside Claude Code
/// that is the only one that counts (`None` without a bound session: no box ticked before
/// `state init` counts, no project config is taken); at a shell HEAD now stands in.
fn start_commit(project: &Project, session: Option<&str>) -> Option<String> {
    let bound = session
        .and_then(|sid| crate::model::record::binding(&project.root, sid))
        .and_then(|b| b.start_commit);
    match crate::claude::releases::inside() {
        true => bound,
        false => bound.or_else(|| crate::io::git::head_fast(&project.root)),
    }
}

/// The ids of `baseline` whose box is ticked in `commit`'s copy of the spec's tasks.md
/// (none without a commit, or when that commit has no such file).
fn ticked_at(
    project: &Project,
    spec: &crate::io::project::Spec,
    commit: Option<&str>,
    baseline: Vec<String>,
) -> Vec<String> {
    let rel = spec
        .tasks_path()
        .strip_prefix(&project.root)
        .map(|p| p.to_string_lossy().into_owned())
        .ok();
    let (Some(commit), Some(rel)) = (commit, rel) else {
        return Vec::new();
    };
    let Some(text) = crate::io::git::blob_at(&project.root, commit, &rel)
        .and_then(|bytes| String::from_utf8(bytes).ok())
    else {
        return Vec::new();
    };
    let then = crate::model::tasks::parse(&text);
    let ticked: Vec<String> = then
        .tasks
        .iter()
        .filter(|t| t.checked)
        .map(|t| t.label())
        .collect();
    baseline
        .into_iter()
        .filter(|id| ticked.contains(id))
        .collect()
}

/// A continued execution taken on by a session with another transcript: that transcript
/// counts from its size now, not from its size at the first Stop (the output between would
/// go uncounted). A state with no transcript yet keeps its offset (it counts more).
fn moved_to_another_transcript(doc: &State, project: &Project, session: Option<&str>) -> bool {
    let bound = session
        .and_then(|sid| crate::model::record::binding(&project.root, sid))
        .and_then(|b| b.transcript_path);
    let kept = doc.transcript_path();
    matches!((kept, bound.as_deref()), (Some(k), Some(b)) if k != b)
}

/// A fresh execution's tokens count from its start: the transcript the session was bound
/// to is read from its size now; with no transcript known, from its beginning (more than
/// the execution's, never less).
fn count_from_start(doc: &mut State, project: &Project, session: Option<&str>) {
    let bound = session
        .and_then(|sid| crate::model::record::binding(&project.root, sid))
        .and_then(|b| b.transcript_path);
    let offset = bound
        .as_deref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    let usage = doc.usage.get_or_insert_with(Default::default);
    usage.transcript_offset = Nullable::Set(offset);
    if let Some(path) = bound {
        usage.transcript_path = Nullable::Set(path);
    }
}

/// The guard's record of this execution (`model::record`), outside the spec: a fresh one,
/// or the continued one brought up to the state as init left it.
fn write_record(
    project: &Project,
    spec: &crate::io::project::Spec,
    state: &State,
    continued: bool,
) -> Result<()> {
    use crate::model::record::{self, Record};
    let now = now_rfc3339();
    let session = state.session_id();
    let binding = match session {
        Some(sid) => Some(record::bind_spec(&project.root, sid, &spec.name, &now)?),
        None => None,
    };
    let earlier = match record::execution(&project.root, &spec.name) {
        crate::io::record::Read::Valid(r) if continued => Some(r),
        _ => None,
    };
    let fresh = earlier.is_none();
    let mut rec = earlier.unwrap_or_else(|| Record {
        version: record::VERSION,
        started_at: now.clone(),
        ..Record::default()
    });
    rec.spec = spec.name.clone();
    rec.spec_dir = spec.dir.display().to_string();
    rec.session_id = session.map(str::to_string);
    if let Some(b) = &binding {
        rec.transcript_path = b.transcript_path.clone().or(rec.transcript_path.take());
    }
    // Kept from the first init that took it: the state's copy is the model's to edit.
    if rec.ignored_files.is_none() {
        rec.ignored_files = state.ignored_files.clone();
    }
    if rec.baseline_digests.is_empty() {
        rec.baseline_digests = record::baseline_digest(state)
            .map(String::from)
            .into_iter()
            .collect();
    }
    if fresh {
        rec.start_commit = binding
            .and_then(|b| b.start_commit)
            .or_else(|| crate::io::git::head_fast(&project.root));
        // The frozen plan's digest: the record notices a state whose plan was removed.
        rec.plan_digest = match state.frozen_plan() {
            crate::model::plan::Frozen::Plan(p) => Some(p.digest.clone()),
            _ => None,
        };
    }
    // A person's init (at a shell) is what the record follows: the counters as written.
    rec.stops = state.global_iteration();
    rec.output_tokens = state.output_tokens();
    rec.halt = None;
    rec.mirror(state);
    record::save(&project.root, &rec)
}
