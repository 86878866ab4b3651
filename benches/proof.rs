//! Criterion benchmarks of the proof checks, in process: parsing a 50,000-line test log
//! (the real runner captures of tests/fixtures/testlogs, repeated) and scanning a
//! 2,000-line diff of test sources for integrity findings; recording and checking the
//! baseline of tests that must still run on a 5,000-test log (issue 24: ≤ 30 ms).
// Tests and benchmarks set up and inspect files directly; the binary goes through the store.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};

use specrun::api::evidence::integrity::{self, FileDiff, Status};
use specrun::api::evidence::testlog;

/// 50,000 lines of real runner output: every capture, repeated.
fn test_log(lines: usize) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/testlogs");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    names.sort();
    let all: Vec<String> = names
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut out = String::new();
    let mut n = 0;
    'fill: loop {
        for text in &all {
            for line in text.lines() {
                out.push_str(line);
                out.push('\n');
                n += 1;
                if n == lines {
                    break 'fill;
                }
            }
        }
    }
    out
}

fn bench_testlog(c: &mut Criterion) {
    let log = test_log(50_000);
    c.bench_function("testlog::parse 50k-line log", |b| {
        b.iter(|| testlog::parse(black_box(&log)).results.len())
    });
    c.bench_function("testlog::Parser 50k-line log in 64 KiB chunks", |b| {
        b.iter(|| {
            let mut p = testlog::Parser::default();
            for chunk in log.as_bytes().chunks(64 * 1024) {
                p.feed(black_box(chunk));
            }
            p.finish().results.len()
        })
    });
}

/// A Rust test module of `n` tests with two assertions each.
fn rust_tests(n: usize, skip_every: usize) -> String {
    let mut s = String::from("#[cfg(test)]\nmod tests {\n");
    for i in 0..n {
        s.push_str("    #[test]\n");
        if skip_every > 0 && i % skip_every == 0 {
            s.push_str("    #[ignore]\n");
        }
        s.push_str(&format!(
            "    fn case_{i}() {{\n        let v = {i};\n        assert_eq!(v, {i});\n        assert!(v >= 0);\n    }}\n"
        ));
    }
    s.push_str("}\n");
    s
}

/// 20 files of test sources whose change is 100 lines each (2,000 in all): the old and
/// new contents, as the scan reads them.
fn change_2000() -> Vec<(String, String, String)> {
    (0..20)
        .map(|f| {
            let old = rust_tests(40, 0);
            let mut new = rust_tests(40, 10);
            // 4 `#[ignore]`s, a test renamed and 47 assertions changed: 100 lines each.
            new = new.replacen("fn case_39() {", "fn renamed_39() {", 1);
            for _ in 0..7 {
                new = new.replacen("assert!(v >= 0);", "assert!(v >= 0, \"case\");", 1);
            }
            for i in 0..45 {
                new = new.replacen(
                    &format!("assert_eq!(v, {i});"),
                    &format!("assert_eq!(v, {i} + 0);"),
                    1,
                );
            }
            (format!("src/m{f}.rs"), old, new)
        })
        .collect()
}

fn bench_integrity(c: &mut Criterion) {
    let change = change_2000();
    let lines: usize = change
        .iter()
        .map(|(_, old, new)| {
            let (a, r) = integrity::line_changes(old, new);
            a.len() + r.len()
        })
        .sum();
    assert!((1_900..=2_100).contains(&lines), "{lines} changed lines");
    c.bench_function(
        "integrity line changes + scan of a 2,000-line change",
        |b| {
            b.iter(|| {
                let files: Vec<FileDiff> = black_box(&change)
                    .iter()
                    .map(|(path, old, new)| {
                        let mut f = FileDiff::new(path, Status::Modified);
                        (f.added, f.removed) = integrity::line_changes(old, new);
                        f.old = Some(old.clone());
                        f.new = Some(new.clone());
                        f
                    })
                    .collect();
                integrity::scan(&files).len()
            })
        },
    );
}

/// A libtest log naming `n` passing tests (a few names repeated, as two binaries print).
fn libtest_log(n: usize) -> String {
    let mut out = format!("running {n} tests\n");
    for i in 0..n {
        out.push_str(&format!(
            "test module_{}::case_{} ... ok\n",
            i / 50,
            i % 4900
        ));
    }
    out.push_str(&format!(
        "\ntest result: ok. {n} passed; 0 failed; 0 ignored\n"
    ));
    out
}

fn bench_baseline(c: &mut Criterion) {
    use specrun::api::evidence::baseline::Baseline;
    let log = libtest_log(5_000);
    c.bench_function("baseline: record and check a 5,000-test log", |b| {
        b.iter(|| {
            // Recording: the baseline run's log parsed, the baseline taken and stored.
            let before = testlog::parse(black_box(&log));
            let base = Baseline::take("cargo test", "t", &before);
            let bytes = serde_json::to_vec(&base).unwrap();
            // Checking: read back, the final run's log parsed, compared, joined.
            let mut base: Baseline = serde_json::from_slice(&bytes).unwrap();
            let after = testlog::parse(black_box(&log));
            let missing = base.missing(Some(&after));
            base.join(&after);
            assert!(missing.is_empty() && base.len() > 4_000);
            black_box(base)
        })
    });
}

/// The baseline's own share: the two reports already parsed (`verify run` parses the
/// output it captures anyway), the baseline taken, stored, read back, compared and joined.
fn bench_baseline_only(c: &mut Criterion) {
    use specrun::api::evidence::baseline::Baseline;
    let report = testlog::parse(&libtest_log(5_000));
    c.bench_function("baseline: record and check, logs already parsed", |b| {
        b.iter(|| {
            let base = Baseline::take("cargo test", "t", black_box(&report));
            let bytes = serde_json::to_vec(&base).unwrap();
            let mut base: Baseline = serde_json::from_slice(&bytes).unwrap();
            let missing = base.missing(Some(black_box(&report)));
            base.join(&report);
            black_box((missing, base))
        })
    });
}

criterion_group!(
    benches,
    bench_testlog,
    bench_integrity,
    bench_baseline,
    bench_baseline_only
);
criterion_main!(benches);
