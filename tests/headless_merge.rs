//! The CI merge job, `specrun headless merge`, as a workflow calls it: an origin repository,
//! one clone per wave member (its job: the task done, committed on its branch, pushed,
//! exported with `headless export --task`), and a fresh clone for the merge job that
//! merges the members' commits `--no-ff` in task order with their bundles, then runs the
//! plan's final check on the merged tree. A clean merge, a conflict (followed by the
//! printed way on), a crash between two merges then a re-run, a final check that fails on
//! the merged tree, and bundles that must be refused. `headless pr` on the merged spec.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{bin_path, write_executable, TempProject};
use crate::group_isolation::{git_in, ok_in};

const TASKS: &str = "# Tasks

**Final check**: `sh check.sh`

## Phase 1

- [ ] 1.1 [P] Alpha
  - **Files**: a.txt, shared.txt
  - **Verify**: `test -f a.txt`
- [ ] 1.2 [P] Beta
  - **Files**: b.txt, shared.txt
  - **Verify**: `test -f b.txt`
";

/// The specrun commands a workflow's jobs run, exactly as docs/ci/README.md and
/// docs/ci/specrun.yml show them (`docs_ci` checks both against this list); the tests run
/// each through `sh -c` with the workflow's variables set.
pub(crate) const CI_COMMANDS: &[&str] = &[
    "specrun waves --spec \"$SPEC\" --wave 1 --json",
    "specrun headless import --file \"$BUNDLES/spec.json\"",
    "specrun headless run --spec \"$SPEC\" --task \"$TASK\" --plugin-dir \"$PLUGIN\"",
    "specrun headless export --spec \"$SPEC\" --task \"$TASK\" --out \"$BUNDLES/member-$TASK.json\"",
    "specrun headless merge --spec \"$SPEC\" --bundle \"$BUNDLES\"/member-*.json --json",
    "specrun headless export --spec \"$SPEC\" --out \"$BUNDLES/spec.json\"",
    "specrun headless pr --spec \"$SPEC\" --create --base \"$BASE\" --head \"$RUN_BRANCH\"",
];
const WAVES: usize = 0;
const IMPORT: usize = 1;
const RUN: usize = 2;
const EXPORT_MEMBER: usize = 3;
const MERGE: usize = 4;
const EXPORT_SPEC: usize = 5;
const PR: usize = 6;

/// A stand-in `claude` for a member's `headless run`: it does the task as the model would,
/// through specrun (start, the work, the task's Verify, both critiques, complete), then
/// prints a `result` line.
const MEMBER_CLAUDE: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.1.332 (Claude Code)"; exit 0; fi
set -e
specrun state init --spec "$SPEC" >&2
specrun task start "$TASK" --spec "$SPEC" >&2
sh -c "$MEMBER_WORK"
specrun verify run --task "$TASK" --spec "$SPEC" >&2
for stage in post-code post-test; do
  specrun critique record --task "$TASK" --stage $stage --file "$CRITIQUES/$stage.json" --spec "$SPEC" >&2
done
specrun task complete "$TASK" --check --spec "$SPEC" >&2
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":4,"total_cost_usd":0.25,"result":"done"}'
"#;

fn run(dir: &Path, args: &[String], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new(bin_path())
        .current_dir(dir)
        .env_remove("CLAUDECODE")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .unwrap();
    said(out)
}

