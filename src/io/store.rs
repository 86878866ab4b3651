//! Crash-safe files: an exclusive lock on a sidecar `<file>.lock`, then read, change,
//! write a temp file in the same directory, fsync, rename. A reader never sees a torn
//! file, no writer loses another's update, and a crash leaves the old or the new file.
//!
//! Every bookkeeping path is opened here, under two rules (DESIGN-NOTES "I/O hardening"):
//! no symbolic link on the path (a link could carry a write outside the project), and
//! only regular files, opened non-blocking (a FIFO or a device could hang or never end),
//! read up to a size bound.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{Error, Result};

/// How long a command waits for a lock before giving up. Hooks use a shorter bound.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// An exclusive lock on `<file>.lock`, released when dropped.
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

pub fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    file.with_file_name(name)
}

/// The most specrun reads of one bookkeeping file (state, tasks.md, followups, records).
pub const MAX_READ: u64 = 256 << 20;

fn kind_name(t: fs::FileType) -> &'static str {
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() || t.is_block_device() {
        "device"
    } else if t.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The directory `path` lives in ("." for a bare name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `abs` with its `.` and `..` taken out, refusing a `..` that follows a link (there it
/// would lead somewhere else than the text says): `a/../b` is `b` only when `a` is real.
fn without_dots(abs: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in abs.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if fs::canonicalize(&out).is_ok_and(|real| real != out) {
                    return Err(Error::Link { path: out });
                }
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Refuse `dir` when it passes through a symbolic link: its real path must be itself (a
/// `..` over a real directory is no link). A directory that does not exist yet passes
/// (nothing can be opened in it).
pub fn check_dir(dir: &Path) -> Result<()> {
    let abs = without_dots(&absolute(dir))?;
    match fs::canonicalize(&abs) {
        Ok(real) if real == abs => Ok(()),
        Ok(_) => Err(Error::Link { path: abs }),
        Err(e) if e.kind() == ErrorKind::NotFound => match abs.parent() {
            // A dangling link is "not found" too: name it, not its missing target.
            _ if fs::symlink_metadata(&abs).is_ok() => Err(Error::Link { path: abs }),
            Some(parent) => check_dir(parent),
            None => Ok(()),
        },
        Err(e) => Err(Error::io(&abs, "resolve", e)),
    }
}

/// Create `dir` and its missing parents, refusing any link on the way.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Link {
            path: absolute(dir),
        }),
        Ok(m) if m.is_dir() => check_dir(dir),
        Ok(m) => Err(Error::NotRegular {
            path: dir.to_path_buf(),
            kind: kind_name(m.file_type()),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            ensure_dir(parent_dir(dir))?;
            match fs::create_dir(dir) {
                Err(e) if e.kind() != ErrorKind::AlreadyExists => {
                    Err(Error::io(dir, "create directory", e))
                }
                _ => check_dir(dir),
            }
        }
        Err(e) => Err(Error::io(dir, "stat", e)),
    }
}

/// Open a bookkeeping file: no link on its path, never blocking, a regular file only.
/// `opts` says how (read, append, create…).
fn open_plain(path: &Path, opts: &mut OpenOptions, action: &'static str) -> Result<File> {
    open_plain_sized(path, opts, action).map(|(file, _)| file)
}

/// `open_plain`, with the file's length (`regular_sized`).
fn open_plain_sized(
    path: &Path,
    opts: &mut OpenOptions,
    action: &'static str,
) -> Result<(File, u64)> {
    check_dir(parent_dir(path))?;
    open_regular_sized(path, opts, action)
}

/// Open `path` with O_NONBLOCK (a FIFO cannot hang the open) and O_NOFOLLOW (a link at
/// the last step is refused by the kernel), and keep it only if it is a regular file.
fn open_regular(path: &Path, opts: &mut OpenOptions, action: &'static str) -> Result<File> {
    open_regular_sized(path, opts, action).map(|(file, _)| file)
}

/// `open_regular`, with the file's length (`regular_sized`).
fn open_regular_sized(
    path: &Path,
    opts: &mut OpenOptions,
    action: &'static str,
) -> Result<(File, u64)> {
    // The one open of the store; the flags are what make it safe.
    #[allow(clippy::disallowed_methods)]
    let file = opts
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::Link {
                path: absolute(path),
            },
            // A FIFO opened for writing with no reader.
            Some(libc::ENXIO) => Error::NotRegular {
                path: path.to_path_buf(),
                kind: "FIFO",
            },
            _ => Error::io(path, action, e),
        })?;
    regular_sized(file, path)
}

