//! The one place that writes files: appending whole lines, replacing files atomically, and
//! recovering a torn tail. Every write here is followed by an fsync.

use crate::error::Result;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Appends `bytes` (one or more complete lines) with a single `write` call and fsyncs.
///
/// The caller holds the log's write lock, so no other memlog process appends concurrently; the
/// single write keeps a crash from interleaving partial lines of two events.
///
/// # Errors
/// When the file cannot be opened, written or synced (the error names the path).
pub fn append(path: &Path, bytes: &[u8]) -> Result<crate::log::stamp::FileStamp> {
    refuse_other_names(path)?;
    let mut file = open_to_write(std::fs::OpenOptions::new().create(true).append(true), path)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    // The stamp of the file just written, from the open handle: what the store records as the
    // state it has applied.
    Ok(crate::log::stamp::FileStamp::of(&file.metadata()?))
}

/// An append whose bytes are written but not yet forced to disk: [`Unsynced::sync`] does that.
/// Other processes already read the bytes; the writer acknowledges them only after the sync.
#[derive(Debug)]
pub struct Unsynced {
    file: fs_err::File,
}

impl Unsynced {
    /// Forces the appended bytes to disk.
    ///
    /// # Errors
    /// When the sync fails (the error names the path).
    pub fn sync(self) -> Result<()> {
        self.file.sync_data()?;
        Ok(())
    }
}

/// Appends `bytes` (one or more complete lines) with a single `write` call, without syncing:
/// the caller syncs later, outside its locks, so that the next writer need not wait for the disk.
///
/// A write that fails part way (a full disk, a file size limit) is cut off again, so that the
/// log holds all of the lines or none of them: the caller reports them as not written.
///
/// # Errors
/// When the file cannot be opened or written (the error names the path).
pub fn append_unsynced(
    path: &Path,
    bytes: &[u8],
) -> Result<(crate::log::stamp::FileStamp, Unsynced)> {
    refuse_other_names(path)?;
    let mut file = open_to_write(std::fs::OpenOptions::new().create(true).append(true), path)?;
    // The caller holds the write lock: nobody else appends meanwhile.
    let before = file.metadata()?.len();
    if let Err(e) = file.write_all(bytes) {
        // If even this fails, the next command finds a torn last line and quarantines it.
        let _ = file.set_len(before);
        let message = format!(
            "{e}; nothing of this write was appended: free disk space, then run the command again"
        );
        return Err(std::io::Error::new(e.kind(), message).into());
    }
    let stamp = crate::log::stamp::FileStamp::of(&file.metadata()?);
    Ok((stamp, Unsynced { file }))
}

/// Appends `bytes` (one or more complete lines) to one of a project's local record logs
/// (accesses, queries, secret detections, applies), which no lock guards, without syncing.
/// When the file ends in a torn line (a process killed mid-append), a newline ends it first:
/// its readers skip a line they cannot read, and the new record is not glued onto the
/// fragment and lost with it. (The event log instead repairs a torn tail under its write lock,
/// [`repair_tail`], since a bad line there stops every command.)
///
/// # Errors
/// When the file cannot be opened, read or written (the error names the path).
pub fn append_record(
    path: &Path,
    bytes: &[u8],
) -> Result<(crate::log::stamp::FileStamp, Unsynced)> {
    refuse_link(path)?;
    let mut file = open_to_write(
        std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true),
        path,
    )?;
    let mut line = Vec::with_capacity(bytes.len() + 1);
    if torn_len(&mut file)?.is_some() {
        line.push(b'\n');
    }
    line.extend_from_slice(bytes);
    // One write: a concurrent reader's record lands before or after it, not inside it.
    file.write_all(&line)?;
    let stamp = crate::log::stamp::FileStamp::of(&file.metadata()?);
    Ok((stamp, Unsynced { file }))
}

