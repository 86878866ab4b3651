//! Messages that name a spec's file name the file where the spec keeps it: a Kiro spec's
//! under `.kiro/specs/<name>/`, an OpenSpec change's under `openspec/changes/<name>/`.
//! Each message used to say `specs/<name>/…` whatever the layout, a path that does not
//! exist there (and a hint that fails when followed).

use serde_json::Value;

use crate::common::TempProject;
use crate::formats::{executing, json, kiro, model, run};
use crate::hook_common::{run_hook, stop_stdin, SESSION};

/// Every `specs/<name>/` in `text` is the spec's real folder `folder` (which ends with it,
/// as `.kiro/specs/albums` does), never the specrun layout's path alone.
fn names_only(text: &str, name: &str, folder: &str) {
    let stray = format!("specs/{name}/");
    for (at, _) in text.match_indices(&stray) {
        let before = &text[..at + stray.len()];
        assert!(
            before.ends_with(&format!("{folder}/")),
            "names {stray} outside {folder}/: {text}"
        );
    }
}

/// The spec's `.specrun-state.json` with `patch` merged, as a person at a shell does.
fn person_merges(p: &TempProject, state: &str, patch: &str) {
    let (code, out, err) = run(p, &["state", "merge", state, patch]);
    assert_eq!(code, 0, "{out}{err}");
}

fn stop(p: &TempProject, message: &str) -> Value {
    let out = run_hook(p, "stop", stop_stdin(p, message, false, None));
    if out.is_empty() {
        return Value::Null;
    }
    json(&out)
}

/// The Stop hook's refused completion claim names the Kiro spec's tasks.md (its unread
/// line) and followups.json where they are.
#[test]
fn the_completion_gates_name_a_kiro_spec_s_files() {
    let p = kiro();
    executing(&p, "albums");
    p.write(".kiro/specs/albums/followups.json", "{ not JSON");
    let tasks = p.read(".kiro/specs/albums/tasks.md");
    p.write(".kiro/specs/albums/tasks.md", &format!("{tasks}```\n"));
    let answer = stop(&p, "Done.\nALL_TASKS_COMPLETE");
    let reason = answer["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(".kiro/specs/albums/tasks.md line 8 may hold a task that is not read"),
        "{answer}"
    );
    assert!(
        reason.contains("fix .kiro/specs/albums/followups.json so open VERIFY/high items"),
        "{answer}"
    );
    names_only(reason, "albums", ".kiro/specs/albums");
    // `finish` judges the same gates.
    let (code, out, err) = run(&p, &["finish", "--spec", "albums"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(".kiro/specs/albums/tasks.md line 8"), "{out}");
    names_only(&out, "albums", ".kiro/specs/albums");
}

/// The SubagentStop claim check sends the executor to the Kiro tasks.md it works from.
#[test]
fn a_claim_of_no_task_names_the_kiro_tasks_file() {
    let p = kiro();
    executing(&p, "albums");
    let stdin = serde_json::json!({
        "session_id": SESSION, "transcript_path": "/nonexistent/t.jsonl", "cwd": p.root(),
        "permission_mode": "bypassPermissions", "agent_id": "agent-7",
        "agent_type": "specrun:spec-executor", "hook_event_name": "SubagentStop",
        "stop_hook_active": false, "agent_transcript_path": "/nonexistent/a.jsonl",
        "last_assistant_message": "TASK_COMPLETE 9", "background_tasks": [], "session_crons": [],
    });
    let answer = json(&run_hook(&p, "subagent-stop", stdin.to_string()));
    let reason = answer["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("task 9 does not exist (once) in .kiro/specs/albums/tasks.md:"),
        "{answer}"
    );
    names_only(reason, "albums", ".kiro/specs/albums");
}

/// The time cap's notice names the Kiro spec's state file, and its fix, run as printed,
/// works: the next stop says nothing more.
#[test]
fn the_time_cap_notice_s_fix_works_on_a_kiro_spec() {
    let p = kiro();
    executing(&p, "albums");
    let state = ".kiro/specs/albums/.specrun-state.json";
    person_merges(
        &p,
        state,
        r#"{"budget": {"maxMinutes": 600}, "startedAt": null}"#,
    );
    let answer = stop(&p, "Working on it.");
    let notice = answer["systemMessage"].as_str().unwrap_or_default();
    let fix = format!("`specrun state merge {state} '");
    assert!(notice.contains(&fix), "{answer}");
    names_only(notice, "albums", ".kiro/specs/albums");
    let now = chrono::Utc::now().to_rfc3339();
    person_merges(&p, state, &format!(r#"{{"startedAt": "{now}"}}"#));
    let after = stop(&p, "Working on it.");
    assert!(
        !after.to_string().contains("startedAt"),
        "the fix did not take: {after}"
    );
}

/// An OpenSpec change without tasks: `finish`, `snapshot`, `status` and `last-mile` send
/// the reader to the change's own tasks.md, by name and by path.
#[test]
fn the_no_tasks_steps_name_an_openspec_change_s_tasks_file() {
    let p = TempProject::git();
    let file = "openspec/changes/add-x/tasks.md";
    p.write(file, "# Tasks\n");
    let (code, out, err) = run(&p, &["finish", "--spec", "add-x"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&format!("in {file}: ")), "{out}");
    let (_, out, _) = run(&p, &["snapshot", "--spec", "add-x"]);
    let next = json(&out)["nextAction"].as_str().unwrap().to_string();
    assert!(
        next.starts_with(&format!("{file} has no tasks: ")),
        "{next}"
    );
    let (_, out, _) = run(&p, &["status", "--spec", "add-x"]);
    assert!(out.contains(&format!("after writing {file}")), "{out}");
    let (_, out, _) = run(&p, &["last-mile", "--spec", "add-x"]);
    let said = json(&out);
    assert!(
        said["problemTypes"][0]["evidence"][0] == format!("{file} has no tasks"),
        "{said}"
    );
    let instruction = said["coordinatorInstruction"].as_str().unwrap();
    assert!(
        instruction.contains(&format!("so that {file} lists the tasks")),
        "{instruction}"
    );
    for text in [next.as_str(), instruction] {
        names_only(text, "add-x", "openspec/changes/add-x");
    }
    // Named by its folder's path, a change whose tasks.md is not written yet.
    p.write("openspec/changes/add-y/proposal.md", "# Why\n");
    let (_, out, _) = run(&p, &["snapshot", "--spec", "openspec/changes/add-y"]);
    let next = json(&out)["nextAction"].as_str().unwrap().to_string();
    assert!(
        next.starts_with("Write openspec/changes/add-y/tasks.md "),
        "{next}"
    );
}

/// last-mile's repeated-failure instruction names the Kiro state file, and its command
/// runs as printed.
#[test]
fn the_repeated_failure_instruction_s_command_works_on_a_kiro_spec() {
    let p = kiro();
    executing(&p, "albums");
    for reason in ["first", "second"] {
        model(&p, &["task", "start", "1.1", "--spec", "albums"]);
        let fail = [
            "task", "fail", "1.1", "--reason", reason, "--spec", "albums",
        ];
        model(&p, &fail);
    }
    let (_, out, _) = run(&p, &["last-mile", "--spec", "albums"]);
    let instruction = json(&out)["coordinatorInstruction"]
        .as_str()
        .unwrap()
        .to_string();
    let command = "specrun state get .kiro/specs/albums/.specrun-state.json attempts";
    assert!(
        instruction.contains(&format!("`{command}`")),
        "{instruction}"
    );
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let (code, out, err) = run(&p, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("second"), "{out}");
}
