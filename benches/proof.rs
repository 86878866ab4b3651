//! Criterion benchmarks of the proof checks, in process: parsing a 50,000-line test log
//! (the real runner captures of tests/fixtures/testlogs, repeated) and scanning a
//! 2,000-line diff of test sources for integrity findings.
// Tests and benchmarks set up and inspect files directly; the binary goes through the store.
#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};

use specrun::evidence::integrity::{self, FileDiff};
use specrun::evidence::testlog;

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

/// 20 files, 100 diff lines each (2,000 in all), with whole old and new contents.
fn diff_2000() -> (String, Vec<(String, String)>) {
    let mut diff = String::new();
    let mut contents = Vec::new();
    for f in 0..20 {
        let path = format!("src/m{f}.rs");
        diff.push_str(&format!(
            "diff --git a/{path} b/{path}\nindex 111..222 100644\n--- a/{path}\n+++ b/{path}\n@@ -10,50 +10,50 @@\n"
        ));
        for i in 0..50 {
            diff.push_str(&format!("-        assert_eq!(v, {i}); // old {f}\n"));
        }
        for i in 0..50 {
            let marker = if i % 10 == 0 {
                "    #[ignore]"
            } else {
                "        assert!(v >= 0);"
            };
            diff.push_str(&format!("+{marker} // new {f} {i}\n"));
        }
        contents.push((rust_tests(40, 0), rust_tests(39, 7)));
    }
    (diff, contents)
}

fn bench_integrity(c: &mut Criterion) {
    let (diff, contents) = diff_2000();
    assert_eq!(
        diff.lines()
            .filter(|l| l.starts_with('+') || l.starts_with('-'))
            .count()
            - 40,
        2_000
    );
    c.bench_function("integrity parse + scan 2,000-line diff", |b| {
        b.iter(|| {
            let mut files: Vec<FileDiff> = integrity::parse_unified(black_box(&diff));
            for (f, (old, new)) in files.iter_mut().zip(&contents) {
                f.old = Some(old.clone());
                f.new = Some(new.clone());
            }
            integrity::scan(&files).len()
        })
    });
}

criterion_group!(benches, bench_testlog, bench_integrity);
criterion_main!(benches);
