//! Commands run in a process group of their own, one way for every caller (`verify run`,
//! `notify-run` and its detached runner, `goal`'s `claude --version` probe): start the
//! command as the leader of a new group, wait for it with a deadline, and stop the whole
//! group (children and grandchildren too) when the deadline passes or the command leaves
//! some of it running.
//!
//! std cannot signal a process group, so `kill(2)` comes from `libc` (already a
//! dependency for `open(2)` flags); waiting needs no polling: a thread waits for the
//! leader and the caller waits on a channel with its deadline.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ChildStdin, Command, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long `Group::stop` gives the group between SIGTERM and SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// A command running as the leader of its own process group.
pub(crate) struct Group {
    pgid: i32,
    /// The command's stdin, when it was piped.
    pub stdin: Option<ChildStdin>,
    exited: Receiver<io::Result<ExitStatus>>,
    status: Option<ExitStatus>,
}

impl Group {
    /// Start `cmd` in a new process group. `cmd` is dropped once started, so our copies of
    /// pipe ends it hands the child close (a reader of the child's output sees EOF once the
    /// group is done with it).
    pub(crate) fn spawn(mut cmd: Command) -> io::Result<Group> {
        let mut child = cmd.process_group(0).spawn()?;
        drop(cmd);
        let pgid = child.id() as i32;
        let stdin = child.stdin.take();
        let (exited_tx, exited) = mpsc::channel();
        let group = Group {
            pgid,
            stdin,
            exited,
            status: None,
        };
        let waiter = std::thread::Builder::new().spawn(move || {
            let _ = exited_tx.send(child.wait());
        });
        if let Err(e) = waiter {
            group.kill();
            return Err(e);
        }
        Ok(group)
    }

    /// Wait for the command to exit, for at most `limit` (`None`: however long it takes).
    /// `Ok(None)`: still running at the limit.
    pub(crate) fn wait(&mut self, limit: Option<Duration>) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let got = match limit {
            None => self
                .exited
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
            Some(limit) => self.exited.recv_timeout(limit),
        };
        match got {
            Ok(status) => {
                self.status = Some(status?);
                Ok(self.status)
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(io::Error::other("the command's waiter is gone"))
            }
        }
    }

    /// SIGTERM to the group, then SIGKILL if anything of it still runs after `KILL_GRACE`.
    pub(crate) fn stop(&self) {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if !self.alive() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.signal(libc::SIGKILL);
    }

    /// SIGKILL to the group, at once.
    pub(crate) fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is shared.
        unsafe {
            libc::kill(-self.pgid, signal);
        }
    }

    /// Whether a process of the group is still running. Zombies do not count: an orphan
    /// waits for its reaper, which some container inits never are.
    pub(crate) fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks that the group exists.
        if unsafe { libc::kill(-self.pgid, 0) } != 0 {
            return false;
        }
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return true;
        };
        let pgid = self.pgid.to_string();
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            // A stat line is short; the store's reader never blocks and stops at the bound.
            let Ok(Some(stat)) = crate::io::store::read_foreign(&entry.path().join("stat"), 4096)
            else {
                return false;
            };
            let stat = String::from_utf8_lossy(&stat);
            // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
            let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
                return false;
            };
            let fields: Vec<&str> = after.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid
        })
    }
}

/// The exit code a shell reports: the command's own, else 128 + the signal that ended it.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|n| 128 + n))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    }

    /// Whether the group is gone within a few seconds (a signal is delivered asynchronously).
    fn ends(g: &Group) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while g.alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        !g.alive()
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        let mut g = Group::spawn(sh("exit 3")).unwrap();
        let status = g.wait(None).unwrap().unwrap();
        assert_eq!(exit_code(status), 3);
        assert_eq!(g.wait(Some(Duration::ZERO)).unwrap(), Some(status), "kept");
        let mut g = Group::spawn(sh("kill -TERM $$")).unwrap();
        assert_eq!(
            exit_code(g.wait(None).unwrap().unwrap()),
            128 + libc::SIGTERM
        );
    }

    #[test]
    fn a_deadline_returns_while_the_command_runs_and_kill_ends_the_group() {
        let mut g = Group::spawn(sh("sleep 300 & sleep 300")).unwrap();
        let start = Instant::now();
        assert_eq!(g.wait(Some(Duration::from_millis(100))).unwrap(), None);
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(g.alive());
        g.kill();
        let status = g.wait(Some(Duration::from_secs(5))).unwrap().unwrap();
        assert_eq!(exit_code(status), 128 + libc::SIGKILL);
        assert!(ends(&g), "the background sleep outlived SIGKILL");
    }

    #[test]
    fn stop_sends_sigterm_first_and_sigkill_to_what_ignores_it() {
        let mut g = Group::spawn(sh("sleep 300")).unwrap();
        let start = Instant::now();
        g.stop();
        assert_eq!(
            exit_code(g.wait(None).unwrap().unwrap()),
            128 + libc::SIGTERM
        );
        assert!(start.elapsed() < KILL_GRACE, "waited out the grace");
        let mut g = Group::spawn(sh("trap '' TERM; sleep 300 & wait; wait")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        g.stop();
        assert_eq!(
            exit_code(g.wait(None).unwrap().unwrap()),
            128 + libc::SIGKILL
        );
        assert!(ends(&g), "the background sleep outlived SIGKILL");
    }
}
