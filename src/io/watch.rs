//! Watching a tree's directories for the duration of a verify run (Linux inotify, through
//! `libc`, which the crate already uses): every entry created, written, renamed, deleted or
//! re-attributed in a watched directory is named, by whoever did it. A change the
//! fingerprints before and after cannot see (a file swapped in and back while the command
//! runs) is seen here. A directory created during the run is watched from then on, and what
//! it already holds is named. Where inotify is missing, `start` says so and the caller
//! decides (DESIGN-NOTES "A run is genuine").

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What the watch saw: paths relative to the root, and whether the kernel dropped events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub paths: BTreeSet<String>,
    /// The kernel's queue overflowed (or a watch could not be added): anything may have changed.
    pub overflow: bool,
}

/// Most paths kept; more is an overflow.
const MAX_PATHS: usize = 10_000;

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread::JoinHandle;

    const MASK: u32 = libc::IN_MODIFY
        | libc::IN_ATTRIB
        | libc::IN_CLOSE_WRITE
        | libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_DELETE_SELF
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR;

    pub(crate) struct Watch {
        stop: Arc<AtomicBool>,
        thread: JoinHandle<Seen>,
    }

    struct State {
        fd: OwnedFd,
        root: PathBuf,
        dirs: HashMap<i32, String>,
        seen: Seen,
        /// Directories created during the run, and those moved away (by rename cookie).
        created_dirs: BTreeSet<String>,
        moved_from: HashMap<u32, String>,
    }

    impl State {
        fn add(&mut self, rel: &str) -> bool {
            let path = if rel.is_empty() {
                self.root.clone()
            } else {
                self.root.join(rel)
            };
            let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
                return false;
            };
            // SAFETY: a valid descriptor and a NUL-terminated path.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), MASK) };
            if wd < 0 {
                return false;
            }
            self.dirs.insert(wd, rel.to_string());
            true
        }

        fn note(&mut self, rel: String) {
            if self.seen.paths.len() >= MAX_PATHS {
                self.seen.overflow = true;
            } else {
                self.seen.paths.insert(rel);
            }
        }

        /// A directory created during the run and then renamed (cargo builds `target/` as
        /// `target<random>` and renames it into place): what was seen under the old name is
        /// named under the new one, so the ignore rules judge where it ended. A file moved,
        /// or a directory that existed before the run, keeps its old name too.
        fn renamed(&mut self, from: &str, to: &str) -> bool {
            if !self.created_dirs.remove(from) {
                return false;
            }
            let under = format!("{from}/");
            let moved: Vec<String> = self
                .seen
                .paths
                .iter()
                .filter(|p| p.as_str() == from || p.starts_with(&under))
                .cloned()
                .collect();
            for p in moved {
                self.seen.paths.remove(&p);
                self.seen.paths.insert(format!("{to}{}", &p[from.len()..]));
            }
            for d in self.dirs.values_mut() {
                if d.as_str() == from || d.starts_with(&under) {
                    *d = format!("{to}{}", &d[from.len()..]);
                }
            }
            self.created_dirs.insert(to.to_string());
            true
        }

        /// A directory that appeared: watch it and everything below it, naming what it holds.
        fn adopt(&mut self, rel: String) {
            let mut stack = vec![rel];
            while let Some(dir) = stack.pop() {
                if !self.add(&dir) {
                    continue;
                }
                let Ok(entries) = std::fs::read_dir(self.root.join(&dir)) else {
                    continue;
                };
                for e in entries.flatten() {
                    let child = format!("{dir}/{}", e.file_name().to_string_lossy());
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(child.clone());
                    }
                    self.note(child);
                }
            }
        }

        /// Read what the kernel queued; false when nothing was there.
        fn drain(&mut self) -> bool {
            let mut buf = [0u8; 64 * 1024];
            // SAFETY: the buffer is ours and as long as given.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return false;
            }
            let mut at = 0usize;
            let head = std::mem::size_of::<libc::inotify_event>();
            while at + head <= n as usize {
                // SAFETY: the kernel wrote whole events; read unaligned.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name_bytes = &buf[at + head..at + head + ev.len as usize];
                at += head + ev.len as usize;
                if ev.mask & libc::IN_Q_OVERFLOW != 0 {
                    self.seen.overflow = true;
                    continue;
                }
                if ev.mask & libc::IN_IGNORED != 0 {
                    continue;
                }
                let Some(dir) = self.dirs.get(&ev.wd).cloned() else {
                    continue;
                };
                let end = name_bytes
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(name_bytes.len());
                let name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
                let rel = match (dir.is_empty(), name.is_empty()) {
                    (_, true) => dir.clone(),
                    (true, false) => name,
                    (false, false) => format!("{dir}/{name}"),
                };
                let is_dir = ev.mask & libc::IN_ISDIR != 0;
                if is_dir && ev.mask & libc::IN_MOVED_FROM != 0 {
                    self.moved_from.insert(ev.cookie, rel.clone());
                }
                if is_dir && ev.mask & libc::IN_MOVED_TO != 0 {
                    if let Some(from) = self.moved_from.remove(&ev.cookie) {
                        if self.renamed(&from, &rel) {
                            continue;
                        }
                        self.note(from);
                    }
                }
                if is_dir && ev.mask & libc::IN_CREATE != 0 {
                    self.created_dirs.insert(rel.clone());
                }
                if is_dir && ev.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
                    self.adopt(rel.clone());
                }
                self.note(rel);
            }
            true
        }
    }

    pub(crate) fn start(root: &Path, dirs: &BTreeSet<String>) -> std::io::Result<Watch> {
        // SAFETY: plain syscall; the descriptor is owned below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut state = State {
            fd,
            root: root.to_path_buf(),
            dirs: HashMap::new(),
            seen: Seen::default(),
            created_dirs: BTreeSet::new(),
            moved_from: HashMap::new(),
        };
        for d in dirs {
            if !state.add(d) {
                // A directory that vanished or a watch limit: nothing can be promised.
                state.seen.overflow |= root.join(d).is_dir();
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            loop {
                let stopping = flag.load(Ordering::Acquire);
                while state.drain() {}
                if stopping {
                    break;
                }
                let mut pfd = libc::pollfd {
                    fd: state.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 50) };
            }
            state.seen
        });
        Ok(Watch { stop, thread })
    }

    impl Watch {
        /// Stop watching: everything the kernel queued until now is read first.
        pub(crate) fn finish(self) -> Seen {
            self.stop.store(true, Ordering::Release);
            self.thread.join().unwrap_or(Seen {
                paths: BTreeSet::new(),
                overflow: true,
            })
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    pub struct Watch;

    pub fn start(_root: &Path, _dirs: &BTreeSet<String>) -> std::io::Result<Watch> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "watching a tree needs Linux inotify",
        ))
    }

    impl Watch {
        pub fn finish(self) -> Seen {
            Seen::default()
        }
    }
}

