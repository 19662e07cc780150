//! The log read for a whole-store build: its complete lines streamed once, in chunks, then read
//! again one by one by their offsets, so that a build holds what it keeps of each event rather
//! than the log's bytes (a rebuild held the whole file: 537 MB at 100,000 entries of 1,900
//! characters).
//!
//! The file stays open from the first read to the last: a log replaced meanwhile (a checkout
//! writes a new file) is read as it was; a line read again is checked against what the first
//! pass saw (its length and its stated id).

use crate::error::{Error, Result};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes read at a time by [`LogFile::for_each_chunk`]: a multiple of the hashing subtree.
pub const CHUNK: usize = 8 << 20;

/// The longest tail [`LogFile::tail`] reads: more than any event line.
pub const TAIL_MAX: u64 = 64 << 20;

/// An open log and the length of its complete lines.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// Bytes up to the end of the last complete line.
    len: u64,
}

impl LogFile {
    /// Opens the log at `path` (a missing file reads as empty) and finds where its last
    /// complete line ends; bytes after it (a write in progress, a torn tail) are left out.
    ///
    /// # Errors
    /// When the file cannot be read.
    pub fn open(path: &Path) -> Result<Self> {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    file: None,
                    len: 0,
                });
            }
            Err(e) => return Err(io(path, e)),
        };
        let size = file.metadata().map_err(|e| io(path, e))?.len();
        // The last newline, found by reading backwards a block at a time.
        let mut end = size;
        let mut len = 0;
        let mut block = vec![0u8; 64 * 1024];
        while end > 0 {
            let start = end.saturating_sub(block.len() as u64);
            let part = &mut block[..usize::try_from(end - start).unwrap_or(0)];
            file.read_exact_at(part, start).map_err(|e| io(path, e))?;
            if let Some(i) = memchr::memrchr(b'\n', part) {
                len = start + i as u64 + 1;
                break;
            }
            end = start;
        }
        Ok(Self {
            path: path.to_path_buf(),
            file: Some(file),
            len,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of complete lines.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether there was no file to open.
    pub fn is_missing(&self) -> bool {
        self.file.is_none()
    }

    /// The bytes after the last complete line (a write in progress, a torn tail, a last line
    /// without its newline), at most [`TAIL_MAX`] and one more: a longer tail is no line.
    ///
    /// # Errors
    /// When the file cannot be read.
    pub fn tail(&self) -> Result<Vec<u8>> {
        use std::io::Read;
        let Some(file) = &self.file else {
            return Ok(Vec::new());
        };
        let mut tail = Vec::new();
        let mut reader = file;
        std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(self.len))
            .map_err(|e| io(&self.path, e))?;
        reader
            .take(TAIL_MAX + 1)
            .read_to_end(&mut tail)
            .map_err(|e| io(&self.path, e))?;
        Ok(tail)
    }

    /// Visits the complete lines' bytes in order, in chunks of about [`CHUNK`], each ending at
    /// the end of a line, with the offset of its first byte; `hash` sees every byte, in pieces
    /// of [`CHUNK`] (the last one shorter).
    ///
    /// # Errors
    /// When the file cannot be read, or what `visit` returns.
    pub fn for_each_chunk(
        &self,
        hash: impl FnMut(&[u8]),
        visit: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.for_each_chunk_of(CHUNK, hash, visit)
    }

    /// [`LogFile::for_each_chunk`] reading `size` bytes at a time.
    fn for_each_chunk_of(
        &self,
        size: usize,
        mut hash: impl FnMut(&[u8]),
        mut visit: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        // The start of a line that a read cut, kept until a later read ends it (a line may be
        // longer than several reads).
        let mut carry: Vec<u8> = Vec::new();
        let mut read = vec![0u8; size.max(1)];
        let mut at = 0u64;
        while at < self.len {
            let n = usize::try_from((self.len - at).min(read.len() as u64)).unwrap_or(size);
            let piece = &mut read[..n];
            file.read_exact_at(piece, at)
                .map_err(|e| io(&self.path, e))?;
            hash(piece);
            let start = at - carry.len() as u64;
            at += n as u64;
            let cut = if at == self.len {
                n
            } else {
                match memchr::memrchr(b'\n', piece) {
                    Some(i) => i + 1,
                    None => {
                        carry.extend_from_slice(piece);
                        continue;
                    }
                }
            };
            if carry.is_empty() {
                visit(start, &piece[..cut])?;
            } else {
                carry.extend_from_slice(&piece[..cut]);
                visit(start, &carry)?;
                carry.clear();
            }
            carry.extend_from_slice(&piece[cut..]);
        }
        Ok(())
    }

    /// The line of `len` bytes at `offset` (without its newline), checked against `id`, the
    /// id the first pass read there.
    ///
    /// # Errors
    /// [`Error::CorruptLog`] when the file no longer holds that line there.
    pub fn line_at(&self, offset: u64, len: usize, id: &str, number: usize) -> Result<String> {
        let changed = || Error::CorruptLog {
            path: self.path.clone(),
            line: number,
            offset,
            problem: format!(
                "the log changed while it was read (event {id} is no longer at this offset); run \
                 the command again"
            ),
        };
        let file = self.file.as_ref().ok_or_else(changed)?;
        let mut line = vec![0u8; len];
        file.read_exact_at(&mut line, offset)
            .map_err(|e| io(&self.path, e))?;
        if crate::log::line_id::stated_id_unchecked(&line) != Some(id) {
            return Err(changed());
        }
        String::from_utf8(line).map_err(|_| changed())
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io(crate::store::session::io_context(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest::proptest! {
        /// The chunks are the complete lines, each once and in order, whatever the lengths of
        /// the lines (shorter or longer than several reads) and of a torn tail; the bytes hashed
        /// are the same bytes.
        #[test]
        fn chunks_are_the_complete_lines(
            lines in proptest::collection::vec(0usize..3_000, 0..40),
            tail in 0usize..100,
            size in prop_oneof![1usize..64, 64usize..4096, Just(CHUNK)],
        ) {
            let mut text = Vec::new();
            for (i, n) in lines.iter().enumerate() {
                text.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, *n));
                text.push(b'\n');
            }
            let complete = text.len();
            text.extend(std::iter::repeat_n(b'z', tail));
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let path = dir.path().join("events.jsonl");
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
            let log = LogFile::open(&path).unwrap_or_else(|e| panic!("{e}"));
            proptest::prop_assert_eq!(log.len(), complete as u64);
            let mut seen = Vec::new();
            let mut hashed = Vec::new();
            log.for_each_chunk_of(
                size,
                |h| hashed.extend_from_slice(h),
                |offset, chunk| {
                    assert_eq!(offset as usize, seen.len());
                    assert!(chunk.is_empty() || chunk.ends_with(b"\n"));
                    seen.extend_from_slice(chunk);
                    Ok(())
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
            proptest::prop_assert_eq!(&seen, &text[..complete].to_vec());
            proptest::prop_assert_eq!(&hashed, &text[..complete].to_vec());
        }
    }
}
