//! The README's shell flow is a script: every line of it runs here as printed, in a temp
//! git project, on the README's own tasks.md example, and the last one (`specrun finish`)
//! must complete the spec. `$EDITOR` is the person: it writes the README's plan, the
//! task's code, and a note under each review question.

use std::path::Path;
use std::process::Command;

use crate::common::{bin_path, write_executable, TempProject};

pub const GREET_JS: &str = "function greet(name) {\n  if (!name) throw new Error(\"a name is required\");\n  return `Hello, ${name}!`;\n}\nmodule.exports = { greet };\n";
pub const GREET_TEST_JS: &str = "const test = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { greet } = require(\"./greet\");\n\ntest(\"greets by name\", () => {\n  assert.strictEqual(greet(\"Ada\"), \"Hello, Ada!\");\n});\n\ntest(\"rejects an empty name\", () => {\n  assert.throws(() => greet(\"\"));\n});\n";

/// What a person does in the editor, by file: the plan, the code, the reviews.
const EDITOR: &str = r#"#!/bin/sh
here=$(dirname "$0")
for f in "$@"; do
    case "$f" in
        */tasks.md) cp "$here/tasks.md" "$f" ;;
        *.json) sed 's/"note": ""/"note": "read the change for this: nothing found"/' "$f" > "$f.new" && mv "$f.new" "$f" ;;
        *) cp "$here/$(basename "$f")" "$f" ;;
    esac
done
"#;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The lines of the fenced blocks between `<!-- name -->` and `<!-- /name -->`.
pub fn marked_blocks(text: &str, name: &str) -> Vec<String> {
    let open = format!("<!-- {name} -->");
    let close = format!("<!-- /{name} -->");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("README has no {open}"));
    let end = text[start..]
        .find(&close)
        .unwrap_or_else(|| panic!("README has no {close}"));
    let mut lines = Vec::new();
    let mut fenced = false;
    for line in text[start..start + end].lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            lines.push(line.to_string());
        }
    }
    lines
}

struct Ran {
    code: i32,
    out: String,
}

fn run(p: &TempProject, tools: &Path, line: &str) -> Ran {
    let path = format!(
        "{}:{}",
        bin_path().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(p.root())
        .env("PATH", path)
        .env("EDITOR", tools.join("editor"))
        .env_remove("CLAUDECODE")
        .env_remove("SPECRUN_BIN")
        .envs([
            ("GIT_AUTHOR_NAME", "A Person"),
            ("GIT_AUTHOR_EMAIL", "person@example.com"),
            ("GIT_COMMITTER_NAME", "A Person"),
            ("GIT_COMMITTER_EMAIL", "person@example.com"),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        out: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn the_readme_shell_flow_runs_as_printed_to_a_finished_spec() {
    let text = readme();
    let plan = marked_blocks(&text, "tasks-example").join("\n") + "\n";
    let flow = marked_blocks(&text, "shell-flow");
    let p = TempProject::git();
    // The editor and what it writes live outside the project: they are no part of its tree.
    let tools = tempfile::tempdir().unwrap();
    write_executable(&tools.path().join("editor"), EDITOR);
    for (name, body) in [
        ("tasks.md", plan.as_str()),
        ("greet.js", GREET_JS),
        ("greet.test.js", GREET_TEST_JS),
    ] {
        std::fs::write(tools.path().join(name), body).unwrap();
    }

    let commands: Vec<&String> = flow.iter().filter(|l| !l.trim().is_empty()).collect();
    assert!(commands.len() >= 20, "{flow:?}");
    let mut transcript = String::new();
    for line in &commands {
        let ran = run(&p, tools.path(), line);
        transcript.push_str(&format!("$ {line}\n{}", ran.out));
        assert_eq!(ran.code, 0, "README line failed:\n{transcript}");
    }
    assert!(
        commands.last().unwrap().starts_with("specrun finish"),
        "the flow must end with `specrun finish`"
    );
    assert!(transcript.contains("spec 'greet' complete"), "{transcript}");
    // The plan, the work and the record are committed; nothing is left behind.
    assert_eq!(p.git_cmd(&["status", "--porcelain"]), "", "{transcript}");
    let log = p.git_cmd(&["log", "--format=%s"]);
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "chore(greet): record the run",
            "feat(greet): greet people by name",
            "plan: greet",
            "init"
        ],
        "{transcript}"
    );
    let tasks = p.read("specs/greet/tasks.md");
    assert_eq!(tasks.matches("- [x]").count(), 2, "{tasks}");
    let work = p.git_cmd(&["rev-parse", "--short=10", "HEAD~1"]);
    let progress = p.read("specs/greet/.progress.md");
    assert!(progress.contains(work.trim()), "{progress}");
}

#[test]
fn the_readme_example_plan_passes_tasks_lint() {
    let plan = marked_blocks(&readme(), "tasks-example").join("\n") + "\n";
    let list = specrun::api::model::tasks::parse(&plan);
    let ids: Vec<&str> = list.tasks.iter().filter_map(|t| t.id.as_deref()).collect();
    assert_eq!(ids, ["1.1", "2.1"]);
    let findings = specrun::api::model::tasks::lint::lint(&plan, &list);
    assert!(findings.is_empty(), "{findings:?}");
}