/// `file` if it is a regular file, with its length from the same `fstat` (a reader sizes
/// its buffer from it without a second one); what it is otherwise.
fn regular_sized(file: File, path: &Path) -> Result<(File, u64)> {
    let meta = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
    if !meta.is_file() {
        return Err(Error::NotRegular {
            path: path.to_path_buf(),
            kind: kind_name(meta.file_type()),
        });
    }
    Ok((file, meta.len()))
}

/// Read an open file of `len` bytes (its length when it was opened: a hint, since it may
/// change) up to `limit` bytes; more is an error naming the file.
fn read_bounded(mut file: File, path: &Path, len: u64, limit: u64) -> Result<Vec<u8>> {
    // Sized from the file's length, so a large file is read without regrowing the buffer.
    let mut bytes = Vec::with_capacity(len.min(limit) as usize + 1);
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    within(bytes, path, limit)
}

fn within(bytes: Vec<u8>, path: &Path, limit: u64) -> Result<Vec<u8>> {
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

/// A file read whole as UTF-8 text, held on the heap or, from `HUGE_PAGE` bytes on, in
/// memory of its own backed by huge pages (`Pages`). Reading 9 MB into a fresh heap buffer
/// costs a page fault per 4 KiB page, which on the 2-core VM was as much time as
/// `tasks count`'s whole scan (DESIGN-NOTES "Performance"). Derefs to `str`.
pub struct Text(Held);

enum Held {
    Heap(String),
    /// Checked UTF-8 when it was read; nothing writes it after (it is private memory).
    Pages(Pages),
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            Held::Heap(text) => text,
            // SAFETY: `Held::Pages` is built only from bytes `from_utf8` accepted, in an
            // anonymous private mapping nothing else writes.
            Held::Pages(pages) => unsafe { std::str::from_utf8_unchecked(pages.bytes()) },
        }
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text(Held::Heap(text))
    }
}

/// The size of a huge page on x86-64 and arm64 Linux; a file this large or larger is read
/// into `Pages`.
const HUGE_PAGE: usize = 2 << 20;

/// An anonymous private read-write mapping, `HUGE_PAGE`-aligned and a whole number of
/// huge pages long, advised to huge pages (`MADV_HUGEPAGE`: Linux's default
/// `transparent_hugepage=madvise` gives them only to memory that asks), unmapped on drop.
/// Without huge pages it is ordinary memory, as fast as the heap.
struct Pages {
    ptr: std::ptr::NonNull<u8>,
    /// Mapped bytes (a multiple of `HUGE_PAGE`).
    cap: usize,
    /// Bytes read into it.
    len: usize,
}

