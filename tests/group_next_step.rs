//! An isolated group as an honest model meets it through the real client: the evidence of
//! a merged member, every surface while the group waits for its merge, and `group merge`
//! when no `[VERIFY]` task follows the group (references/isolated-groups.md).

use serde_json::Value;

use crate::common::TempProject;
use crate::group_isolation::{finish_member, git_in, ok_in, run_in, start};
use crate::hook_common::{json_of, run_hook, stop_stdin, SESSION};

/// Two `[P]` members and a sequential task after them; no `[VERIFY]` task follows the group.
const TASKS: &str = "# Tasks

## Phase 1

- [ ] 1.1 [P] Alpha
  - **Files**: a.txt
  - **Verify**: `test -f a.txt`
- [ ] 1.2 [P] Beta
  - **Files**: b.txt
  - **Verify**: `test -f b.txt`
- [ ] 1.3 After
  - **Files**: c.txt
  - **Verify**: `test -f c.txt`
";

/// A git project whose execution is owned by `SESSION` and re-prompted by the Stop hook.
fn project(tasks: &str) -> TempProject {
    let p = TempProject::git();
    p.git_cmd(&["config", "user.email", "t@example.com"]);
    p.git_cmd(&["config", "user.name", "t"]);
    p.spec("demo", tasks);
    p.write(".gitignore", ".specrun/\n");
    p.commit_all("spec");
    let init = ["state", "init", "--spec", "demo", "--session-id", SESSION];
    ok_in(&p.root(), &[&init[..], &["--driver", "stop-hook"]].concat());
    p
}

