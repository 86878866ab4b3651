//! The real-world tasks.md corpus (issue 26): every file either reads as a careful reader
//! counts it (INDEX.tsv) or `tasks lint` names a line where the reading may differ. The
//! corpus lives outside the repository (../shared/reference/realworld-tasks beside the
//! checkout); without it this test prints a note and checks nothing.

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

fn corpus_dir() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = manifest.parent()?.join("shared/reference/realworld-tasks");
    dir.join("INDEX.tsv").is_file().then_some(dir)
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
fn every_corpus_file_reads_as_a_reader_counts_it_or_is_flagged_on_a_line() {
    let Some(dir) = corpus_dir() else {
        eprintln!("note: no ../shared/reference/realworld-tasks beside the checkout; the corpus check did nothing");
        return;
    };
    let index = std::fs::read_to_string(dir.join("INDEX.tsv")).unwrap();
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
    eprintln!("corpus: {agree} read as a reader counts, {flagged} flagged on a line");
    assert!(wrong.is_empty(), "misread silently:\n{}", wrong.join("\n"));
}