impl Pages {
    /// `cap` bytes (a multiple of `HUGE_PAGE`); `None` when the mapping fails.
    fn map(cap: usize) -> Option<Pages> {
        let span = cap.checked_add(HUGE_PAGE)?;
        // SAFETY: a new anonymous mapping; no existing memory is touched.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        // Mapped a huge page more than needed: unmap the head before the first aligned
        // address and the tail past `cap`, leaving an aligned run of whole huge pages.
        let head = (raw as usize).next_multiple_of(HUGE_PAGE) - raw as usize;
        let tail = span - head - cap;
        // SAFETY: both ranges lie inside the mapping just made, and nothing refers to them.
        let start = unsafe {
            let start = raw.cast::<u8>().add(head);
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap(start.add(cap).cast(), tail);
            }
            // Advice only: refused (an old kernel, huge pages off), the memory still works.
            #[cfg(target_os = "linux")]
            libc::madvise(start.cast(), cap, libc::MADV_HUGEPAGE);
            start
        };
        Some(Pages {
            ptr: std::ptr::NonNull::new(start)?,
            cap,
            len: 0,
        })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the first `len` of the `cap` mapped bytes (anonymous memory starts zeroed,
        // so every byte is initialised).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn spare(&mut self) -> &mut [u8] {
        // SAFETY: the mapped bytes past `len`, borrowed mutably through `self`.
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(self.len), self.cap - self.len)
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made, unmapped once; no borrow of it outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.cap);
        }
    }
}

fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// `read_bounded` as UTF-8 `Text`: a file of `HUGE_PAGE` bytes or more goes to `Pages`.
fn read_bounded_text(mut file: File, path: &Path, len: u64, limit: u64) -> Result<Text> {
    let pages = (len >= HUGE_PAGE as u64 && len <= limit)
        .then(|| Pages::map((len as usize + 1).next_multiple_of(HUGE_PAGE)))
        .flatten();
    let Some(mut pages) = pages else {
        return utf8(read_bounded(file, path, len, limit)?, path).map(Text::from);
    };
    loop {
        let spare = pages.spare();
        if spare.is_empty() {
            break;
        }
        match file.read(spare) {
            Ok(0) => break,
            Ok(n) => pages.len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, "read", e)),
        }
    }
    if pages.len == pages.cap {
        // The file grew while it was read: the rest goes to the heap, bounded as ever.
        let mut bytes = pages.bytes().to_vec();
        (&mut file)
            .take((limit + 1).saturating_sub(bytes.len() as u64))
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, "read", e))?;
        return utf8(within(bytes, path, limit)?, path).map(Text::from);
    }
    if pages.len as u64 > limit {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    if std::str::from_utf8(pages.bytes()).is_err() {
        return Err(Error::NotUtf8 {
            path: path.to_path_buf(),
        });
    }
    Ok(Text(Held::Pages(pages)))
}

/// Open a bookkeeping file for reading (no link, never blocking, regular only), to read
/// from an offset; `Ok(None)` when it does not exist.
pub fn open_read(path: &Path) -> Result<Option<File>> {
    match open_plain(path, OpenOptions::new().read(true), "read") {
        Ok(file) => Ok(Some(file)),
        Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read a file the user named on the command line (`--file`, a record file): it may be
/// anywhere and may be reached through links (the user chose it), but it must be a
/// regular file within `MAX_READ`. Bookkeeping goes through `read_optional`.
pub fn read_user_file(path: &Path, what: &'static str) -> Result<Vec<u8>> {
    match open_foreign_sized(path)? {
        Some((file, len)) => read_bounded(file, path, len, MAX_READ),
        None => Err(Error::missing(what, path)),
    }
}

/// `read_user_text` as `Text`: a large file is read into huge pages (`tasks count`,
/// `tasks list`).
pub fn read_user_text_large(path: &Path, what: &'static str) -> Result<Text> {
    match open_foreign_sized(path)? {
        Some((file, len)) => read_bounded_text(file, path, len, MAX_READ),
        None => Err(Error::missing(what, path)),
    }
}

/// `read_text` as `Text`: a large file is read into huge pages (`tasks count`, `tasks list`).
pub fn read_text_large(path: &Path, what: &'static str) -> Result<Text> {
    match open_plain_sized(path, OpenOptions::new().read(true), "read") {
        Ok((file, len)) => read_bounded_text(file, path, len, MAX_READ),
        Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
            Err(Error::missing(what, path))
        }
        Err(e) => Err(e),
    }
}

/// Open a file specrun does not own, for reading (Claude Code's transcript, `/proc`, a
/// file the user named): links are followed (its owner chose the layout), but the open
/// never blocks and only a regular file is kept. `Ok(None)` when it does not exist.
pub fn open_foreign(path: &Path) -> Result<Option<File>> {
    Ok(open_foreign_sized(path)?.map(|(file, _)| file))
}

/// `open_foreign`, with the file's length (`regular_sized`).
fn open_foreign_sized(path: &Path) -> Result<Option<(File, u64)>> {
    // Non-blocking, and checked regular before any read: the reason this open is allowed.
    #[allow(clippy::disallowed_methods)]
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    match opened {
        Ok(file) => regular_sized(file, path).map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, "read", e)),
    }
}

