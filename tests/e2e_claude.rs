//! End to end against the real Claude Code 2.1.197: a scripted fake model drives the plugin
//! in this repository, offline. Each test is one scenario of the e2e issue; they assert on
//! the project's files and on what the model was sent, not only on exit codes.
//!
//! A missing Claude Code fails these tests (see `e2e::runner::claude_or_skip`).

mod common;
mod e2e;

use std::process::Command;

use e2e::fake_model::{text, Agent, Rule};
use e2e::runner::{plugin_root, Session};
use e2e::{Harness, SESSION};

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect()
}

/// Scenario 1: the plugin loads — `claude plugin validate .` passes, and the init event
/// lists specrun's skills, commands and agents with no plugin_errors; its hooks run.
#[test]
fn e2e_1_plugin_loads() {
    let Some(h) = Harness::new("e2e_1_plugin_loads") else { return };

    let validate = Command::new(&h.claude)
        .args(["plugin", "validate", "."])
        .current_dir(plugin_root())
        .env("HOME", h.home.path())
        .output()
        .expect("claude plugin validate");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&validate.stdout),
        String::from_utf8_lossy(&validate.stderr)
    );
    assert!(validate.status.success(), "claude plugin validate . failed:\n{said}");
    assert!(said.contains("Validation passed"), "{said}");

    let run = h.run(
        vec![Rule::main().turn(0).reply([text("LOADED_OK")])],
        Session::new("say hello").session_id(SESSION),
    );
    assert_eq!(run.rc, Some(0), "{}", run.describe());
    let init = run.init();
    let plugins: Vec<&str> = init["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(plugins.contains(&"specrun"), "plugins: {plugins:?}");
    let errors = init["plugin_errors"].as_array().cloned().unwrap_or_default();
    assert!(errors.is_empty(), "plugin_errors: {errors:?}");

    let skills = names(&init["skills"]);
    for skill in ["specrun:start", "specrun:implement"] {
        assert!(skills.iter().any(|s| s == skill), "skill {skill} missing from {skills:?}");
    }
    let commands = names(&init["slash_commands"]);
    for command in ["specrun:start", "specrun:implement", "specrun:status", "specrun:cancel", "specrun:resume"] {
        assert!(commands.iter().any(|c| c == command), "command {command} missing from {commands:?}");
    }
    let agents = names(&init["agents"]);
    for agent in ["specrun:spec-executor", "specrun:qa-engineer", "specrun:spec-reviewer", "specrun:task-planner"] {
        assert!(agents.iter().any(|a| a == agent), "agent {agent} missing from {agents:?}");
    }

    // The model was told about them too (the role:"system" listing message).
    let first = &run.requests_of(Agent::Main)[0];
    for listed in ["specrun:implement", "specrun:spec-executor"] {
        assert!(first.mid_system.contains(listed), "{listed} not in the listing the model got");
    }

    // The hooks are wired: Stop ran our launcher and exited 0 with nothing to say (no spec
    // execution is active, the fast path).
    let stops = run.hook_responses("Stop");
    assert_eq!(stops.len(), 1, "{}", run.describe());
    assert_eq!(stops[0]["exit_code"], 0, "{}", run.describe());
    assert_eq!(run.result()["result"], "LOADED_OK");
    assert_eq!(run.terminal_reason(), "completed");
}
