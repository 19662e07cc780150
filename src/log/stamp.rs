//! Recognising the log the store last applied, cheaply and without being fooled by rewrites.
//!
//! Two things together: the file's identity as the file system reports it (device, inode, size,
//! modification and change times), which any write, rename or checkout changes; and blake3
//! hashes of the applied prefix in blocks of [`BLOCK`] bytes. When the identity is unchanged,
//! nothing happened and opening costs one `stat`. When it changed, the block hashes tell whether
//! the applied prefix is still there byte for byte (the log only grew), or where the first
//! difference is (the log was rewritten: a checkout, a merge, an edit).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Size of a hashed block of the log.
pub const BLOCK: usize = 1 << 20;

/// What the file system says about a file; equal stamps mean an unchanged file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl FileStamp {
    /// The stamp of an open file's metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Self {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
            Self {
                dev: 0,
                ino: 0,
                size: meta.len(),
                mtime_ns,
                ctime_ns: 0,
            }
        }
    }

    /// The stamp of the file at `path`, or `None` when there is no file.
    ///
    /// # Errors
    /// When the file exists but cannot be inspected.
    pub fn at(path: &Path) -> std::io::Result<Option<Self>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(Self::of(&m))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// blake3 hashes of a prefix of the log: one per complete block, and one of the partial block
/// after them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockHashes {
    /// Hex hashes of the complete blocks `[i * BLOCK, (i + 1) * BLOCK)`.
    pub blocks: Vec<String>,
    /// Hex hash of the bytes after the last complete block.
    pub partial: String,
}

fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

impl BlockHashes {
    /// The hashes of `prefix`.
    pub fn of(prefix: &[u8]) -> Self {
        let mut chunks = prefix.chunks_exact(BLOCK);
        let blocks = chunks.by_ref().map(hash_hex).collect();
        Self {
            blocks,
            partial: hash_hex(chunks.remainder()),
        }
    }

    /// Offset where the partial block starts.
    pub fn partial_start(&self) -> usize {
        self.blocks.len() * BLOCK
    }

    /// The hashes after appending: `tail` holds the bytes from [`Self::partial_start`] to the
    /// new end (the old partial block and what was appended).
    pub fn extended(&self, tail: &[u8]) -> Self {
        let mut next = Self::of(tail);
        let mut blocks = self.blocks.clone();
        blocks.append(&mut next.blocks);
        next.blocks = blocks;
        next
    }

    /// Length of the longest prefix of `file` known to equal the hashed prefix of length `len`:
    /// `len` when all of it matches, else the start of the first block that differs.
    pub fn matching_prefix(&self, file: &[u8], len: usize) -> usize {
        for (i, h) in self.blocks.iter().enumerate() {
            let block = file.get(i * BLOCK..(i + 1) * BLOCK);
            if block.is_none_or(|b| hash_hex(b) != *h) {
                return i * BLOCK;
            }
        }
        let start = self.partial_start();
        match file.get(start..len) {
            Some(b) if hash_hex(b) == self.partial => len,
            _ => start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extending_equals_hashing_the_whole() {
        let data: Vec<u8> = (0..(3 * BLOCK + 777)).map(|i| (i % 251) as u8).collect();
        for cut in [0, 10, BLOCK - 1, BLOCK, BLOCK + 5, 2 * BLOCK + 100] {
            let first = BlockHashes::of(&data[..cut]);
            let grown = first.extended(&data[first.partial_start()..]);
            assert_eq!(grown, BlockHashes::of(&data));
        }
    }

    #[test]
    fn matching_prefix_finds_the_first_changed_block() {
        let data: Vec<u8> = (0..(2 * BLOCK + 10)).map(|i| (i % 13) as u8).collect();
        let hashes = BlockHashes::of(&data);
        assert_eq!(hashes.matching_prefix(&data, data.len()), data.len());
        let mut edited = data.clone();
        edited[BLOCK + 3] ^= 1;
        assert_eq!(hashes.matching_prefix(&edited, data.len()), BLOCK);
        let mut tail_edit = data.clone();
        tail_edit[2 * BLOCK + 9] ^= 1;
        assert_eq!(hashes.matching_prefix(&tail_edit, data.len()), 2 * BLOCK);
        assert_eq!(hashes.matching_prefix(&data[..100], data.len()), 0);
    }
}