/// The first `limit` bytes of a file specrun does not own (see `open_foreign`).
pub fn read_foreign(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    let Some(file) = open_foreign(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    Ok(Some(bytes))
}

/// Open a file a directory walk found (the fingerprint outside git): never blocking, no
/// link at the last step, a regular file only (it may have been swapped since the walk).
pub fn open_walked(path: &Path) -> Result<File> {
    open_regular(path, OpenOptions::new().read(true), "read")
}

/// Copy the regular file `from` into the open file `to` (a temporary git index);
/// `Ok(false)` when `from` does not exist.
pub fn copy_into(from: &Path, to: &File) -> Result<bool> {
    let Some(mut source) = open_foreign(from)? else {
        return Ok(false);
    };
    let mut to = to;
    std::io::copy(&mut source, &mut to).map_err(|e| Error::io(from, "copy", e))?;
    Ok(true)
}

/// Write `bytes` to a file at a new name: anything already there (a link, a FIFO) is
/// refused by the kernel (`O_EXCL`), so the write lands in a fresh regular file.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    check_dir(parent_dir(path))?;
    // O_EXCL creates a new regular file or fails: the reason this open is allowed.
    #[allow(clippy::disallowed_methods)]
    let opened = OpenOptions::new().write(true).create_new(true).open(path);
    opened
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| Error::io(path, "write", e))
}

/// Standard input up to `limit` bytes (patches and records given as `-`).
pub fn read_stdin(what: &'static str, limit: u64) -> Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("<stdin>", "read", e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::bad_input(
            what,
            format!("standard input is larger than {} MiB", limit >> 20),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::bad_input(what, "standard input is not valid UTF-8"))
}

/// Stdin within `limit` bytes and `wait` (a hook's or the status line's input); empty past
/// either bound, or on any error: the caller then takes its fast path.
/// `poll` on the main thread: a reader thread cost the idle hook a third of its time
/// (its stack and malloc arena), and every turn of every session pays for the idle hook.
pub fn read_stdin_within(limit: u64, wait: Duration) -> Vec<u8> {
    use std::os::fd::FromRawFd;
    let deadline = Instant::now() + wait;
    // fd 0 borrowed, never closed; unbuffered, so `poll` sees every byte not yet read.
    let stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8 << 10];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut fd, 1, ms) };
        if ready == 0
            || (ready < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
        {
            return Vec::new();
        }
        if ready < 0 {
            continue;
        }
        // Readable, hung up or an error: this read does not block.
        match (&*stdin).read(&mut chunk) {
            Ok(0) => return bytes,
            Ok(n) if (bytes.len() + n) as u64 <= limit => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Vec::new(),
        }
    }
}

