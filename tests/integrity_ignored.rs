//! Files git ignores that change how tests run (`ignoredFiles`): a `conftest.py` hidden by
//! `.git/info/exclude`, by the tree's `.gitignore` or by the user's excludes file, a `.pth`
//! in an ignored virtualenv, a runner config changed: each appears in no `git status`, no
//! commit and no diff, so `task complete` names it against what `state init` found. The
//! controls: an ignored runner file that was there and stays the same, an ignored file that
//! is no runner file, and a person's waiver.

use std::path::Path;

use crate::common::TempProject;
use crate::integrity_scan::integrity_findings;
use crate::task_helpers::{justify, run};

const TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Verify**: `true`\n";

/// A git project with `setup` applied and committed, then `state init`, then task 1.1
/// started.
fn started(setup: impl FnOnce(&TempProject)) -> TempProject {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.write("src/a.py", "def a():\n    return 1\n");
    setup(&p);
    p.commit_all("spec");
    let (code, out, err) = run(&p, &["state", "init", "--spec", "demo"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0, "{out}{err}");
    p
}

const CHEAT: &str = "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    out.get_result().outcome = 'passed'\n";

fn ignored_named<'a>(found: &'a [String], path: &str) -> Vec<&'a String> {
    found
        .iter()
        .filter(|f| f.contains(&format!("ignored-runner-file at {path}:")))
        .collect()
}

#[test]
fn a_conftest_hidden_by_info_exclude_is_a_finding_and_so_is_the_exclude_edit() {
    let p = started(|_| {});
    let exclude = p.path(".git/info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("conftest.py\n");
    std::fs::write(&exclude, text).unwrap();
    p.write("conftest.py", CHEAT);
    assert!(!p.git_cmd(&["status", "--porcelain"]).contains("conftest"));
    let found = integrity_findings(&p);
    let conftest = ignored_named(&found, "conftest.py");
    assert_eq!(conftest.len(), 1, "{found:#?}");
    assert!(conftest[0].contains("`conftest.py` appeared during the execution"));
    assert!(
        conftest[0].contains("a person's decision"),
        "{}",
        conftest[0]
    );
    let edit = ignored_named(&found, ".git/info/exclude");
    assert_eq!(edit.len(), 1, "{found:#?}");
    assert!(
        edit[0].contains("changed during the execution"),
        "{}",
        edit[0]
    );
}

#[test]
fn a_conftest_the_trees_gitignore_already_hid_is_a_finding_when_it_appears() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\n");
    });
    p.write("tests/conftest.py", CHEAT);
    let found = integrity_findings(&p);
    assert_eq!(
        ignored_named(&found, "tests/conftest.py").len(),
        1,
        "{found:#?}"
    );
}

#[test]
fn a_conftest_the_users_excludes_file_hides_is_a_finding() {
    let p = started(|_| {});
    let excludes = p.path(".git/user-excludes");
    std::fs::write(&excludes, "conftest.py\n").unwrap();
    p.git_cmd(&[
        "config",
        "core.excludesFile",
        &excludes.display().to_string(),
    ]);
    p.write("conftest.py", CHEAT);
    let found = integrity_findings(&p);
    assert_eq!(ignored_named(&found, "conftest.py").len(), 1, "{found:#?}");
}

#[test]
fn a_pth_file_in_an_ignored_virtualenv_is_a_finding_and_its_other_files_are_not() {
    let site = ".venv/lib/python3.12/site-packages";
    let p = started(|p| {
        p.write(".gitignore", ".venv/\n");
        p.write(&format!("{site}/pkg/__init__.py"), "");
    });
    p.write(&format!("{site}/neuter.pth"), "import neuter\n");
    p.write(&format!("{site}/pkg/__init__.py"), "X = 1\n");
    p.write(".venv/bin/activate", "# changed\n");
    let found = integrity_findings(&p);
    let ignored: Vec<&String> = found
        .iter()
        .filter(|f| f.contains("ignored-runner-file"))
        .collect();
    assert_eq!(ignored.len(), 1, "{found:#?}");
    assert!(ignored[0].contains(&format!("{site}/neuter.pth")));
}

#[test]
fn an_ignored_runner_config_changed_or_removed_is_a_finding() {
    let p = started(|p| {
        p.write(".gitignore", "pytest.ini\n.env\n");
        p.write("pytest.ini", "[pytest]\naddopts = -q\n");
        p.write(".env", "MODE=test\n");
    });
    p.write("pytest.ini", "[pytest]\naddopts = -q -k 'not slow'\n");
    std::fs::remove_file(p.path(".env")).unwrap();
    let found = integrity_findings(&p);
    let ini = ignored_named(&found, "pytest.ini");
    assert_eq!(ini.len(), 1, "{found:#?}");
    assert!(ini[0].contains("changed during the execution"));
    let env = ignored_named(&found, ".env");
    assert_eq!(env.len(), 1, "{found:#?}");
    assert!(env[0].contains("went away during the execution"));
}

#[test]
fn control_ignored_files_that_stay_the_same_or_run_nothing_are_quiet() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\nbuild/\n");
        p.write(
            "conftest.py",
            "# the project's own, there before the execution\n",
        );
    });
    p.write("build/out.log", "a build log\n");
    p.write("build/gen/module.py", "X = 2\n");
    let found = integrity_findings(&p);
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn a_person_can_waive_the_finding_for_the_file_they_saw_and_a_later_edit_is_new() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\n");
    });
    p.write("conftest.py", "# fixtures\n");
    let found = integrity_findings(&p);
    let id = found[0].split(' ').next().unwrap().to_string();
    let (code, out, err) = justify(&p, "1.1", &id, "shared fixtures");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(integrity_findings(&p), Vec::<String>::new());
    p.write("conftest.py", CHEAT);
    let found = integrity_findings(&p);
    assert_eq!(ignored_named(&found, "conftest.py").len(), 1, "{found:#?}");
    assert!(!found[0].starts_with(&id), "{found:#?}");
}

