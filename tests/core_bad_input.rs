//! Issue 2, "Bad input": every case gets a clear, named error (exit 2) and loses nothing.
//! Unreadable files: the tests run as root, where `chmod 000` does not stop a read, so a
//! file is made unreadable by putting a directory at its path (read fails with EISDIR).

use predicates::prelude::*;

use crate::common::TempProject;

const TASKS: &str = "## Phase 1\n- [x] 1.1 First\n- [ ] 1.2 Second\n  - **Verify**: `true`\n";
const STATE: &str = "specs/demo/.specrun-state.json";

fn project_with_state() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.write(
        STATE,
        "{\"phase\":\"execution\",\"custom\":{\"keep\":true}}\n",
    );
    p
}

/// Files in the spec directory, so a test can see nothing was added or removed.
fn spec_files(p: &TempProject) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(p.path("specs/demo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn missing_tasks_file_is_named() {
    let p = TempProject::git();
    p.write("specs/demo/.keep", "");
    p.specrun()
        .args(["tasks", "count", "specs/demo/tasks.md"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "specrun: error: tasks file not found",
        ))
        .stderr(predicate::str::contains("specs/demo/tasks.md"));
    p.specrun()
        .args(["tasks", "check", "1", "--spec", "demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("tasks file not found"));
    // No lock file is left beside a file that does not exist.
    assert_eq!(spec_files(&p), [".keep"]);
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("tasks file not found"));
    assert!(!p.path(STATE).exists());
    // snapshot reports it as a gate, not an error.
    p.specrun()
        .args(["snapshot", "--spec", "demo"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("\"missing-tasks\""));
}

#[test]
fn missing_state_file_is_named() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.specrun()
        .args(["state", "get", STATE])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("state file not found"))
        .stderr(predicate::str::contains(".specrun-state.json"));
    p.specrun()
        .args(["snapshot"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("\"no-state\""));
}

#[test]
fn missing_spec_directory_is_named() {
    let p = TempProject::git();
    p.write("specs/.current-spec", "gone\n");
    p.specrun()
        .args(["state", "init", "--spec", "gone"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("spec \"gone\" not found"))
        .stderr(predicate::str::contains("specs/gone"));
    p.specrun()
        .args(["state", "merge", "specs/gone/.specrun-state.json", "{}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("directory not found"))
        .stderr(predicate::str::contains("specs/gone"));
    assert!(!p.path("specs/gone").exists(), "nothing may be created");
    p.specrun()
        .args(["tasks", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("spec \"gone\" not found"))
        .stderr(predicate::str::contains("`specrun new gone`"));
    let out = p.specrun().arg("snapshot").assert().code(0);
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["gates"], serde_json::json!(["missing-spec"]));
}

#[test]
fn unreadable_tasks_file_is_named() {
    let p = TempProject::git();
    p.write("specs/.current-spec", "demo\n");
    // A directory where tasks.md should be: every read of it fails.
    std::fs::create_dir_all(p.path("specs/demo/tasks.md")).unwrap();
    p.specrun()
        .args(["tasks", "count", "specs/demo/tasks.md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "is a directory, not a regular file",
        ))
        .stderr(predicate::str::contains("specs/demo/tasks.md"));
    p.specrun()
        .args(["tasks", "check", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("specs/demo/tasks.md"));
    let out = p.specrun().arg("snapshot").assert().code(0);
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["gates"], serde_json::json!(["unreadable-tasks"]));
}

#[test]
fn unreadable_state_file_is_named_and_never_replaced() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    std::fs::create_dir_all(p.path(STATE)).unwrap();
    p.specrun()
        .args(["state", "get", STATE])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "is a directory, not a regular file",
        ))
        .stderr(predicate::str::contains(".specrun-state.json"));
    p.specrun()
        .args(["state", "merge", STATE, "{\"a\":1}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".specrun-state.json"));
    p.specrun()
        .args(["state", "init", "--spec", "demo", "--force"])
        .assert()
        .code(2);
    assert!(p.path(STATE).is_dir(), "the unreadable path is left alone");
    let out = p.specrun().arg("snapshot").assert().code(0);
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["state"]["valid"], false);
    assert!(doc["gates"]
        .as_array()
        .unwrap()
        .contains(&"invalid-state".into()));
}

#[test]
fn invalid_utf8_is_named_and_file_kept() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    let bad_tasks = b"- [ ] 1 caf\xe9\n  - **Verify**: `true`\n".to_vec();
    std::fs::write(p.path("specs/demo/tasks.md"), &bad_tasks).unwrap();
    p.specrun()
        .args(["tasks", "count", "specs/demo/tasks.md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not valid UTF-8"))
        .stderr(predicate::str::contains("specs/demo/tasks.md"));
    p.specrun()
        .args(["tasks", "check", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not valid UTF-8"));
    assert_eq!(
        std::fs::read(p.path("specs/demo/tasks.md")).unwrap(),
        bad_tasks
    );

    std::fs::write(p.path("specs/demo/tasks.md"), TASKS).unwrap();
    let bad_state = b"{\"name\":\"\xff\"}".to_vec();
    std::fs::write(p.path(STATE), &bad_state).unwrap();
    p.specrun()
        .args(["state", "merge", STATE, "{\"a\":1}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not valid UTF-8"))
        .stderr(predicate::str::contains(".specrun-state.json"));
    p.specrun()
        .args(["state", "get", STATE])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not valid UTF-8"));
    assert_eq!(std::fs::read(p.path(STATE)).unwrap(), bad_state);
    // A patch that is not UTF-8 (from stdin) is refused too.
    p.specrun()
        .args(["state", "merge", "specs/demo/other.json", "-"])
        .write_stdin(b"{\"a\":\"\xff\"}".to_vec())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("patch"));
    assert!(!p.path("specs/demo/other.json").exists());
}

#[test]
fn truncated_json_state_is_never_overwritten_by_merge() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    let truncated = "{\"phase\":\"execution\",\"custom\":{\"keep\":tr";
    p.write(STATE, truncated);
    p.specrun()
        .args(["state", "merge", STATE, "{\"a\":1}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not valid JSON"))
        .stderr(predicate::str::contains(".specrun-state.json"));
    assert_eq!(p.read(STATE), truncated);
    // init refuses without --force …
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--force"));
    assert_eq!(p.read(STATE), truncated);
    // … and with it keeps a copy first.
    p.specrun()
        .args(["state", "init", "--spec", "demo", "--force"])
        .assert()
        .success()
        .stderr(predicate::str::contains(".corrupt-"));
    let backups: Vec<_> = std::fs::read_dir(p.path("specs/demo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|path| {
            path.to_string_lossy()
                .contains(".specrun-state.json.corrupt-")
        })
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), truncated);
    assert_eq!(p.state("demo")["phase"], "execution");
}