/// Take the sidecar lock of `file`, polling for at most `wait`.
pub fn lock(file: &Path, wait: Duration) -> Result<Lock> {
    let path = lock_path(file);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(Error::missing("directory", dir));
        }
    }
    let handle = open_plain(
        &path,
        OpenOptions::new().create(true).truncate(false).write(true),
        "open lock file",
    )?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match handle.try_lock() {
            Ok(()) => {
                remove_stale_temps(file);
                return Ok(Lock { file: handle });
            }
            Err(TryLockError::WouldBlock) => {
                let waited = start.elapsed();
                if waited >= wait {
                    return Err(Error::LockTimeout {
                        path,
                        waited_ms: waited.as_millis() as u64,
                    });
                }
                std::thread::sleep(pause.min(wait - waited));
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, "lock", e)),
        }
    }
}

/// Read a whole bookkeeping file as bytes; `Ok(None)` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    read_prefix(path, MAX_READ, true)
}

/// Read at most `limit` bytes of a bookkeeping file; past it, an error when `whole` is
/// asked for, else the first `limit` bytes. `Ok(None)` when it does not exist.
pub fn read_prefix(path: &Path, limit: u64, whole: bool) -> Result<Option<Vec<u8>>> {
    let (file, len) = match open_plain_sized(path, OpenOptions::new().read(true), "read") {
        Ok(opened) => opened,
        Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if whole {
        return read_bounded(file, path, len, limit).map(Some);
    }
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    Ok(Some(bytes))
}

/// A directory opened once, to read several small files beneath it without resolving each
/// one's path again (the PreToolUse fast allow): every component below it is opened with
/// `openat` and O_NOFOLLOW (a link anywhere below is refused by the kernel), never
/// blocking, the last a regular file only. The directory itself must hold no link: the
/// caller passes a canonical path (as `Project::discover` makes the root) or has it checked.
pub struct Beneath {
    dir: std::os::fd::OwnedFd,
    path: PathBuf,
}

impl Beneath {
    /// Open `dir`: its parents checked for links first unless `canonical` (the caller
    /// resolved them), the last step never followed; `Ok(None)` when it does not exist.
    pub fn open(dir: &Path, canonical: bool) -> Result<Option<Beneath>> {
        if !canonical {
            match check_dir(dir) {
                Ok(()) => {}
                Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                    return Ok(None)
                }
                Err(e) => return Err(e),
            }
        }
        let c = c_path(dir.as_os_str())?;
        // SAFETY: a NUL-terminated path; the descriptor is owned at once.
        let fd = unsafe { libc::open(c.as_ptr(), DIR_FLAGS) };
        owned(fd, &|| dir.to_path_buf()).map(|fd| {
            fd.map(|dir_fd| Beneath {
                dir: dir_fd,
                path: dir.to_path_buf(),
            })
        })
    }

    /// The first `limit` bytes of `parts` joined beneath the directory (more is an error
    /// naming the file); `Ok(None)` when a component does not exist.
    pub fn read(&self, parts: &[&str], limit: u64) -> Result<Option<Vec<u8>>> {
        use std::os::fd::AsRawFd;
        // The path is built only to name an error: the hot path never joins.
        let path = || parts.iter().fold(self.path.clone(), |p, c| p.join(c));
        let mut held: Option<std::os::fd::OwnedFd> = None;
        for (i, part) in parts.iter().enumerate() {
            let flags = if i + 1 == parts.len() {
                FILE_FLAGS
            } else {
                DIR_FLAGS
            };
            let at = held.as_ref().unwrap_or(&self.dir).as_raw_fd();
            let c = c_path(std::ffi::OsStr::new(part))?;
            // SAFETY: a valid directory descriptor and a NUL-terminated name.
            let fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
            match owned(fd, &path)? {
                Some(fd) => held = Some(fd),
                None => return Ok(None),
            }
        }
        let Some(fd) = held else {
            return Ok(None);
        };
        let mut file = File::from(fd);
        let len = match file.metadata() {
            Ok(meta) if meta.is_file() => meta.len(),
            Ok(meta) => {
                return Err(Error::NotRegular {
                    path: path(),
                    kind: kind_name(meta.file_type()),
                })
            }
            Err(e) => return Err(Error::io(path(), "stat", e)),
        };
        // Sized from the length: the hooks read small files, and regrowing costs more than they do.
        let mut bytes = Vec::with_capacity(len.min(limit) as usize + 1);
        (&mut file)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path(), "read", e))?;
        if bytes.len() as u64 > limit {
            return Err(Error::TooLarge {
                path: path(),
                limit,
            });
        }
        Ok(Some(bytes))
    }
}

