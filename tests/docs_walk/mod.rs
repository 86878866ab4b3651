//! Runs the sequences the markdown states against the built binary, on a temp git project.
//! Every command is taken from the markdown as written (found by its verb, its
//! placeholders filled) and run through `sh` with the built `specrun` first on PATH, so a
//! doc edited into a contradiction of the binary fails here, with the file and line.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{bin_path, TempProject};
use crate::docs_contract::checker::{fenced_blocks, fill_placeholders, invocations_with};

pub const SPEC: &str = "demo";
pub const SESSION: &str = "walk-session";

/// A placeholder the walk has no value for; the command using it cannot be run.
const UNFILLED: &str = "@@unfilled:";

pub fn read_doc(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `<placeholder>` values for one step; `${CLAUDE_SESSION_ID}` is always the walk's session.
pub type Values<'a> = &'a [(&'a str, &'a str)];

fn fill(text: &str, values: Values<'_>) -> String {
    let text = text
        .replace("${CLAUDE_SESSION_ID}", SESSION)
        .replace("$ARGUMENTS", "");
    fill_placeholders(&text, &|key| {
        values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| {
                let bare: String = key
                    .chars()
                    .map(|c| if c.is_alphanumeric() { c } else { '_' })
                    .collect();
                format!("{UNFILLED}{bare}@@")
            })
    })
}

/// The first `specrun …` command in `rel` that starts with `prefix`, as the markdown
/// writes it, with `values` filled in: (line, command).
pub fn doc_command(rel: &str, prefix: &str, values: Values<'_>) -> (usize, String) {
    doc_command_where(rel, prefix, values, |_| true)
}

/// `doc_command`, for the first such command that `also` accepts too.
pub fn doc_command_where(
    rel: &str,
    prefix: &str,
    values: Values<'_>,
    also: impl Fn(&str) -> bool,
) -> (usize, String) {
    let text = read_doc(rel);
    let found = invocations_with(&text, &|s| fill(s, values))
        .into_iter()
        .find(|s| s.text.starts_with(prefix) && also(&s.text))
        .unwrap_or_else(|| panic!("{rel} no longer shows `{prefix} …`: the walk follows it"));
    assert!(
        !found.text.contains(UNFILLED),
        "{rel}:{}: `{}` has a placeholder the walk cannot fill",
        found.line,
        found.text
    );
    (found.line, found.text)
}

/// Commands found in `rel` by these prefixes, which must appear in this order there.
pub fn doc_sequence(rel: &str, prefixes: &[&str], values: Values<'_>) -> Vec<String> {
    let found: Vec<(usize, String)> = prefixes
        .iter()
        .map(|p| doc_command(rel, p, values))
        .collect();
    for pair in found.windows(2) {
        assert!(
            pair[0].0 <= pair[1].0,
            "{rel}: `{}` (line {}) comes after `{}` (line {}), but runs before it",
            pair[0].1,
            pair[0].0,
            pair[1].1,
            pair[1].0
        );
    }
    found.into_iter().map(|(_, c)| c).collect()
}

/// The lines of the first fenced block of `rel` that contains `needle`.
pub fn doc_block(rel: &str, needle: &str) -> Vec<String> {
    fenced_blocks(&read_doc(rel))
        .into_iter()
        .find(|(_, body)| body.contains(needle))
        .unwrap_or_else(|| panic!("{rel} has no fenced block with `{needle}`"))
        .1
        .lines()
        .map(str::to_string)
        .collect()
}

