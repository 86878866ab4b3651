//! The proof gates of `task complete` (criteria covered, no unjustified integrity finding),
//! also asked by the SubagentStop hook, and the findings `task justify` records: the I/O
//! around `acceptance` and `integrity`.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::evidence::criteria;
use crate::evidence::integrity::{self, FileDiff, Finding, Status};
use crate::io::git;
use crate::io::project::{Project, Spec};
use crate::model::state::State;
use crate::model::tasks::{Task, TaskList};
use crate::model::unmet::Unmet;

/// A changed file with more added+removed lines than this is not scanned.
const MAX_FILE_LINES: u64 = 20_000;
/// A file larger than this is not read.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
pub const JUSTIFICATIONS_HEADING: &str = "## Justifications";

/// The start commit of the task's running attempt.
pub fn attempt_start(state: &State, id: &str) -> Option<String> {
    let last = state.attempts_of(id).last()?;
    let running = last.status.as_deref() == Some("running");
    last.start_commit.get().filter(|_| running).cloned()
}

fn pathspecs(project: &Project, spec: &Spec) -> Vec<String> {
    let mut specs = vec![".".to_string()];
    specs.extend(
        crate::io::project::bookkeeping_paths(project, spec)
            .into_iter()
            .map(|p| format!(":(exclude){p}")),
    );
    specs
}

fn git_args<'a>(base: &[&'a str], specs: &'a [String]) -> Vec<&'a str> {
    let mut v: Vec<&str> = base.to_vec();
    v.push("--");
    v.extend(specs.iter().map(String::as_str));
    v
}

/// The task's change: `start` to the working tree (commits, staged, unstaged), plus
/// untracked files, without the spec's bookkeeping.
pub fn gather(project: &Project, spec: &Spec, start: &str) -> Result<Vec<FileDiff>> {
    let root = &project.root;
    let specs = pathspecs(project, spec);
    let numstat = git::run(
        root,
        &git_args(
            &[
                "-c",
                "core.quotepath=off",
                "diff",
                "--numstat",
                "-z",
                "--no-renames",
                "--relative",
                start,
            ],
            &specs,
        ),
        &[],
    )?;
    let mut too_large = Vec::new();
    let mut scanned = Vec::new();
    for entry in numstat.split('\0').filter(|e| !e.is_empty()) {
        let mut parts = entry.splitn(3, '\t');
        let (a, r, path) = (parts.next(), parts.next(), parts.next());
        let Some(path) = path else { continue };
        let lines = a.and_then(|a| a.parse::<u64>().ok()).unwrap_or(0)
            + r.and_then(|r| r.parse::<u64>().ok()).unwrap_or(0);
        if lines > MAX_FILE_LINES {
            too_large.push(path.to_string());
        } else {
            scanned.push(path.to_string());
        }
    }
    let mut files = Vec::new();
    if !scanned.is_empty() {
        let mut args = vec![
            "-c",
            "core.quotepath=off",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--relative",
            "-U0",
            start,
            "--",
        ];
        args.extend(scanned.iter().map(String::as_str));
        files = integrity::parse_unified(&git::run(root, &args, &[])?);
    }
    for path in too_large {
        let mut f = FileDiff::new(&path, Status::Modified);
        f.too_large = true;
        files.push(f);
    }
    files.extend(untracked(root, &specs)?);
    fill_contents(root, start, &mut files)?;
    Ok(files)
}

fn untracked(root: &Path, specs: &[String]) -> Result<Vec<FileDiff>> {
    let out = git::run(
        root,
        &git_args(&["ls-files", "--others", "--exclude-standard", "-z"], specs),
        &[],
    )?;
    let mut files = Vec::new();
    for path in out.split('\0').filter(|p| !p.is_empty()) {
        let mut f = FileDiff::new(path, Status::Added);
        match read_worktree(root, path) {
            Content::Text(t) => {
                f.added = t
                    .lines()
                    .enumerate()
                    .map(|(i, l)| (i + 1, l.to_string()))
                    .collect();
                f.new = Some(t);
            }
            Content::Binary => f.binary = true,
            Content::TooLarge => f.too_large = true,
            Content::Absent => continue,
        }
        files.push(f);
    }
    Ok(files)
}

enum Content {
    Text(String),
    Binary,
    TooLarge,
    Absent,
}

/// A regular file of the work tree (symlinks, FIFOs and devices are not read).
fn read_worktree(root: &Path, rel: &str) -> Content {
    let path = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Content::Absent;
    };
    if !meta.file_type().is_file() {
        return Content::Binary;
    }
    if meta.len() > MAX_FILE_BYTES {
        return Content::TooLarge;
    }
    // Opened without following a link and without blocking: the file may have been swapped
    // for a link or a FIFO since the check above.
    match crate::io::store::read_prefix(&path, MAX_FILE_BYTES, true) {
        Ok(Some(bytes)) => text_or_binary(bytes),
        Err(Error::TooLarge { .. }) => Content::TooLarge,
        Ok(None) | Err(_) => Content::Absent,
    }
}