/// The descriptor `fd` a call returned, owned; `None` for "no such file"; a link named.
fn owned(fd: libc::c_int, path: &dyn Fn() -> PathBuf) -> Result<Option<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    if fd >= 0 {
        // SAFETY: a descriptor the call just returned, owned by nobody else.
        return Ok(Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }));
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) => Ok(None),
        // O_NOFOLLOW on a link at the step: ELOOP.
        Some(libc::ELOOP) => Err(Error::Link {
            path: absolute(&path()),
        }),
        _ => Err(Error::io(path(), "read", e)),
    }
}

const DIR_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
const FILE_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC;

fn c_path(path: &std::ffi::OsStr) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_bytes())
        .map_err(|_| Error::io(path, "read", std::io::Error::from(ErrorKind::InvalidInput)))
}

/// Read a UTF-8 text file (a leading BOM is kept; callers that care strip it).
pub fn read_text(path: &Path, what: &'static str) -> Result<String> {
    match read_optional(path)? {
        None => Err(Error::missing(what, path)),
        Some(bytes) => utf8(bytes, path),
    }
}

/// `read_user_file` as UTF-8 text.
pub fn read_user_text(path: &Path, what: &'static str) -> Result<String> {
    utf8(read_user_file(path, what)?, path)
}

/// Parse JSON bytes from `path`, accepting a UTF-8 BOM.
pub fn parse_json(path: &Path, bytes: &[u8]) -> Result<Value> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Read and parse a JSON file; `Ok(None)` when it does not exist.
pub fn read_json(path: &Path) -> Result<Option<Value>> {
    match read_optional(path)? {
        None => Ok(None),
        Some(bytes) => parse_json(path, &bytes).map(Some),
    }
}

/// What every temp file's name holds (`.<file name>.specrun-tmp-…`).
pub const TEMP_MARK: &str = ".specrun-tmp-";

/// Temp files for `path` are named `.<file name>.specrun-tmp-…`, so the holder of the file's
/// lock knows which leftovers (from a writer killed mid-write) are its own to remove.
fn temp_prefix(path: &Path) -> String {
    temp_prefix_of(&path.file_name().unwrap_or_default().to_string_lossy())
}

/// The start of every temp file's name for the file named `name`: `.<name>.specrun-tmp-`.
pub fn temp_prefix_of(name: &str) -> String {
    format!(".{name}{TEMP_MARK}")
}

/// Whether a file name is shaped like one of the store's temp files, of any file.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARK)
}

/// Remove temp files a killed writer of `file` left behind. Only called with the file's
/// lock held: no live writer of this file can own one.
fn remove_stale_temps(file: &Path) {
    let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return;
    };
    let prefix = temp_prefix(file);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Replace `path` with `bytes` atomically: temp file in the same directory, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    check_dir(dir)?;
    // The rename would replace a link rather than follow it, but a link here means
    // something other than specrun put it there: say so instead of silently undoing it.
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::Link {
                path: absolute(path),
            })
        }
        Ok(m) if !m.is_file() => {
            return Err(Error::NotRegular {
                path: path.to_path_buf(),
                kind: kind_name(m.file_type()),
            })
        }
        _ => {}
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(path))
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, "create a temp file in", e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(tmp.path(), "write", e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(tmp.path(), "fsync", e))?;
    // Keep the file's permissions when replacing it.
    if let Ok(meta) = fs::metadata(path) {
        let _ = fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path)
        .map_err(|e| Error::io(path, "rename a temp file onto", e.error))?;
    // No fsync of the directory: the data fsync above is what makes a crash leave the old or
    // the new content; syncing the rename too would only make the new one survive a power
    // cut sooner, and on a busy disk it doubles the cost of every state write (DESIGN-NOTES
    // "Temp files").
    Ok(())
}