#[test]
fn non_object_state_is_backed_up_by_init_force() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.write(STATE, "[1, 2, 3]\n");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a JSON object"));
    p.specrun()
        .args(["state", "merge", STATE, "{\"a\":1}"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("must be an object"));
    assert_eq!(p.read(STATE), "[1, 2, 3]\n");
    p.specrun()
        .args(["state", "init", "--spec", "demo", "--force"])
        .assert()
        .success();
    let backup = std::fs::read_dir(p.path("specs/demo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|path| path.to_string_lossy().contains(".corrupt-"))
        .expect("a backup of the non-object state");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), "[1, 2, 3]\n");
    assert_eq!(p.state("demo")["taskIndex"], 1);
}

#[test]
fn patch_that_is_not_an_object_is_refused() {
    let p = project_with_state();
    let before = p.read(STATE);
    for patch in ["[1]", "\"x\"", "42", "null"] {
        p.specrun()
            .args(["state", "merge", STATE, patch])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "bad patch: the patch must be a JSON object",
            ));
    }
    p.specrun()
        .args(["state", "merge", STATE, "{\"a\":"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad patch: not valid JSON"));
    assert_eq!(p.read(STATE), before);
}

#[test]
fn unset_that_is_not_a_string_array_is_refused() {
    let p = project_with_state();
    let before = p.read(STATE);
    for patch in [
        r#"{"$unset":"custom"}"#,
        r#"{"$unset":[1]}"#,
        r#"{"$unset":{"custom":true}}"#,
        r#"{"a":1,"$unset":["custom",null]}"#,
    ] {
        p.specrun()
            .args(["state", "merge", STATE, patch])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "`$unset` must be an array of strings",
            ));
    }
    assert_eq!(p.read(STATE), before);
}

#[test]
fn mistyped_known_field_is_refused_with_its_name() {
    let p = project_with_state();
    let before = p.read(STATE);
    p.specrun()
        .args([
            "state",
            "merge",
            STATE,
            r#"{"budget":{"maxMinutes":"ten"}}"#,
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "field `budget.maxMinutes` must be a non-negative integer or null",
        ));
    assert_eq!(p.read(STATE), before);
}