pub(crate) use imp::start;

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_file_swapped_in_and_back_and_a_new_directory_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("lib/a.js"), "1").unwrap();
        let dirs: BTreeSet<String> = ["".to_string(), "lib".to_string()].into();
        let w = start(dir.path(), &dirs).unwrap();
        std::fs::write(dir.path().join("lib/a.js"), "2").unwrap();
        std::fs::write(dir.path().join("lib/a.js"), "1").unwrap();
        std::fs::create_dir_all(dir.path().join("new/deep")).unwrap();
        std::fs::write(dir.path().join("new/deep/x"), "x").unwrap();
        let seen = w.finish();
        assert!(!seen.overflow);
        assert!(seen.paths.contains("lib/a.js"), "{seen:?}");
        assert!(seen.paths.contains("new"), "{seen:?}");
        let w = start(dir.path(), &dirs).unwrap();
        assert_eq!(w.finish(), Seen::default());
    }

    #[test]
    fn a_directory_made_during_the_run_and_renamed_into_place_is_named_where_it_ended() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("conftest.py"), "").unwrap();
        let dirs: BTreeSet<String> = ["".to_string()].into();
        let w = start(dir.path(), &dirs).unwrap();
        // cargo's way of making target/: a temporary name, filled, renamed into place.
        std::fs::create_dir(dir.path().join("targetXYZ")).unwrap();
        std::fs::write(dir.path().join("targetXYZ/CACHEDIR.TAG"), "x").unwrap();
        std::fs::rename(dir.path().join("targetXYZ"), dir.path().join("target")).unwrap();
        // A file renamed keeps both names: moving a file out of sight is seen.
        std::fs::rename(dir.path().join("conftest.py"), dir.path().join("moved.py")).unwrap();
        let seen = w.finish();
        assert!(seen.paths.contains("target"), "{seen:?}");
        assert!(
            !seen.paths.iter().any(|p| p.starts_with("targetXYZ")),
            "{seen:?}"
        );
        assert!(seen.paths.contains("conftest.py"), "{seen:?}");
        assert!(seen.paths.contains("moved.py"), "{seen:?}");
    }
}