/// Serialise a JSON document the way state files are written: indented, newline-terminated.
pub fn to_pretty_bytes<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
    // A JSON value, or a record of them (the typed state: string keys only), always
    // serialises; never write a stand-in over the file.
    let mut bytes = serde_json::to_vec_pretty(value).expect("a JSON document serialises");
    bytes.push(b'\n');
    bytes
}

/// Under the lock of `path`: read the JSON document (None if absent), let `change` produce
/// the new one, write it atomically. Nothing is written when `change` fails or returns
/// `None`. A corrupt file is an error and is never overwritten here.
pub fn update_json<T>(
    path: &Path,
    wait: Duration,
    change: impl FnOnce(Option<Value>) -> Result<(Option<Value>, T)>,
) -> Result<T> {
    let _lock = lock(path, wait)?;
    let current = read_json(path)?;
    let (next, out) = change(current)?;
    if let Some(next) = next {
        write_atomic(path, &to_pretty_bytes(&next))?;
    }
    Ok(out)
}

/// Under the lock of `path`: read the text file, let `change` produce the new text, write it.
pub fn update_text<T>(
    path: &Path,
    what: &'static str,
    wait: Duration,
    change: impl FnOnce(String) -> Result<(Option<String>, T)>,
) -> Result<T> {
    // Name a missing file before taking the lock, so no stray lock file is left beside it.
    if fs::symlink_metadata(path).is_err() {
        return Err(Error::missing(what, path));
    }
    let _lock = lock(path, wait)?;
    let current = read_text(path, what)?;
    let (next, out) = change(current)?;
    if let Some(next) = next {
        write_atomic(path, next.as_bytes())?;
    }
    Ok(out)
}

