//! Every command specrun prints works when pasted into a shell, whatever the spec is
//! called: the commands printed by status, snapshot, last-mile, goal, refusals, cancel
//! and the guard's halt line are collected for specs named with shell-special
//! characters, run with `sh -c` against a stand-in `specrun` that records its arguments,
//! and must parse and hand over the spec name intact.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{self, TempProject};
use crate::hook_common::stop_stdin;

const TASKS: &str =
    "# Tasks\n\n## Phase 1\n- [ ] 1.1 First\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n";

/// The verb's stdout and stderr, each a text to search.
fn run(p: &TempProject, args: &[&str], stdin: &str) -> [String; 2] {
    let out = p.specrun().args(args).write_stdin(stdin).output().unwrap();
    [out.stdout, out.stderr].map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The `specrun …` commands in `text`: each in backticks, each line that is one, and the
/// same inside each JSON string (at any depth). Templates with `<placeholders>` or `…`
/// are for filling in, not for pasting, and are left out.
fn commands(text: &str, out: &mut Vec<String>) {
    let mut candidates: Vec<String> = Vec::new();
    let docs: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect();
    match docs {
        // Pretty-printed or one a line: the strings as decoded.
        Ok(docs) => docs.iter().for_each(|v| strings(v, &mut candidates)),
        Err(_) => candidates.extend(text.lines().map(|l| l.trim().to_string())),
    }
    for c in candidates {
        let pieces: Vec<&str> = if c.contains('`') {
            c.split('`').skip(1).step_by(2).collect()
        } else {
            vec![c.as_str()]
        };
        for piece in pieces {
            let piece = piece.trim();
            let template = piece.contains('<') || piece.contains('…');
            if piece.starts_with("specrun ") && !template && !out.iter().any(|o| o == piece) {
                out.push(piece.to_string());
            }
        }
    }
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Run `command` with `sh -c`, `specrun` being a stand-in that writes its arguments one a
/// line; returns them.
fn pasted(bin: &Path, command: &str) -> Vec<String> {
    let log = bin.join("args");
    let _ = std::fs::remove_file(&log);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = Command::new("sh")
        .args(["-c", command])
        .env("PATH", path)
        .env("ARGS_LOG", &log)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "`{command}` does not run in sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&log)
        .unwrap_or_else(|_| panic!("`{command}` never ran specrun"))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The surfaces that print commands, for a spec called `name`.
fn printed(name: &str) -> Vec<String> {
    let p = TempProject::git();
    p.spec(name, TASKS);
    let spec = ["--spec", name];
    // Before the execution exists: the refusal names `state init`.
    let mut text = vec![run(&p, &["task", "start", "1.1", "--spec", name], "")];
    text.push(run(&p, &["state", "init", "--spec", name], ""));
    for args in [
        &["status"][..],
        &["snapshot"],
        &["last-mile"],
        &["goal"],
        &["task", "complete", "1.1"],
    ] {
        text.push(run(&p, &[args, &spec].concat(), ""));
    }
    text.push(run(&p, &["task", "start", "1.1", "--spec", name], ""));
    for args in [
        &["status"][..],
        &["snapshot"],
        &["last-mile"],
        &["task", "complete", "1.1"],
    ] {
        text.push(run(&p, &[args, &spec].concat(), ""));
    }
    // The guard's halt line, and the surfaces while halted.
    let halt =
        r#"{"halt": {"kind": "task-cap", "reason": "5 of 5", "at": "2026-01-01T00:00:00Z"}}"#;
    let state = format!("specs/{name}/.specrun-state.json");
    run(&p, &["state", "merge", &state, halt], "");
    text.push(run(
        &p,
        &["hook", "stop"],
        &stop_stdin(&p, "done", false, None),
    ));
    for args in [&["status"][..], &["snapshot"], &["last-mile"], &["goal"]] {
        text.push(run(&p, &[args, &spec].concat(), ""));
    }
    text.push(run(&p, &["cancel", "--spec", name], ""));
    text.push(run(&p, &["status", "--spec", name], ""));
    let mut found = Vec::new();
    for t in text.iter().flatten() {
        commands(t, &mut found);
    }
    found
}

#[test]
fn every_printed_command_runs_in_sh_with_the_spec_name_intact() {
    let bin = tempfile::tempdir().unwrap();
    common::write_executable(
        &bin.path().join("specrun"),
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_LOG\"\n",
    );
    for name in [
        "a'b", "a$b", "a;b", "a\"b", "a&b|c", "a(b)", "a!b#", "a>b", "a{b,c}",
    ] {
        let found = printed(name);
        for needed in [
            "specrun resume",
            "specrun task start",
            "specrun verify run",
            "specrun state init",
        ] {
            assert!(
                found
                    .iter()
                    .any(|c| c.starts_with(needed) && c.contains("--spec")),
                "{name}: no `{needed} --spec …` printed among {found:#?}"
            );
        }
        for command in &found {
            let args = pasted(bin.path(), command);
            if let Some(i) = args.iter().position(|a| a == "--spec") {
                assert_eq!(
                    args.get(i + 1).map(String::as_str),
                    Some(name),
                    "`{command}`"
                );
            }
        }
    }
}
