//! The real-world tasks.md corpus (issue 26): every file either reads as a careful reader
//! counts it (INDEX.tsv) or `tasks lint` names a line where the reading may differ. The
//! corpus lives outside the repository: `$SPECRUN_TASKS_CORPUS`, else
//! `../shared/reference/realworld-tasks` beside the checkout. The test is `#[ignore]`d, so
//! a run without the corpus lists it as ignored instead of passing it having checked
//! nothing; `scripts/test` runs it with `--ignored` when the corpus is there and says so
//! loudly when it is not. Run by name without the corpus, it fails.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::TempProject;

/// Lint findings that say "this file may not read as written" (not style findings such
/// as a missing Verify): a file whose counts differ from a reader's must carry one.
const READING_FINDINGS: &[&str] = &[
    "unread-checkbox",
    "heading-task",
    "unclosed-fence",
    "checklist-without-ids",
];

/// Where the corpus is looked for: `$SPECRUN_TASKS_CORPUS`, else beside the checkout
/// (scripts/test looks in the same two places).
fn corpus_dir() -> PathBuf {
    match std::env::var_os("SPECRUN_TASKS_CORPUS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/realworld-tasks"),
    }
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
#[ignore = "needs the real-world corpus outside the repository (SPECRUN_TASKS_CORPUS, else ../shared/reference/realworld-tasks); scripts/test runs it with --ignored when present"]
fn every_corpus_file_reads_as_a_reader_counts_it_or_is_flagged_on_a_line() {
    let dir = corpus_dir();
    let index = std::fs::read_to_string(dir.join("INDEX.tsv")).unwrap_or_else(|e| {
        panic!(
            "no corpus at {} ({e}): set SPECRUN_TASKS_CORPUS to the realworld-tasks directory",
            dir.display()
        )
    });
    let rows = index.lines().skip(1).count();
    assert!(rows > 0, "{}: INDEX.tsv lists no file", dir.display());
    let p = TempProject::bare();
    let (mut agree, mut flagged, mut wrong) = (0, 0, Vec::new());
    for row in index.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        let (file, total, checked) = (cols[0], cols[5], cols[6]);
        let path = dir.join(file);
        let path = path.to_str().unwrap();
        let count = json_of(&p.specrun().args(["tasks", "count", path]).output().unwrap());
        let got = (count["total"].to_string(), count["completed"].to_string());
        if got == (total.to_string(), checked.to_string()) {
            agree += 1;
            continue;
        }
        let lint = p
            .specrun()
            .args(["tasks", "lint", "--json", path])
            .output()
            .unwrap();
        let findings = serde_json::from_slice::<Value>(&lint.stdout)
            .ok()
            .and_then(|v| v["findings"].as_array().cloned())
            .unwrap_or_default();
        let named = findings.iter().any(|f| {
            READING_FINDINGS.contains(&f["code"].as_str().unwrap_or(""))
                && f["line"].as_u64().is_some_and(|l| l > 0)
        });
        if named {
            flagged += 1;
        } else {
            wrong.push(format!(
                "{file}: reader {total}/{checked}, specrun {}/{}",
                got.0, got.1
            ));
        }
    }
    eprintln!("corpus: {agree} read as a reader counts, {flagged} flagged on a line, of {rows}");
    assert_eq!(agree + flagged + wrong.len(), rows);
    assert!(wrong.is_empty(), "misread silently:\n{}", wrong.join("\n"));
}
