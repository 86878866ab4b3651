//! Helpers for the shell-user tests: run `specrun` as a person would, pull out every
//! command a message tells them to run, and run it exactly as printed.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{bin_path, TempProject};

/// What one command printed.
#[derive(Debug, Clone)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// The `specrun …` commands a message names: backquoted spans, and lines holding nothing
/// but a command (how `status` prints them, to be copied whole).
pub fn hints(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut claude = false;
    for line in text.lines() {
        // `status`'s `claude` line (and its continuation) is addressed to Claude Code.
        claude = line.starts_with("claude") || (claude && line.starts_with("          "));
        if claude {
            continue;
        }
        let trimmed = line.trim();
        if trimmed.starts_with("specrun ") && !line.contains('`') {
            out.push(trimmed.to_string());
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && span.starts_with("specrun ") {
                out.push(span.to_string());
            }
        }
    }
    let mut unique = Vec::new();
    for h in out {
        if !unique.contains(&h) {
            unique.push(h);
        }
    }
    unique
}

/// A command line without its quoted words: a `<` there would be a placeholder (or a
/// redirection), not text.
fn unquoted(line: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// A review that passes every checklist item, as a person would pipe it to
/// `critique record`.
pub fn review_json(stage: &str) -> String {
    let items: serde_json::Map<String, serde_json::Value> =
        specrun::api::evidence::critique::checklist(stage)
            .unwrap()
            .iter()
            .map(|(id, _)| {
                (
                    id.to_string(),
                    serde_json::json!({"result": "pass", "note": "checked by hand"}),
                )
            })
            .collect();
    serde_json::json!({"checklist": items, "issuesFound": [], "issuesFixed": []}).to_string()
}

/// A shell session in a project: every command it runs, every hint it has seen.
pub struct Shell<'a> {
    pub p: &'a TempProject,
    pub seen: BTreeSet<String>,
    pub followed: BTreeSet<String>,
}

impl<'a> Shell<'a> {
    pub fn new(p: &'a TempProject) -> Self {
        Shell {
            p,
            seen: BTreeSet::new(),
            followed: BTreeSet::new(),
        }
    }

    /// Run a command line with `sh -c` in the project, `specrun` being the built binary,
    /// outside Claude Code (no CLAUDECODE). `critique record` gets a passing review on stdin.
    pub fn sh(&mut self, line: &str) -> Ran {
        let dir = bin_path().parent().unwrap().to_path_buf();
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let stdin = line.contains("critique record").then(|| {
            review_json(if line.contains("post-test") {
                "post-test"
            } else {
                "post-code"
            })
        });
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(self.p.root())
            .env("PATH", path)
            .env_remove("CLAUDECODE")
            .env_remove("NO_COLOR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes()).unwrap();
        }
        drop(pipe);
        let out = child.wait_with_output().unwrap();
        let ran = Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        for h in hints(&ran.text()) {
            let bare = unquoted(&h);
            assert!(
                !bare.contains('<') && !bare.contains('…'),
                "a shell hint with a placeholder: {h:?} (after `{line}`)\n{}",
                ran.text()
            );
            self.seen.insert(h);
        }
        ran
    }

    /// Run and require exit 0.
    pub fn ok(&mut self, line: &str) -> Ran {
        let ran = self.sh(line);
        assert_eq!(ran.code, 0, "`{line}` failed:\n{}", ran.text());
        ran
    }

    /// Run every hint `ran` printed, as printed; each must succeed.
    pub fn follow(&mut self, ran: &Ran) -> Vec<Ran> {
        let list = hints(&ran.text());
        assert!(!list.is_empty(), "no hint to follow in:\n{}", ran.text());
        list.iter()
            .map(|h| {
                self.followed.insert(h.clone());
                self.ok(h)
            })
            .collect()
    }

    /// Run the hint `ran` printed that holds `what` (where the others are alternatives).
    pub fn follow_one(&mut self, ran: &Ran, what: &str) -> Ran {
        let first = hints(&ran.text())
            .into_iter()
            .find(|h| h.contains(what))
            .expect("a hint");
        self.followed.insert(first.clone());
        self.ok(&first)
    }

    /// The shell step `status` names, run as printed; it must succeed.
    pub fn next(&mut self) -> Ran {
        let step = self.step();
        self.ok(&step)
    }

    /// The shell step `status` names, run as printed, whatever its exit code.
    pub fn next_allowing_failure(&mut self) -> Ran {
        let step = self.step();
        self.sh(&step)
    }

    fn step(&mut self) -> String {
        let status = self.ok("specrun status");
        let step = status
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("shell"))
            // The command, indented two spaces; the label's wrapped lines are indented more.
            .find(|l| l.starts_with("  ") && !l.starts_with("   "))
            .unwrap_or_else(|| panic!("status names no shell step:\n{}", status.stdout))
            .trim()
            .to_string();
        self.followed.insert(step.clone());
        step
    }

    /// Every hint seen was followed.
    pub fn assert_all_followed(&self) {
        let missed: Vec<&String> = self.seen.difference(&self.followed).collect();
        assert!(missed.is_empty(), "hints never followed: {missed:#?}");
    }
}
