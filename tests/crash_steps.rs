//! Kill at every step of each transition that writes more than one file: the debug build
//! aborts at `SPECRUN_FAULT=<point>` (src/support/fault.rs), the same verb is run again, and the
//! files must end as one uninterrupted run leaves them.

use serde_json::Value;

use crate::common::TempProject;
use crate::task_helpers::*;

const RECOVERY: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 First\n  - **Files**: src/a.rs\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n";

/// Run `args` with the crash point set; it must die there (not exit normally).
fn crash_at(p: &TempProject, point: &str, args: &[&str]) {
    let out = p
        .specrun()
        .env("SPECRUN_FAULT", point)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "{args:?} did not reach {point}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn attempt(p: &TempProject, id: &str) -> Value {
    p.state(SPEC)["attempts"][id]
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or_default()
}

fn fixes_in_tasks(p: &TempProject) -> usize {
    p.read("specs/demo/tasks.md").matches("[FIX 1.1]").count()
}

#[test]
fn task_fail_insert_survives_a_kill_at_every_step() {
    for point in [None, Some("fail:tasks-written"), Some("fail:state-written")] {
        let p = project(RECOVERY, &["--recovery-mode"]);
        run(&p, &["task", "start", "1.1"]);
        let args = ["task", "fail", "1.1", "--reason", "boom", "--insert"];
        if let Some(point) = point {
            crash_at(&p, point, &args);
        }
        let (code, out, err) = run(&p, &args);
        // After the state write the rerun finds the work done and says so.
        let expected = if point == Some("fail:state-written") {
            1
        } else {
            0
        };
        assert_eq!(code, expected, "{point:?}: {out}{err}");
        assert_eq!(fixes_in_tasks(&p), 1, "{point:?}: one fix task");
        let last = attempt(&p, "1.1");
        assert_eq!(
            (&last["status"], &last["fixTaskId"]),
            (&"failed".into(), &"1.1.1".into()),
            "{point:?}"
        );
        let s = p.state(SPEC);
        assert_eq!(s["fixTaskMap"]["1.1"]["attempts"], 1, "{point:?}");
        assert_eq!(
            s["fixTaskMap"]["1.1"]["fixTaskIds"],
            serde_json::json!(["1.1.1"])
        );
        assert_eq!(s["totalTasks"], 3, "{point:?}");
        assert_eq!(s["taskIteration"], 1, "{point:?}");
    }
}

#[test]
fn task_complete_survives_a_kill_at_every_step() {
    for point in [
        None,
        Some("complete:box-checked"),
        Some("complete:state-written"),
        Some("complete:progress-written"),
    ] {
        let p = project(TASKS, &[]);
        run(&p, &["task", "start", "1.1"]);
        ready_to_complete(&p, "1.1");
        let args = ["task", "complete", "1.1", "--check"];
        if let Some(point) = point {
            crash_at(&p, point, &args);
        }
        let (code, out, err) = run(&p, &args);
        assert_eq!(code, 0, "{point:?}: {out}{err}");
        assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.1 First"));
        assert_eq!(attempt(&p, "1.1")["status"], "done", "{point:?}");
        let progress = p.read("specs/demo/.progress.md");
        assert_eq!(
            progress.matches("1.1 First").count(),
            1,
            "{point:?}: {progress}"
        );
    }
}

#[test]
fn task_rollback_survives_a_kill_at_every_step() {
    for point in [
        None,
        Some("rollback:work-saved"),
        Some("rollback:head-moved"),
        Some("rollback:tree-reset"),
    ] {
        let p = project(TASKS, &[]);
        run(&p, &["task", "start", "1.1"]);
        let start = p.git_cmd(&["rev-parse", "HEAD"]);
        p.write("src/a.rs", "fn a() { work(); }\n");
        p.git_cmd(&["add", "-A"]);
        p.git_cmd(&["commit", "-qm", "work"]);
        p.write("src/a.rs", "fn a() { more_work(); }\n");
        run(&p, &["tasks", "check", "1.1"]);
        let tasks_before = p.read("specs/demo/tasks.md");
        let args = ["task", "rollback", "1.1"];
        if let Some(point) = point {
            crash_at(&p, point, &args);
            // The bookkeeping never went back with the tree.
            assert_eq!(p.read("specs/demo/tasks.md"), tasks_before, "{point:?}");
        }
        let (code, out, err) = run(&p, &args);
        assert_eq!(code, 0, "{point:?}: {out}{err}");
        assert_eq!(p.git_cmd(&["rev-parse", "HEAD"]), start, "{point:?}");
        assert_eq!(p.read("src/a.rs"), "fn a() {}\n", "{point:?}");
        assert_eq!(p.read("specs/demo/tasks.md"), tasks_before, "{point:?}");
        let last = attempt(&p, "1.1");
        assert_eq!(last["status"], "failed", "{point:?}");
        // The uncommitted work is in a saved rollback ref, whichever run saved it.
        let refs = p.git_cmd(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/heads/specrun/rollback/",
        ]);
        let saved = refs.lines().any(|r| {
            p.git_cmd(&["show", &format!("{r}:src/a.rs")])
                .contains("more_work")
        });
        assert!(saved, "{point:?}: the work was lost ({refs})");
        // And the ref the state records is one that holds it.
        let recorded = last["rollbackRef"].as_str().unwrap();
        let held = p.git_cmd(&["show", &format!("{recorded}:src/a.rs")]);
        assert!(
            held.contains("more_work"),
            "{point:?}: {recorded} holds {held}"
        );
    }
}
