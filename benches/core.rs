//! Criterion benchmarks of the core, in process, on generated fixtures: the tasks.md parser
//! (100,000 and 1,000 tasks), a state merge, snapshot fact collection in a git repository,
//! and the atomic locked write. `scripts/bench-core` measures the same work as whole
//! processes (the targets are about those).
// Tests and benchmarks set up and inspect files directly; the binary goes through the store.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

use specrun::api::io::project::Project;
use specrun::api::next::facts;
use specrun::api::{io::store, model::state, model::tasks};

fn tasks_md(n: usize, checked_below: usize) -> String {
    let mut text = String::with_capacity(n * 64);
    for i in 0..n {
        if i % 100 == 0 {
            text.push_str(&format!("## Phase {}\n", i / 100 + 1));
        }
        let mark = if i < checked_below { 'x' } else { ' ' };
        text.push_str(&format!(
            "- [{mark}] {}.{} [P] Task {i}\n  - **Files**: src/f{i}.rs\n  - **Verify**: `cargo test t{i}`\n",
            i / 100 + 1,
            i % 100 + 1
        ));
    }
    text
}

fn bench_parser(c: &mut Criterion) {
    let big = tasks_md(100_000, 33_000);
    let small = tasks_md(1_000, 400);
    c.bench_function("tasks::parse 100k tasks + counts", |b| {
        b.iter(|| tasks::parse(black_box(&big)).counts())
    });
    c.bench_function("tasks::parse 1k tasks + next group", |b| {
        b.iter(|| {
            let list = tasks::parse(black_box(&small));
            list.parallel_group(list.next_index()).len()
        })
    });
}

fn bench_state(c: &mut Criterion) {
    let params = state::InitParams {
        name: "demo".into(),
        ..Default::default()
    };
    let base = state::init_execution(None, &params, 400, 1000, "2026-01-01T00:00:00Z");
    let patch = json!({"globalIteration": 3, "usage": {"outputTokens": 1200}, "$unset": ["guard"]});
    c.bench_function("state::apply_patch", |b| {
        b.iter(|| state::apply_patch(Some(base.clone()), black_box(&patch), "s").unwrap())
    });

    // Reading a running execution's state (50 tasks with attempts and evidence): the JSON
    // read the hooks do today against the typed read.
    let mut running = base.clone();
    for i in 0..50 {
        let id = format!("1.{i}");
        running["attempts"][&id] = json!([{"n": 1, "status": "complete", "startedAt": "2026-01-01T00:00:00Z",
            "endedAt": "2026-01-01T00:10:00Z", "startCommit": "abc", "endCommit": "def"}]);
        running["taskEvidence"][&id] = json!({"command": "cargo test", "exitCode": 0, "tree": "t"});
    }
    let bytes = store::to_pretty_bytes(&running);
    let file = Path::new("s.json");
    c.bench_function("state read: JSON + typecheck (50 tasks)", |b| {
        b.iter(|| {
            let doc = store::parse_json(file, black_box(&bytes)).unwrap();
            state::typecheck(&doc, "s").unwrap();
            doc
        })
    });
    c.bench_function("state read: parse + State::from_json (50 tasks)", |b| {
        b.iter(|| {
            let doc = store::parse_json(file, black_box(&bytes)).unwrap();
            state::State::from_json(doc, "s").unwrap()
        })
    });

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".specrun-state.json");
    store::write_atomic(&path, &store::to_pretty_bytes(&base)).unwrap();
    c.bench_function(
        "store::update_json (lock, read, merge, fsync, rename)",
        |b| {
            b.iter(|| {
                store::update_json(&path, store::DEFAULT_LOCK_WAIT, |cur| {
                    Ok((Some(state::apply_patch(cur, &patch, "s")?), ()))
                })
                .unwrap()
            })
        },
    );
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.email=b@example.com", "-c", "user.name=b"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn bench_snapshot(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("specs/demo")).unwrap();
    std::fs::write(root.join("specs/demo/tasks.md"), tasks_md(1_000, 400)).unwrap();
    std::fs::write(root.join("specs/.current-spec"), "demo\n").unwrap();
    let params = state::InitParams {
        name: "demo".into(),
        ..Default::default()
    };
    let doc = state::init_execution(None, &params, 400, 1000, "2026-01-01T00:00:00Z");
    store::write_atomic(
        &root.join("specs/demo/.specrun-state.json"),
        &store::to_pretty_bytes(&doc),
    )
    .unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "fixture"]);
    let project = Project::discover(Some(root)).unwrap();
    c.bench_function("snapshot::collect + serialize (1k tasks, git)", |b| {
        b.iter(|| {
            let facts = facts::collect(&project, None).unwrap();
            serde_json::to_string(&facts.snapshot(&project)).unwrap()
        })
    });
}

criterion_group!(benches, bench_parser, bench_state, bench_snapshot);
criterion_main!(benches);
