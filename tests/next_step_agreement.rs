//! One next step everywhere, on the README's plan: planned, `status` (its shell step and its
//! `--json`) and `finish`'s refusal name the same command; stale, `finish` and the Stop
//! hook's refusal of a completion claim name the one command that records the criteria
//! again. (Issue 27's other states are not walked here yet: see DESIGN-NOTES.)

use serde_json::Value;

use crate::common::TempProject;
use crate::hook_common::{json_of, run_hook, stop_stdin, SESSION};
use crate::readme_flow::{GREET_JS, GREET_TEST_JS};
use crate::shell_common::Shell;

/// The shell step `status` prints, and the one its `--json` carries.
fn status_steps(sh: &mut Shell<'_>) -> (String, Option<String>) {
    let text = sh.ok("specrun status").stdout;
    let step = text
        .lines()
        .skip_while(|l| !l.starts_with("shell"))
        .nth(1)
        .unwrap_or_else(|| panic!("status names no shell step:\n{text}"))
        .trim()
        .to_string();
    // Not through `Shell`: the JSON carries the coordinator's sentence, with placeholders.
    let out =
        sh.p.specrun()
            .args(["status", "--json"])
            .env_remove("CLAUDECODE")
            .output()
            .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shell = json["dashboard"]["nextShell"].as_str().map(str::to_string);
    (step, shell)
}

/// The Stop hook's answer to a completion claim of the owning session.
fn stop_refusal(p: &TempProject) -> String {
    let out = run_hook(p, "stop", stop_stdin(p, "ALL_TASKS_COMPLETE", false, None));
    let answer = json_of(&out);
    assert_eq!(answer["decision"], "block", "{answer}");
    answer["reason"].as_str().unwrap().to_string()
}

#[test]
fn status_finish_and_the_stop_hook_name_the_same_next_step() {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let plan = crate::readme_flow::marked_blocks(&text, "tasks-example").join("\n") + "\n";
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    sh.ok("specrun new greet --goal 'Greet people by name'");
    p.write("specs/greet/tasks.md", &plan);
    p.commit_all("plan: greet");

    // Planned: no state yet. Both status surfaces and finish name `state init`.
    let (step, json) = status_steps(&mut sh);
    assert_eq!(step, "specrun state init --spec greet");
    assert_eq!(json.as_deref(), Some(step.as_str()));
    let finish = sh.sh("specrun finish");
    assert_ne!(finish.code, 0);
    assert!(
        finish.text().contains(&format!("`{step}`")),
        "{}",
        finish.text()
    );

    // Stale: the task's tests passed, its criteria are mapped, then the code changed. The
    // stale criteria name the command that records them again, in finish and in the
    // Stop hook alike, and that command works as printed.
    sh.ok(&format!("specrun state init --session-id {SESSION}"));
    sh.ok("specrun task start 1.1");
    p.write("greet.js", GREET_JS);
    p.write("greet.test.js", GREET_TEST_JS);
    sh.ok("specrun verify run --task 1.1");
    sh.ok("specrun ac map 1.1/AC1 --test 'greets by name'");
    sh.ok("specrun ac map 1.1/AC2 --test 'rejects an empty name'");
    p.write("greet.js", &format!("{GREET_JS}// reworded\n"));
    let rerun = "`specrun verify run --task 1.1 --command 'node --test'`";
    let finish = sh.sh("specrun finish");
    assert_ne!(finish.code, 0);
    let stale: Vec<&str> = finish
        .stdout
        .lines()
        .chain(finish.stderr.lines())
        .filter(|l| l.contains("is stale"))
        .collect();
    assert_eq!(stale.len(), 2, "{}", finish.text());
    assert!(stale.iter().all(|l| l.contains(rerun)), "{stale:#?}");
    let refusal = stop_refusal(&p);
    assert_eq!(refusal.matches(rerun).count(), 2, "{refusal}");
    sh.ok(rerun.trim_matches('`'));
    let finish = sh.sh("specrun finish");
    assert!(!finish.text().contains("is stale"), "{}", finish.text());
    assert!(!stop_refusal(&p).contains("is stale"));
}