/// Append one line to a file (created with its directory if needed). Appends of a single
/// short line are atomic with O_APPEND, so concurrent writers interleave whole lines.
pub fn append_line(path: &Path, line: &str) -> Result<()> {
    ensure_dir(parent_dir(path))?;
    let mut file = open_plain(
        path,
        OpenOptions::new().create(true).append(true),
        "open for append",
    )?;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    file.write_all(buf.as_bytes())
        .map_err(|e| Error::io(path, "append to", e))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    /// Regression: `tasks lint` of a spec-kit file named through `..` (scripts/test's corpus
    /// path) was refused as "a symbolic link": a `..` over a real directory is none; one over
    /// a link still is.
    #[test]
    fn a_dot_dot_over_a_real_directory_is_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        check_dir(&root.join("a/b/../../c")).unwrap();
        check_dir(&root.join("a/./b")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("l")).unwrap();
        assert!(matches!(
            check_dir(&root.join("l/../c")),
            Err(Error::Link { .. })
        ));
        assert!(matches!(
            check_dir(&root.join("l")),
            Err(Error::Link { .. })
        ));
    }

    use super::*;

    /// A large file (huge pages) reads as its bytes, whatever the length the open saw:
    /// the file as it was opened, one that grew since (the rest goes to the heap), one
    /// that shrank; past the bound and not UTF-8 are the errors the heap path gives.
    #[test]
    fn large_text_reads_as_the_file_whatever_its_length_was_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.md");
        let line = "- [ ] 1.1 Task é\n";
        let text = line.repeat(5 * HUGE_PAGE / line.len());
        fs::write(&path, &text).unwrap();
        let open = || open_foreign_sized(&path).unwrap().unwrap();
        let len = text.len() as u64;
        for seen in [len, 2 * HUGE_PAGE as u64, len + 3 * HUGE_PAGE as u64, 0] {
            let (file, _) = open();
            let got = read_bounded_text(file, &path, seen, MAX_READ).unwrap();
            assert!(*got == text, "length seen {seen}");
        }
        let got = read_user_text_large(&path, "tasks file").unwrap();
        assert!(matches!(got.0, Held::Pages(_)) && *got == text);
        let (file, _) = open();
        let err = read_bounded_text(file, &path, len, len - 1).err().unwrap();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        let (file, _) = open();
        let err = read_bounded_text(file, &path, 2 * HUGE_PAGE as u64, len - 1).err();
        assert!(matches!(err, Some(Error::TooLarge { .. })), "{err:?}");
        let mut bytes = text.into_bytes();
        bytes[3 * HUGE_PAGE] = 0xff;
        fs::write(&path, &bytes).unwrap();
        let err = read_text_large(&path, "tasks file").err().unwrap();
        assert!(matches!(err, Error::NotUtf8 { .. }), "{err}");
        let small = dir.path().join("small.md");
        fs::write(&small, "- [x] 1.1 Done\n").unwrap();
        let got = read_text_large(&small, "tasks file").unwrap();
        assert!(matches!(got.0, Held::Heap(_)) && &*got == "- [x] 1.1 Done\n");
        let err = read_text_large(&dir.path().join("none.md"), "tasks file").err();
        assert!(matches!(err, Some(Error::Missing { .. })), "{err:?}");
    }

    #[test]
    fn write_atomic_replaces_and_keeps_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn lock_times_out_while_held_and_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let held = lock(&path, Duration::from_millis(10)).unwrap();
        // flock locks belong to the open file description, so a second open conflicts.
        let err = lock(&path, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
        drop(held);
        lock(&path, Duration::from_millis(10)).unwrap();
    }

    #[test]
    fn update_json_writes_nothing_when_change_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        fs::write(&path, "{\"a\":1}").unwrap();
        let r: Result<()> = update_json(&path, DEFAULT_LOCK_WAIT, |_| {
            Err(Error::bad_input("patch", "no"))
        });
        assert!(r.is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}");
    }

    #[test]
    fn parse_json_accepts_bom() {
        let v = parse_json(Path::new("x"), "\u{feff}{\"a\":1}".as_bytes()).unwrap();
        assert_eq!(v["a"], 1);
    }

    #[test]
    fn a_foreign_read_follows_links_to_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t");
        fs::write(&file, "abcdef").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_foreign(&link, 3).unwrap().unwrap(), b"abc");
        assert!(read_foreign(&dir.path().join("none"), 3).unwrap().is_none());
        let zero = dir.path().join("z");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read_foreign(&zero, 3).unwrap_err();
        assert!(
            matches!(err, Error::NotRegular { kind: "device", .. }),
            "{err}"
        );
        let fifo = dir.path().join("f");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = open_foreign(&fifo).unwrap_err();
        assert!(
            matches!(err, Error::NotRegular { kind: "FIFO", .. }),
            "{err}"
        );
    }

    #[test]
    fn copy_into_copies_a_regular_file_and_refuses_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("index");
        fs::write(&from, "DIRC").unwrap();
        let to = tempfile::NamedTempFile::new_in(dir.path()).unwrap();
        assert!(copy_into(&from, to.as_file()).unwrap());
        assert_eq!(fs::read(to.path()).unwrap(), b"DIRC");
        assert!(!copy_into(&dir.path().join("none"), to.as_file()).unwrap());
        assert!(copy_into(Path::new("/dev/zero"), to.as_file()).is_err());
    }

    #[test]
    fn write_new_never_writes_through_what_is_already_there() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        let link = dir.path().join("backup");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_new(&link, b"x").is_err());
        assert!(!target.exists());
        let fresh = dir.path().join("fresh");
        write_new(&fresh, b"x").unwrap();
        assert_eq!(fs::read(&fresh).unwrap(), b"x");
    }
}
