//! Issue 23 class 4, "the contract rewritten": the plan is frozen at `state init`, and a
//! tasks.md changed during the run (a Verify weakened to `true`, a Done when deleted, an
//! unfinished task deleted or one added) is refused at `task complete` and at completion,
//! until a person accepts the new plan at a shell. `verify run --task` runs the frozen
//! Verify. Fix tasks the binary inserts join the plan; a state from before keeps working.

use std::process::Output;

use serde_json::{json, Value};

use crate::common::TempProject;

const TASKS: &str = "# Tasks\n\n## Phase 1\n\
- [ ] 1.1 Write one\n  - **Files**: one.txt\n  - **Done when**: one.txt holds 1\n  - **Verify**: `grep -qx 1 one.txt`\n\
- [ ] 1.2 Write two\n  - **Files**: two.txt\n  - **Done when**: two.txt holds 2\n  - **Verify**: `grep -qx 2 two.txt`\n";

/// `specrun args`, as the model runs it (`inside`: CLAUDECODE=1) or a person at a shell.
fn specrun(p: &TempProject, args: &[&str], inside: bool) -> Output {
    let mut cmd = p.specrun();
    cmd.args(args).env_remove("CLAUDECODE");
    if inside {
        cmd.env("CLAUDECODE", "1");
    }
    cmd.output().expect("specrun runs")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(p: &TempProject, args: &[&str], inside: bool) -> String {
    let out = specrun(p, args, inside);
    assert!(
        out.status.success(),
        "specrun {args:?} exited {:?}\n{}",
        out.status.code(),
        said(&out)
    );
    said(&out)
}

fn refused(p: &TempProject, args: &[&str], inside: bool) -> String {
    let out = specrun(p, args, inside);
    assert_eq!(
        out.status.code(),
        Some(1),
        "specrun {args:?}\n{}",
        said(&out)
    );
    said(&out)
}

fn executing(tasks: &str, flags: &[&str]) -> TempProject {
    let p = TempProject::git();
    p.spec("demo", tasks);
    p.commit_all("spec");
    let mut args = vec!["state", "init", "--spec", "demo"];
    args.extend_from_slice(flags);
    ok(&p, &args, false);
    p
}

fn critique(p: &TempProject, id: &str, stage: &str) {
    let input = crate::common::critique_input(stage);
    p.specrun()
        .args(["critique", "record", "--task", id, "--stage", stage])
        .env("CLAUDECODE", "1")
        .write_stdin(input.to_string())
        .assert()
        .success();
}

/// The executor's side of a task: start, the work, its Verify run, both critiques.
fn work(p: &TempProject, id: &str, file: &str, text: &str) -> Output {
    ok(p, &["task", "start", id], true);
    p.write(file, text);
    let verified = specrun(p, &["verify", "run", "--task", id], true);
    critique(p, id, "post-code");
    critique(p, id, "post-test");
    verified
}

fn edit(p: &TempProject, from: &str, to: &str) {
    let text = p.read("specs/demo/tasks.md");
    assert!(text.contains(from), "{from:?} not in tasks.md");
    p.write("specs/demo/tasks.md", &text.replacen(from, to, 1));
}

fn finish_ready(p: &TempProject) {
    ok(p, &["verify", "run", "--final"], true);
}

#[test]
fn state_init_freezes_the_plan_with_its_digest() {
    let p = executing(TASKS, &[]);
    let plan = &p.state("demo")["plan"];
    let tasks: Vec<&str> = plan["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["1.1", "1.2"]);
    assert_eq!(plan["tasks"][0]["verify"], "grep -qx 1 one.txt");
    assert_eq!(plan["tasks"][0]["doneWhen"], "one.txt holds 1");
    assert_eq!(plan["tasks"][0]["files"], json!(["one.txt"]));
    assert_eq!(plan["digest"].as_str().unwrap().len(), 64);
    let shown = ok(&p, &["plan", "show"], true);
    assert!(
        shown.contains("tasks.md matches the frozen plan"),
        "{shown}"
    );
}

/// The executor edits its own Verify to `true` and deletes its Done when: `verify run
/// --task` runs the frozen check (which fails), and `task complete` is refused naming the
/// task and each change. Main completed it.
#[test]
fn a_weakened_verify_and_a_deleted_done_when_are_refused_at_task_complete() {
    let p = executing(TASKS, &[]);
    edit(&p, "`grep -qx 1 one.txt`", "`true`");
    edit(&p, "  - **Done when**: one.txt holds 1\n", "");
    ok(&p, &["task", "start", "1.1"], true);
    p.write("one.txt", "not one\n");
    let verified = specrun(&p, &["verify", "run", "--task", "1.1"], true);
    assert_eq!(verified.status.code(), Some(1), "{}", said(&verified));
    let ev = &p.state("demo")["taskEvidence"]["1.1"];
    assert_eq!(ev["command"], "grep -qx 1 one.txt", "the frozen Verify ran");
    // Even with passing evidence of the frozen command, the rewritten plan is refused.
    p.write("one.txt", "1\n");
    ok(&p, &["verify", "run", "--task", "1.1"], true);
    critique(&p, "1.1", "post-code");
    critique(&p, "1.1", "post-test");
    let out = refused(&p, &["task", "complete", "1.1", "--check"], true);
    assert!(out.contains("plan-changed"), "{out}");
    assert!(
        out.contains("task 1.1's Verify changed from `grep -qx 1 one.txt` to `true`"),
        "{out}"
    );
    assert!(out.contains("task 1.1's Done when changed"), "{out}");
    assert!(
        !out.contains("plan accept"),
        "a person's verb named to the model: {out}"
    );
    assert!(p.read("specs/demo/tasks.md").contains("- [ ] 1.1"));
    // The model's legal way on: put the plan back; then it completes.
    edit(&p, "`true`", "`grep -qx 1 one.txt`");
    edit(
        &p,
        "  - **Verify**: `grep -qx 1 one.txt`",
        "  - **Done when**: one.txt holds 1\n  - **Verify**: `grep -qx 1 one.txt`",
    );
    ok(&p, &["task", "complete", "1.1", "--check"], true);
}

/// An unfinished task deleted from tasks.md: the completion (`finish`, the Stop hook's
/// gate) is refused naming it. Main completed it.
#[test]
fn a_deleted_unfinished_task_is_refused_at_completion() {
    let p = executing(&format!("**Final check**: `cat one.txt`\n{TASKS}"), &[]);
    work(&p, "1.1", "one.txt", "1\n");
    ok(&p, &["task", "complete", "1.1", "--check"], true);
    let text = p.read("specs/demo/tasks.md");
    let cut = text.find("- [ ] 1.2").unwrap();
    p.write("specs/demo/tasks.md", &text[..cut]);
    finish_ready(&p);
    let out = refused(&p, &["finish"], false);
    assert!(out.contains("task 1.2 (Write two) was deleted"), "{out}");
    assert!(!p.state("demo")["completed"].as_bool().unwrap_or(false));
    // At a shell the person is told how to accept it; accepted, the run completes.
    let shown = refused(&p, &["plan", "show"], false);
    assert!(shown.contains("specrun plan accept"), "{shown}");
    let inside = refused(&p, &["plan", "show"], true);
    assert!(!inside.contains("plan accept"), "{inside}");
    ok(&p, &["plan", "accept"], false);
    assert_eq!(p.state("demo")["totalTasks"], 1);
    ok(&p, &["finish"], false);
    let events = crate::task_helpers::events(&p);
    let accepted = events.iter().find(|e| e["event"] == "plan-accept").unwrap();
    assert_eq!(
        accepted["changes"],
        json!(["task 1.2 (Write two) was deleted"])
    );
}

#[test]
fn an_added_task_is_refused_and_plan_accept_is_a_persons_verb() {
    let p = executing(TASKS, &[]);
    let text = p.read("specs/demo/tasks.md");
    p.write(
        "specs/demo/tasks.md",
        &format!("{text}- [ ] 1.3 Extra\n  - **Verify**: `true`\n"),
    );
    work(&p, "1.1", "one.txt", "1\n");
    let out = refused(&p, &["task", "complete", "1.1", "--check"], true);
    assert!(out.contains("task 1.3 was added"), "{out}");
    let out = specrun(&p, &["plan", "accept"], true);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    assert!(said(&out).contains("a person's decision"), "{}", said(&out));
    assert_eq!(
        p.state("demo")["plan"]["tasks"].as_array().unwrap().len(),
        2
    );
    ok(&p, &["plan", "accept"], false);
    ok(&p, &["task", "complete", "1.1", "--check"], true);
}

/// The stored plan edited in the state file (its digest left) reads as broken, never as no
/// plan: the gate holds.
#[test]
fn a_hand_edited_stored_plan_is_refused() {
    let p = executing(TASKS, &[]);
    let path = p.path("specs/demo/.specrun-state.json");
    let mut doc: Value = serde_json::from_str(&p.read("specs/demo/.specrun-state.json")).unwrap();
    doc["plan"]["tasks"][0]["verify"] = json!("`true`");
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    work(&p, "1.1", "one.txt", "1\n");
    let out = refused(&p, &["task", "complete", "1.1", "--check"], true);
    assert!(out.contains("edited by hand"), "{out}");
}

/// Honest control: the two tasks done through the verbs, the plan untouched: complete.
#[test]
fn an_honest_run_against_its_frozen_plan_completes() {
    let p = executing(TASKS, &[]);
    for (id, file, text) in [("1.1", "one.txt", "1\n"), ("1.2", "two.txt", "2\n")] {
        let verified = work(&p, id, file, text);
        assert!(verified.status.success(), "{}", said(&verified));
        ok(&p, &["task", "complete", id, "--check"], true);
    }
    finish_ready(&p);
    ok(&p, &["finish"], false);
}

/// A fix task `task fail --insert` writes joins the frozen plan; a task complete after it
/// is not refused as an added task.
#[test]
fn a_fix_task_the_binary_inserts_joins_the_plan() {
    let p = executing(TASKS, &["--recovery-mode"]);
    ok(&p, &["task", "start", "1.1"], true);
    ok(
        &p,
        &[
            "task",
            "fail",
            "1.1",
            "--reason",
            "grep found 0",
            "--insert",
        ],
        true,
    );
    let ids: Vec<String> = p.state("demo")["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["1.1", "1.1.1", "1.2"]);
    assert_eq!(p.state("demo")["totalTasks"], 3);
    ok(&p, &["plan", "show"], true);
    work(&p, "1.1.1", "one.txt", "1\n");
    ok(&p, &["task", "complete", "1.1.1", "--check"], true);
}

/// A state written before plans were frozen (no `plan`) keeps today's behaviour: tasks.md
/// is read as it stands, and `plan show` says so.
#[test]
fn a_state_without_a_plan_reads_tasks_md_as_it_stands() {
    let p = executing(TASKS, &[]);
    let path = p.path("specs/demo/.specrun-state.json");
    let mut doc: Value = serde_json::from_str(&p.read("specs/demo/.specrun-state.json")).unwrap();
    doc.as_object_mut().unwrap().remove("plan");
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    edit(&p, "`grep -qx 1 one.txt`", "`test -f one.txt`");
    work(&p, "1.1", "one.txt", "x\n");
    ok(&p, &["task", "complete", "1.1", "--check"], true);
    let shown = ok(&p, &["plan", "show"], false);
    assert!(shown.contains("no plan was frozen"), "{shown}");
}

/// A criterion of a task whose Verify is a test runner or checks nothing (`true`) is not
/// covered by that Verify's passing run: it still needs a mapped test. Control for the
/// shell check (`grep -qx 1 one.txt`) above, which covers its criterion.
#[test]
fn a_verify_that_is_not_a_shell_check_leaves_its_criterion_to_tests() {
    let tasks = "# Tasks\n\n## Phase 1\n\
- [ ] 1.1 Write one\n  - **Files**: one.txt\n  - **Done when**: one.txt holds 1\n  - **Verify**: `sh ./check.sh`\n";
    let p = TempProject::git();
    p.spec("demo", tasks);
    p.write("check.sh", "grep -qx 1 one.txt\n");
    p.commit_all("spec");
    ok(&p, &["state", "init", "--spec", "demo"], false);
    let verified = work(&p, "1.1", "one.txt", "1\n");
    assert!(verified.status.success(), "{}", said(&verified));
    let out = refused(&p, &["task", "complete", "1.1", "--check"], true);
    assert!(
        out.contains("1.1/AC1 (one.txt holds 1) is unmapped"),
        "{out}"
    );
    let status = specrun(&p, &["ac", "status", "--json"], true);
    let doc: Value = serde_json::from_slice(&status.stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows[0]["status"], "unmapped", "{doc}");
}

#[test]
fn a_shell_check_verify_covers_its_criterion_once_it_passes() {
    let p = executing(TASKS, &[]);
    let status = |p: &TempProject| -> Value {
        let out = specrun(p, &["ac", "status", "--json"], true);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(status(&p)["rows"][0]["status"], "missing");
    work(&p, "1.1", "one.txt", "1\n");
    let doc = status(&p);
    assert_eq!(doc["rows"][0]["status"], "checked", "{doc}");
    assert_eq!(doc["rows"][0]["checkedBy"], "grep -qx 1 one.txt");
    ok(&p, &["task", "complete", "1.1", "--check"], true);
}

#[test]
fn a_plan_without_a_final_check_is_refused_naming_the_line_and_a_changed_one_is_a_plan_change() {
    let p = TempProject::git();
    p.spec_as_written("demo", TASKS);
    p.commit_all("spec");
    for inside in [false, true] {
        let said = refused(&p, &["state", "init", "--spec", "demo"], inside);
        assert!(
            said.contains("the plan declares no final check")
                && said.contains("**Final check**: `<the command that runs every test"),
            "{said}"
        );
    }
    assert!(!p.path("specs/demo/.specrun-state.json").exists());
    // A closing [VERIFY] task's Verify is the final check.
    let closing = format!("{TASKS}- [ ] 1.3 [VERIFY] All\n  - **Verify**: `cat one.txt two.txt`\n");
    p.spec_as_written("demo", &closing);
    ok(&p, &["state", "init", "--spec", "demo"], false);
    let check = &p.state("demo")["plan"]["finalCheck"];
    assert_eq!(check["command"], "cat one.txt two.txt", "{check}");
    assert_eq!(check["from"], "task", "{check}");

    let q = executing(&format!("**Final check**: `cat one.txt`\n{TASKS}"), &[]);
    let shown = ok(&q, &["plan", "show"], true);
    assert!(
        shown.contains("**Final check**: `cat one.txt` (the **Final check** line)"),
        "{shown}"
    );
    edit(
        &q,
        "**Final check**: `cat one.txt`",
        "**Final check**: `true`",
    );
    let shown = refused(&q, &["plan", "show"], true);
    assert!(
        shown.contains("the final check changed from `cat one.txt` to `true`"),
        "{shown}"
    );
    let finish = refused(&q, &["finish"], false);
    assert!(
        finish.contains("plan-changed") || finish.contains("the final check changed"),
        "{finish}"
    );
}

/// Issue 24 class 2: any command is the final check. `--command true` into the execution
/// slot is recorded but completes nothing; the refusal names the plan's final check, and
/// `verify run --final` runs the frozen one (not a rewritten line).
#[test]
fn only_a_run_of_the_frozen_final_check_completes_the_spec() {
    let p = executing(
        &format!("**Final check**: `cat one.txt two.txt`\n{TASKS}"),
        &[],
    );
    for (id, file, text) in [("1.1", "one.txt", "1\n"), ("1.2", "two.txt", "2\n")] {
        assert!(work(&p, id, file, text).status.success());
        ok(&p, &["task", "complete", id, "--check"], true);
    }
    ok(
        &p,
        &["verify", "run", "--phase", "execution", "--command", "true"],
        true,
    );
    let refused_finish = refused(&p, &["finish"], false);
    assert!(
        refused_finish.contains("ran `true`, not the plan's final check `cat one.txt two.txt`")
            && refused_finish.contains("specrun verify run --final --spec demo"),
        "{refused_finish}"
    );
    let status = said(&specrun(&p, &["status"], true));
    let status = status.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        status.contains("specrun verify run --final --spec demo"),
        "{status}"
    );
    // The honest control: the frozen final check, run by `--final`.
    let ran = ok(&p, &["verify", "run", "--final"], true);
    assert!(ran.contains("cat one.txt two.txt"), "{ran}");
    assert_eq!(
        p.state("demo")["verificationBlocks"]["execution"]["command"],
        "cat one.txt two.txt"
    );
    ok(&p, &["finish"], false);
}
