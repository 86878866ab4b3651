//! `task rollback`: the discarded work (commits, staged, unstaged, untracked) is saved to
//! a printed ref before the tree returns to the attempt's start commit.

use crate::common;
use crate::task_helpers::*;

fn saved_ref(out: &str) -> String {
    out.split("saved at ")
        .nth(1)
        .expect("ref printed")
        .trim()
        .to_string()
}

/// Start 1.1 and leave every kind of work behind: a commit, a staged and an unstaged edit,
/// an untracked file (all inside 1.1's Files, src/a.rs, except where a test says).
fn messy_attempt(p: &common::TempProject) -> (String, String) {
    let start = p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(run(p, &["task", "start", "1.1"]).0, 0);
    p.write("src/a.rs", "fn a() { committed(); }\n");
    p.commit_all("work in progress");
    let discarded = p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string();
    p.write("src/a.rs", "fn a() { staged(); }\n");
    p.git_cmd(&["add", "src/a.rs"]);
    p.write("src/a.rs", "fn a() { unstaged(); }\n");
    (start, discarded)
}

#[test]
fn rollback_saves_everything_then_returns_to_the_start_commit() {
    let p = project(TASKS, &[]);
    let (start, discarded) = messy_attempt(&p);
    p.write("src/new_untracked.txt", "keep me\n");
    let tasks_before = p.read("specs/demo/tasks.md");
    // The untracked file lies outside 1.1's Files: refused without --force.
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "within-files: changes outside task 1.1's Files (src/a.rs): src/new_untracked.txt"
        ),
        "{out}"
    );
    let (code, out, err) = run(&p, &["task", "rollback", "1.1", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    let r = saved_ref(&out);
    assert_eq!(r, "refs/heads/specrun/rollback/demo/1.1-1");
    assert_eq!(p.git_cmd(&["rev-parse", "HEAD"]).trim(), start);
    assert_eq!(p.read("src/a.rs"), "fn a() {}\n");
    assert!(!p.path("src/new_untracked.txt").exists());
    assert_eq!(p.git_cmd(&["status", "--porcelain", "--", "src"]), "");
    // Nothing lost: the discarded commit is reachable, and every state of the work is in the ref.
    let all = p.git_cmd(&["log", "--all", "--format=%H"]);
    assert!(all.contains(&discarded), "discarded commit unreachable");
    assert_eq!(
        p.git_cmd(&["show", &format!("{r}:src/new_untracked.txt")]),
        "keep me\n"
    );
    assert_eq!(
        p.git_cmd(&["show", &format!("{r}:src/a.rs")]),
        "fn a() { unstaged(); }\n"
    );
    assert_eq!(
        p.git_cmd(&["show", &format!("{r}^2:src/a.rs")]),
        "fn a() { staged(); }\n"
    );
    assert_eq!(
        p.git_cmd(&["rev-parse", &format!("{r}^1")]).trim(),
        discarded
    );
    // Bookkeeping survives; the attempt records the ref and counts as a failure.
    assert_eq!(p.read("specs/demo/tasks.md"), tasks_before);
    let s = p.state(SPEC);
    let a = &s["attempts"]["1.1"][0];
    assert_eq!(
        (a["status"].as_str(), a["rollbackRef"].as_str()),
        (Some("failed"), Some(r.as_str()))
    );
    assert_eq!(s["taskIteration"], 1);
    // A second rollback of the same attempt saves under a fresh name, never overwriting.
    p.write("src/a.rs", "fn a() { again(); }\n");
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(saved_ref(&out), "refs/heads/specrun/rollback/demo/1.1-1.2");
    assert_eq!(
        p.state(SPEC)["taskIteration"],
        1,
        "rolling back a failed attempt counted again"
    );
}

#[test]
fn rollback_works_on_a_detached_head() {
    let p = project(TASKS, &[]);
    let head = p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string();
    p.git_cmd(&["checkout", "-q", "--detach"]);
    let (start, discarded) = messy_attempt(&p);
    assert_eq!(start, head);
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(p.git_cmd(&["rev-parse", "HEAD"]).trim(), start);
    assert!(p
        .git_cmd(&["log", "--all", "--format=%H"])
        .contains(&discarded));
}

#[test]
fn rollback_refuses_in_a_repo_without_commits_and_without_an_attempt() {
    let p = common::TempProject::bare();
    p.git_cmd(&["init", "-q", "-b", "main"]);
    p.spec(SPEC, TASKS);
    p.specrun()
        .args(["state", "init", "--spec", SPEC])
        .assert()
        .success();
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("attempt: task 1.1 has no attempt to roll back"),
        "{out}"
    );
    assert_eq!(run(&p, &["task", "start", "1.1"]).0, 0);
    p.write("src/a.rs", "x\n");
    let (code, out, _) = run(&p, &["task", "rollback", "1.1", "--force"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("has-commits: the repository has no commits"),
        "{out}"
    );
    assert!(
        out.contains("start-commit: attempt 1 of task 1.1 started before the first commit"),
        "{out}"
    );
    assert_eq!(
        p.read("src/a.rs"),
        "x\n",
        "a refused rollback touched the tree"
    );
}

#[test]
fn rollback_of_a_completed_task_is_refused() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    assert_eq!(run(&p, &["task", "complete", "1.1", "--check"]).0, 0);
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("not-complete: attempt 1 of task 1.1 is complete"),
        "{out}"
    );
}