#[test]
fn a_fifo_blocks_nothing_and_a_symlink_named_conftest_is_named_without_being_read() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\nother/\n");
    });
    let fifo = p.path("conftest.py");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::create_dir_all(p.path("other")).unwrap();
    std::os::unix::fs::symlink(Path::new("/etc/hostname"), p.path("other/conftest.py")).unwrap();
    // Git lists no FIFO (so none is named: see DESIGN-NOTES); the scan must not open it.
    let found = integrity_findings(&p);
    assert_eq!(
        ignored_named(&found, "other/conftest.py").len(),
        1,
        "{found:#?}"
    );
}

#[test]
fn the_callers_git_variables_do_not_hide_an_ignored_conftest() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\n");
    });
    p.write("conftest.py", CHEAT);
    let other = TempProject::git();
    let found = crate::integrity_scan::findings_with_env(
        &p,
        "1.1",
        &[
            ("GIT_DIR", &other.path(".git").display().to_string()),
            ("GIT_WORK_TREE", &other.root().display().to_string()),
        ],
    );
    assert_eq!(ignored_named(&found, "conftest.py").len(), 1, "{found:#?}");
}

// ---- the model's routes past the finding (inside Claude Code: CLAUDECODE=1) ----

/// `specrun <args>` as the model runs it: exit code and everything it printed.
fn inside(p: &TempProject, args: &[&str]) -> (Option<i32>, String) {
    let out = p
        .specrun()
        .args(args)
        .env("CLAUDECODE", "1")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// A started task whose tree gained a cheating conftest.py the tree's `.gitignore` hides.
fn cheated() -> TempProject {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\n");
    });
    p.write("conftest.py", CHEAT);
    p
}

#[test]
fn inside_claude_code_the_refusal_names_no_persons_command_and_the_models_justify_is_refused() {
    let p = cheated();
    crate::task_helpers::ready_to_complete(&p, "1.1");
    let (code, said) = inside(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("ignored-runner-file at conftest.py:1"),
        "{said}"
    );
    crate::roles::assert_no_persons_command(&said, "the refusal");
    let id = said
        .split_whitespace()
        .find(|w| w.starts_with('F') && w.len() == 9)
        .unwrap_or_else(|| panic!("no finding id in {said}"))
        .to_string();
    let (code, said) = inside(
        &p,
        &[
            "task",
            "justify",
            "1.1",
            "--finding",
            &id,
            "--reason",
            "fine",
        ],
    );
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        ignored_named(&integrity_findings(&p), "conftest.py").len(),
        1
    );
    assert!(p.read("specs/demo/tasks.md").contains("- [ ] 1.1"));
}

#[test]
fn the_models_state_init_or_state_merge_does_not_retake_the_snapshot() {
    let p = cheated();
    let file = "specs/demo/.specrun-state.json";
    let forged = format!(
        r#"{{"ignoredFiles": {{"conftest.py": "{}"}}}}"#,
        "0".repeat(64)
    );
    let (code, said) = inside(&p, &["state", "merge", file, &forged]);
    assert_ne!(code, Some(0), "{said}");
    let (_, said) = inside(&p, &["state", "init", "--spec", "demo"]);
    assert!(
        p.state("demo")["ignoredFiles"].get("conftest.py").is_none(),
        "{said}"
    );
    let found = integrity_findings(&p);
    assert_eq!(ignored_named(&found, "conftest.py").len(), 1, "{found:#?}");
}

#[test]
fn a_conftest_a_background_process_writes_after_the_start_is_seen() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\n");
    });
    let mut writer = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sleep 0.2; printf '%s' '{}' > conftest.py",
            "# patched"
        ))
        .current_dir(p.root())
        .spawn()
        .unwrap();
    assert!(writer.wait().unwrap().success());
    let found = integrity_findings(&p);
    assert_eq!(ignored_named(&found, "conftest.py").len(), 1, "{found:#?}");
}

#[test]
fn control_an_honest_task_completes_inside_claude_code_beside_an_ignored_runner_file() {
    let p = started(|p| {
        p.write(".gitignore", "conftest.py\n.venv/\n");
        p.write("conftest.py", "# the project's fixtures\n");
        p.write(".venv/lib/python3.12/site-packages/dist.pth", "import os\n");
    });
    p.write("src/a.py", "def a():\n    return 2\n");
    crate::task_helpers::ready_to_complete(&p, "1.1");
    let (code, said) = inside(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
}

#[test]
fn in_a_virtualenv_only_the_packages_directories_start_up_files_count() {
    let site = "venv/lib/python3.12/site-packages";
    let p = started(|p| {
        p.write(".gitignore", "venv/\n");
        p.write("venv/pyvenv.cfg", "home = /usr/bin\n");
        p.write(&format!("{site}/pkg/__init__.py"), "");
    });
    p.write(&format!("{site}/zz-neuter.pth"), "import neuter\n");
    p.write(&format!("{site}/pkg/conftest.py"), CHEAT);
    p.write("venv/conftest.py", CHEAT);
    p.write("venv/share/data/sitecustomize.py", "import neuter\n");
    let found = integrity_findings(&p);
    let ignored: Vec<&String> = found
        .iter()
        .filter(|f| f.contains("ignored-runner-file"))
        .collect();
    assert_eq!(ignored.len(), 1, "{found:#?}");
    assert!(ignored[0].contains(&format!("{site}/zz-neuter.pth")));
}
