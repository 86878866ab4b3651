//! End to end against the real Claude Code: a `[P]` group of three run in worktrees specrun
//! creates, two members editing the same line. The coordinator (the scripted fake model)
//! follows references/isolated-groups.md: worktrees first, the executors in one message,
//! `group merge`, the conflicting member retried on the merged base, `group merge` again,
//! the `[VERIFY]` task on the merged tree's evidence, the phase check, completion.

use std::path::Path;

use serde_json::{json, Value};

use crate::e2e;
use crate::e2e::fake_model::{bash, text, tool, Agent, Block, Rule};
use crate::e2e::runner::Session;
use crate::e2e::{critique_command, marked_subagent_rules, subagent_rules, Harness, SESSION};

const TASKS: &str = "# Tasks: demo

**Final check**: `grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt && grep -q GAMMA notes/gamma.txt && grep -q BETA notes/shared.txt`

## Phase 1: Notes

- [ ] 1.1 [P] Write the alpha note
  - **Do**: notes/alpha.txt holds ALPHA; notes/shared.txt holds ALPHA
  - **Files**: notes/alpha.txt, notes/shared.txt
  - **Verify**: `grep -q ALPHA notes/alpha.txt`
  - **Commit**: `feat(notes): alpha`
- [ ] 1.2 [P] Write the beta note
  - **Do**: notes/beta.txt holds BETA; notes/shared.txt holds BETA
  - **Files**: notes/beta.txt, notes/shared.txt
  - **Verify**: `grep -q BETA notes/beta.txt`
  - **Commit**: `feat(notes): beta`
- [ ] 1.3 [P] Write the gamma note
  - **Do**: notes/gamma.txt holds GAMMA
  - **Files**: notes/gamma.txt
  - **Verify**: `grep -q GAMMA notes/gamma.txt`
  - **Commit**: `feat(notes): gamma`
- [ ] 1.4 [VERIFY] Check the merged notes
  - **Do**: check the notes together
  - **Files**: notes/alpha.txt, notes/gamma.txt, notes/shared.txt
  - **Verify**: `grep -q ALPHA notes/alpha.txt && grep -q GAMMA notes/gamma.txt && grep -q ALPHA notes/shared.txt`
  - **Commit**: `chore(notes): verify`
";

const PHASE_CHECK: &str = "grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt && grep -q GAMMA notes/gamma.txt && grep -q BETA notes/shared.txt";

/// A step run inside the member's worktree, as the executor agent file says.
fn in_tree(wt: &Path, command: &str) -> Block {
    bash(&format!("cd {} && {command}", wt.display()))
}

fn critique_in(wt: &Path, id: &str, stage: &str) -> Block {
    in_tree(wt, &critique_command(id, stage))
}

/// An executor working only inside its worktree: start, write, critique, verify,
/// critique, commit, complete.
fn member_steps(wt: &Path, id: &str, write: &str, verify: &str, subject: &str) -> Vec<Block> {
    vec![
        in_tree(wt, &format!("specrun task start {id} --spec demo")),
        in_tree(wt, &format!("mkdir -p notes && {write}")),
        critique_in(wt, id, "post-code"),
        in_tree(
            wt,
            &format!("specrun verify run --task {id} --command '{verify}' --spec demo"),
        ),
        critique_in(wt, id, "post-test"),
        in_tree(
            wt,
            &format!("git add -A notes && git commit -q -m '{subject}'"),
        ),
        in_tree(
            wt,
            &format!("specrun task complete {id} --check --spec demo"),
        ),
    ]
}

/// The Agent call for one member (in the background, as a `[P]` member is delegated) or a
/// lone retry or check (in the foreground), as references/isolated-groups.md says.
fn delegate_in(marker: &str, id: &str, wt: &Path, background: bool) -> Block {
    tool(
        "Agent",
        json!({
            "description": format!("Execute task {id}"),
            "prompt": format!("{marker} Execute task {id} of spec demo. Worktree: {} — cd there first in every Bash call; work only inside it. Report TASK_COMPLETE {id}.", wt.display()),
            "subagent_type": "specrun:spec-executor",
            "run_in_background": background,
        }),
    )
}