/// Refuses to append to, or cut, a file through a symbolic link: a repository can commit a link
/// that points anywhere. (Replacing a file atomically renames over the link, never through it.)
pub(crate) fn refuse_link(path: &Path) -> Result<()> {
    if !fs_err::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    Err(crate::Error::Rejected {
        message: format!(
            "{} is a symbolic link; memlog never writes through a link (it could lead outside \
             the workspace, and memlog never writes outside the workspace): remove the link \
             (`rm {}`) and run the command again",
            path.display(),
            path.display()
        ),
    })
}

/// Refuses to write to a file that has another name: a symbolic link ([`refuse_link`]), or a
/// file with more than one hard link, which a write in place (an append, a cut) changes under
/// every name, maybe outside the workspace. Reads go on: only writing through it is refused.
/// (Replacing a file atomically gives its name a new file, and leaves the other names alone.)
fn refuse_other_names(path: &Path) -> Result<()> {
    refuse_link(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let links = std::fs::symlink_metadata(path).map_or(1, |m| m.nlink());
        if links > 1 {
            let own = format!("{}.own", path.display());
            return Err(crate::Error::Rejected {
                message: format!(
                    "{} has {links} hard links: the same file has another name, maybe outside \
                     the workspace, and memlog never writes through one (memlog never writes \
                     outside the workspace); nothing was written: give it a file of its own, \
                     with the same content (`cp {} {own} && mv {own} {}`), and run the command \
                     again",
                    path.display(),
                    path.display(),
                    path.display()
                ),
            });
        }
    }
    Ok(())
}

/// Opens `path` with `options` to write to it; a file that may not be written is named with
/// the fix.
fn open_to_write(options: &std::fs::OpenOptions, path: &Path) -> Result<fs_err::File> {
    options
        .open(path)
        .map(|f| fs_err::File::from_parts(f, path))
        .map_err(|e| unwritable(path, e))
}

/// A file memlog must write that the system will not let it (no write permission, an
/// immutable file, a read-only file system): say which and how to allow it. Other errors name
/// the path, as every I/O error does.
fn unwritable(path: &Path, e: std::io::Error) -> crate::Error {
    use std::io::ErrorKind;
    if !matches!(
        e.kind(),
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem
    ) {
        return std::io::Error::new(
            e.kind(),
            format!("failed to open file `{}`: {e}", path.display()),
        )
        .into();
    }
    let shown = path.display();
    let why = if path.file_name() == Some(std::ffi::OsStr::new(crate::project::LOG_FILE)) {
        "every write appends to this log"
    } else {
        "memlog keeps the project's local state there"
    };
    std::io::Error::new(
        e.kind(),
        format!(
            "cannot write {shown}: {e}; {why}: make it writable (`chmod u+w {shown}`; if \
             `lsattr {shown}` shows the immutable flag `i`, `chattr -i {shown}` as root; on a \
             read-only file system, work in a writable copy of the repository)"
        ),
    )
    .into()
}

/// Replaces `path` with `bytes` atomically: write a temporary sibling, fsync, rename, fsync the
/// directory. Readers see the old or the new content, never a mix.
///
/// # Errors
/// When any step fails (the error names the path).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| Ok(w.write_all(bytes)?))
}

/// [`write_atomic`] of what `write` writes, as it writes it: for a file too large to hold in
/// memory first (an export). Nothing replaces `path` when `write` fails.
///
/// # Errors
/// When the file cannot be written, or `write` fails.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = (|| {
        let file = fs_err::File::create(&tmp)?;
        let mut buffered = std::io::BufWriter::new(file);
        write(&mut buffered)?;
        let file = buffered
            .into_inner()
            .map_err(|e| crate::error::Error::Io(e.into_error()))?;
        file.sync_all()?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = fs_err::remove_file(&tmp);
        return Err(e);
    }
    fs_err::rename(&tmp, path)?;
    sync_dir(dir)
}

/// Creates `path` with `bytes` only if it does not exist yet; returns whether it was created.
///
/// # Errors
/// When the file cannot be written.
pub fn create_if_missing(path: &Path, bytes: &[u8]) -> Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    write_atomic(path, bytes)?;
    Ok(true)
}