fn said(out: std::process::Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Ci {
    origin: TempProject,
    jobs: tempfile::TempDir,
    /// Where the jobs' artifacts (the bundles) go: outside every checkout.
    bundles: PathBuf,
}

impl Ci {
    /// The repository the workflow checks out: the spec, a final check over both members'
    /// files, a shared file both may touch.
    fn new(check: &str) -> Ci {
        let origin = TempProject::git();
        origin.spec("demo", TASKS);
        origin.write("check.sh", check);
        origin.write("shared.txt", "line one\n");
        origin.write(".gitignore", ".specrun/\nspecs/*/.specrun-state.json\n");
        origin.commit_all("spec");
        origin.git_cmd(&["branch", "specrun/run/demo"]);
        let jobs = tempfile::tempdir().unwrap();
        let bundles = std::fs::canonicalize(jobs.path()).unwrap().join("bundles");
        std::fs::create_dir_all(&bundles).unwrap();
        let ci = Ci {
            origin,
            jobs,
            bundles,
        };
        std::fs::create_dir_all(ci.dir("bin")).unwrap();
        write_executable(&ci.dir("bin").join("claude"), MEMBER_CLAUDE);
        std::fs::create_dir_all(ci.dir("critiques")).unwrap();
        for stage in ["post-code", "post-test"] {
            std::fs::write(
                ci.dir("critiques").join(format!("{stage}.json")),
                crate::common::critique_input(stage).to_string(),
            )
            .unwrap();
        }
        ci
    }

    /// `CI_COMMANDS[n]` through `sh -c` in `dir`, as a workflow step runs it: its variables
    /// set, `specrun` and the stand-ins on PATH.
    fn sh(&self, n: usize, dir: &Path, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
        let bin = bin_path();
        let path = format!(
            "{}:{}:{}",
            self.dir("bin").display(),
            bin.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let plugin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("plugin");
        let out = Command::new("sh")
            .arg("-c")
            .arg(CI_COMMANDS[n])
            .current_dir(dir)
            .env_remove("CLAUDECODE")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env("PATH", path)
            .env("SPEC", "demo")
            .env("BUNDLES", &self.bundles)
            .env("PLUGIN", plugin)
            .env("BASE", "main")
            .env("RUN_BRANCH", "specrun/run/demo")
            .env("CRITIQUES", self.dir("critiques"))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        said(out)
    }

    fn dir(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.jobs.path()).unwrap().join(name)
    }

    /// A job's checkout: the run branch, as every job checks it out.
    fn clone(&self, name: &str) -> PathBuf {
        let dir = self.dir(name);
        let out = Command::new("git")
            .args(["clone", "-q", "--branch", "specrun/run/demo"])
            .arg(self.origin.root())
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        git_in(&dir, &["config", "user.email", "ci@example.com"]);
        git_in(&dir, &["config", "user.name", "ci"]);
        dir
    }

    /// A member's job: in its own clone, on its branch, `headless run --task` (the stand-in
    /// model does the task), the work committed and pushed, the bundle exported.
    fn member(&self, id: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = self.clone(&format!("member-{id}"));
        let branch = format!("specrun/demo/{id}");
        git_in(&dir, &["switch", "-q", "-c", &branch]);
        let work: Vec<String> = files
            .iter()
            .map(|(f, text)| format!("printf '%s' '{text}' > {f}"))
            .collect();
        let work = work.join(" && ");
        let (code, out, err) = self.sh(RUN, &dir, &[("TASK", id), ("MEMBER_WORK", &work)]);
        assert_eq!(code, Some(0), "{out}{err}");
        git_in(&dir, &["add", "-A"]);
        git_in(&dir, &["reset", "-q", "--", "specs"]);
        git_in(
            &dir,
            &["commit", "-q", "-m", &format!("specrun: task {id}")],
        );
        git_in(&dir, &["push", "-q", "origin", &branch]);
        let (code, out, err) = self.sh(EXPORT_MEMBER, &dir, &[("TASK", id)]);
        assert_eq!(code, Some(0), "{out}{err}");
        self.bundles.join(format!("member-{id}.json"))
    }

    /// The merge job's clone with the members' branches fetched.
    fn merge_job(&self) -> PathBuf {
        let dir = self.clone("merge");
        git_in(
            &dir,
            &[
                "fetch",
                "-q",
                "origin",
                "refs/heads/specrun/*:refs/remotes/origin/specrun/*",
            ],
        );
        dir
    }

    fn merge(&self, dir: &Path, env: &[(&str, &str)]) -> (Option<i32>, Value, String) {
        let (code, out, err) = self.sh(MERGE, dir, env);
        let doc = serde_json::from_str(out.lines().last().unwrap_or("null")).unwrap_or(Value::Null);
        (code, doc, format!("{out}\n{err}"))
    }
}

fn merges(dir: &Path) -> Vec<String> {
    git_in(dir, &["log", "--merges", "--format=%P"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn state(dir: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join("specs/demo/.specrun-state.json")).unwrap(),
    )
    .unwrap()
}

/// Nothing but the bookkeeping differs from HEAD, and no merge is in progress.
fn clean(dir: &Path) -> bool {
    let status = git_in(
        dir,
        &["status", "--porcelain", "--", ".", ":(exclude)specs"],
    );
    !dir.join(".git/MERGE_HEAD").exists() && status.trim().is_empty()
}

const CHECK_BOTH: &str = "test -f a.txt && test -f b.txt\n";

fn two_members(ci: &Ci, shared_b: Option<&str>) -> Vec<PathBuf> {
    let a = ci.member("1.1", &[("a.txt", "A\n")]);
    let mut b_files = vec![("b.txt", "B\n")];
    if let Some(s) = shared_b {
        b_files.push(("shared.txt", s));
    }
    let b = ci.member("1.2", &b_files);
    vec![a, b]
}

#[test]
fn two_members_merge_no_ff_in_task_order_and_the_final_check_binds_the_merged_tree() {
    let ci = Ci::new(CHECK_BOTH);
    // The waves job: wave 1 is both members, side by side.
    let plan = ci.clone("waves");
    let (code, out, err) = ci.sh(WAVES, &plan, &[]);
    assert_eq!(code, Some(0), "{err}");
    let matrix: Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = matrix["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["task"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1.1", "1.2"]);
    two_members(&ci, None);
    let dir = ci.merge_job();
    let (code, doc, text) = ci.merge(&dir, &[]);
    assert_eq!(code, Some(0), "{text}");
    let tasks: Vec<&str> = doc["merged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["task"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["1.1", "1.2"], "{doc}");
    let parents = merges(&dir);
    assert_eq!(
        parents.len(),
        2,
        "one --no-ff merge per member: {parents:?}"
    );
    assert!(parents.iter().all(|p| p.split(' ').count() == 2));
    assert!(dir.join("a.txt").exists() && dir.join("b.txt").exists());
    // Both ticks, both members' evidence and attempts, the final check on the merged tree.
    let tasks_md = std::fs::read_to_string(dir.join("specs/demo/tasks.md")).unwrap();
    assert!(
        tasks_md.contains("- [x] 1.1") && tasks_md.contains("- [x] 1.2"),
        "{tasks_md}"
    );
    let st = state(&dir);
    for id in ["1.1", "1.2"] {
        assert!(
            st["taskEvidence"][id]["mergedFrom"]["commit"].is_string(),
            "{st:#}"
        );
        assert_eq!(st["attempts"][id][0]["status"], "done", "{st:#}");
    }
    assert_eq!(st["verificationBlocks"]["execution"]["exitCode"], 0);
    assert_eq!(doc["finalCheck"]["passed"], true);
    let (code, _, err) = run(
        &dir,
        &["verify", "status", "--spec", "demo"].map(String::from),
        &[],
    );
    assert_eq!(
        code,
        Some(0),
        "the final check is fresh on the merged tree: {err}"
    );
    // Each task's evidence counts on the merged tree, as a group member's does: the spec
    // completes here.
    let (code, out, err) = run(&dir, &["finish", "--spec", "demo"].map(String::from), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    // The next run's jobs start from the merged branch and the merge job's bundle: no
    // wave is left.
    git_in(&dir, &["push", "-q", "origin", "HEAD:specrun/run/demo"]);
    let (code, _, err) = ci.sh(EXPORT_SPEC, &dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    let next = ci.clone("next-waves");
    let (code, _, err) = ci.sh(IMPORT, &next, &[]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = ci.sh(WAVES, &next, &[]);
    assert_eq!(code, Some(1), "every task is done: {err}");
    // The members' events travelled in their bundles.
    let events = std::fs::read_to_string(dir.join(".specrun/events.jsonl")).unwrap();
    for id in ["1.1", "1.2"] {
        let needle = format!("\"event\":\"task-complete\",\"task\":\"{id}\"");
        assert_eq!(events.matches(&needle).count(), 1, "{id}:\n{events}");
    }
    // A re-run merges nothing twice.
    let (code, doc, text) = ci.merge(&dir, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(doc["merged"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["already"] == true));
    assert_eq!(merges(&dir).len(), 2);

    // The delivery: the body is the evidence matrix, and gh (a stand-in recording its
    // arguments) is given it as --body-file.
    let gh_dir = ci.dir("gh");
    std::fs::create_dir_all(&gh_dir).unwrap();
    write_executable(
        &gh_dir.join("gh"),
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$GH_ARGS\"\necho https://example.invalid/pr/1\n",
    );
    let args_file = gh_dir.join("args");
    let path = format!(
        "{}:{}:{}",
        gh_dir.display(),
        bin_path().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (code, out, err) = ci.sh(
        PR,
        &dir,
        &[("PATH", &path), ("GH_ARGS", args_file.to_str().unwrap())],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("https://example.invalid/pr/1"), "{out}");
    let args: Vec<String> = std::fs::read_to_string(&args_file)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        &args[..4],
        ["pr", "create", "--title", "specrun: demo"],
        "{args:?}"
    );
    let at = args.iter().position(|a| a == "--body-file").unwrap();
    assert_eq!(
        &args[args.len() - 4..],
        ["--base", "main", "--head", "specrun/run/demo"]
    );
    let body = std::fs::read_to_string(&args[at + 1]).unwrap();
    assert!(
        body.contains("2 of 2 tasks done; execution phase `completed`"),
        "{body}"
    );
    assert!(
        body.contains("| 1.1 Alpha | yes | 1 | `test -f a.txt` exit 0 (passed) |"),
        "{body}"
    );
    assert!(
        body.contains("**Final check:** `sh check.sh` exit 0 (fresh)"),
        "{body}"
    );
    let tree = st["verificationBlocks"]["execution"]["tree"]
        .as_str()
        .unwrap();
    assert!(
        body.contains(&tree[..12]),
        "the merged tree is named: {body}"
    );
    assert!(
        body.contains("### What a person must still decide\n\nNothing"),
        "{body}"
    );

    // Without gh on PATH: the body is printed, the gh command shown, exit 1.
    let bare = ci.dir("bare-path");
    std::fs::create_dir_all(&bare).unwrap();
    for tool in ["git", "sh"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let from = String::from_utf8_lossy(&found.stdout).trim().to_string();
        std::os::unix::fs::symlink(from, bare.join(tool)).unwrap();
    }
    std::os::unix::fs::symlink(bin_path(), bare.join("specrun")).unwrap();
    let (code, out, err) = ci.sh(PR, &dir, &[("PATH", bare.to_str().unwrap())]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("### Tasks"), "{out}");
    assert!(
        err.contains("gh is not on PATH") && err.contains("gh pr create --title"),
        "{err}"
    );
}

#[test]
fn a_conflict_stops_with_the_checkout_clean_and_the_printed_way_on_works() {
    let ci = Ci::new(CHECK_BOTH);
    ci.member("1.1", &[("a.txt", "A\n"), ("shared.txt", "alpha\n")]);
    ci.member("1.2", &[("b.txt", "B\n"), ("shared.txt", "beta\n")]);
    let dir = ci.merge_job();
    let head_before = git_in(&dir, &["rev-parse", "HEAD"]);
    let (code, doc, text) = ci.merge(&dir, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(doc["conflict"]["task"], "1.2", "{doc}");
    assert_eq!(doc["conflict"]["files"], serde_json::json!(["shared.txt"]));
    assert!(clean(&dir), "{}", git_in(&dir, &["status", "--porcelain"]));
    assert_eq!(merges(&dir).len(), 1, "1.1 merged, 1.2 not");
    assert_ne!(git_in(&dir, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(
        std::fs::read_to_string(dir.join("shared.txt")).unwrap(),
        "alpha\n"
    );
    // The way on, as printed: merge by hand, resolve, commit, run the job again.
    let next = doc["next"].as_str().unwrap();
    let commit = doc["conflict"]["commit"].as_str().unwrap();
    assert!(
        next.contains(&format!("`git merge --no-ff {commit}`")),
        "{next}"
    );
    let out = Command::new("git")
        .current_dir(&dir)
        .args(["merge", "--no-ff", commit])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the hand merge conflicts too");
    std::fs::write(dir.join("shared.txt"), "alpha\nbeta\n").unwrap();
    git_in(&dir, &["add", "shared.txt"]);
    git_in(&dir, &["commit", "-q", "--no-edit"]);
    let (code, doc, text) = ci.merge(&dir, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(doc["merged"][1]["already"], true, "{doc}");
    assert_eq!(merges(&dir).len(), 2);
    assert!(state(&dir)["taskEvidence"]["1.2"]["mergedFrom"]["commit"] == commit);
}

#[test]
fn a_crash_between_two_merges_is_resumed_by_a_rerun_that_merges_each_once() {
    let ci = Ci::new(CHECK_BOTH);
    two_members(&ci, None);
    let dir = ci.merge_job();
    // Aborts (like a kill -9) right after the first merge reached the branch.
    let (code, _, text) = ci.merge(&dir, &[("SPECRUN_FAULT", "headless-merge:landed")]);
    assert_eq!(
        code,
        Some(128 + 6),
        "aborted (SIGABRT, as sh reports it): {text}"
    );
    assert_eq!(merges(&dir).len(), 1);
    let st = state(&dir);
    assert!(
        st["taskEvidence"]["1.1"]["mergedFrom"].is_null(),
        "not taken over yet"
    );
    assert!(clean(&dir));
    let (code, doc, text) = ci.merge(&dir, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(doc["merged"][0]["already"], true, "{doc}");
    assert_eq!(doc["merged"][1]["already"], false, "{doc}");
    assert_eq!(merges(&dir).len(), 2, "no member merged twice");
    let st = state(&dir);
    for id in ["1.1", "1.2"] {
        assert!(
            st["taskEvidence"][id]["mergedFrom"]["commit"].is_string(),
            "{st:#}"
        );
    }
    let events = std::fs::read_to_string(dir.join(".specrun/events.jsonl")).unwrap();
    assert_eq!(
        events.matches("\"event\":\"headless-merge\"").count(),
        2,
        "{events}"
    );
}

#[test]
fn a_final_check_failing_on_the_merged_tree_exits_non_zero_and_keeps_the_merges() {
    // Each member passes its own Verify; together they break the final check.
    let ci = Ci::new("test -f a.txt && test -f b.txt && ! grep -q clash shared.txt\n");
    two_members(&ci, Some("clash\n"));
    let dir = ci.merge_job();
    let (code, doc, text) = ci.merge(&dir, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(doc["finalCheck"]["passed"], false, "{doc}");
    assert_eq!(merges(&dir).len(), 2, "the merges are kept");
    assert!(
        doc["next"]
            .as_str()
            .unwrap()
            .contains("fix the merged tree"),
        "{doc}"
    );
    assert_ne!(
        state(&dir)["verificationBlocks"]["execution"]["exitCode"],
        0
    );
    let (code, _, _) = run(&dir, &["finish", "--spec", "demo"].map(String::from), &[]);
    assert_eq!(
        code,
        Some(1),
        "the spec does not complete on a failed check"
    );
}

#[test]
fn bundles_that_do_not_hold_are_refused_before_anything_is_merged() {
    let ci = Ci::new(CHECK_BOTH);
    let bundles = two_members(&ci, None);
    let dir = ci.merge_job();
    let head = git_in(&dir, &["rev-parse", "HEAD"]);
    let refused = |args: &[&str], needle: &str| {
        let (code, out, err) = run(
            &dir,
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &[],
        );
        assert_eq!(code, Some(2), "{out}{err}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert_eq!(git_in(&dir, &["rev-parse", "HEAD"]), head);
        assert!(!dir.join("specs/demo/.specrun-state.json").exists());
    };
    // Tampered: the evidence's exit code changed, the digest kept.
    let text = std::fs::read_to_string(&bundles[1]).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let s = v["files"][".specrun-state.json"]
        .as_str()
        .unwrap()
        .replace("\"exitCode\": 0", "\"exitCode\": 1");
    v["files"][".specrun-state.json"] = Value::String(s);
    let tampered = ci.bundles.join("tampered.json");
    std::fs::write(&tampered, v.to_string()).unwrap();
    let first = bundles[0].to_str().unwrap();
    let base = [
        "headless", "merge", "--spec", "demo", "--bundle", first, "--bundle",
    ];
    refused(
        &[&base[..], &[tampered.to_str().unwrap()]].concat(),
        "digest does not match",
    );
    // A merge job that never fetched the members' branches.
    let lone = ci.dir("lone");
    let out = Command::new("git")
        // `--no-local`: a local clone would copy every object, fetched or not.
        .args([
            "clone",
            "-q",
            "--no-local",
            "--single-branch",
            "--branch",
            "main",
        ])
        .arg(ci.origin.root())
        .arg(&lone)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let args: Vec<String> = [&base[..], &[bundles[1].to_str().unwrap()]]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (code, _, err) = run(&lone, &args, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not in this repository: fetch"), "{err}");
    assert!(!lone.join("specs/demo/.specrun-state.json").exists());
    // A whole checkout's bundle is no member's.
    let whole = ci.bundles.join("whole.json");
    let w = whole.to_str().unwrap();
    let out = run(
        &ci.dir("member-1.1"),
        &["headless", "export", "--spec", "demo", "--out", w].map(String::from),
        &[],
    );
    assert_eq!(out.0, Some(0), "{}", out.2);
    refused(&[&base[..6], &[w]].concat(), "not a member's bundle");
    // Inside Claude Code the merge and the pull request are a person's or CI's.
    let (code, _, err) = ci.sh(MERGE, &dir, &[("CLAUDECODE", "1")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("a person's decision") && !err.contains("headless"),
        "{err}"
    );
}

/// A member's work must be committed before its bundle is made: the merge job gets the
/// commit, not the work tree.
#[test]
fn a_member_export_with_uncommitted_work_is_refused() {
    let ci = Ci::new(CHECK_BOTH);
    let dir = ci.clone("member");
    ok_in(&dir, &["state", "init", "--spec", "demo"]);
    std::fs::write(dir.join("a.txt"), "A\n").unwrap();
    let (code, _, err) = ci.sh(EXPORT_MEMBER, &dir, &[("TASK", "1.1")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not all committed (a.txt)"), "{err}");
    assert!(!ci.bundles.join("member-1.1.json").exists());
}