fn text_or_binary(bytes: Vec<u8>) -> Content {
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Content::Binary;
    }
    String::from_utf8(bytes).map_or(Content::Binary, Content::Text)
}

/// Old and new contents of the source files whose test functions are compared.
fn fill_contents(root: &Path, start: &str, files: &mut [FileDiff]) -> Result<()> {
    let wanted: Vec<usize> = (0..files.len())
        .filter(|&i| {
            let f = &files[i];
            integrity::lang_of(&f.path).is_some() && !f.binary && !f.too_large
        })
        .collect();
    let olds: Vec<usize> = wanted
        .iter()
        .copied()
        .filter(|&i| files[i].status != Status::Added)
        .collect();
    let names: Vec<String> = olds
        .iter()
        .map(|&i| format!("{start}:./{}", files[i].path))
        .collect();
    for (i, content) in olds.iter().zip(cat_files(root, &names)?) {
        match content {
            Content::Text(t) => files[*i].old = Some(t),
            Content::TooLarge => files[*i].too_large = true,
            _ => {}
        }
    }
    for &i in &wanted {
        if files[i].status == Status::Deleted || files[i].new.is_some() {
            continue;
        }
        match read_worktree(root, &files[i].path) {
            Content::Text(t) => files[i].new = Some(t),
            Content::TooLarge => files[i].too_large = true,
            _ => {}
        }
    }
    Ok(())
}

/// `git cat-file --batch` for many objects in one process.
fn cat_files(root: &Path, names: &[String]) -> Result<Vec<Content>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = Command::new("git")
        .args(["cat-file", "--batch"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("git", "start", e))?;
    let input = names.join("\n") + "\n";
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut out)
        .map_err(|e| Error::io("git cat-file", "read", e))?;
    let _ = writer.join();
    let _ = child.wait();
    let mut rest = out.as_slice();
    let mut contents = Vec::new();
    for _ in names {
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            break;
        };
        let header = String::from_utf8_lossy(&rest[..nl]).to_string();
        rest = &rest[nl + 1..];
        let size = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse::<usize>().ok());
        match size.filter(|_| header.contains(" blob ")) {
            Some(n) if n <= rest.len() => {
                let body = rest[..n].to_vec();
                rest = &rest[(n + 1).min(rest.len())..];
                contents.push(if n as u64 > MAX_FILE_BYTES {
                    Content::TooLarge
                } else {
                    text_or_binary(body)
                });
            }
            _ => contents.push(Content::Absent),
        }
    }
    while contents.len() < names.len() {
        contents.push(Content::Absent);
    }
    Ok(contents)
}

/// The findings of the task's running attempt; empty without git or an attempt start.
pub fn findings(project: &Project, spec: &Spec, state: &State, id: &str) -> Result<Vec<Finding>> {
    let Some(start) = attempt_start(state, id) else {
        return Ok(Vec::new());
    };
    if !git::is_repo(&project.root) {
        return Ok(Vec::new());
    }
    Ok(integrity::scan(&gather(project, spec, &start)?))
}

/// What `task complete` must also see before it completes `task`: its criteria covered
/// (when the execution enforces them) and every integrity finding justified.
pub fn complete_unmet(
    project: &Project,
    spec: &Spec,
    state: &State,
    list: &TaskList,
    task: &Task,
) -> Vec<Unmet> {
    let id = task.label();
    let id_q = crate::support::shell::word(&id);
    let last = state.attempts_of(&id).last();
    if last.and_then(|a| a.status.as_deref()) != Some("running") {
        return Vec::new();
    }
    let mut unmet = Vec::new();
    if state.acceptance_gate() && task.done_when.is_some() {
        match criteria::matrix_with(project, spec, list, Some(state)) {
            Ok(m) => {
                for line in criteria::describe_uncovered(
                    m.for_task(&id).filter(|r| !r.status.settled_for_task()),
                ) {
                    unmet.push(Unmet {
                        name: "acceptance-criteria",
                        detail: line,
                    });
                }
            }
            Err(e) => unmet.push(Unmet {
                name: "acceptance-criteria",
                detail: format!("criteria cannot be read: {e}"),
            }),
        }
    }
    let justified =
        criteria::load_store(spec).map(|s| s.justifications.get(&id).cloned().unwrap_or_default());
    match (findings(project, spec, state, &id), justified) {
        (Ok(found), Ok(justified)) => {
            for f in found.iter().filter(|f| !justified.contains_key(&f.id)) {
                unmet.push(Unmet {
                    name: "test-integrity",
                    detail: format!(
                        "{f}. Undo it; if the change is right, waiving the finding ({}) is a person's decision: {}",
                        f.id,
                        crate::claude::roles::for_person(&format!(
                            "specrun task justify {id_q} --finding {} --reason \"<why>\" {}",
                            crate::support::shell::word(&f.id),
                            crate::support::shell::spec_flag(&spec.name)
                        ))
                    ),
                });
            }
        }
        (Err(e), _) | (_, Err(e)) => unmet.push(Unmet {
            name: "test-integrity",
            detail: format!("the change could not be scanned: {e}"),
        }),
    }
    unmet
}
