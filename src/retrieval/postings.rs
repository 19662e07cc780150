//! Reading a term's postings from a store's text index (its layout is in [`super::text_index`]):
//! the postings in blocks whose entry is not masked, then the postings written one by one.
//!
//! A term's blocks in one store all have one form. Inline blocks are read posting by posting
//! ([`for_each_in_blocks`]). Blocks by positions are read without the base table first
//! ([`positions`], three or four bytes a posting), so that a query can walk the positions of all
//! its common terms at once and read each chunk of the base table once ([`BaseCursor`]) rather
//! than once per term.

use super::candidates::Id;
use super::features::DocFeatures;
use super::search::Source;
use super::text_index::{
    BASE_CHUNK, Block, POSITION_BLOCK, Posting, base_at, base_key, base_offsets, block_prefix,
    for_each_in_base, for_each_inline, for_each_position, term_prefix,
};
use crate::error::Result;
use crate::store::Store;

/// Ids whose postings in blocks are masked, per source, in order.
pub(super) type Masks = Vec<Vec<Vec<u8>>>;

/// The masks of every source.
///
/// # Errors
/// When a store cannot be read.
pub(super) fn masks(sources: &[Source<'_>]) -> Result<Masks> {
    sources.iter().map(|s| s.store.text_masks()).collect()
}

/// Tells which ids of one source's blocks are masked. The ids of a term's blocks arrive in
/// order, so the cursor only moves forward: one comparison per posting instead of a binary
/// search (a broad query checks 200,000 postings against the masks of every entry changed
/// since the last rebuild). An id out of order puts the cursor back by a binary search, so the
/// answer never depends on the order.
pub(super) struct MaskCursor<'a> {
    masks: &'a [Vec<u8>],
    at: usize,
}

impl<'a> MaskCursor<'a> {
    pub(super) fn new(masks: &'a [Vec<u8>]) -> Self {
        Self { masks, at: 0 }
    }

    pub(super) fn masked(&mut self, id: &[u8]) -> bool {
        use std::cmp::Ordering;
        if self.masks.is_empty() {
            return false;
        }
        if self.at > 0 && self.masks[self.at - 1].as_slice() >= id {
            self.at = self.masks.partition_point(|m| m.as_slice() < id);
        }
        while let Some(m) = self.masks.get(self.at) {
            match m.as_slice().cmp(id) {
                Ordering::Less => self.at += 1,
                Ordering::Equal => {
                    self.at += 1;
                    return true;
                }
                Ordering::Greater => return false,
            }
        }
        false
    }
}

/// One position of the base table.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) id: Id,
    /// `None` for an entry that was cold when the table was written.
    pub(super) features: Option<DocFeatures>,
}

/// The chunk of a source's base table at hand: positions are asked for in ascending order, so
/// one chunk is held at a time (a broad query that kept every chunk it read spent a fifth of its
/// time having fresh pages cleared for them). A sparse walk keeps the chunk as read with the
/// offset of each position and decodes only the entries it asks for (a query whose terms hold
/// one entry in twenty decodes those, not the nineteen around each); a dense one decodes the
/// chunk whole, which costs less per entry when nearly every entry is asked for.
#[derive(Default)]
pub(super) struct BaseCursor {
    chunk: Option<u32>,
    /// Decode each chunk whole.
    dense: bool,
    /// A dense walk's decoded chunk.
    slots: Vec<Slot>,
    /// A sparse walk's chunk as read, and the offset of each position in it.
    bytes: Option<fjall::Slice>,
    offsets: Vec<u32>,
}

/// Positions asked for, per position of the base table, from which a walk is dense.
const DENSE_SHARE: usize = 4;

impl BaseCursor {
    /// A cursor for a walk over `asked` positions within a range of `span` positions.
    pub(super) fn for_walk(asked: usize, span: u32) -> Self {
        Self {
            dense: asked.saturating_mul(DENSE_SHARE) >= span as usize,
            ..Self::default()
        }
    }

    /// The slot at `position`; `None` when the store's base table has no such position or its
    /// chunk does not decode (the posting is then skipped, like one in a block that does not
    /// decode).
    pub(super) fn slot(&mut self, store: &Store, position: u32) -> Result<Option<Slot>> {
        let chunk = position / BASE_CHUNK;
        let at = (position % BASE_CHUNK) as usize;
        if self.chunk != Some(chunk) {
            self.chunk = Some(chunk);
            self.load(store, chunk)?;
        }
        if self.dense {
            return Ok(self.slots.get(at).copied());
        }
        let (Some(bytes), Some(&offset)) = (&self.bytes, self.offsets.get(at)) else {
            return Ok(None);
        };
        Ok(base_at(bytes, offset as usize).and_then(|(id, features)| {
            Some(Slot {
                id: Id::new(id)?,
                features,
            })
        }))
    }

    fn load(&mut self, store: &Store, chunk: u32) -> Result<()> {
        self.slots.clear();
        self.offsets.clear();
        self.bytes = store.index_value(&base_key(chunk))?;
        let Some(bytes) = &self.bytes else {
            return Ok(());
        };
        if self.dense {
            let slots = &mut self.slots;
            let mut whole = true;
            let decoded = for_each_in_base(bytes, |id, features| match Id::new(id) {
                Some(id) => slots.push(Slot { id, features }),
                None => whole = false,
            });
            if decoded.is_none() || !whole {
                self.slots.clear();
            }
        } else if base_offsets(bytes, Id::MAX_LEN, &mut self.offsets).is_none() {
            self.offsets.clear();
        }
        Ok(())
    }

