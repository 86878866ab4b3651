//! Shared helpers for integration tests: temp projects with real git, specs, and the
//! built binary. Area-specific helpers live in their own test files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::Command as BinCommand;

pub struct TempProject {
    pub dir: tempfile::TempDir,
}

impl TempProject {
    /// An empty directory (no git, no specs).
    pub fn bare() -> Self {
        isolate_state_dir();
        TempProject {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A git repository with one commit.
    pub fn git() -> Self {
        let p = Self::bare();
        p.git_cmd(&["init", "-q", "-b", "main"]);
        p.write("README.md", "project\n");
        p.commit_all("init");
        p
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).expect("canonical root")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Write specs/<name>/tasks.md and make it the current spec. A plan that declares no
    /// final check gets one (`with_final_check`); `spec_as_written` writes it as given.
    pub fn spec(&self, name: &str, tasks_md: &str) -> PathBuf {
        self.spec_as_written(name, &with_final_check(tasks_md))
    }

    /// Write specs/<name>/tasks.md exactly as given and make it the current spec.
    pub fn spec_as_written(&self, name: &str, tasks_md: &str) -> PathBuf {
        self.write("specs/.current-spec", &format!("{name}\n"));
        self.write(&format!("specs/{name}/tasks.md"), tasks_md)
    }

    pub fn git_cmd(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(self.dir.path())
            .args([
                "-c",
                "user.email=t@example.com",
                "-c",
                "user.name=t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn commit_all(&self, message: &str) {
        self.git_cmd(&["add", "-A"]);
        self.git_cmd(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// `specrun` with this project as its working directory.
    pub fn specrun(&self) -> BinCommand {
        let mut cmd = BinCommand::cargo_bin("specrun").expect("binary built");
        cmd.current_dir(self.dir.path());
        cmd
    }

    /// `specrun state init --spec <spec>`, which must succeed.
    pub fn init_state(&self, spec: &str) {
        self.specrun()
            .args(["state", "init", "--spec", spec])
            .assert()
            .success();
    }

    pub fn state(&self, spec: &str) -> serde_json::Value {
        serde_json::from_str(&self.read(&format!("specs/{spec}/.specrun-state.json")))
            .expect("state is JSON")
    }
}

pub fn bin_path() -> PathBuf {
    isolate_state_dir();
    assert_cmd::cargo::cargo_bin("specrun")
}

/// The guard's record (`$SPECRUN_STATE_DIR`) of every binary this test process starts
/// lives in one temporary directory, never in the user's state directory. Set once,
/// before any child inherits the environment (std's env lock orders it with spawns).
pub fn isolate_state_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("specrun-state-")
            .tempdir()
            .expect("state tempdir")
            .keep();
        let dir = std::fs::canonicalize(&dir).expect("canonical state dir");
        std::env::set_var("SPECRUN_STATE_DIR", &dir);
        dir
    })
}

/// Writes `text` to `path` as an executable (mode 755), from a child process.
///
/// Every test shares this process, and its threads fork all the time: a file this process
/// held open for writing is inherited by a child forked meanwhile, and running the file
/// before that child execs fails with ETXTBSY ("Text file busy"). Written by `sh`, the file
/// is never open for writing here.
pub fn write_executable(path: &Path, text: &str) {
    use std::io::Write;
    let mut sh = Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sh runs");
    sh.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    assert!(sh.wait().unwrap().success(), "write {}", path.display());
}

/// Copies the executable `from` to `to` with `cp`, for the reason `write_executable` gives.
pub fn copy_executable(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

pub fn assert_json_file(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("readable");
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()))
}

/// What `critique record --file -` reads for `stage`: every checklist item passed.
pub fn critique_input(stage: &str) -> serde_json::Value {
    let items: serde_json::Map<String, serde_json::Value> =
        specrun::api::evidence::critique::checklist(stage)
            .unwrap()
            .iter()
            .map(|(cid, _)| {
                (
                    cid.to_string(),
                    serde_json::json!({"result": "pass", "note": "checked"}),
                )
            })
            .collect();
    serde_json::json!({"checklist": items, "issuesFound": [], "issuesFixed": []})
}

/// A record exactly as `critique record` writes it (every checklist item passed), dated `at`.
pub fn critique_record(id: &str, stage: &str, at: &str) -> serde_json::Value {
    let input = critique_input(stage);
    let v = specrun::api::evidence::critique::validate(stage, id, &input).unwrap();
    specrun::api::evidence::critique::to_record(id, stage, &v, at)
}

/// Far above what any verb needs, far below the hook's 30 s limit: a run past it hung.
pub const BOUND: std::time::Duration = std::time::Duration::from_secs(15);

/// One run of the binary: `code` is `None` when it was killed past its bound (`killed`)
/// or died of a signal (`signal`).
pub struct Ran {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub killed: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Run `specrun args` in `p` with `stdin`, killed past `BOUND`.
pub fn run_bounded(p: &TempProject, args: &[&str], stdin: &[u8]) -> Ran {
    run_within(&p.root(), args, stdin, BOUND)
}

/// Run `specrun args` in `dir` with `stdin`, killed past `limit`.
pub fn run_within(dir: &Path, args: &[&str], stdin: &[u8], limit: std::time::Duration) -> Ran {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(bin_path())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    // Collect the output while waiting (a full pipe must not stall the child).
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    let (out, killed) = match rx.recv_timeout(limit) {
        Ok(out) => (out, false),
        Err(_) => {
            // SAFETY: kill(2) on the child's own pid; it has not been reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            (rx.recv().unwrap(), true)
        }
    };
    Ran {
        code: if killed { None } else { out.status.code() },
        signal: if killed { None } else { out.status.signal() },
        killed,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `tasks_md` with a `**Final check**` line before its first task when it declares none (no
/// line, no closing [VERIFY] task with a Verify): the last task's Verify, the command the
/// fixtures of before final checks ran as their full check (else `true`). It takes the
/// place of a blank line before the first task, so line numbers stay; without one they
/// move down by one.
pub fn with_final_check(tasks_md: &str) -> String {
    let list = specrun::api::model::tasks::parse(tasks_md);
    if list.final_check().is_some() || list.tasks.is_empty() {
        return tasks_md.to_string();
    }
    let command = list
        .tasks
        .iter()
        .rev()
        .find_map(|t| t.verify_command())
        .unwrap_or("true");
    let first = list.tasks[0].line_start - 1;
    let mut lines: Vec<&str> = tasks_md.split_inclusive('\n').collect();
    let line = format!("**Final check**: `{command}`\n");
    // A blank line before the first task takes it, so no task's line number moves.
    match lines[..first.min(lines.len())]
        .iter()
        .rposition(|l| l.trim().is_empty())
    {
        Some(blank) => lines[blank] = &line,
        None => lines.insert(first.min(lines.len()), &line),
    }
    lines.concat()
}
