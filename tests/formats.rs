//! Specs from spec-kit, Kiro and OpenSpec (issue 28): found by their layout, read in their
//! own terms, what they lack supplied and said, ticks written back in their own marks.

use crate::common::TempProject;

const SPECKIT: &str = "# Tasks: Users\n\n## Phase 1: Setup\n- [ ] T001 Create the module in src/users.py\n\n## Phase 2: Story\n- [ ] T002 [P] Add the model in src/models/user.py\n- [ ] T003 [P] Add the service in src/services/user.py\n";

const KIRO: &str = "# Implementation Plan\n\n- [ ] 1. Build the store\n  - [ ] 1.1 Write the schema\n    - _Requirements: 1.1_\n  - [ ] 1.2 Write the queries\n    - _Requirements: 1.2_\n";

const KIRO_REQ: &str = "# Requirements\n\n### Requirement 1\n\n#### Acceptance Criteria\n\n1. WHEN a user creates an album THEN the system SHALL store it\n2. IF the name is empty THEN the system SHALL refuse it\n";

pub(crate) fn run(p: &TempProject, args: &[&str]) -> (i32, String, String) {
    let out = p
        .specrun()
        .env_remove("CLAUDECODE")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn kiro() -> TempProject {
    let p = TempProject::git();
    p.write(".kiro/specs/albums/tasks.md", KIRO);
    p.write(".kiro/specs/albums/requirements.md", KIRO_REQ);
    p
}

#[test]
fn a_kiro_spec_is_found_by_name_and_its_requirements_are_the_criteria() {
    let p = kiro();
    let (code, out, err) = run(&p, &["tasks", "show", "1.1", "--spec", "albums", "--json"]);
    assert_eq!(code, 0, "{err}");
    let t: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        t["doneWhen"],
        "- Requirement 1.1: WHEN a user creates an album THEN the system SHALL store it"
    );
    assert_eq!(t["depth"], 1);
    let (_, out, _) = run(&p, &["tasks", "lint", "--spec", "albums"]);
    assert!(out.contains("read as kiro"), "{out}");
    assert!(out.contains("criteria from requirements.md"), "{out}");
    assert!(out.contains("assumed: the format has no Verify"), "{out}");
    // By path too, the folder or its tasks.md.
    let (code, out, _) = run(
        &p,
        &["tasks", "next", "--spec", ".kiro/specs/albums/tasks.md"],
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("1.1"),
        "a sub-task runs before its parent: {out}"
    );
}

#[test]
fn a_kiro_parent_closes_when_its_sub_tasks_are_ticked_and_nothing_else_changes() {
    let p = kiro();
    run(&p, &["tasks", "check", "1.1", "--spec", "albums"]);
    assert_eq!(
        p.read(".kiro/specs/albums/tasks.md"),
        KIRO.replacen("[ ] 1.1", "[x] 1.1", 1)
    );
    run(&p, &["tasks", "check", "1.2", "--spec", "albums"]);
    assert_eq!(
        p.read(".kiro/specs/albums/tasks.md"),
        KIRO.replace("- [ ] ", "- [x] ")
    );
}

#[test]
fn a_speckit_tick_is_a_capital_x_and_phases_are_dependencies() {
    let p = TempProject::git();
    p.spec_as_written("001-users", SPECKIT);
    run(&p, &["tasks", "check", "T002", "--spec", "001-users"]);
    assert_eq!(
        p.read("specs/001-users/tasks.md"),
        SPECKIT.replacen("[ ] T002", "[X] T002", 1)
    );
    let (_, out, _) = run(
        &p,
        &["tasks", "show", "T003", "--spec", "001-users", "--json"],
    );
    let t: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(t["files"], serde_json::json!(["src/services/user.py"]));
    assert_eq!(t["depends"], serde_json::json!(["T001"]));
}

