//! Bad input at the shell: `new` with unusable names, `finish` with each gate unmet, and the
//! holes a new user hit. Every refusal that names a fix is followed by running that fix.

use serde_json::json;

use crate::common;
use crate::common::TempProject;
use crate::shell_common::Shell;

const TASKS: &str = "# Tasks\n\n- [ ] 1.1 One\n  - **Verify**: `test -f one.txt`\n- [ ] 2.1 [VERIFY] Check\n  - **Verify**: `test -f one.txt`\n";

/// A project whose execution is ready to finish: both tasks completed through the verbs,
/// the full check fresh and passing, everything committed.
fn ready() -> TempProject {
    ready_but(None)
}

/// `ready`, but task `open` is left running, reviewed and unticked.
fn ready_but(open: Option<&str>) -> TempProject {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    sh.ok("specrun new demo");
    p.write("specs/demo/tasks.md", TASKS);
    p.write("one.txt", "1\n");
    p.commit_all("plan");
    sh.ok("specrun state init --spec demo");
    for id in ["1.1", "2.1"] {
        sh.ok(&format!("specrun task start {id}"));
        sh.ok(&format!(
            "specrun verify run --task {id} --command 'test -f one.txt'"
        ));
        sh.ok(&format!(
            "specrun critique record --task {id} --stage post-code"
        ));
        sh.ok(&format!(
            "specrun critique record --task {id} --stage post-test"
        ));
        if open != Some(id) {
            sh.ok(&format!("specrun task complete {id} --check"));
        }
    }
    sh.ok("specrun verify run --phase execution --command 'test -f one.txt'");
    p
}

/// `finish` refuses naming `gate`; running each command it names, as printed, makes the
/// next `finish` complete the execution.
fn refused_then_fixed(p: &TempProject, gate: &str) {
    let mut sh = Shell::new(p);
    let before = p.read("specs/demo/.specrun-state.json");
    let refused = sh.sh("specrun finish");
    assert_eq!(refused.code, 1, "{}", refused.text());
    assert!(refused.stdout.contains(gate), "{gate}: {}", refused.text());
    assert_eq!(
        p.read("specs/demo/.specrun-state.json"),
        before,
        "a refusal writes no state"
    );
    sh.follow(&refused);
    let done = sh.ok("specrun finish");
    assert!(done.stdout.contains("complete"), "{}", done.text());
    assert_eq!(p.state("demo")["phase"], "completed");
    assert_eq!(
        sh.ok("specrun finish").stdout,
        "spec 'demo' is already complete\n"
    );
}

#[test]
fn finish_completes_when_every_gate_holds() {
    let p = ready();
    let out = Shell::new(&p).ok("specrun finish --json");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(p.state("demo")["completed"], true);
}

#[test]
fn finish_refuses_an_unchecked_task_and_names_its_complete() {
    // 2.1 ran and passed but was never completed. The refusal also names the running
    // attempt, with `task fail` as the alternative to completing it: complete it.
    let p = ready_but(Some("2.1"));
    let mut sh = Shell::new(&p);
    let refused = sh.sh("specrun finish");
    assert_eq!(refused.code, 1, "{}", refused.text());
    assert!(
        refused.stdout.contains("1 of 2 tasks unchecked (2.1)"),
        "{}",
        refused.text()
    );
    sh.follow_one(&refused, "task complete 2.1");
    sh.ok("specrun finish");
}

#[test]
fn finish_refuses_stale_or_failed_or_missing_evidence() {
    let p = ready();
    // The code changes after the full check: stale.
    p.write("one.txt", "changed\n");
    p.commit_all("change");
    refused_then_fixed(&p, "execution evidence is stale");

    let p = ready();
    // The final check failed; the hint names the run of it that passes once fixed.
    std::fs::remove_file(p.path("one.txt")).unwrap();
    Shell::new(&p).sh("specrun verify run --final");
    p.write("one.txt", "1\n");
    refused_then_fixed(&p, "execution evidence is failed");

    // Another command's run (issue 24): recorded, but only the final check's completes.
    let p = ready();
    Shell::new(&p).ok("specrun verify run --phase execution --command 'true'");
    refused_then_fixed(&p, "not the plan's final check `test -f one.txt`");

    let p = ready();
    Shell::new(&p).ok("specrun state merge specs/demo/.specrun-state.json '{\"$unset\": [\"verificationBlocks\"]}'");
    refused_then_fixed(&p, "execution evidence is missing");
}