#[test]
fn e2e_isolated_group_conflict_kept_retried_on_the_merged_base_and_completed() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.project.write("specs/demo/tasks.md", TASKS);
    h.project.write(".gitignore", ".specrun/\n");
    h.project.commit_all("isolated demo");
    h.init_execution(SESSION, &[]);
    let wt = |id: &str| root.join(".specrun/worktrees/demo").join(id);

    // Matched by what arrived, not by turn number: on a client that runs the members in the
    // background each result is its own notification turn.
    let mut rules = vec![
        Rule::main().turn(0).reply([bash(
            "specrun task start 1.1 --worktree --spec demo && specrun task start 1.2 --worktree --spec demo && specrun task start 1.3 --worktree --spec demo",
        )]),
        Rule::main().turn(1).reply(
            ["1.1", "1.2", "1.3"].map(|id| delegate_in(&format!("[task {id}]"), id, &wt(id), true)),
        ),
        Rule::main()
            .delivered("TASK_COMPLETE 1.1")
            .delivered("TASK_COMPLETE 1.2")
            .delivered("TASK_COMPLETE 1.3")
            .reply([bash("specrun group merge --spec demo")]),
        Rule::main()
            .last_tool_result("specrun task start 1.2 --worktree")
            .reply([bash(
                "specrun task start 1.2 --worktree --spec demo && echo RETRY-READY",
            )]),
        Rule::main()
            .last_tool_result("RETRY-READY")
            .reply([delegate_in("[retry 1.2]", "1.2", &wt("1.2"), false)]),
        Rule::main()
            .result("Resolved.")
            .reply([bash("specrun group merge --spec demo")]),
        Rule::main()
            .last_tool_result("complete the [VERIFY] task")
            .reply([tool(
                "Agent",
                json!({"description": "Verify task 1.4",
                       "prompt": "[task 1.4] Verify task 1.4 of spec demo.",
                       "subagent_type": "specrun:qa-engineer",
                       "run_in_background": false}),
            )]),
    ];
    rules.extend(e2e::phase_check_then_complete(
        Rule::main().result("VERIFICATION_PASS 1.4"),
        &format!("specrun verify run --phase execution --command '{PHASE_CHECK}' --spec demo"),
        "The group is merged and verified.",
    ));
    let member = |id: &str, write: &str, verify: &str, subject: &str| {
        subagent_rules(
            id,
            0,
            member_steps(&wt(id), id, write, verify, subject),
            &format!("Done.\nTASK_COMPLETE {id}"),
        )
    };
    rules.extend(member(
        "1.1",
        "echo ALPHA > notes/alpha.txt && echo ALPHA > notes/shared.txt",
        "grep -q ALPHA notes/alpha.txt",
        "feat(notes): alpha",
    ));
    rules.extend(member(
        "1.2",
        "echo BETA > notes/beta.txt && echo BETA > notes/shared.txt",
        "grep -q BETA notes/beta.txt",
        "feat(notes): beta",
    ));
    rules.extend(member(
        "1.3",
        "echo GAMMA > notes/gamma.txt",
        "grep -q GAMMA notes/gamma.txt",
        "feat(notes): gamma",
    ));
    // The retry resolves the conflict the base merge left in its worktree.
    let retry = vec![
        in_tree(&wt("1.2"), "specrun task start 1.2 --spec demo"),
        in_tree(
            &wt("1.2"),
            "printf 'ALPHA\\nBETA\\n' > notes/shared.txt && git add notes/shared.txt",
        ),
        critique_in(&wt("1.2"), "1.2", "post-code"),
        in_tree(
            &wt("1.2"),
            "specrun verify run --task 1.2 --command 'grep -q BETA notes/beta.txt' --spec demo",
        ),
        critique_in(&wt("1.2"), "1.2", "post-test"),
        in_tree(&wt("1.2"), "specrun task complete 1.2 --check --spec demo"),
    ];
    rules.extend(marked_subagent_rules(
        "[retry 1.2]",
        0,
        retry,
        "Resolved.\nTASK_COMPLETE 1.2",
    ));
    let qa = vec![
        bash("specrun task start 1.4 --spec demo"),
        e2e::critique_step("1.4", "post-code"),
        bash("specrun verify status --task 1.4 --spec demo"),
        e2e::critique_step("1.4", "post-test"),
        bash("specrun task complete 1.4 --check --spec demo"),
    ];
    rules.extend(subagent_rules(
        "1.4",
        0,
        qa,
        "Checked.\nVERIFICATION_PASS 1.4",
    ));

    rules.extend(e2e::waiting_rules());
    let run = h.run(
        rules,
        Session::new("Run the demo spec.").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    // The three members ran in the background (every pinned release honours the flag):
    // each result came as a notification (two finishing together share a turn); the retry
    // and the check ran in the foreground.
    assert_eq!(e2e::notifications_delivered(&run), 3, "{}", run.describe());
    let state = h.completed_state(&run);
    let iso = &state["isolation"];
    assert_eq!(iso["group"]["status"], "complete", "{iso:#}");
    for id in ["1.1", "1.2", "1.3"] {
        assert_eq!(iso["members"][id]["status"], "merged", "{iso:#}");
    }
    // The conflict was seen, kept and retried, never rebased.
    let events = h.events();
    let kept: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "group-merge" && e["kept"] == true)
        .collect();
    assert_eq!(kept.len(), 1, "{events:#?}");
    assert_eq!(kept[0]["task"], "1.2");
    assert_eq!(kept[0]["files"], json!(["notes/shared.txt"]));
    let attempts = state["attempts"]["1.2"].as_array().unwrap();
    assert_eq!(attempts[0]["status"], "failed", "{attempts:?}");
    assert!(attempts[0]["reason"]
        .as_str()
        .unwrap()
        .contains("notes/shared.txt"));
    // Every member's final content is in the base branch; no worktree or branch is left.
    assert_eq!(h.read("notes/alpha.txt"), "ALPHA\n");
    assert_eq!(h.read("notes/beta.txt"), "BETA\n");
    assert_eq!(h.read("notes/gamma.txt"), "GAMMA\n");
    assert_eq!(h.read("notes/shared.txt"), "ALPHA\nBETA\n");
    assert!(!h
        .project
        .git_cmd(&["worktree", "list"])
        .contains(".specrun"));
    assert!(!h
        .project
        .git_cmd(&["branch", "--list", "specrun/*"])
        .contains("specrun/"));
    // Three --no-ff merges into the base, and the retry's own merge of the base into its
    // branch (the commit that concluded it), not a rebase.
    let merges = h.project.git_cmd(&["log", "--merges", "--format=%s"]);
    let into_base = merges
        .lines()
        .filter(|l| l.starts_with("specrun: merge task"))
        .count();
    assert_eq!(into_base, 3, "{merges}");
    assert!(
        merges
            .lines()
            .any(|l| l == "specrun: task 1.2 Write the beta note (spec demo)"),
        "{merges}"
    );
    assert_eq!(
        h.project.git_cmd(&["status", "--porcelain", "--", "notes"]),
        ""
    );
}

