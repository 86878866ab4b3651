//! Bad input for the hooks: each allows (exit 0), never blocks or halts on what it cannot
//! read, prints at most one JSON object, and loses nothing.

use serde_json::json;

use crate::hook_common::*;

#[test]
fn empty_stdin_and_10_mb_of_garbage_are_ignored() {
    let e = Exec::new(TASKS, json!({"executionDriver": "stop-hook"}));
    let before = e.state_bytes();
    for event in ["stop", "subagent-stop", "session-start", "pre-tool-use"] {
        assert_eq!(e.hook(event, ""), "", "{event}");
    }
    let garbage: Vec<u8> = (0..10 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    assert_eq!(e.hook("stop", garbage), "");
    // Valid JSON that is not an object.
    assert_eq!(e.hook("stop", "[1,2,3]"), "");
    assert_eq!(e.state_bytes(), before);
    assert!(!e.p.path(".specrun").exists());
}

#[test]
fn json_missing_every_field_is_not_this_sessions_execution() {
    let e = Exec::new(
        TASKS,
        json!({"executionDriver": "stop-hook", "quickMode": true}),
    );
    let before = e.state_bytes();
    for event in ["stop", "subagent-stop", "session-start", "pre-tool-use"] {
        assert_eq!(e.hook(event, "{}"), "", "{event}");
    }
    assert_eq!(e.state_bytes(), before);
}

#[test]
fn a_cwd_that_does_not_exist_falls_back_to_the_process_directory() {
    let e = Exec::new(TASKS, json!({}));
    let mut stdin: serde_json::Value =
        serde_json::from_str(&stop_stdin(&e.p, "x", false, None)).unwrap();
    stdin["cwd"] = json!("/nonexistent/specrun/dir");
    assert_eq!(e.hook("stop", stdin.to_string()), "");
    assert_eq!(
        e.state()["globalIteration"],
        1,
        "the process directory's execution was counted"
    );
    // From a directory with no project, nothing happens.
    let elsewhere = TempProject::bare();
    assert_eq!(run_hook(&elsewhere, "stop", stdin.to_string()), "");
    assert_eq!(e.state()["globalIteration"], 1);
}

#[test]
fn unreadable_state_files_halt_the_stop_and_allow_the_rest_with_a_message() {
    let cases: [(&str, &str); 5] = [
        ("corrupt", "{\"phase\": \"execution\", oops}"),
        ("truncated", "{\"version\": 1, \"phase\": \"exec"),
        ("array", "[1, 2, 3]"),
        (
            "wrong types",
            "{\"phase\": \"execution\", \"globalIteration\": \"seven\", \"sessionId\": \"sess-1\"}",
        ),
        ("not UTF-8", "{\"name\": \"\u{0}\"}"),
    ];
    for (what, content) in cases {
        let e = Exec::new(TASKS, json!({}));
        let bytes: Vec<u8> = if what == "not UTF-8" {
            b"{\"name\": \"\xff\xfe\"}".to_vec()
        } else {
            content.as_bytes().to_vec()
        };
        std::fs::write(e.state_path(), &bytes).unwrap();
        let state_path = e.state_path().display().to_string();
        // The Stop halts (issue 23: a garbled state must not switch the guard off).
        let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
        let v = json_of(&out);
        assert_eq!(v["continue"], false, "{what}: {out}");
        assert!(v["stopReason"].as_str().unwrap().contains(&state_path));
        for event in ["subagent-stop", "session-start"] {
            let out = e.hook(event, stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
            let v = json_of(&out);
            let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["systemMessage"], "{what} {event}: {out}");
            let m = v["systemMessage"].as_str().unwrap();
            assert!(m.contains(&state_path), "{what} {event}: {m}");
            // The model reads it: replacing the state is a person's, and no command says how.
            assert!(m.contains("replacing it is a person's decision"), "{m}");
            assert!(!m.contains("--force"), "{m}");
        }
        assert_eq!(
            std::fs::read(e.state_path()).unwrap(),
            bytes,
            "{what}: the file was changed"
        );
        assert_eq!(e.events().last().unwrap()["rule"], "unreadable-state");
    }
}

#[test]
fn transcript_missing_truncated_non_utf8_or_rotated_is_tolerated() {
    let e = Exec::new(TASKS, json!({"usage": {"transcriptOffset": 0}}));
    let t = e.p.path("t.jsonl");
    let tp = t.to_str().unwrap().to_string();
    // Missing: nothing counted, the offset kept.
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, Some(&tp))), "");
    assert_eq!(e.state()["usage"]["transcriptOffset"], 0);
    assert_eq!(e.state()["usage"]["outputTokens"], 0);
    // Truncated mid-line: the complete line counts, the partial one waits.
    let full = assistant_line("m1", 1, 10);
    let second = assistant_line("m2", 2, 20);
    let (head, tail) = second.split_at(25);
    std::fs::write(&t, format!("{full}{head}")).unwrap();
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, Some(&tp))), "");
    assert_eq!(e.state()["usage"]["outputTokens"], 10);
    assert_eq!(e.state()["usage"]["transcriptOffset"], full.len());
    // The line completes, with a non-UTF-8 garbage line after it.
    let mut bytes = format!("{full}{head}{tail}").into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\"assistant\" garbage\n");
    bytes.extend_from_slice(assistant_line("m3", 3, 30).as_bytes());
    std::fs::write(&t, &bytes).unwrap();
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, Some(&tp))), "");
    assert_eq!(e.state()["usage"]["outputTokens"], 60);
    assert_eq!(e.state()["usage"]["inputTokens"], 6);
    assert_eq!(e.state()["usage"]["transcriptOffset"], bytes.len());
    // Rotated: shorter than the offset, read again from 0.
    std::fs::write(&t, assistant_line("n1", 4, 40)).unwrap();
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, Some(&tp))), "");
    assert_eq!(e.state()["usage"]["outputTokens"], 100);
    assert_eq!(e.state()["globalIteration"], 4);
}