#[test]
fn finish_refuses_an_open_blocking_followup() {
    let p = ready();
    Shell::new(&p).ok("specrun followup add --category VERIFY --priority high --title 'load test'");
    refused_then_fixed(&p, "follow-up F1 (VERIFY, high) is open");
}

#[test]
fn finish_refuses_a_halted_or_cancelled_or_unstarted_execution() {
    let p = ready();
    let halt = json!({"halt": {"kind": "global-cap", "reason": "cap", "at": "2026-01-01T00:00:00Z"}, "globalIteration": 31});
    Shell::new(&p).ok(&format!(
        "specrun state merge specs/demo/.specrun-state.json '{halt}'"
    ));
    refused_then_fixed(&p, "the execution is halted (cap)");

    let p = ready();
    Shell::new(&p).ok("specrun cancel");
    // Cancelled: `state init` starts it again (the boxes stay ticked, the evidence fresh).
    refused_then_fixed(&p, "the execution is halted (cancelled");

    let p = ready();
    std::fs::remove_file(p.path("specs/demo/.specrun-state.json")).unwrap();
    let mut sh = Shell::new(&p);
    let refused = sh.sh("specrun finish");
    assert_eq!(refused.code, 2, "{}", refused.text());
    assert!(
        refused.stderr.contains("no execution state"),
        "{}",
        refused.text()
    );
    sh.follow(&refused);
    // A new execution holds no evidence yet: the next refusal names the full check.
    refused_then_fixed(&p, "execution evidence is missing");
}

#[test]
fn new_refuses_unusable_and_existing_names_and_writes_nothing() {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    for bad in ["'a b'", "../x", ".hidden", "'a*b'", "''", "x/y"] {
        let out = sh.sh(&format!("specrun new {bad}"));
        assert_eq!(out.code, 2, "{bad}: {}", out.text());
        assert!(
            out.stderr.contains("invalid spec name"),
            "{bad}: {}",
            out.text()
        );
        assert!(!p.path("specs").exists(), "{bad} created specs/");
    }
    sh.ok("specrun new demo --goal 'first'");
    std::fs::write(
        p.path("specs/demo/tasks.md"),
        "- [ ] 1 Mine\n  - **Verify**: `true`\n",
    )
    .unwrap();
    let again = sh.sh("specrun new demo --goal 'second'");
    assert_eq!(again.code, 2, "{}", again.text());
    assert!(again.stderr.contains("already exists"), "{}", again.text());
    assert_eq!(
        p.read("specs/demo/tasks.md"),
        "- [ ] 1 Mine\n  - **Verify**: `true`\n",
        "nothing overwritten"
    );
    sh.follow(&again);
    // The ignore rules are written once, however many specs.
    sh.ok("specrun new other");
    let rules = p.read("specs/.gitignore");
    assert_eq!(rules.matches("*.lock").count(), 1, "{rules}");
    assert_eq!(p.read("specs/.current-spec"), "other\n");
}