const DRIVEN_TASKS: &str = "# Tasks: demo

**Final check**: `grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt && grep -q GAMMA notes/gamma.txt`

## Phase 1: Notes

- [ ] 1.1 [P] Write the alpha note
  - **Do**: notes/alpha.txt holds ALPHA
  - **Files**: notes/alpha.txt
  - **Verify**: `grep -q ALPHA notes/alpha.txt`
  - **Commit**: `feat(notes): alpha`
- [ ] 1.2 [P] Write the beta note
  - **Do**: notes/beta.txt holds BETA
  - **Files**: notes/beta.txt
  - **Verify**: `grep -q BETA notes/beta.txt`
  - **Commit**: `feat(notes): beta`

## Phase 2: After

- [ ] 2.1 Write the gamma note
  - **Do**: notes/gamma.txt holds GAMMA
  - **Files**: notes/gamma.txt
  - **Done when**: notes/gamma.txt holds GAMMA
  - **Verify**: `grep -q GAMMA notes/gamma.txt`
  - **Commit**: `feat(notes): gamma`
";

/// The two defects an honest run of a `[P]` group found through the real client. Under the
/// stop-hook driver the coordinator ends its turn once both members reported, and follows
/// what the Stop hook says: it was told "Next task 2.1 … Delegate it now", whose start
/// refused until the merge (the executor's TASK_FAILED burned an iteration); it must be
/// told to merge. No `[VERIFY]` task follows the group, so `group merge` checks the merged
/// tree with the members' Verify commands. At the phase end the spec reviewer runs
/// `verify status --task` on each member, which exited 2 on the removed worktree; it must
/// say fresh, judged on the merged tree. Then task 2.1 and completion, no attempt failed.
#[test]
fn e2e_isolated_group_driven_by_the_stop_hook_is_merged_then_reviewed() {
    let Some(h) = Harness::new() else {
        return;
    };
    let root = h.root();
    h.project.write("specs/demo/tasks.md", DRIVEN_TASKS);
    h.project.write(".gitignore", ".specrun/\n");
    h.project.commit_all("isolated demo");
    h.init_execution(SESSION, &["--driver", "stop-hook"]);
    let wt = |id: &str| root.join(".specrun/worktrees/demo").join(id);
    let check = "grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt && grep -q GAMMA notes/gamma.txt";

    let mut rules = vec![
        Rule::main().turn(0).reply([bash(
            "specrun task start 1.1 --worktree --spec demo && specrun task start 1.2 --worktree --spec demo",
        )]),
        Rule::main()
            .turn(1)
            .reply(["1.1", "1.2"].map(|id| delegate_in(&format!("[task {id}]"), id, &wt(id), true))),
        // Both reported: the coordinator ends its turn and lets the Stop hook say what next.
        Rule::main()
            .delivered("TASK_COMPLETE 1.1")
            .delivered("TASK_COMPLETE 1.2")
            .reply([text("Both members reported.")]),
        Rule::main()
            .last_user("run `specrun group merge --spec demo`")
            .reply([bash("specrun group merge --spec demo")]),
        Rule::main()
            .last_tool_result("group 1.1, 1.2: complete")
            .reply([tool(
                "Agent",
                json!({"description": "Review phase 1",
                       "prompt": "[review 1] Review tasks 1.1, 1.2 of spec demo (phase 1).",
                       "subagent_type": "specrun:spec-reviewer",
                       "run_in_background": false}),
            )]),
        Rule::main()
            .result("REVIEW_PASS")
            .reply([text("Phase 1 reviewed.")]),
        Rule::main()
            .last_user("Next task 2.1")
            .reply([e2e::delegate("specrun:spec-executor", "2.1")]),
        // The Stop hook's wait while members work in the background (2.1.198 and later).
        Rule::main()
            .last_user("still working in the background")
            .times(0)
            .reply([text(e2e::WAITING)]),
    ];
    rules.extend(e2e::phase_check_then_complete(
        Rule::main().result("TASK_COMPLETE 2.1"),
        &format!("specrun verify run --phase execution --command '{check}' --spec demo"),
        "Every task is verified.",
    ));
    for (id, word, file) in [("1.1", "ALPHA", "alpha"), ("1.2", "BETA", "beta")] {
        let steps = member_steps(
            &wt(id),
            id,
            &format!("echo {word} > notes/{file}.txt"),
            &format!("grep -q {word} notes/{file}.txt"),
            &format!("feat(notes): {file}"),
        );
        rules.extend(subagent_rules(
            id,
            0,
            steps,
            &format!("Done.\nTASK_COMPLETE {id}"),
        ));
    }
    let review =
        ["1.1", "1.2"].map(|id| bash(&format!("specrun verify status --task {id} --spec demo")));
    rules.extend(marked_subagent_rules(
        "[review 1]",
        0,
        review.to_vec(),
        "No findings.\nREVIEW_PASS",
    ));
    rules.extend(e2e::honest_executor(
        &root,
        "2.1",
        Some(("notes/gamma.txt", "GAMMA\n")),
        "grep -q GAMMA notes/gamma.txt",
    ));
    rules.extend(e2e::waiting_rules());
    let run = h.run(
        rules,
        Session::new("Run the demo spec.").session_id(SESSION),
    );

    assert_eq!(run.rc, Some(0), "{}", run.describe());
    let state = h.completed_state(&run);
    // The Stop hook's re-prompts: the merge first, task 2.1 only after it (a stop answering
    // a block without progress is allowed, and names the merge too).
    let stops: Vec<Value> = h
        .events()
        .into_iter()
        .filter(|e| e["event"] == "stop")
        .collect();
    for stop in stops
        .iter()
        .filter(|e| e["rule"] == "next-task-no-progress")
    {
        assert!(
            stop["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("group is not merged"),
            "{stop}"
        );
    }
    let rules: Vec<String> = stops
        .iter()
        .filter(|e| e["decision"] == "block")
        .map(|e| e["rule"].as_str().unwrap_or_default().to_string())
        .filter(|r| r.starts_with("next-task"))
        .collect();
    assert_eq!(
        rules,
        ["next-task-group-merge", "next-task"],
        "{}",
        run.describe()
    );
    // No attempt failed, none was repeated: the merge was reached without a TASK_FAILED.
    for (id, attempts) in state["attempts"].as_object().unwrap() {
        let attempts = attempts.as_array().unwrap();
        assert_eq!(attempts.len(), 1, "{id}: {attempts:?}");
        assert_eq!(attempts[0]["status"], "done", "{id}: {attempts:?}");
    }
    let iso = &state["isolation"];
    assert_eq!(iso["group"]["status"], "complete", "{iso:#}");
    let verified = &state["verificationBlocks"]["isolated-group"];
    assert_eq!(
        verified["command"], "grep -q ALPHA notes/alpha.txt && grep -q BETA notes/beta.txt",
        "{state:#}"
    );
    // The reviewer's `verify status --task` of each merged member: fresh, on the merged tree.
    let seen: Vec<String> = run
        .requests_of(Agent::Sub)
        .iter()
        .filter(|r| r.first_user.contains("[review 1]"))
        .flat_map(|r| r.last_tool_results.clone())
        .collect();
    for id in ["1.1", "1.2"] {
        assert!(
            seen.iter()
                .any(|t| t.starts_with(&format!("fresh: taskEvidence[{id}]"))
                    && t.contains("merged at ")),
            "{id}: {seen:#?}\n{}",
            run.describe()
        );
    }
    assert!(!seen.iter().any(|t| t.contains("cannot list")), "{seen:#?}");
    assert_eq!(h.read("notes/gamma.txt"), "GAMMA\n");
}
