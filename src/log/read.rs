//! Reading the log: complete lines with their line numbers and byte offsets, decoded into events
//! with errors that name file, line and offset.

use crate::error::{Error, Result};
use projections::{Event, decode_line};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes of the log from `offset` to the end of its last complete line.
/// Bytes after the last newline (a write in progress, or a torn tail) are left out.
///
/// # Errors
/// When the log cannot be read.
pub fn read_complete(path: &Path, offset: u64) -> Result<Vec<u8>> {
    let mut file = match fs_err::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    file.seek(SeekFrom::Start(offset))?;
    let size = file.metadata()?.len().saturating_sub(offset);
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut buf)?;
    let complete = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    buf.truncate(complete);
    Ok(buf)
}

/// One complete line of the log.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// 1-based line number in the file.
    pub number: usize,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// The line without its newline (and without a `\r` before it).
    pub bytes: &'a [u8],
}

/// Splits complete lines; `first_number` and `base_offset` say where `buf` starts in the file.
pub fn lines(buf: &[u8], first_number: usize, base_offset: u64) -> impl Iterator<Item = Line<'_>> {
    let mut offset = 0usize;
    let mut number = first_number;
    std::iter::from_fn(move || {
        let rest = buf.get(offset..)?;
        let end = rest.iter().position(|b| *b == b'\n')?;
        let mut bytes = &rest[..end];
        if let Some(stripped) = bytes.strip_suffix(b"\r") {
            bytes = stripped;
        }
        let line = Line {
            number,
            offset: base_offset + offset as u64,
            bytes,
        };
        offset += end + 1;
        number += 1;
        Some(line)
    })
}

/// True for a line with nothing but whitespace (tolerated, and skipped).
pub fn is_blank(line: &Line<'_>) -> bool {
    line.bytes.iter().all(u8::is_ascii_whitespace)
}

/// What a git conflict marker in the log means and how to recover.
pub const CONFLICT_MARKER_HELP: &str = "a git conflict marker: git merged this log line by line, \
without the `merge=union` attribute of ai-memory/.gitattributes (not committed or removed) or \
in an octopus merge (`git merge a b`), which ignores it. Every event line is valid on its own, so \
keep both sides: delete the marker lines (<<<<<<<, |||||||, =======, >>>>>>>), `git add` the log \
and commit (commit ai-memory/.gitattributes too if it is missing); during an octopus merge, \
`git merge --abort` and merge the branches one at a time instead";

/// True for a line git writes around conflicting hunks.
pub fn is_conflict_marker(line: &[u8]) -> bool {
    [b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>"]
        .iter()
        .any(|m| line.starts_with(*m) && matches!(line.get(7), None | Some(b' ' | b'\r')))
}

/// Decodes one line, naming file, line and offset on failure.
///
/// # Errors
/// [`Error::CorruptLog`] with the problem.
pub fn decode(path: &Path, line: &Line<'_>) -> Result<Event> {
    let corrupt = |problem: String| Error::CorruptLog {
        path: path.to_path_buf(),
        line: line.number,
        offset: line.offset,
        problem,
    };
    if is_conflict_marker(line.bytes) {
        return Err(corrupt(CONFLICT_MARKER_HELP.to_owned()));
    }
    let text = std::str::from_utf8(line.bytes).map_err(|e| corrupt(format!("not UTF-8: {e}")))?;
    decode_line(text).map_err(|e| corrupt(e.to_string()))
}

/// [`decode`] of a line verified before (see `crate::store::Verify::Trusted`): decoded, its ids
/// not hashed again.
///
/// # Errors
/// [`Error::CorruptLog`] when the line does not decode.
pub fn decode_trusted(path: &Path, line: &Line<'_>) -> Result<Event> {
    let corrupt = |problem: String| Error::CorruptLog {
        path: path.to_path_buf(),
        line: line.number,
        offset: line.offset,
        problem,
    };
    let text = std::str::from_utf8(line.bytes).map_err(|e| corrupt(format!("not UTF-8: {e}")))?;
    projections::event::decode_verified_line(text).map_err(|e| corrupt(e.to_string()))
}

/// Decodes every non-blank line of `buf`.
///
/// # Errors
/// The first line that does not decode.
pub fn decode_all(
    path: &Path,
    buf: &[u8],
    first_number: usize,
    base_offset: u64,
) -> Result<Vec<Event>> {
    lines(buf, first_number, base_offset)
        .filter(|l| !is_blank(l))
        .map(|l| decode(path, &l))
        .collect()
}