    /// The id and features of the entry at `position` when it is hot and not masked: a posting
    /// at that position is then one of the term's.
    pub(super) fn live(
        &mut self,
        store: &Store,
        masked: &mut MaskCursor<'_>,
        position: u32,
    ) -> Result<Option<(Id, DocFeatures)>> {
        Ok(match self.slot(store, position)? {
            Some(Slot {
                id,
                features: Some(features),
            }) if !masked.masked(id.as_bytes()) => Some((id, features)),
            _ => None,
        })
    }
}

/// The positions of a term's postings in blocks by positions, ascending, with its frequencies.
pub(super) type Positions = Vec<(u32, [u8; 4])>;

/// Whether the blocks of `term` in `store` are by positions; `None` when it has no blocks.
///
/// # Errors
/// When the store cannot be read.
pub(super) fn by_positions(store: &Store, term: &str) -> Result<Option<bool>> {
    let mut form = None;
    store.scan_index(&block_prefix(term), |_, value| {
        form = value.first().map(|b| *b == POSITION_BLOCK);
        false
    })?;
    Ok(form)
}

/// The positions of `term`'s blocks by positions in `store`, ascending, with the term's
/// frequencies: masked and cold entries included (the base table tells them apart). A block that
/// does not decode ends where it stops decoding, as in [`for_each_in_blocks`].
///
/// # Errors
/// When the store cannot be read.
pub(super) fn positions(store: &Store, term: &str) -> Result<Positions> {
    let mut out = Vec::new();
    store.scan_index(&block_prefix(term), |_, value| {
        if let Some(Block::Positions(postings)) = Block::of(value) {
            let _ = for_each_position(postings, |position, tf| {
                out.push((position, tf));
                true
            });
        }
        true
    })?;
    Ok(out)
}

/// Visits the live postings in `term`'s blocks in one store (those whose entry is hot and not
/// masked), in id order, while `visit` returns true. A block that does not decode is skipped like
/// a posting that does not.
///
/// # Errors
/// When the store cannot be read.
pub(super) fn for_each_in_blocks(
    store: &Store,
    masks: &[Vec<u8>],
    term: &str,
    mut visit: impl FnMut(&[u8], Posting) -> bool,
) -> Result<()> {
    let mut masked = MaskCursor::new(masks);
    let mut cursor = BaseCursor::default();
    let mut failed = None;
    let mut more = true;
    store.scan_index(&block_prefix(term), |_, value| {
        let _ = match Block::of(value) {
            Some(Block::Inline(postings)) => for_each_inline(postings, |id, p| {
                if !masked.masked(id) {
                    more = visit(id, p);
                }
                more
            }),
            Some(Block::Positions(postings)) => for_each_position(postings, |position, tf| {
                match cursor.live(store, &mut masked, position) {
                    Ok(Some((id, features))) => {
                        more = visit(id.as_bytes(), Posting { tf, features })
                    }
                    Ok(None) => {}
                    Err(e) => failed = Some(e),
                }
                more && failed.is_none()
            }),
            None => None,
        };
        more && failed.is_none()
    })?;
    failed.map_or(Ok(()), Err)
}

/// Visits the postings of `term` written one by one in one store, in id order, while `visit`
/// returns true.
///
/// # Errors
/// When the store cannot be read.
pub(super) fn for_each_single(
    store: &Store,
    term: &str,
    mut visit: impl FnMut(&[u8], Posting) -> bool,
) -> Result<()> {
    store.scan_index(&term_prefix(term), |id, value| {
        Posting::decode(value).is_none_or(|p| visit(id, p))
    })
}

/// Entries holding `term` over all sources.
///
/// # Errors
/// When a store cannot be read.
pub(super) fn document_frequency(sources: &[Source<'_>], masks: &Masks, term: &str) -> Result<u64> {
    let mut df = 0;
    for (src, s) in sources.iter().enumerate() {
        let none = Vec::new();
        for_each_in_blocks(s.store, masks.get(src).unwrap_or(&none), term, |_, _| {
            df += 1;
            true
        })?;
        for_each_single(s.store, term, |_, _| {
            df += 1;
            true
        })?;
    }
    Ok(df)
}

/// Whether some entry of some source holds `term`: what [`document_frequency`] answers
/// non-zero for, found at the first posting.
///
/// # Errors
/// When a store cannot be read.
pub(super) fn held(sources: &[Source<'_>], masks: &Masks, term: &str) -> Result<bool> {
    let mut found = false;
    for (src, s) in sources.iter().enumerate() {
        let none = Vec::new();
        for_each_single(s.store, term, |_, _| {
            found = true;
            false
        })?;
        if !found {
            for_each_in_blocks(s.store, masks.get(src).unwrap_or(&none), term, |_, _| {
                found = true;
                false
            })?;
        }
        if found {
            break;
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cursor answers as a binary search does, for ids in order, repeated or out of order.
    #[test]
    fn the_mask_cursor_answers_as_a_search_does() {
        let masks: Vec<Vec<u8>> = [b"b".as_slice(), b"d", b"dd", b"f", b"x"]
            .iter()
            .map(|m| m.to_vec())
            .collect();
        let sequences: [&[&[u8]]; 4] = [
            &[b"a", b"b", b"c", b"d", b"dd", b"e", b"f", b"g", b"x", b"y"],
            &[b"b", b"b", b"d", b"d", b"x"],
            &[b"x", b"b", b"f", b"a", b"dd", b"d", b"z"],
            &[b"y", b"z"],
        ];
        for ids in sequences {
            let mut cursor = MaskCursor::new(&masks);
            for id in ids {
                let expected = masks.binary_search_by(|m| m.as_slice().cmp(id)).is_ok();
                assert_eq!(
                    cursor.masked(id),
                    expected,
                    "{:?} in {ids:?}",
                    String::from_utf8_lossy(id)
                );
            }
        }
        assert!(!MaskCursor::new(&[]).masked(b"a"));
    }
}
