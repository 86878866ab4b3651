//! `learn`: deduplicated bullets under `## Learnings` in .progress.md.

use crate::task_helpers::*;

#[test]
fn learn_creates_the_section_appends_and_dedupes() {
    let p = project(TASKS, &[]);
    let (code, out, _) = run(&p, &["learn", "cargo test needs   --features x"]);
    assert_eq!((code, out.trim()), (0, "learning recorded in .progress.md"));
    assert_eq!(
        p.read("specs/demo/.progress.md"),
        "## Learnings\n\n- cargo test needs --features x\n"
    );
    run(&p, &["learn", "the parser keeps CRLF", "--task", "1.1"]);
    let (code, out, _) = run(
        &p,
        &["learn", "Cargo test needs --features x", "--task", "1.2"],
    );
    assert_eq!(
        (code, out.trim()),
        (0, "learning already recorded; nothing added")
    );
    assert_eq!(
        p.read("specs/demo/.progress.md"),
        "## Learnings\n\n- cargo test needs --features x\n- [1.1] the parser keeps CRLF\n"
    );
}

#[test]
fn learn_appends_inside_an_existing_section_keeping_crlf() {
    let p = project(TASKS, &[]);
    p.write(
        "specs/demo/.progress.md",
        "# Progress\r\n## Learnings\r\n- old\r\n\r\n## Notes\r\nn\r\n",
    );
    run(&p, &["learn", "new"]);
    assert_eq!(
        p.read("specs/demo/.progress.md"),
        "# Progress\r\n## Learnings\r\n- old\r\n- new\r\n\r\n## Notes\r\nn\r\n"
    );
}

#[test]
fn learn_rejects_empty_text_and_unknown_tasks() {
    let p = project(TASKS, &[]);
    let (code, _, err) = run(&p, &["learn", "   "]);
    assert_eq!(code, 2);
    assert!(err.contains("bad learning: the text is empty"), "{err}");
    let (code, _, err) = run(&p, &["learn", "x", "--task", "7"]);
    assert_eq!(code, 2);
    assert!(err.contains("no task with id 7"), "{err}");
    assert!(!p.path("specs/demo/.progress.md").exists());
}