#[test]
fn ignored_files_are_neither_saved_nor_removed() {
    let p = project(TASKS, &[]);
    p.write(".gitignore", "target/\n");
    p.commit_all("ignore");
    run(&p, &["task", "start", "1.1"]);
    p.write("target/build.o", "binary\n");
    p.write("src/a.rs", "changed\n");
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(p.read("target/build.o"), "binary\n");
    assert_eq!(p.read("src/a.rs"), "fn a() {}\n");
}

/// The README's shell flow on a spec that was never committed: `specrun new`, `state
/// init`, start, edit, rollback. The refusal names only the task's stray file (never
/// specrun's own specs/.gitignore), and --force saves and removes that file while every
/// file of specs/ (and .specrun/) stays as it was, the state gaining only the rollback.
#[test]
fn rollback_of_a_never_committed_spec_keeps_every_bookkeeping_file() {
    let p = common::TempProject::git();
    p.write("src/a.rs", "fn a() {}\n");
    p.commit_all("code only");
    assert_eq!(run(&p, &["new", SPEC]).0, 0);
    p.write(&format!("specs/{SPEC}/tasks.md"), TASKS);
    p.write(&format!("specs/{SPEC}/notes/design.md"), "why\n");
    assert_eq!(run(&p, &["state", "init", "--spec", SPEC]).0, 0);
    assert!(p.git_cmd(&["status", "--porcelain"]).contains("?? specs/"));
    assert_eq!(run(&p, &["task", "start", "1.1"]).0, 0);
    p.write("src/a.rs", "fn a() { edited(); }\n");
    p.write("src/stray.rs", "stray\n");
    let keep = |p: &common::TempProject| {
        ["tasks.md", ".progress.md", "notes/design.md"]
            .map(|f| p.read(&format!("specs/{SPEC}/{f}")))
            .into_iter()
            .chain([
                p.read("specs/.current-spec"),
                p.read("specs/.gitignore"),
                p.read(".specrun/.gitignore"),
            ])
            .collect::<Vec<_>>()
    };
    let before = keep(&p);
    let (code, out, _) = run(&p, &["task", "rollback", "1.1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("changes outside task 1.1's Files (src/a.rs): src/stray.rs;"),
        "{out}"
    );
    assert!(
        !out.contains("specs/"),
        "bookkeeping reported as drift: {out}"
    );
    let (code, out, err) = run(&p, &["task", "rollback", "1.1", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(keep(&p), before);
    assert_eq!(p.read("src/a.rs"), "fn a() {}\n");
    assert!(!p.path("src/stray.rs").exists());
    let r = saved_ref(&out);
    assert_eq!(
        p.git_cmd(&["show", &format!("{r}:src/stray.rs")]),
        "stray\n"
    );
    let s = p.state(SPEC);
    assert_eq!(
        s["attempts"]["1.1"][0]["rollbackRef"].as_str(),
        Some(r.as_str())
    );
    assert!(p.path(".specrun/events.jsonl").is_file());
    // The spec is still usable: the retry starts.
    assert_eq!(run(&p, &["task", "start", "1.1"]).0, 0);
}
