//! One next step everywhere, on the README's plan, state by state: no spec, an empty plan,
//! planned, running, stale, all checked, complete. `status` (its text and `--json`
//! `dashboard.nextShell`), `finish` and the Stop hook agree, and each printed step runs as
//! printed. "Agree" (also written down in DESIGN-NOTES): where status's step ends the
//! run's blocker, finish and the claim's refusal name that very command; while a task
//! runs they name its `task complete`, whose refusal names status's step; an unclaimed
//! stop (manual driver) names nothing. Halted: status and finish name the person's
//! command at a shell, the Stop hook (which the model reads) points the person to
//! `specrun status` and names no person's command, and the step runs as printed.

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
        .find(|l| l.starts_with("  ") && !l.starts_with("   "))
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

/// The README's example plan.
fn readme_plan() -> String {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    crate::readme_flow::marked_blocks(&text, "tasks-example").join("\n") + "\n"
}

/// `status`'s shell step, the same in its text and its `--json`.
fn status_step(sh: &mut Shell<'_>) -> String {
    let (step, json) = status_steps(sh);
    assert_eq!(json.as_deref(), Some(step.as_str()), "status --json");
    step
}

/// Task `id` of the README plan done the honest way: verified, criteria mapped, both
/// reviews, the work committed, the box ticked.
fn do_task(p: &TempProject, sh: &mut Shell<'_>, id: &str) {
    sh.ok(&format!("specrun task start {id}"));
    if id == "1.1" {
        p.write("greet.js", GREET_JS);
        p.write("greet.test.js", GREET_TEST_JS);
    }
    sh.ok(&format!("specrun verify run --task {id}"));
    if id == "1.1" {
        sh.ok("specrun ac map 1.1/AC1 --test 'greets by name'");
        sh.ok("specrun ac map 1.1/AC2 --test 'rejects an empty name'");
    }
    sh.ok(&format!(
        "specrun critique record --task {id} --stage post-code"
    ));
    sh.ok(&format!(
        "specrun critique record --task {id} --stage post-test"
    ));
    p.commit_all(&format!("task {id}"));
    sh.ok(&format!("specrun task complete {id} --check"));
}

/// Where no execution runs, `status` still ends with the step that moves a person on, and
/// it works as printed: no spec (`new`, with the spec's NAME and GOAL put in), an empty plan
/// (`tasks lint`, which names the empty plan), a completed run (`report`).
#[test]
fn status_ends_with_a_shell_step_without_a_spec_a_plan_or_anything_left_to_run() {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    let text = sh.ok("specrun status").stdout;
    assert!(
        text.contains("next step at a shell, with your spec's NAME and GOAL:"),
        "{text}"
    );
    let step = status_step(&mut sh);
    assert_eq!(step, "specrun new NAME --goal 'GOAL'");
    sh.ok(&step
        .replace("NAME", "greet")
        .replace("GOAL", "Greet people by name"));

    let step = status_step(&mut sh);
    assert_eq!(step, "specrun tasks lint --spec greet");
    // `finish` names the same command and `tasks lint`'s finding, not `state init` (which
    // refuses an empty plan).
    let finish = sh.sh("specrun finish");
    assert_eq!(finish.code, 1, "{}", finish.text());
    assert!(
        finish.stdout.contains(&format!("`{step}`")),
        "{}",
        finish.text()
    );
    assert!(
        finish.stdout.contains("empty-plan: no task"),
        "{}",
        finish.text()
    );
    assert!(!finish.text().contains("state init"), "{}", finish.text());
    let lint = sh.sh(&step);
    assert_eq!(lint.code, 1, "{}", lint.text());
    assert!(lint.text().contains("[empty-plan]"), "{}", lint.text());

    p.write("specs/greet/tasks.md", &readme_plan());
    p.commit_all("plan: greet");
    sh.ok(&format!("specrun state init --session-id {SESSION}"));
    do_task(&p, &mut sh, "1.1");
    do_task(&p, &mut sh, "2.1");
    sh.ok("specrun verify run --phase execution --command 'node --test'");
    p.commit_all("record");
    sh.ok("specrun finish");
    let step = status_step(&mut sh);
    assert_eq!(step, "specrun report --spec greet");
    assert!(sh.ok(&step).stdout.contains("greet"));
}

