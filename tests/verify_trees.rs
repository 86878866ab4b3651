//! The fingerprint in unusual repositories: none at all, no commits, a detached HEAD, a
//! submodule, and a project root below the top of the work tree.

use serde_json::Value;

use crate::common::TempProject;

const TASKS: &str = "- [ ] 1 Only\n  - **Verify**: `true`\n";

fn init_state(p: &TempProject) {
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
}

fn run_json(p: &TempProject) -> (Value, String) {
    let out = p
        .specrun()
        .args(["verify", "run", "--command", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn freshness(p: &TempProject) -> String {
    let out = p
        .specrun()
        .args(["verify", "status", "--json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["status"].as_str().unwrap().to_string()
}

#[test]
fn outside_git_the_files_are_hashed_honouring_gitignore_and_the_output_says_so() {
    let p = TempProject::bare();
    p.spec("demo", TASKS);
    p.write("main.py", "print(1)\n");
    p.write(".gitignore", "*.pyc\n/build/\n");
    init_state(&p);
    let (rec, stderr) = run_json(&p);
    assert_eq!(rec["treeMethod"], "files");
    assert_eq!(rec["tree"].as_str().unwrap().len(), 64);
    assert!(stderr.contains("not a git work tree"), "{stderr}");
    assert_eq!(freshness(&p), "fresh");
    p.write("main.pyc", "bytecode");
    p.write("build/out", "artifact");
    p.specrun().args(["tasks", "check", "1"]).assert().success();
    assert_eq!(freshness(&p), "fresh", "ignored files or a tick staled it");
    p.write("main.py", "print(2)\n");
    assert_eq!(freshness(&p), "stale");
    p.write("main.py", "print(1)\n");
    assert_eq!(freshness(&p), "fresh");
}

#[test]
fn a_repository_with_no_commits_works() {
    let p = TempProject::bare();
    p.git_cmd(&["init", "-q"]);
    p.spec("demo", TASKS);
    p.write("a.txt", "one");
    init_state(&p);
    let (rec, _) = run_json(&p);
    assert_eq!(rec["treeMethod"], "git");
    assert_eq!(freshness(&p), "fresh");
    p.write("a.txt", "two");
    assert_eq!(freshness(&p), "stale");
}

#[test]
fn a_detached_head_works_and_checking_out_other_code_stales() {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.write("a.txt", "v1");
    p.commit_all("v1");
    p.write("a.txt", "v2");
    p.commit_all("v2");
    p.git_cmd(&["checkout", "-q", "--detach", "HEAD"]);
    init_state(&p);
    run_json(&p);
    assert_eq!(freshness(&p), "fresh");
    p.git_cmd(&["checkout", "-q", "--detach", "HEAD~1"]);
    assert_eq!(freshness(&p), "stale", "other code checked out");
    p.git_cmd(&["checkout", "-q", "--detach", "main"]);
    assert_eq!(freshness(&p), "fresh");
}

#[test]
fn uncommitted_edits_inside_a_submodule_stale_evidence() {
    let upstream = TempProject::git();
    upstream.write("lib.c", "int f;\n");
    upstream.commit_all("lib");
    let p = TempProject::git();
    p.git_cmd(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        upstream.root().to_str().unwrap(),
        "vendor/lib",
    ]);
    p.spec("demo", TASKS);
    p.commit_all("with submodule");
    init_state(&p);
    run_json(&p);
    assert_eq!(freshness(&p), "fresh");
    p.write("vendor/lib/lib.c", "int g;\n");
    assert_eq!(
        freshness(&p),
        "stale",
        "a gitlink alone would miss this edit"
    );
    p.write("vendor/lib/lib.c", "int f;\n");
    assert_eq!(freshness(&p), "fresh");
}

#[test]
fn a_project_below_the_work_tree_top_fingerprints_its_own_directory() {
    let p = TempProject::git();
    p.write("app/specs/.current-spec", "demo\n");
    // Written as is (not `TempProject::spec`, which adds a final check): say it here.
    p.write(
        "app/specs/demo/tasks.md",
        &format!("**Final check**: `true`\n\n{TASKS}"),
    );
    p.write("app/main.rs", "fn main() {}\n");
    p.write("other/x.txt", "outside the project\n");
    p.commit_all("monorepo");
    let in_app = |args: &[&str]| {
        let mut cmd = p.specrun();
        cmd.current_dir(p.path("app")).args(args);
        cmd
    };
    in_app(&["state", "init", "--spec", "demo"])
        .assert()
        .success();
    in_app(&["verify", "run", "--command", "true"])
        .assert()
        .success();
    in_app(&["verify", "status"]).assert().success();
    p.write("other/x.txt", "changed elsewhere in the repository\n");
    in_app(&["verify", "status"]).assert().success();
    p.write("app/main.rs", "fn main() { 1; }\n");
    in_app(&["verify", "status"]).assert().code(1);
}

/// A file named like the store's temp files (`.<name>.specrun-tmp-…`) outside the
/// bookkeeping is the project's own: a helper a test loads could be so named, so an edit
/// to it stales the evidence, in git and outside it. Beside the state file it is a write in
/// flight and is left out.
#[test]
fn a_temp_shaped_file_outside_the_bookkeeping_is_part_of_the_tree() {
    for p in [TempProject::git(), TempProject::bare()] {
        p.spec("demo", TASKS);
        p.write("lib/.helper.js.specrun-tmp-1", "module.exports = 1;\n");
        init_state(&p);
        run_json(&p);
        assert_eq!(freshness(&p), "fresh");
        p.write("specs/demo/..specrun-state.json.specrun-tmp-9", "{");
        assert_eq!(freshness(&p), "fresh", "a state write in flight staled it");
        p.write("lib/.helper.js.specrun-tmp-1", "module.exports = 2;\n");
        assert_eq!(freshness(&p), "stale", "an edit to the helper went unseen");
    }
}