#[test]
fn state_init_asks_for_a_default_verify_and_only_a_person_sets_it() {
    let p = TempProject::git();
    p.spec_as_written("001-users", SPECKIT);
    let (code, _, err) = run(&p, &["state", "init", "--spec", "001-users"]);
    assert_eq!(code, 1, "no Verify anywhere: refused");
    assert!(err.contains("read as spec-kit"), "{err}");
    assert!(err.contains("--default-verify"), "{err}");
    // Inside Claude Code the session may not choose what shows its own work done.
    let out = p
        .specrun()
        .env("CLAUDECODE", "1")
        .args([
            "state",
            "init",
            "--spec",
            "001-users",
            "--default-verify",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a person's decision"), "{err}");
    assert!(
        !err.contains("--default-verify"),
        "no person's command for the model: {err}"
    );
    assert!(!p.path("specs/001-users/.specrun-defaults.json").exists());
    init_with_default(&p, "001-users", "python3 -m pytest -q");
    let (_, out, _) = run(
        &p,
        &["tasks", "show", "T001", "--spec", "001-users", "--json"],
    );
    let t: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(t["verify"], "python3 -m pytest -q");
    assert_eq!(
        p.read("specs/001-users/tasks.md"),
        SPECKIT,
        "the user's file untouched"
    );
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A person's `state init` with the spec's default Verify, which must succeed.
fn init_with_default(p: &TempProject, spec: &str, verify: &str) {
    let args = ["state", "init", "--spec", spec, "--default-verify", verify];
    let (code, out, err) = run(p, &args);
    assert_eq!(code, 0, "{out}{err}");
}

/// The execution's final check, as the coordinator records it before `finish`.
fn final_check(p: &TempProject, spec: &str) {
    model(p, &["verify", "run", "--final", "--spec", spec]);
}

/// `specrun args` as the model runs it (CLAUDECODE=1); asserts success.
pub(crate) fn model(p: &TempProject, args: &[&str]) -> String {
    let out = p
        .specrun()
        .env("CLAUDECODE", "1")
        .args(args)
        .output()
        .unwrap();
    let said = said(&out);
    assert!(out.status.success(), "specrun {args:?}: {said}");
    said
}

fn critique(p: &TempProject, spec: &str, id: &str, stage: &str) {
    p.specrun()
        .args([
            "critique", "record", "--task", id, "--stage", stage, "--spec", spec,
        ])
        .env("CLAUDECODE", "1")
        .write_stdin(crate::common::critique_input(stage).to_string())
        .assert()
        .success();
}

/// The executor's side of a task, then `task complete`.
fn earn(p: &TempProject, spec: &str, id: &str, file: &str) {
    model(p, &["task", "start", id, "--spec", spec]);
    p.write(file, "done\n");
    model(p, &["verify", "run", "--task", id, "--spec", spec]);
    critique(p, spec, id, "post-code");
    critique(p, spec, id, "post-test");
    model(p, &["task", "complete", id, "--check", "--spec", spec]);
}

const FLOW_SPECKIT: &str = "# Tasks: Notes\n\n## Phase 1: Setup\n- [ ] T001 Create notes/a.txt\n\n## Phase 2: Story\n- [ ] T002 [P] Create notes/b.txt\n- [ ] T003 [P] Create notes/c.txt\n";

#[test]
fn a_speckit_feature_runs_to_completion_under_the_gates_and_reads_as_speckit_after() {
    let p = TempProject::git();
    p.spec_as_written("001-notes", FLOW_SPECKIT);
    p.commit_all("spec");
    init_with_default(&p, "001-notes", "ls notes");
    let out = model(&p, &["tasks", "next", "--spec", "001-notes"]);
    assert!(out.contains("T001"), "{out}");
    earn(&p, "001-notes", "T001", "notes/a.txt");
    let out = model(&p, &["tasks", "next", "--spec", "001-notes", "--json"]);
    let next: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(next["parallelGroup"], serde_json::json!(["T002", "T003"]));
    earn(&p, "001-notes", "T002", "notes/b.txt");
    earn(&p, "001-notes", "T003", "notes/c.txt");
    assert_eq!(
        p.read("specs/001-notes/tasks.md"),
        FLOW_SPECKIT.replace("- [ ] ", "- [X] "),
        "spec-kit's implement rule: `- [X]`, nothing else changed"
    );
    final_check(&p, "001-notes");
    let (code, out, err) = run(&p, &["finish", "--spec", "001-notes"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_hand_ticked_speckit_box_is_refused_as_in_a_specrun_spec() {
    let p = TempProject::git();
    p.spec_as_written("001-notes", FLOW_SPECKIT);
    p.commit_all("spec");
    init_with_default(&p, "001-notes", "ls notes");
    earn(&p, "001-notes", "T001", "notes/a.txt");
    // What the model's `sed -i` would do: tick T002 and T003 without the protocol.
    let text = p.read("specs/001-notes/tasks.md");
    p.write(
        "specs/001-notes/tasks.md",
        &text.replace("- [ ] T", "- [X] T"),
    );
    final_check(&p, "001-notes");
    let out = p
        .specrun()
        .env_remove("CLAUDECODE")
        .args(["finish", "--spec", "001-notes"])
        .output()
        .unwrap();
    let said = said(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("task T002 was ticked during this execution without `specrun task complete`"),
        "{said}"
    );
}

#[test]
fn a_kiro_spec_runs_to_completion_and_its_parent_closes_with_its_children() {
    let p = kiro();
    p.commit_all("spec");
    init_with_default(&p, "albums", "ls store");
    // The criteria are requirements.md's items; the test map covers them.
    let ac = model(&p, &["ac", "list", "--spec", "albums"]);
    assert!(ac.contains("WHEN a user creates an album"), "{ac}");
    for (id, file) in [("1.1", "store/schema.sql"), ("1.2", "store/queries.sql")] {
        model(&p, &["task", "start", id, "--spec", "albums"]);
        p.write(file, "done\n");
        model(&p, &["verify", "run", "--task", id, "--spec", "albums"]);
        critique(&p, "albums", id, "post-code");
        critique(&p, "albums", id, "post-test");
        let crit = format!("{id}/AC1");
        p.specrun()
            .env_remove("CLAUDECODE")
            .args([
                "ac",
                "confirm",
                &crit,
                "--reason",
                "read by hand",
                "--spec",
                "albums",
            ])
            .assert()
            .success();
        model(&p, &["task", "complete", id, "--check", "--spec", "albums"]);
    }
    assert_eq!(
        p.read(".kiro/specs/albums/tasks.md"),
        KIRO.replace("- [ ] ", "- [x] "),
        "Kiro's nesting kept, the parent closed with its children"
    );
    final_check(&p, "albums");
    let (code, out, err) = run(&p, &["finish", "--spec", "albums"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// The shared corpus (../shared/reference/realworld-tasks, outside the repository), each
/// spec-kit, Kiro and OpenSpec file put in its own layout: read as its format (a
/// smart-ralph "speckit" file written with specrun's fields reads as specrun's), and
/// counted as a careful reader counts it or flagged on a line. Without the corpus it checks
/// nothing.
#[test]
fn the_corpus_in_its_layouts_reads_as_each_format_and_as_a_reader_counts() {
    let manifest = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let Some(dir) = manifest
        .parent()
        .map(|p| p.join("shared/reference/realworld-tasks"))
        .filter(|d| d.join("INDEX.tsv").is_file())
    else {
        eprintln!("note: no ../shared/reference/realworld-tasks; the corpus check did nothing");
        return;
    };
    let index = std::fs::read_to_string(dir.join("INDEX.tsv")).unwrap();
    let p = TempProject::git();
    let mut wrong = Vec::new();
    let mut read = 0;
    for (n, row) in index.lines().skip(1).enumerate() {
        let cols: Vec<&str> = row.split('\t').collect();
        let (file, format, total, checked) = (cols[0], cols[4], cols[5], cols[6]);
        let (folder, want) = match format {
            "speckit" => (format!("specs/{n:03}-corpus"), "spec-kit"),
            "kiro" => (format!(".kiro/specs/corpus-{n}"), "kiro"),
            "openspec" => (format!("openspec/changes/corpus-{n}"), "openspec"),
            _ => continue,
        };
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        p.write(&format!("{folder}/tasks.md"), &text);
        let out = p
            .specrun()
            .args(["tasks", "lint", "--json", "--spec", &folder])
            .output()
            .unwrap();
        let lint: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{file}: not JSON ({e})"));
        let own_fields = text.contains("**Verify**") || text.contains("**Do**");
        let want = if own_fields { "specrun" } else { want };
        if lint["format"] != want {
            wrong.push(format!("{file}: read as {}, not {want}", lint["format"]));
        }
        let got = (
            lint["counts"]["total"].to_string(),
            lint["counts"]["completed"].to_string(),
        );
        let flagged = lint["findings"].as_array().is_some_and(|f| {
            f.iter().any(|f| {
                ["unread-checkbox", "checklist-without-ids", "unclosed-fence"]
                    .contains(&f["code"].as_str().unwrap_or(""))
            })
        });
        if got != (total.to_string(), checked.to_string()) && !flagged {
            wrong.push(format!(
                "{file}: reader {total}/{checked}, specrun {}/{}",
                got.0, got.1
            ));
        }
        read += 1;
    }
    eprintln!("corpus: {read} spec-kit, Kiro and OpenSpec files read in their layouts");
    assert!(read > 0);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The person's default Verify is frozen with the plan: the model rewriting the defaults
/// file (past the guard, say with a script) to `true` does not weaken the check. The
/// model's own Bash write of it is denied by the guard (tool_guard's unit test).
#[test]
fn a_default_verify_rewritten_after_init_is_not_the_check_that_runs() {
    let p = TempProject::git();
    p.spec_as_written("001-notes", FLOW_SPECKIT);
    p.commit_all("spec");
    init_with_default(&p, "001-notes", "test -f notes/a.txt");
    p.write(
        "specs/001-notes/.specrun-defaults.json",
        "{\"verify\": \"true\"}\n",
    );
    model(&p, &["task", "start", "T001", "--spec", "001-notes"]);
    let out = p
        .specrun()
        .env("CLAUDECODE", "1")
        .args(["verify", "run", "--task", "T001", "--spec", "001-notes"])
        .output()
        .unwrap();
    let said = said(&out);
    assert_ne!(out.status.code(), Some(0), "the frozen check fails: {said}");
    assert!(said.contains("test -f notes/a.txt"), "{said}");
}

/// A Kiro parent ticked by hand while a required sub-task is open is refused at
/// completion; closed with its sub-tasks through `task complete` it is not (above).
#[test]
fn a_hand_ticked_kiro_parent_is_refused() {
    let p = kiro();
    p.commit_all("spec");
    init_with_default(&p, "albums", "ls store");
    let text = p.read(".kiro/specs/albums/tasks.md");
    p.write(
        ".kiro/specs/albums/tasks.md",
        &text.replacen("- [ ] 1. Build", "- [x] 1. Build", 1),
    );
    let (code, out, err) = run(&p, &["finish", "--spec", "albums"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        format!("{out}{err}")
            .contains("task 1 was ticked during this execution without `specrun task complete`"),
        "{out}{err}"
    );
}

/// `tasks lint` on a foreign spec without a default Verify names the person's flag at a
/// shell only: inside Claude Code the model reads it, and the default is not its choice.
#[test]
fn lint_names_the_default_verify_flag_to_a_person_only() {
    let p = kiro();
    let (_, out, _) = run(&p, &["tasks", "lint", "--spec", "albums"]);
    assert!(
        out.contains("specrun state init --default-verify CMD"),
        "{out}"
    );
    let inside = p
        .specrun()
        .env("CLAUDECODE", "1")
        .args(["tasks", "lint", "--spec", "albums"])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&inside.stdout),
        String::from_utf8_lossy(&inside.stderr)
    );
    assert!(said.contains("a person's choice"), "{said}");
    crate::roles::assert_no_persons_command(&said, "tasks lint inside Claude Code");
}

/// Kiro as Kiro writes it: `1.` and its `1.1` at one indent, `(P)` in a title.
const KIRO_FLAT: &str = "# Implementation Plan\n\n- [ ] 1. Build the store\n- [ ] 1.1 (P) Write the schema\n  - _Requirements: 1.1_\n- [ ] 1.2 (P) Write the queries\n  - _Requirements: 1.2_\n";

/// spec-kit with its first phase done (`[X]`) and a `[P]` pair with a story marker.
const SPECKIT_BEGUN: &str = "# Tasks: Users\n\n## Phase 1: Setup\n- [X] T001 Create the module in src/users.py\n\n## Phase 2: Story\n- [ ] T002 [P] [US1] Add the model in src/models/user.py\n- [ ] T003 [P] [US1] Add the service in src/services/user.py\n";

/// A spec whose execution `SESSION` owns under the stop-hook driver, set up by a person.
pub(crate) fn executing(p: &TempProject, spec: &str) {
    // The active spec, as the implement skill names it (a Kiro spec too).
    p.write("specs/.current-spec", &format!("{spec}\n"));
    p.commit_all("spec");
    let init = [
        "state",
        "init",
        "--spec",
        spec,
        "--session-id",
        crate::hook_common::SESSION,
        "--driver",
        "stop-hook",
        "--default-verify",
        "true",
    ];
    let (code, out, err) = run(p, &init);
    assert_eq!(code, 0, "{out}{err}");
}

pub(crate) fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// What every reader says of the spec: (reader, its words), after `tasks next --json`'s
/// next task, its counts and the whole `tasks list --json`.
struct Readings {
    next: serde_json::Value,
    count: serde_json::Value,
    list: serde_json::Value,
    list_text: String,
    words: Vec<(&'static str, String)>,
}

fn readings(p: &TempProject, spec: &str) -> Readings {
    let ok = |args: &[&str]| {
        let (code, out, err) = run(p, args);
        assert!(code == 0, "specrun {args:?}: {out}{err}");
        out
    };
    let next = json(&ok(&["tasks", "next", "--spec", spec, "--json"]));
    let count = json(&ok(&["tasks", "count", "--spec", spec]));
    let list = json(&ok(&["tasks", "list", "--spec", spec, "--json"]));
    let list_text = ok(&["tasks", "list", "--spec", spec]);
    let line = p
        .specrun()
        .args(["statusline"])
        .write_stdin(serde_json::json!({ "cwd": p.root() }).to_string())
        .output()
        .unwrap();
    let statusline = String::from_utf8_lossy(&line.stdout).into_owned();
    let status = ok(&["status", "--spec", spec]);
    let snapshot = ok(&["snapshot", "--spec", spec]);
    let stop = crate::hook_common::run_hook(
        p,
        "stop",
        crate::hook_common::stop_stdin(p, "Working on it.", false, None),
    );
    let stop = json(&stop)["reason"].as_str().unwrap_or("").to_string();
    Readings {
        next,
        count,
        list,
        list_text,
        words: vec![
            ("statusline", statusline),
            ("status", status),
            ("snapshot", snapshot),
            ("stop hook", stop),
        ],
    }
}

/// Every reader — `tasks count`, `tasks list` (and `--json`), the status line, `status`,
/// `snapshot`, the Stop hook — reads a Kiro file in Kiro's terms, as `tasks next` does: the
/// sub-task `1.1` written at its parent's indent runs first, its `(P)` is a marker, its
/// criterion is requirements.md's item. Read as specrun's own format, the next task was
/// the parent `1` and the title kept `(P)`.
#[test]
fn every_reader_reads_a_kiro_spec_in_kiros_terms() {
    let p = TempProject::git();
    p.write(".kiro/specs/albums/tasks.md", KIRO_FLAT);
    p.write(".kiro/specs/albums/requirements.md", KIRO_REQ);
    executing(&p, "albums");
    let r = readings(&p, "albums");
    assert_eq!(r.next["next"]["id"], "1.1", "{}", r.next);
    assert_eq!(r.next["next"]["title"], "Write the schema", "{}", r.next);
    assert_eq!(r.count, r.next["counts"], "tasks count");
    assert_eq!(r.count["nextIndex"], 1, "{}", r.count);
    assert_eq!(r.list["counts"], r.next["counts"], "tasks list --json");
    let t = &r.list["tasks"][1];
    assert_eq!(t["title"], "Write the schema", "{t}");
    assert_eq!(t["markers"], serde_json::json!(["P"]), "{t}");
    assert_eq!(t["depth"], 1, "{t}");
    assert_eq!(
        t["doneWhen"],
        "- Requirement 1.1: WHEN a user creates an album THEN the system SHALL store it"
    );
    assert!(
        r.list_text.contains("[ ] 1.1 [P] Write the schema\n"),
        "{}",
        r.list_text
    );
    for (reader, words) in &r.words {
        assert!(
            words.contains("1.1") && !words.contains("(P)"),
            "{reader} does not name the next task 1.1 in Kiro's terms: {words}"
        );
    }
    let stop = &r.words[3].1;
    assert!(stop.contains("Next task 1.1: Write the schema"), "{stop}");
    assert!(r.words[0].1.contains("albums 0/3"), "{}", r.words[0].1);
}

/// The same for spec-kit: `[X]` is done, a task's paths are its Files and a phase's tasks
/// depend on the phase before, in `tasks list --json` and the Stop hook's brief as in
/// `tasks show`. Read as specrun's own format, `tasks list --json` had no Files, no Depends
/// and no Verify.
#[test]
fn every_reader_reads_a_speckit_spec_in_speckits_terms() {
    let p = TempProject::git();
    p.spec("001-users", SPECKIT_BEGUN);
    executing(&p, "001-users");
    let r = readings(&p, "001-users");
    assert_eq!(r.next["next"]["id"], "T002", "{}", r.next);
    assert_eq!(r.count, r.next["counts"], "tasks count");
    assert_eq!(r.count["completed"], 1, "[X] is done: {}", r.count);
    assert_eq!(r.list["counts"], r.next["counts"], "tasks list --json");
    let t = &r.list["tasks"][1];
    assert_eq!(
        t, &r.next["next"],
        "tasks list --json reads T002 as tasks next does"
    );
    assert_eq!(t["files"], serde_json::json!(["src/models/user.py"]), "{t}");
    assert_eq!(t["depends"], serde_json::json!(["T001"]), "{t}");
    assert_eq!(t["verify"], "true", "the person's default: {t}");
    assert!(
        r.list_text.contains("[x] T001 Create the module") && r.list_text.ends_with("1/3 done\n"),
        "{}",
        r.list_text
    );
    for (reader, words) in &r.words {
        assert!(
            words.contains("T002"),
            "{reader} does not name the next task T002: {words}"
        );
    }
    let stop = &r.words[3].1;
    assert!(
        stop.contains("Next task T002: [US1] Add the model in src/models/user.py")
            && stop.contains("Files: src/models/user.py")
            && stop.contains("Verify: `true`"),
        "{stop}"
    );
    assert!(r.words[0].1.contains("001-users 1/3"), "{}", r.words[0].1);
}

/// OpenSpec: the change's delta specs' scenarios are read and counted in `tasks lint`, and
/// since no task links to one, lint says none became a task's criterion.
#[test]
fn openspec_scenarios_are_read_and_lint_says_no_task_takes_one() {
    let p = TempProject::git();
    p.write(
        "openspec/changes/add-archive/tasks.md",
        "## 1. Command\n- [ ] 1.1 Add the archive command\n- [ ] 1.2 Add its tests\n",
    );
    p.write(
        "openspec/changes/add-archive/specs/cli/spec.md",
        "## ADDED Requirements\n### Requirement: Archive\nThe CLI SHALL archive a change.\n\n#### Scenario: Archive a done change\n- **WHEN** a user runs `openspec archive x`\n- **THEN** x moves to archive/\n\n#### Scenario: Refuse an open change\n- **WHEN** x has open tasks\n- **THEN** nothing moves\n",
    );
    let (_, out, err) = run(&p, &["tasks", "lint", "--spec", "add-archive"]);
    assert!(out.contains("read as openspec"), "{out}{err}");
    assert!(
        out.contains("read: 2 scenario(s) under 1 requirement(s) in the change's specs/"),
        "{out}"
    );
    assert!(
        out.contains("assumed: OpenSpec links no task to a requirement"),
        "{out}"
    );
    let (_, out, _) = run(
        &p,
        &["tasks", "show", "1.1", "--spec", "add-archive", "--json"],
    );
    assert_eq!(json(&out)["doneWhen"], serde_json::Value::Null, "{out}");
}