/// The markdown table row of `rel` whose first cell is `` `value` ``.
pub fn table_row(rel: &str, value: &str) -> String {
    let cell = format!("| `{value}` |");
    read_doc(rel)
        .lines()
        .find(|l| l.starts_with(&cell))
        .unwrap_or_else(|| panic!("{rel} has no table row for `{value}`"))
        .to_string()
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A temp git project with `specs/demo/tasks.md` committed, where commands run as a model
/// would run them.
pub struct Walk {
    pub p: TempProject,
    path: OsString,
}

impl Walk {
    pub fn new(tasks_md: &str) -> Walk {
        let p = TempProject::git();
        p.spec(SPEC, tasks_md);
        p.commit_all("plan");
        let bin_dir = bin_path().parent().expect("bin dir").to_path_buf();
        let mut dirs = vec![bin_dir];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path = std::env::join_paths(dirs).expect("PATH");
        Walk { p, path }
    }

    /// Run one shell command from the project root.
    pub fn sh(&self, command: &str, stdin: &str) -> Out {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(self.p.root())
            .env("PATH", &self.path)
            .envs([
                ("GIT_AUTHOR_NAME", "walk"),
                ("GIT_AUTHOR_EMAIL", "walk@example.com"),
                ("GIT_COMMITTER_NAME", "walk"),
                ("GIT_COMMITTER_EMAIL", "walk@example.com"),
                ("GIT_CONFIG_COUNT", "1"),
                ("GIT_CONFIG_KEY_0", "commit.gpgsign"),
                ("GIT_CONFIG_VALUE_0", "false"),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        let out = child.wait_with_output().expect("sh ends");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Run `command` (from `doc`), which must exit 0; its stdout.
    pub fn ok(&self, doc: &str, command: &str, stdin: &str) -> String {
        let out = self.sh(command, stdin);
        assert_eq!(
            out.code, 0,
            "{doc}: `{command}` exited {}\nstdout: {}\nstderr: {}",
            out.code, out.stdout, out.stderr
        );
        out.stdout
    }

    pub fn json(&self, doc: &str, command: &str) -> Value {
        let out = self.ok(doc, command, "");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{doc}: `{command}`: {e}\n{out}"))
    }

    pub fn state(&self) -> Value {
        self.p.state(SPEC)
    }

    pub fn task(&self, id: &str) -> specrun::api::model::tasks::Task {
        let text = self.p.read(&format!("specs/{SPEC}/tasks.md"));
        specrun::api::model::tasks::parse(&text)
            .find(id)
            .unwrap_or_else(|e| panic!("{e}"))
            .clone()
    }

    /// The hook's stdout for `event`, as Claude Code would call it in the walk's session.
    pub fn hook(&self, event: &str, fields: Value) -> String {
        let mut input = json!({"session_id": SESSION, "cwd": self.p.root(),
            "permission_mode": "bypassPermissions", "stop_hook_active": false,
            "background_tasks": [], "session_crons": []});
        specrun::api::model::state::merge_into(&mut input, &fields);
        let out = self.sh(&format!("specrun hook {event}"), &input.to_string());
        assert_eq!(out.code, 0, "hook {event}: {}", out.stderr);
        out.stdout
    }
}

/// The stdin a documented line needs: a critique record for `critique record --file -`.
fn stdin_for(line: &str) -> String {
    if !(line.contains("critique record") && line.contains("--file -")) {
        return String::new();
    }
    let stage = ["post-code", "post-test"]
        .into_iter()
        .find(|s| line.contains(&format!("--stage {s}")))
        .unwrap_or_else(|| panic!("`{line}` records no known stage"));
    crate::common::critique_input(stage).to_string()
}

impl Walk {
    fn values_for(&self, id: &str) -> Vec<(&'static str, String)> {
        let t = self.task(id);
        vec![
            ("id", id.to_string()),
            ("name", SPEC.to_string()),
            ("Verify command", t.verify.clone().unwrap_or_default()),
            (
                "the task's Commit message",
                t.commit.clone().unwrap_or_default(),
            ),
            ("the task's files", t.files.join(" ")),
        ]
    }

    /// The executor's work: each of the task's Files written (what step 5 does).
    fn write_files(&self, id: &str) {
        for f in self.task(id).files {
            self.p.write(&f, &format!("written by task {id}\n"));
        }
    }

    /// spec-executor.md's verb list, run line by line for each task of `ids` in turn (a
    /// `[P]` group's executors interleave, as they run at the same time). The task's
    /// Files are written right after its `task start`.
    pub fn executors(&self, ids: &[&str]) {
        const DOC: &str = "plugin/agents/spec-executor.md";
        let block = doc_block(DOC, "specrun task start");
        let values: Vec<Vec<(&str, String)>> = ids.iter().map(|id| self.values_for(id)).collect();
        for line in &block {
            for (id, v) in ids.iter().zip(&values) {
                let pairs: Vec<(&str, &str)> = v.iter().map(|(k, s)| (*k, s.as_str())).collect();
                let command = fill(line, &pairs);
                assert!(
                    !command.contains(UNFILLED),
                    "{DOC}: `{line}`: unknown placeholder"
                );
                if line.contains("specrun task complete") {
                    self.cover_criteria(id);
                }
                self.ok(DOC, &command, &stdin_for(line));
                if line.contains("specrun task start") {
                    self.write_files(id);
                }
            }
        }
    }

    /// qa-engineer.md's verbs for a `[VERIFY]` task, in the order its steps give them.
    pub fn qa_engineer(&self, id: &str) {
        const DOC: &str = "plugin/agents/qa-engineer.md";
        let v = self.values_for(id);
        let pairs: Vec<(&str, &str)> = v.iter().map(|(k, s)| (*k, s.as_str())).collect();
        let prefixes = [
            "specrun task start".to_string(),
            "specrun verify run --task".to_string(),
            format!("specrun critique record --task {id} --stage post-code"),
            format!("specrun critique record --task {id} --stage post-test"),
            "specrun task complete".to_string(),
        ];
        let prefixes: Vec<&str> = prefixes.iter().map(String::as_str).collect();
        let steps = doc_sequence(DOC, &prefixes, &pairs);
        for command in steps {
            if command.contains("specrun task complete") {
                self.cover_criteria(id);
            }
            self.ok(DOC, &command, &stdin_for(&command));
        }
    }

    /// The walk's tasks are file checks no test runner reports, so each criterion is
    /// confirmed by hand as references/acceptance-criteria.md allows (the criteria gate of
    /// `task complete` is covered by tests/acceptance_cli.rs).
    fn cover_criteria(&self, id: &str) {
        const DOC: &str = "references/acceptance-criteria.md";
        let list = self.json(DOC, &format!("specrun ac list --task {id} --json"));
        for c in list["criteria"].as_array().into_iter().flatten() {
            let ac = c["id"].as_str().unwrap();
            self.ok(
                DOC,
                &format!(
                    "specrun ac confirm {ac} --reason 'the walk checks the file by its Verify'"
                ),
                "",
            );
        }
    }
}
