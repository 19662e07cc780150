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
///
/// Each block's hash is the blake3 hash of its bytes, made from the chaining values of its
/// [`SUBTREE`]-byte subtrees (blake3 is a tree hash: see [`blake3::hazmat`]). The partial
/// block's complete subtrees keep their chaining values here, so that a write, which appends a
/// few hundred bytes, hashes what follows the last complete subtree (at most 64 KiB) and not the
/// whole partial block (up to 1 MiB, half a millisecond a write).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockHashes {
    /// Hex hashes of the complete blocks `[i * BLOCK, (i + 1) * BLOCK)`.
    pub blocks: Vec<String>,
    /// Hex hash of the bytes after the last complete block.
    pub partial: String,
    /// Hex chaining values of the partial block's complete subtrees, in order.
    pub subtrees: Vec<String>,
}

/// Size of a subtree whose chaining value is kept: a power of two dividing [`BLOCK`].
pub const SUBTREE: usize = 1 << 16;

const SUBTREES_PER_BLOCK: usize = BLOCK / SUBTREE;

fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

type Cv = blake3::hazmat::ChainingValue;

/// The chaining value of the subtree of `bytes` (at most [`SUBTREE`] of them) at `offset` in
/// its block.
fn subtree_cv(bytes: &[u8], offset: usize) -> Cv {
    use blake3::hazmat::HasherExt;
    blake3::Hasher::new()
        .set_input_offset(offset as u64)
        .update(bytes)
        .finalize_non_root()
}

/// The chaining value of the subtree made of `cvs` (complete subtrees) and `rest` (shorter
/// than a subtree), its first subtree being subtree `first` of its block. blake3 splits every
/// node at the largest power of two of chunks shorter than the node, so a node at least a
/// subtree long splits on a subtree boundary.
fn node_cv(cvs: &[Cv], rest: &[u8], first: usize) -> Cv {
    use blake3::hazmat::{Mode, merge_subtrees_non_root};
    match (cvs, rest.is_empty()) {
        ([cv], true) => *cv,
        ([], _) => subtree_cv(rest, first * SUBTREE),
        _ => {
            let (l, r, left) = split(cvs, rest);
            merge_subtrees_non_root(
                &node_cv(l, &[], first),
                &node_cv(r, rest, first + left),
                Mode::Hash,
            )
        }
    }
}

/// The two children of the root of `cvs` and `rest`, and how many subtrees the left one holds.
fn split<'a>(cvs: &'a [Cv], rest: &[u8]) -> (&'a [Cv], &'a [Cv], usize) {
    let len = (cvs.len() * SUBTREE + rest.len()) as u64;
    let left =
        usize::try_from(blake3::hazmat::left_subtree_len(len)).unwrap_or(usize::MAX) / SUBTREE;
    let (l, r) = cvs.split_at(left.min(cvs.len()));
    (l, r, left)
}

/// The hash of a block's `cvs` (complete subtrees) followed by `rest` (shorter than a
/// subtree): the blake3 hash of those bytes, except for a block of exactly one subtree, whose
/// root cannot be made from its chaining value; its chaining value stands for it.
fn region_hash(cvs: &[Cv], rest: &[u8]) -> String {
    use blake3::hazmat::{Mode, merge_subtrees_root};
    match (cvs, rest.is_empty()) {
        ([], _) => hash_hex(rest),
        ([cv], true) => cv_hex(cv),
        _ => {
            let (l, r, left) = split(cvs, rest);
            let root =
                merge_subtrees_root(&node_cv(l, &[], 0), &node_cv(r, rest, left), Mode::Hash);
            root.to_hex().to_string()
        }
    }
}

/// The chaining values of the complete subtrees of `region` (from a block's start) and the
/// bytes after them.
fn subtrees_of(region: &[u8]) -> (Vec<Cv>, &[u8]) {
    let mut pieces = region.chunks_exact(SUBTREE);
    let cvs = pieces
        .by_ref()
        .enumerate()
        .map(|(i, piece)| subtree_cv(piece, i * SUBTREE))
        .collect();
    (cvs, pieces.remainder())
}

fn cv_hex(cv: &Cv) -> String {
    blake3::Hash::from_bytes(*cv).to_hex().to_string()
}

fn cv_of_hex(hex: &str) -> Option<Cv> {
    blake3::Hash::from_hex(hex).ok().map(|h| *h.as_bytes())
}

/// [`region_hash`] of the bytes of a region from a block's start.
fn region_hash_of(region: &[u8]) -> String {
    let (cvs, rest) = subtrees_of(region);
    region_hash(&cvs, rest)
}

impl BlockHashes {
    /// The hashes of `prefix`.
    pub fn of(prefix: &[u8]) -> Self {
        Self::default().extended(prefix)
    }