fn sync_dir(dir: &Path) -> Result<()> {
    // Directories can be opened read-only and synced on Unix; elsewhere this is best effort.
    if let Ok(d) = fs_err::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A last line without its newline, and what was done with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where the line started.
    pub offset: u64,
    /// How many bytes it had.
    pub len: u64,
    /// True when the line was a complete, valid event missing only its newline (an editor or a
    /// tool can drop it): the newline was added and the event kept. False when the line was
    /// really torn and moved to quarantine.
    pub completed: bool,
}

/// The length of the file if it ends in an incomplete line (reads only the last byte).
fn torn_len(file: &mut fs_err::File) -> Result<Option<u64>> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    Ok((last[0] != b'\n').then_some(len))
}

/// Whether the log ends in an incomplete line.
///
/// # Errors
/// When the log exists but cannot be read.
pub fn has_torn_tail(log: &Path) -> Result<bool> {
    match fs_err::File::open(log) {
        Ok(mut file) => Ok(torn_len(&mut file)?.is_some()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// How long [`repair_tail`] watches an incomplete last line before it repairs it: a program
/// writing the log meanwhile makes it grow.
const TAIL_SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

thread_local! {
    static SETTLE: std::cell::Cell<std::time::Duration> = const { std::cell::Cell::new(TAIL_SETTLE) };
}

/// Sets how long [`repair_tail`] watches an incomplete last line on this thread, for tests that
/// cut a log at every byte and repair it each time.
pub fn watch_torn_tails_for(settle: std::time::Duration) {
    SETTLE.set(settle);
}

/// If `log` ends without a newline: when `is_whole(line)` says the last line is a complete event,
/// adds the missing newline; otherwise moves the partial line, as `set_aside` makes it (the caller
/// redacts what must not be stored), to `quarantine` (appended, with a newline) and truncates the
/// log to its last complete line. The caller must hold the write lock:
/// otherwise the "partial line" may be a write still in progress.
///
/// # Errors
/// When the files cannot be read, written or synced.
pub fn repair_tail(
    log: &Path,
    quarantine: &Path,
    is_whole: impl Fn(&[u8]) -> bool,
    set_aside: impl Fn(Vec<u8>) -> Vec<u8>,
) -> Result<Option<TornTail>> {
    refuse_other_names(log)?;
    refuse_other_names(quarantine)?;
    let mut file = match std::fs::OpenOptions::new().read(true).write(true).open(log) {
        Ok(f) => fs_err::File::from_parts(f, log),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unwritable(log, e)),
    };
    let Some(len) = torn_len(&mut file)? else {
        return Ok(None);
    };
    // A program outside memlog (a copy, an editor, a checkout) may be writing the log right
    // now: its last line is then incomplete only for the moment, and cutting it would destroy
    // what that program writes next at its own offset. A tail that grows within a short wait
    // is left alone, and the command refused.
    std::thread::sleep(SETTLE.get());
    let still = |file: &fs_err::File| -> Result<()> {
        if file.metadata()?.len() == len {
            return Ok(());
        }
        Err(crate::Error::Rejected {
            message: format!(
                "{} ends in an incomplete line that is growing: another program is writing it; \
                 wait until it has finished (a copy, a checkout), then run the command again",
                log.display()
            ),
        })
    };
    still(&file)?;
    // Scan backwards in chunks for the previous newline.
    let mut start = len;
    let mut buf = vec![0u8; 64 * 1024];
    let mut found = None;
    while start > 0 && found.is_none() {
        let chunk = u64::try_from(buf.len()).unwrap_or(u64::MAX).min(start);
        start -= chunk;
        let n = usize::try_from(chunk).unwrap_or(0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        found = buf[..n]
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|i| start + i as u64 + 1);
    }
    let offset = found.unwrap_or(0);
    let mut torn = Vec::new();
    file.seek(SeekFrom::Start(offset))?;
    file.read_to_end(&mut torn)?;
    still(&file)?;
    if is_whole(&torn) {
        file.write_all(b"\n")?;
        file.sync_data()?;
        return Ok(Some(TornTail {
            offset,
            len: len - offset,
            completed: true,
        }));
    }
    let mut torn = set_aside(torn);
    torn.push(b'\n');
    append(quarantine, &torn)?;
    file.set_len(offset)?;
    file.sync_all()?;
    Ok(Some(TornTail {
        offset,
        len: len - offset,
        completed: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An incomplete last line that grows while it is watched belongs to a program still
    /// writing the log: it is neither cut nor set aside, and the command is refused; once the
    /// writer is done, nothing it wrote is missing.
    #[test]
    fn a_tail_still_being_written_is_left_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = dir.path().join("events.jsonl");
        let quarantine = dir.path().join("quarantine.jsonl");
        fs_err::write(&log, b"{\"a\":1}\n{\"b\":").unwrap_or_else(|e| panic!("{e}"));
        let writer = {
            let log = log.clone();
            std::thread::spawn(move || {
                for _ in 0..30 {
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&log)
                        .unwrap_or_else(|e| panic!("{e}"));
                    f.write_all(b"2222").unwrap_or_else(|e| panic!("{e}"));
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let repaired = repair_tail(&log, &quarantine, |_| false, |b| b);
        assert!(
            matches!(&repaired, Err(crate::Error::Rejected { message })
                if message.contains("growing: another program is writing it; wait until")),
            "{repaired:?}"
        );
        if let Err(panic) = writer.join() {
            std::panic::resume_unwind(panic);
        }
        let text = fs_err::read(&log).unwrap_or_default();
        assert_eq!(text.len(), b"{\"a\":1}\n{\"b\":".len() + 30 * 4);
        assert!(!quarantine.exists());
    }

    /// Appending and cutting a torn tail refuse a link (it may lead outside the workspace):
    /// its target keeps its bytes.
    #[cfg(unix)]
    #[test]
    fn nothing_is_appended_or_cut_through_a_link() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let target = dir.path().join("target");
        fs_err::write(&target, b"precious").unwrap_or_else(|e| panic!("{e}"));
        let link = dir.path().join("events.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap_or_else(|e| panic!("{e}"));
        let refused = |r: Result<()>| {
            let e = r
                .err()
                .unwrap_or_else(|| panic!("written through the link"));
            assert!(matches!(e, crate::Error::Rejected { .. }), "{e}");
            assert!(e.to_string().contains("is a symbolic link"), "{e}");
        };
        refused(append(&link, b"x\n").map(|_| ()));
        refused(append_unsynced(&link, b"x\n").map(|_| ()));
        refused(repair_tail(&link, &dir.path().join("q"), |_| false, |t| t).map(|_| ()));
        refused(repair_tail(&target, &link, |_| false, |t| t).map(|_| ()));
        assert_eq!(fs_err::read(&target).unwrap_or_default(), b"precious");
    }

    /// A file the system will not let memlog write is named with the fix; other errors keep
    /// their own words, and the path.
    #[test]
    fn an_unwritable_file_is_named_with_the_fix() {
        let log = Path::new("/repo/ai-memory/demo/events.jsonl");
        for kind in [
            std::io::ErrorKind::PermissionDenied,
            std::io::ErrorKind::ReadOnlyFilesystem,
        ] {
            let text =
                unwritable(log, std::io::Error::new(kind, "Operation not permitted")).to_string();
            assert_eq!(
                text,
                "cannot write /repo/ai-memory/demo/events.jsonl: Operation not permitted; every \
                 write appends to this log: make it writable (`chmod u+w \
                 /repo/ai-memory/demo/events.jsonl`; if `lsattr \
                 /repo/ai-memory/demo/events.jsonl` shows the immutable flag `i`, `chattr -i \
                 /repo/ai-memory/demo/events.jsonl` as root; on a read-only file system, work in \
                 a writable copy of the repository)"
            );
        }
        let other = unwritable(log, std::io::Error::other("disk on fire")).to_string();
        assert_eq!(
            other,
            "failed to open file `/repo/ai-memory/demo/events.jsonl`: disk on fire"
        );
    }
}