#[test]
fn spec_name_with_parent_dir_is_refused() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    // A tasks.md outside the project that a `../` name would reach.
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(
        victim.join("tasks.md"),
        "- [ ] 1 Outside\n  - **Verify**: `true`\n",
    )
    .unwrap();
    let escape = climb_to(&p.root(), &victim);

    for args in [
        vec!["tasks", "check", "1", "--spec", escape.as_str()],
        vec!["state", "init", "--spec", escape.as_str()],
        vec!["snapshot", "--spec", escape.as_str()],
        vec!["tasks", "check", "1", "--spec", "../demo"],
    ] {
        p.specrun()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("outside the project root"));
    }
    for name in ["..", ".hidden", "a..b"] {
        p.specrun()
            .args(["state", "init", "--spec", name])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("invalid spec name"));
    }
    // .current-spec is held to the same rule.
    p.write("specs/.current-spec", &format!("{escape}\n"));
    p.specrun()
        .args(["tasks", "check", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("outside the project root"));
    p.specrun()
        .args([
            "state",
            "merge",
            &format!("{}/state.json", victim.display()),
            "{}",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("outside the project root"));
    assert_eq!(
        std::fs::read_to_string(victim.join("tasks.md")).unwrap(),
        "- [ ] 1 Outside\n  - **Verify**: `true`\n"
    );
    let names: Vec<_> = std::fs::read_dir(&victim).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing may be written outside the root");
}

/// A relative path from `from` to `to` (both absolute): `../` up to `/`, then down.
fn climb_to(from: &std::path::Path, to: &std::path::Path) -> String {
    let to = std::fs::canonicalize(to).unwrap();
    let mut out = "../".repeat(from.components().count() - 1);
    out.push_str(to.strip_prefix("/").unwrap().to_str().unwrap());
    out
}

#[test]
fn cwd_that_does_not_exist_is_named() {
    let p = TempProject::git();
    let missing = p.path("no/such/dir");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["snapshot"],
        vec!["status"],
        vec!["tasks", "count", "tasks.md"],
        vec!["state", "get", "s.json"],
        vec!["state", "merge", "s.json", "{}"],
    ] {
        p.specrun()
            .arg("--cwd")
            .arg(missing)
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("directory not found"))
            .stderr(predicate::str::contains("no/such/dir"));
    }
    assert!(!p.path("no").exists());
}

#[test]
fn state_get_absent_path_is_a_negative_answer() {
    let p = project_with_state();
    p.specrun()
        .args(["state", "get", STATE, "custom.keep"])
        .assert()
        .code(0)
        .stdout("true\n");
    p.specrun()
        .args(["state", "get", STATE, "custom.nope"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains("`custom.nope` is not set"));
    p.specrun()
        .args(["state", "merge", STATE, r#"{"halt":null}"#])
        .assert()
        .success();
    p.specrun()
        .args(["state", "get", STATE, "halt"])
        .assert()
        .code(0)
        .stdout("null\n");
}

/// Regression: `tasks check --file` wrote wherever the path pointed, so a `../` path (or an
/// absolute one) ticked a box in a file outside the project root.
#[test]
fn tasks_check_file_outside_the_root_is_refused() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("tasks.md");
    std::fs::write(&victim, "- [ ] 1 Outside\n  - **Verify**: `true`\n").unwrap();
    let escape = climb_to(&p.root(), &victim);
    for file in [escape.as_str(), victim.to_str().unwrap()] {
        p.specrun()
            .args(["tasks", "check", "1", "--file", file])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("outside the project root"));
    }
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "- [ ] 1 Outside\n  - **Verify**: `true`\n"
    );
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no lock file may be left outside the root");
    // Inside the root, --file still works.
    p.specrun()
        .args(["tasks", "check", "1.2", "--file", "specs/demo/tasks.md"])
        .assert()
        .success();
}

/// Regression: a spec *name* was joined under specs/ without the root check that a spec
/// *path* gets, so a `specs/<name>` symlink to another directory made every write (state,
/// tasks.md, locks) land outside the project root.
#[test]
fn spec_name_whose_directory_links_outside_the_root_is_refused() {
    let p = TempProject::git();
    p.write("specs/.keep", "");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("tasks.md"),
        "- [ ] 1 Outside\n  - **Verify**: `true`\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), p.path("specs/linked")).unwrap();
    for args in [
        vec!["tasks", "check", "1", "--spec", "linked"],
        vec!["state", "init", "--spec", "linked"],
    ] {
        p.specrun()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("outside the project root"));
    }
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "nothing may be written outside the root");
}