#[test]
fn a_lock_held_elsewhere_for_5_s_allows_within_the_bound() {
    let e = Exec::new(TASKS, json!({"executionDriver": "stop-hook"}));
    let lock = e.p.path("specs/demo/.specrun-state.json.lock");
    let mut holder = hold_lock(&lock, 5);
    let before = e.state_bytes();
    let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
    holder.kill().ok();
    holder.wait().ok();
    let v = json_of(&out);
    let m = v["systemMessage"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(v.as_object().unwrap().len(), 1, "{out}");
    assert!(m.contains(&e.state_path().display().to_string()), "{m}");
    assert!(
        m.contains("this stop of spec 'demo' was not counted"),
        "{m}"
    );
    assert_eq!(e.state_bytes(), before);
    assert_eq!(e.events().last().unwrap()["rule"], "lock-timeout");
}

#[test]
fn a_completion_claim_in_a_code_block_or_mid_message_is_not_a_claim() {
    for message in [
        "Print this when done:\n```\nALL_TASKS_COMPLETE\n```",
        "```text\nALL_TASKS_COMPLETE",
        "ALL_TASKS_COMPLETE\nis what I will say once the tests pass.",
        "I will write ALL_TASKS_COMPLETE at the end.",
    ] {
        let e = Exec::new(ALL_DONE, json!({"taskIndex": 2}));
        e.fresh_execution_evidence("true");
        assert_eq!(
            e.hook("stop", stop_stdin(&e.p, message, false, None)),
            "",
            "{message:?}"
        );
        assert_eq!(e.state()["phase"], "execution", "{message:?}");
        assert_eq!(e.state()["globalIteration"], 1);
    }
}

/// Regression: a transcript_path naming a FIFO (or a device) was opened and read, which
/// blocks until a writer appears: the hook hung until Claude Code's timeout. Only a regular
/// file is read; anything else counts as unreadable (the stored offset is kept).
#[test]
fn a_transcript_that_is_not_a_regular_file_is_not_read() {
    let e = Exec::new(TASKS, json!({"usage": {"transcriptOffset": 0}}));
    let fifo = e.p.path("t.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out =
        e.p.specrun()
            .args(["hook", "stop"])
            .write_stdin(stop_stdin(&e.p, "x", false, Some(fifo.to_str().unwrap())))
            .timeout(std::time::Duration::from_secs(10))
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, b"");
    let s = e.state();
    assert_eq!(s["globalIteration"], 1);
    assert_eq!(s["usage"]["transcriptOffset"], 0);
}

/// Regression: counters near u64::MAX (a hand-edited state, a transcript line with an absurd
/// usage figure) overflowed `+ 1` and the token sums: a panic in debug builds (the hook
/// answered "internal error"), a silent wrap to 0 in release (the cap never hit). The
/// counts saturate, so such a state halts on its cap like any other.
#[test]
fn counters_at_the_top_of_their_range_saturate_and_halt() {
    let max = u64::MAX;
    let e = Exec::new(
        TASKS,
        json!({"globalIteration": max, "usage": {"outputTokens": max - 1, "inputTokens": max, "transcriptOffset": 0},
               "guard": {"stallStops": max, "lastFingerprint": "-", "blocks": max}}),
    );
    let t = e.p.write(
        "t.jsonl",
        &[
            assistant_line("m1", max, max),
            assistant_line("m2", max, max),
        ]
        .concat(),
    );
    let out = e.hook(
        "stop",
        stop_stdin(&e.p, "x", false, Some(t.to_str().unwrap())),
    );
    let v = json_of(&out);
    assert_eq!(v["continue"], false, "{out}");
    let reason = v["stopReason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("global iterations {max} > maxGlobalIterations 30")),
        "{reason}"
    );
    let s = e.state();
    assert_eq!(s["globalIteration"], max);
    assert_eq!(s["usage"]["outputTokens"], max);
}
