//! The person at the shell: create, run and finish a spec without Claude Code, following
//! every hint the binary prints, exactly as printed.

use crate::common::TempProject;
use crate::shell_common::Shell;

const TASKS: &str = "\n## Phase 1: Make it\n\n- [ ] 1.1 Write a\n  - **Files**: a.txt\n  - **Verify**: `test -f a.txt`\n\n- [ ] 1.2 Write b\n  - **Files**: b.txt\n  - **Verify**: `grep -q b b.txt`\n\n## Phase 2: Check\n\n- [ ] 2.1 [VERIFY] Final check\n  - **Verify**: `test -f a.txt && grep -q b b.txt`\n";

/// Start the current task, verify it, review it, complete it: each step the one `status`
/// names at a shell.
fn run_task(sh: &mut Shell<'_>, id: &str) {
    let start = sh.next();
    assert!(
        start.stdout.contains(&format!("task {id}")),
        "{}",
        start.text()
    );
    let verify = sh.next();
    assert!(
        verify.stderr.is_empty() || verify.code == 0,
        "{}",
        verify.text()
    );
    sh.next(); // post-code review
    sh.next(); // post-test review
    let done = sh.next();
    assert!(done.stdout.contains(id), "{}", done.text());
}

#[test]
fn a_spec_from_new_to_finish_at_the_shell_following_every_hint() {
    let p = TempProject::git();
    let mut sh = Shell::new(&p);

    let created = sh.ok("specrun new demo --goal 'two files'");
    assert_eq!(p.read("specs/.current-spec"), "demo\n");
    assert!(p.read("specs/demo/.progress.md").contains("two files"));
    let mut tasks = p.read("specs/demo/tasks.md");
    tasks.push_str(TASKS);
    p.write("specs/demo/tasks.md", &tasks);
    p.commit_all("plan");
    // `new` names `state init --spec demo` once the tasks are written.
    sh.follow(&created);
    // A low task cap, so the failures below halt.
    sh.ok("specrun state init --spec demo --max-task-iterations 2");

    p.write("a.txt", "a\n");
    run_task(&mut sh, "1.1");
    p.commit_all("1.1");

    // Task 1.2 fails twice: the second failure halts the execution.
    sh.next();
    let failed = sh.ok("specrun task fail 1.2 --reason 'b.txt is missing'");
    assert!(
        failed.stdout.contains("(1/2 iterations)"),
        "{}",
        failed.text()
    );
    sh.ok("specrun task start 1.2");
    let halted = sh.ok("specrun task fail 1.2 --reason 'still missing'");
    assert!(
        halted.text().contains("execution halted"),
        "{}",
        halted.text()
    );
    assert!(p.state("demo")["halt"].is_object());
    // The halt names its resume command; `status` names the same one.
    let resumed = sh.follow(&halted);
    let status = sh.ok("specrun status");
    assert!(!status.stdout.contains("HALTED"), "{}", status.stdout);
    // `resume` names the shell step that continues: starting 1.2 again.
    let next = resumed.last().unwrap();
    assert!(
        next.stdout
            .contains("next at a shell: `specrun task start 1.2 --spec demo`"),
        "{}",
        next.text()
    );
    sh.follow(next);

    p.write("b.txt", "b\n");
    // 1.2's attempt is running: status picks up from its verification.
    sh.next(); // verify
    sh.next(); // post-code
    sh.next(); // post-test
    sh.next(); // complete
    p.commit_all("1.2");
    run_task(&mut sh, "2.1");
    p.commit_all("2.1");

    // Every box is checked: status names the full check `finish` wants first, then
    // `finish`.
    let check = sh.next();
    assert!(
        check.text().contains("verificationBlocks.execution"),
        "{}",
        check.text()
    );
    let finished = sh.next();
    assert!(
        finished.stdout.contains("complete: 3/3 tasks checked"),
        "{}",
        finished.text()
    );
    assert_eq!(p.state("demo")["phase"], "completed");
    let status = sh.ok("specrun status");
    assert!(
        status.stdout.contains("phase completed"),
        "{}",
        status.stdout
    );
    // A finished run's step is its story.
    assert!(sh.next().stdout.contains("demo"));
    sh.assert_all_followed();
    // Bookkeeping that stays local is ignored; what is left is the record, to commit.
    let porcelain = p.git_cmd(&["status", "--porcelain"]);
    assert!(
        porcelain.lines().all(|l| l.contains("specs/demo/")
            && !l.contains(".specrun-state.json")
            && !l.contains(".lock")),
        "{porcelain}"
    );
}