#[test]
fn a_failed_command_leaves_nothing_that_changes_another_spec() {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    sh.ok("specrun new demo");
    p.write(
        "specs/demo/tasks.md",
        "**Final check**: `true`\n- [ ] 1.1 One\n  - **Verify**: `true`\n",
    );
    p.commit_all("plan");
    sh.ok("specrun state init --spec demo");
    sh.ok("specrun verify run --phase execution --command true");
    // A spec without tasks, made by hand, and a spec without state.
    std::fs::create_dir_all(p.path("specs/notasks")).unwrap();
    let failed = sh.sh("specrun task start 1.1 --spec notasks");
    assert_eq!(failed.code, 2, "{}", failed.text());
    assert!(failed.stderr.contains("has no tasks"), "{}", failed.text());
    for verb in ["resume", "cancel", "finish"] {
        assert_eq!(sh.sh(&format!("specrun {verb} --spec notasks")).code, 2);
    }
    let left: Vec<_> = std::fs::read_dir(p.path("specs/notasks"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(
        sh.sh("specrun verify status --spec demo").code,
        0,
        "demo's evidence stays fresh"
    );
    // A stray lock file in another spec (left by an older version) is ignored by the
    // rules `new` wrote.
    p.write("specs/notasks/.specrun-state.json.lock", "");
    assert_eq!(sh.sh("specrun verify status --spec demo").code, 0);
    // The hint names the step that works: write tasks, then the named init.
    p.write(
        "specs/notasks/tasks.md",
        "**Final check**: `true`\n- [ ] 1 A\n  - **Verify**: `true`\n",
    );
    sh.follow(&failed);
    assert_eq!(p.state("notasks")["phase"], "execution");
}

#[test]
fn hints_for_a_mistyped_spec_name_a_step_that_works() {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    // No spec at all: the hint creates the one asked for.
    let out = sh.sh("specrun verify status --spec dmeo");
    assert_eq!(out.code, 2, "{}", out.text());
    assert!(!out.text().contains("state init"), "{}", out.text());
    sh.follow(&out);
    assert!(p.path("specs/dmeo/tasks.md").exists());
    // With specs present, a typo lists them and creates nothing.
    let out = sh.sh("specrun task start 1 --spec demo2");
    assert!(out.stderr.contains("`--spec dmeo`"), "{}", out.text());
    assert!(!p.path("specs/demo2").exists());
    let snap = sh.ok("specrun snapshot --spec nosuch");
    let v: serde_json::Value = serde_json::from_str(&snap.stdout).unwrap();
    assert_eq!(v["active"], false);
    assert!(v["gates"].to_string().contains("missing-spec"), "{v}");
    let snap = sh.ok("specrun snapshot --spec dmeo");
    let v: serde_json::Value = serde_json::from_str(&snap.stdout).unwrap();
    assert_eq!(v["active"], true);
}

#[test]
fn state_merge_outside_the_project_names_the_cwd_that_works() {
    let p = TempProject::git();
    let other = TempProject::git();
    let mut sh = Shell::new(&p);
    let target = other.path("state.json");
    let out = sh.sh(&format!(
        "specrun state merge {} '{{\"a\": 1}}'",
        target.display()
    ));
    assert_eq!(out.code, 2, "{}", out.text());
    assert!(out.stderr.contains("--cwd"), "{}", out.text());
    assert!(!target.exists());
    sh.follow(&out);
    assert_eq!(common::assert_json_file(&target), json!({"a": 1}));
}

#[test]
fn caps_of_zero_are_refused_with_a_clear_message() {
    let p = TempProject::git();
    p.spec("demo", "- [ ] 1 A\n  - **Verify**: `true`\n");
    for flag in [
        "--max-task-iterations",
        "--max-global-iterations",
        "--max-output-tokens",
        "--max-minutes",
    ] {
        let out = p
            .specrun()
            .args(["state", "init", flag, "0"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("a cap of 0 would halt before the first step"),
            "{flag}: {err}"
        );
        assert!(!p.path("specs/demo/.specrun-state.json").exists());
    }
    p.init_state("demo");
    for flag in [
        "--raise-task",
        "--raise-global",
        "--raise-tokens",
        "--raise-minutes",
    ] {
        let out = p.specrun().args(["resume", flag, "0"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}");
    }
    // The stall cap's 0 is documented as "off" and stays accepted.
    p.specrun()
        .args(["state", "init", "--max-stall-stops", "0"])
        .assert()
        .success();
}

/// A misspelled `--spec` gets one answer from every verb a person runs: exit 2, the specs
/// that exist, and nothing created. `status` used to offer to plan the typo as a new spec.
#[test]
fn a_misspelled_spec_is_answered_alike_by_every_verb() {
    let p = TempProject::git();
    p.spec("cart-discounts", "- [ ] 1 A\n  - **Verify**: `true`\n");
    p.write("specs/.current-spec", "cart-discounts\n");
    let expected = "spec \"cart-discount\" not found";
    for verb in [
        "status",
        "status --json",
        "status --watch",
        "finish",
        "report",
        "tasks list",
        "tasks count",
        "tasks lint",
        "verify status",
        "ac status",
        "followup list",
        "goal",
        "cancel",
        "resume",
    ] {
        let mut args: Vec<&str> = verb.split(' ').collect();
        args.extend(["--spec", "cart-discount"]);
        let out = common::run_bounded(&p, &args, b"");
        assert_eq!(out.code, Some(2), "{verb}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(expected), "{verb}: {}", out.stderr);
        assert!(
            out.stderr.contains("`--spec cart-discounts`"),
            "{verb}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("/specrun:start"),
            "{verb}: {}",
            out.stderr
        );
        assert!(!p.path("specs/cart-discount").exists(), "{verb} created it");
    }
    // Without --spec, a project with no active spec is a state `status` shows.
    p.write("specs/.current-spec", "");
    let out = common::run_bounded(&p, &["status"], b"");
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
}
