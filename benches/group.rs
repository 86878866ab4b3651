//! `group merge` overhead on a 10,000-file repository: merging three finished members into
//! the base branch (`--no-ff`, one at a time, each checked for being merged already) and
//! fingerprinting the merged tree, without the verification command itself. Target: ≤ 200 ms
//! median. Each iteration starts from the base commit again (the reset is not timed).
// Tests and benchmarks set up and inspect files directly; the binary goes through the store.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::path::Path;
use std::process::Command;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use specrun::api::evidence::verify;
use specrun::api::io::project::Project;
use specrun::api::isolation::worktree::{self, Step};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.email=b@example.com", "-c", "user.name=b"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// 10,000 files in 100 directories, a spec, and three member branches each changing its
/// own file.
fn repo(root: &Path) -> String {
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.email", "b@example.com"]);
    git(root, &["config", "user.name", "b"]);
    for d in 0..100 {
        let dir = root.join(format!("src/d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f}.rs")), format!("// file {d}/{f}\n")).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("specs/demo")).unwrap();
    std::fs::write(root.join("specs/.current-spec"), "demo\n").unwrap();
    std::fs::write(
        root.join("specs/demo/tasks.md"),
        "- [ ] 1 [P] a\n- [ ] 2 [P] b\n- [ ] 3 [P] c\n",
    )
    .unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let base = git(root, &["rev-parse", "HEAD"]);
    for m in 1..=3 {
        git(
            root,
            &["switch", "-q", "-c", &format!("specrun/demo/{m}"), &base],
        );
        std::fs::write(
            root.join(format!("src/d{m}/f{m}.rs")),
            format!("// member {m}\n"),
        )
        .unwrap();
        git(root, &["commit", "-q", "-am", &format!("member {m}")]);
    }
    git(root, &["switch", "-q", "main"]);
    base
}

fn bench_merge(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let base = repo(&root);
    let project = Project::discover(Some(&root)).unwrap();
    let spec = project.spec(Some("demo")).unwrap().unwrap();
    let mut group = c.benchmark_group("group merge");
    group.sample_size(20);
    group.bench_function("merge 3 members + fingerprint, 10,000 files", |b| {
        b.iter_batched(
            || git(&root, &["reset", "-q", "--hard", &base]),
            |_| {
                let mut merger = worktree::Merger::new(&root).unwrap();
                for m in 1..=3 {
                    let branch = format!("specrun/demo/{m}");
                    let step = merger.step(&branch, "merge").unwrap();
                    assert!(matches!(step, Step::Pending(_)), "{step:?}");
                }
                merger.land().unwrap();
                verify::fingerprint(&project, &spec).unwrap()
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_merge);
criterion_main!(benches);