#[test]
fn status_finish_and_the_stop_hook_name_the_same_next_step() {
    let plan = readme_plan();
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

    // Running, nothing done yet: status names the task's Verify run. finish and the
    // claim's refusal name the step that ticks the task, `task complete`; run as printed,
    // it refuses naming status's step. With the manual driver an unclaimed stop names
    // nothing (allowed, silent): nothing there disagrees.
    sh.ok(&format!("specrun state init --session-id {SESSION}"));
    sh.ok("specrun task start 1.1");
    let step = status_step(&mut sh);
    assert_eq!(
        step,
        "specrun verify run --task 1.1 --spec greet --command 'node --test'"
    );
    let complete = "`specrun task complete 1.1 --check --spec greet`";
    let finish = sh.sh("specrun finish");
    assert!(finish.stdout.contains(complete), "{}", finish.text());
    assert!(stop_refusal(&p).contains(complete));
    assert_eq!(stop_allows(&p), "");
    let refused = sh.sh(complete.trim_matches('`'));
    assert_ne!(refused.code, 0);
    assert!(
        refused.text().contains("specrun verify run --task 1.1"),
        "{}",
        refused.text()
    );

    // Stale: the task's tests passed, its criteria are mapped, then the code changed. The
    // stale criteria name the command that records them again, in finish and in the
    // Stop hook alike, and that command works as printed.
    p.write("greet.js", GREET_JS);
    p.write("greet.test.js", GREET_TEST_JS);
    sh.ok("specrun verify run --task 1.1");
    sh.ok("specrun ac map 1.1/AC1 --test 'greets by name'");
    sh.ok("specrun ac map 1.1/AC2 --test 'rejects an empty name'");
    p.write("greet.js", &format!("{GREET_JS}// reworded\n"));
    // `status` names the run that makes the evidence fresh, not the review that follows
    // it (the evidence passed after the attempt started, but against another tree).
    assert_eq!(
        status_step(&mut sh),
        "specrun verify run --task 1.1 --spec greet --command 'node --test'"
    );
    let rerun = "`specrun verify run --task 1.1 --spec greet --command 'node --test'`";
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

    // All checked: status names the full check that finish and the claim's refusal ask
    // for first (it named `finish`, which refused for it).
    sh.ok("specrun critique record --task 1.1 --stage post-code");
    sh.ok("specrun critique record --task 1.1 --stage post-test");
    p.commit_all("task 1.1");
    sh.ok("specrun task complete 1.1 --check");
    do_task(&p, &mut sh, "2.1");
    let step = status_step(&mut sh);
    assert_eq!(step, "specrun verify run --final --spec greet");
    let finish = sh.sh("specrun finish");
    assert_eq!(finish.code, 1);
    assert!(
        finish.stdout.contains(&format!("`{step}`")),
        "{}",
        finish.text()
    );
    assert!(stop_refusal(&p).contains(&format!("`{step}`")));
    sh.ok(&step);
    // Its evidence fresh: `finish` is the step, and it completes.
    assert_eq!(status_step(&mut sh), "specrun finish --spec greet");
    sh.ok("specrun finish --spec greet");

    // Complete: status names the story; finish says so (exit 0); the Stop hook allows a
    // claim and an unclaimed stop alike, naming nothing.
    assert_eq!(status_step(&mut sh), "specrun report --spec greet");
    assert!(sh.ok("specrun finish").stdout.contains("already complete"));
    assert_eq!(stop_allows(&p), "");
    let out = run_hook(
        &p,
        "stop",
        stop_stdin(&p, "ALL_TASKS_COMPLETE", false, None),
    );
    assert_eq!(out.trim(), "", "{out}");
    sh.ok("specrun report --spec greet");
}

/// The Stop hook's answer to a stop that claims nothing: empty when it allows.
fn stop_allows(p: &TempProject) -> String {
    let out = run_hook(p, "stop", stop_stdin(p, "done for now", false, None));
    out.trim().to_string()
}

/// Halted at the global cap: at a shell `status` and `finish` name the same person's
/// command; the Stop hook's halt (the model reads it) names none and sends the person to
/// `specrun status`, as `status` inside Claude Code does; the step runs as printed, and the
/// execution goes on where it was.
#[test]
fn a_halted_run_names_one_step_for_the_person_and_none_to_the_model() {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);
    sh.ok("specrun new greet --goal 'Greet people by name'");
    p.write("specs/greet/tasks.md", &readme_plan());
    p.commit_all("plan: greet");
    sh.ok(&format!(
        "specrun state init --session-id {SESSION} --max-global-iterations 1"
    ));
    let halt = (0..3)
        .map(|_| run_hook(&p, "stop", stop_stdin(&p, "done for now", false, None)))
        .find(|out| !out.trim().is_empty())
        .expect("the cap halts a stop");
    let halt = json_of(&halt);
    assert_eq!(halt["continue"], false, "{halt}");
    let reason = halt["stopReason"].as_str().unwrap();
    assert!(reason.contains("is halted"), "{reason}");
    assert!(reason.contains("`specrun status`"), "{reason}");
    crate::roles::assert_no_persons_command(reason, "the Stop hook's halt");

    let step = status_step(&mut sh);
    assert!(
        step.starts_with("specrun resume --spec greet --raise-global "),
        "{step}"
    );
    let finish = sh.sh("specrun finish");
    assert_eq!(finish.code, 1, "{}", finish.text());
    let first_unmet = finish
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("- "))
        .unwrap_or_default();
    assert!(
        first_unmet.contains("not-halted") && first_unmet.contains(&format!("`{step}`")),
        "{}",
        finish.text()
    );
    // Inside Claude Code the same surfaces name no person's command.
    for args in [&["status"][..], &["finish"]] {
        let out = p
            .specrun()
            .env("CLAUDECODE", "1")
            .args(args)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains("a person decides at a shell"),
            "{args:?}: {said}"
        );
        crate::roles::assert_no_persons_command(&said, &format!("{args:?} inside"));
    }

    // The person's step, as printed: the run goes on at its next task.
    sh.ok(&step);
    assert_eq!(status_step(&mut sh), "specrun task start 1.1 --spec greet");
}