/// Both members run in their worktrees and complete; the group waits for its merge.
fn members_done(p: &TempProject) {
    let a = start(p, "1.1");
    let b = start(p, "1.2");
    finish_member(&a, "1.1", &[("a.txt", "A\n")], "test -f a.txt");
    finish_member(&b, "1.2", &[("b.txt", "B\n")], "test -f b.txt");
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// What each surface tells the coordinator (or a person) to do next.
struct Surfaces {
    stop: String,
    tasks_next: Value,
    tasks_next_text: String,
    snapshot: String,
    status_claude: String,
    status_shell: String,
    session_start: String,
}

fn surfaces(p: &TempProject) -> Surfaces {
    let root = p.root();
    let stop = json_of(&run_hook(
        p,
        "stop",
        stop_stdin(p, "Both members reported.", false, None),
    ));
    assert_eq!(stop["decision"], "block", "{stop}");
    let status = json(&ok_in(&root, &["status", "--json"]));
    let start = serde_json::json!({"session_id": SESSION, "cwd": root, "hook_event_name": "SessionStart", "source": "startup"});
    let session = json_of(&run_hook(p, "session-start", start.to_string()));
    Surfaces {
        stop: stop["reason"].as_str().unwrap().to_string(),
        tasks_next: json(&ok_in(&root, &["tasks", "next", "--json"])),
        tasks_next_text: ok_in(&root, &["tasks", "next"]),
        snapshot: json(&ok_in(&root, &["snapshot"]))["nextAction"].to_string(),
        status_claude: status["dashboard"]["nextClaude"].to_string(),
        status_shell: status["dashboard"]["nextShell"].to_string(),
        session_start: session["hookSpecificOutput"]["additionalContext"].to_string(),
    }
}

/// The real-client run: both members reported, the stop-hook driver re-prompted "Next task
/// 1.3 … Delegate it now", `tasks next` said 1.3, and `task start 1.3` refused until the
/// merge, so the executor's TASK_FAILED burned an iteration. Every surface names the merge.
#[test]
fn a_group_waiting_for_its_merge_is_the_next_step_on_every_surface() {
    let p = project(TASKS);
    members_done(&p);
    let merge = "specrun group merge --spec demo";
    let s = surfaces(&p);
    for (name, text) in [
        ("stop hook", &s.stop),
        ("tasks next", &s.tasks_next_text),
        ("snapshot", &s.snapshot),
        ("status (claude)", &s.status_claude),
        ("status (shell)", &s.status_shell),
        ("session start", &s.session_start),
    ] {
        assert!(
            text.contains(merge),
            "{name} does not name the merge: {text}"
        );
        assert!(
            !text.contains("Delegate") && !text.contains("task start 1.3"),
            "{name} sends the model to a task whose start is refused: {text}"
        );
    }
    // `tasks next` still names the next unchecked task (tasks.md's fact), but nothing to
    // delegate now, and the step to run first.
    assert_eq!(s.tasks_next["next"]["id"], "1.3", "{}", s.tasks_next);
    assert_eq!(s.tasks_next["parallelGroup"], serde_json::json!([]));
    assert_eq!(
        s.tasks_next["runFirst"]["command"], merge,
        "{}",
        s.tasks_next
    );
    // It is the start that would refuse.
    let (code, out, err) = run_in(&p.root(), &["task", "start", "1.3"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        format!("{out}{err}").contains("specrun group merge"),
        "{out}{err}"
    );

    // Following the step: the merge verifies the merged tree, then every surface moves on
    // to task 1.3.
    ok_in(&p.root(), &["group", "merge", "--spec", "demo"]);
    let s = surfaces(&p);
    assert!(s.stop.contains("Next task 1.3"), "{}", s.stop);
    assert_eq!(s.tasks_next["parallelGroup"], serde_json::json!(["1.3"]));
    assert!(s.tasks_next.get("runFirst").is_none(), "{}", s.tasks_next);
    assert!(
        s.status_shell.contains("specrun task start 1.3"),
        "{}",
        s.status_shell
    );
    for text in [&s.snapshot, &s.session_start, &s.tasks_next_text] {
        assert!(!text.contains(merge), "{text}");
    }
    ok_in(&p.root(), &["task", "start", "1.3"]);
}

/// `specrun verify status --task <member>` after the merge exited 2 ("cannot list
/// …/.specrun/worktrees/demo/1.1"): the record named the removed worktree. The member's
/// evidence is judged where its work now lives, the main checkout, and says so.
#[test]
fn a_merged_members_evidence_is_judged_on_the_merged_tree() {
    let p = project(TASKS);
    // A sibling edits a tracked file (the usual case), not only new ones.
    p.write("b.txt", "base\n");
    p.commit_all("b.txt at the base");
    members_done(&p);
    ok_in(&p.root(), &["group", "merge", "--spec", "demo"]);
    let merge_commit = p.state("demo")["isolation"]["members"]["1.1"]["mergeCommit"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!p.root().join(".specrun/worktrees/demo/1.1").exists());
    for id in ["1.1", "1.2"] {
        let (code, out, err) = run_in(&p.root(), &["verify", "status", "--task", id]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.starts_with("fresh:"), "{out}");
        assert!(out.contains("merged at "), "{out}");
    }
    let (_, out, _) = run_in(&p.root(), &["verify", "status", "--task", "1.1", "--json"]);
    let doc = json(&out);
    assert_eq!(doc["counts"], true, "{doc}");
    assert!(
        doc["reason"].as_str().unwrap().contains(&merge_commit[..7]),
        "{doc}"
    );
    // The merged tree moves on (task 1.3's file): the member's evidence is stale there, a
    // well-formed "no" with the re-run, never an I/O error.
    p.write("c.txt", "C\n");
    let (code, out, err) = run_in(&p.root(), &["verify", "status", "--task", "1.1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with("stale:") && out.contains("merged at "),
        "{out}"
    );
    assert!(
        out.contains("re-run: specrun verify run --spec demo --task 1.1"),
        "{out}"
    );
    // The re-run it prints records fresh evidence on the main checkout.
    ok_in(
        &p.root(),
        &["verify", "run", "--spec", "demo", "--task", "1.1"],
    );
    let (code, out, _) = run_in(&p.root(), &["verify", "status", "--task", "1.1"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("merged at "), "{out}");
}

/// references/isolated-groups.md step 4, with no `[VERIFY]` task after the group and no
/// execution check recorded yet: `group merge` exited 2 asking for `--command`. It verifies
/// the merged tree with the members' own Verify commands, in a slot of its own (never the
/// execution phase's, which stands for the full check and can vouch for a task).
#[test]
fn group_merge_without_a_verify_task_runs_the_members_verify_commands() {
    let p = project(TASKS);
    members_done(&p);
    let out = ok_in(&p.root(), &["group", "merge", "--spec", "demo", "--json"]);
    let doc = out
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap();
    assert_eq!(doc["groupStatus"], "complete", "{doc}");
    assert_eq!(
        doc["verified"]["command"], "test -f a.txt && test -f b.txt",
        "{doc}"
    );
    assert_eq!(
        doc["verified"]["slot"], "verificationBlocks.isolated-group",
        "{doc}"
    );
    let state = p.state("demo");
    assert!(
        state["verificationBlocks"].get("execution").is_none(),
        "{state:#}"
    );
    assert_eq!(state["verificationBlocks"]["isolated-group"]["exitCode"], 0);
    assert!(git_in(&p.root(), &["log", "--merges", "--format=%s"]).contains("merge task 1.2"));
}

/// Members with no Verify command leave nothing to check the merged tree with: the error
/// says exactly what to pass, the merges are kept, and the command it prints works.
#[test]
fn group_merge_with_nothing_to_verify_says_what_to_pass() {
    let tasks = "# Tasks\n\n- [ ] 1.1 [P] Alpha\n  - **No verify**: checked by hand (the group has no Verify on purpose)\n  - **Files**: a.txt\n- [ ] 1.2 [P] Beta\n  - **No verify**: checked by hand (the group has no Verify on purpose)\n  - **Files**: b.txt\n- [ ] 1.3 After\n  - **No verify**: checked by hand (the group has no Verify on purpose)\n";
    let p = project(tasks);
    let a = start(&p, "1.1");
    let b = start(&p, "1.2");
    finish_member(&a, "1.1", &[("a.txt", "A\n")], "test -f a.txt");
    finish_member(&b, "1.2", &[("b.txt", "B\n")], "test -f b.txt");
    let (code, out, err) = run_in(&p.root(), &["group", "merge", "--spec", "demo"]);
    assert_eq!(code, 2, "{out}{err}");
    let hint =
        "specrun group merge --spec demo --command '<the command that checks the merged tree>'";
    assert!(err.contains(hint), "{err}");
    assert_eq!(
        p.state("demo")["isolation"]["members"]["1.2"]["status"],
        "merged"
    );
    let (code, out, err) = run_in(
        &p.root(),
        &[
            "group",
            "merge",
            "--spec",
            "demo",
            "--command",
            "test -f a.txt && test -f b.txt",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}

/// A member rolled back has no worktree and nothing merged: its evidence is judged on the
/// main checkout and says why, a well-formed answer, never an I/O error.
#[test]
fn a_rolled_back_members_evidence_is_judged_on_the_main_checkout() {
    let p = project(TASKS);
    let a = start(&p, "1.1");
    std::fs::write(a.join("a.txt"), "A\n").unwrap();
    ok_in(&a, &["verify", "run", "--task", "1.1"]);
    ok_in(&p.root(), &["task", "rollback", "1.1"]);
    assert!(!a.exists());
    let (code, out, err) = run_in(&p.root(), &["verify", "status", "--task", "1.1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with("stale:") && out.contains("which is gone (task 1.1 rolled-back)"),
        "{out}"
    );
}
