//! What reaches a person's terminal: a task title, a follow-up title and a failure reason
//! holding ESC/OSC sequences, BEL and a C1 CSI (U+009B) must reach no surface raw (they
//! could clear the screen or hide the halt line); each is shown as `\xNN`. `--json` keeps
//! the exact text (its escapes, not raw bytes).

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{bin_path, TempProject};
use crate::task_helpers::*;

const HOSTILE: &str = "Boom\x1b[2J\x1b]0;pwned\x07\u{9b}31m end";
/// How `HOSTILE` is shown.
const SHOWN: &str = "Boom\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m end";

/// A started task and a follow-up, each carrying `HOSTILE` (`state init` given `init`).
fn hostile(init: &[&str]) -> TempProject {
    let tasks = format!(
        "# Tasks\n\n## Phase 1\n- [ ] 1.1 {HOSTILE}\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n"
    );
    let p = project(&tasks, &[&["--session-id", "s1"], init].concat());
    p.write("specs/.current-spec", "demo\n");
    let (code, out, err) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0, "{out}{err}");
    add_followup(&p, HOSTILE);
    p
}

/// `followup add` for task 1.1 with `title`, which must succeed.
fn add_followup(p: &TempProject, title: &str) {
    let mut args: Vec<&str> = "followup add --category VERIFY --priority low --task 1.1 --title"
        .split(' ')
        .collect();
    args.push(title);
    let (code, out, err) = run(p, &args);
    assert_eq!(code, 0, "{out}{err}");
}

/// Every character of `out` that is a control but a line break or a tab.
fn raw_controls(out: &str) -> Vec<char> {
    out.chars()
        .filter(|&c| c.is_control() && c != '\n' && c != '\t')
        .collect()
}

/// `specrun args` in `p` with `stdin`: stdout and stderr, neither holding a raw control.
fn shown(p: &TempProject, args: &[&str], stdin: &str) -> String {
    let out = p.specrun().args(args).write_stdin(stdin).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        let raw = raw_controls(text);
        assert!(raw.is_empty(), "{args:?} {name} has raw {raw:?}: {text}");
    }
    stdout + &stderr
}

#[test]
fn no_surface_prints_a_hostile_title_raw() {
    let p = hostile(&[]);
    let statusline = json!({"cwd": p.root()}).to_string();
    for (args, stdin) in [
        (vec!["status"], ""),
        (vec!["statusline"], statusline.as_str()),
        (vec!["tasks", "list"], ""),
        (vec!["tasks", "show", "1.1"], ""),
        (vec!["tasks", "next"], ""),
        (vec!["followup", "list"], ""),
        (vec!["report"], ""),
        (vec!["report", "--format", "html"], ""),
    ] {
        let text = shown(&p, &args, stdin);
        assert!(
            text.contains(SHOWN),
            "{args:?} does not show the title: {text}"
        );
    }
    // A failure reason is text from a file too (the state), shown by status and report.
    run(&p, &["task", "fail", "1.1", "--reason", HOSTILE]);
    for args in [vec!["status"], vec!["report"]] {
        let text = shown(&p, &args, "");
        assert!(
            text.contains(SHOWN),
            "{args:?} does not show the reason: {text}"
        );
    }
}

/// The HTML report is HTML-escaped as well as free of raw controls.
#[test]
fn the_html_report_escapes_markup_and_controls() {
    let p = hostile(&[]);
    add_followup(&p, "<script>alert(1)</script>");
    let page = shown(&p, &["report", "--format", "html"], "");
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
}

/// `--json` is data: the exact title comes back after parsing, and no raw control
/// (serde_json leaves DEL and C1 raw; specrun writes them `\u00NN`) is in the bytes.
#[test]
fn json_output_keeps_the_exact_text_without_raw_controls() {
    let p = hostile(&[]);
    let title_of = |doc: &Value, pointer: &str| doc.pointer(pointer).cloned();
    for (args, pointer) in [
        (vec!["tasks", "list", "--json"], "/tasks/0/title"),
        (vec!["tasks", "show", "1.1", "--json"], "/title"),
        (vec!["followup", "list", "--json"], "/items/0/title"),
        (vec!["status", "--json"], "/dashboard/current/title"),
        (vec!["report", "--format", "json"], "/tasks/0/title"),
    ] {
        let text = shown(&p, &args, "");
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(
            title_of(&doc, pointer),
            Some(json!(HOSTILE)),
            "{args:?}: {text}"
        );
    }
}

/// A hook's answer is JSON Claude Code parses: a title in its message keeps it valid, with
/// the exact text, and no raw control in the bytes.
#[test]
fn a_hook_answer_naming_a_hostile_title_stays_valid_json() {
    let p = hostile(&["--driver", "stop-hook"]);
    let stop = json!({"session_id": "s1", "cwd": p.root(), "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "working"});
    let text = shown(&p, &["hook", "stop"], &stop.to_string());
    let answer: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    let reason = answer["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(HOSTILE), "the next task, exactly: {answer}");
}

/// On a terminal `status` colours its lines: those escape sequences are its own, and the
/// title's are still shown escaped (the dashboard is run under a pseudo-terminal).
#[test]
fn status_on_a_terminal_colours_but_never_passes_a_title_through() {
    let p = hostile(&[]);
    let cmd = format!("'{}' status", bin_path().display());
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(p.root())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\x1b[2m"),
        "not coloured, so not a terminal: {text:?}"
    );
    assert!(text.contains(SHOWN), "{text:?}");
    // What is left once the dashboard's own colours (SGR) and the terminal's \r are gone.
    let mut rest = text.replace('\r', "");
    for sgr in ["\x1b[0m", "\x1b[2m", "\x1b[32m", "\x1b[1;31m"] {
        rest = rest.replace(sgr, "");
    }
    assert!(raw_controls(&rest).is_empty(), "{rest:?}");
}