    /// Offset where the partial block starts.
    pub fn partial_start(&self) -> usize {
        self.blocks.len() * BLOCK
    }

    /// Offset after the partial block's complete subtrees: what [`Self::extended`] needs from.
    pub fn resume_start(&self) -> usize {
        self.partial_start() + self.subtrees.len() * SUBTREE
    }

    /// The hashes after appending: `tail` holds the bytes from [`Self::resume_start`] to the
    /// new end (the rest of the partial block and what was appended).
    pub fn extended(&self, tail: &[u8]) -> Self {
        let mut blocks = self.blocks.clone();
        // A stored value that is not a chaining value cannot match: hash as if it were zeros,
        // which gives hashes that differ from the log's, so the next open rehashes it.
        let mut cvs: Vec<Cv> = self
            .subtrees
            .iter()
            .map(|h| cv_of_hex(h).unwrap_or_default())
            .collect();
        let mut pieces = tail.chunks_exact(SUBTREE);
        for piece in pieces.by_ref() {
            cvs.push(subtree_cv(piece, cvs.len() * SUBTREE));
            if cvs.len() == SUBTREES_PER_BLOCK {
                blocks.push(region_hash(&cvs, &[]));
                cvs.clear();
            }
        }
        let rest = pieces.remainder();
        Self {
            blocks,
            partial: region_hash(&cvs, rest),
            subtrees: cvs.iter().map(cv_hex).collect(),
        }
    }

    /// [`Self::of`] of bytes given in pieces, in order: `push` each, then `finish`.
    pub fn stream() -> HashStream {
        HashStream::default()
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
            Some(region) if region_hash_of(region) == self.partial => len,
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
        for cut in [
            0,
            10,
            SUBTREE,
            SUBTREE + 3,
            BLOCK - 1,
            BLOCK,
            BLOCK + 5,
            2 * BLOCK + 100,
            3 * BLOCK,
        ] {
            let first = BlockHashes::of(&data[..cut]);
            let grown = first.extended(&data[first.resume_start()..]);
            assert_eq!(grown, BlockHashes::of(&data));
        }
    }

    proptest::proptest! {
        /// Hashing bytes given in pieces equals hashing them whole, wherever the cuts fall.
        #[test]
        fn a_stream_hashes_as_the_whole(
            len in 0usize..(2 * BLOCK + 3 * SUBTREE),
            cuts in proptest::collection::vec(0usize..(2 * BLOCK + 3 * SUBTREE), 0..6),
        ) {
            let data: Vec<u8> = (0..len).map(|i| (i % 249) as u8).collect();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(len)).collect();
            cuts.push(len);
            cuts.sort_unstable();
            let mut stream = BlockHashes::stream();
            let mut at = 0;
            for cut in cuts {
                stream.push(&data[at..cut]);
                at = cut;
            }
            proptest::prop_assert_eq!(stream.finish(), BlockHashes::of(&data));
        }
    }

    /// Complete blocks hash as blake3 hashes their bytes (stores written before subtrees were
    /// kept hold those), and so does every partial block but one of exactly one subtree.
    #[test]
    fn hashes_made_from_subtrees_are_blake3() {
        let data: Vec<u8> = (0..(2 * BLOCK + 3 * SUBTREE + 5))
            .map(|i| (i % 253) as u8)
            .collect();
        for len in [
            0,
            1,
            1024,
            1025,
            SUBTREE - 1,
            SUBTREE + 1,
            2 * SUBTREE,
            3 * SUBTREE + 7,
            5 * SUBTREE,
            BLOCK - 1,
            BLOCK,
            BLOCK + SUBTREE,
            2 * BLOCK + 3 * SUBTREE + 5,
        ] {
            let h = BlockHashes::of(&data[..len]);
            for (i, block) in h.blocks.iter().enumerate() {
                assert_eq!(*block, hash_hex(&data[i * BLOCK..(i + 1) * BLOCK]), "{len}");
            }
            let region = &data[h.partial_start()..len];
            if region.len() != SUBTREE {
                assert_eq!(h.partial, hash_hex(region), "{len}");
            }
            assert_eq!(h.subtrees.len(), region.len() / SUBTREE, "{len}");
            assert_eq!(h.matching_prefix(&data, len), len, "{len}");
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

/// [`BlockHashes::of`] of bytes given in pieces (see [`BlockHashes::stream`]).
#[derive(Debug, Default)]
pub struct HashStream {
    hashes: BlockHashes,
    /// The bytes after the last complete subtree.
    pending: Vec<u8>,
}

impl HashStream {
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let whole = self.pending.len() / SUBTREE * SUBTREE;
        if whole > 0 {
            self.hashes = self.hashes.extended(&self.pending[..whole]);
            self.pending.drain(..whole);
        }
    }

    pub fn finish(self) -> BlockHashes {
        self.hashes.extended(&self.pending)
    }
}
