//! Building a whole store at once: a rebuild from the log, and a bulk import's replay. The
//! log is read in two passes (verify and group by entry, then decode and fold each entry on
//! the cores), and every keyspace is written by one ingestion in key order, while the next
//! chunk of entries is folded.

use super::*;
use crate::log::by_offset::LogFile;

fn fold_group(entry: &str, events: &[&Event], scan: bool) -> Derived {
    let mut event_keys: Vec<Vec<u8>> = events
        .iter()
        .map(|e| entry_key(entry, T_EVENT, e.id.as_bytes()))
        .collect();
    event_keys.sort_unstable();
    let mut records = derive_scanned(entry, fold_entry_lean(entry, events), scan);
    records.ops = events
        .iter()
        .filter_map(|e| projections::stats::Operation::of(e))
        .collect();
    (event_keys, records)
}

/// What the folding side of a rebuild hands the writing side.
enum Batch {
    /// Records of consecutive entries, in entry order, with each entry's entry-event keys.
    Entries(Vec<(Vec<Vec<u8>>, EntryRecords)>),
    /// The last records: the index keys, sorted, the meta records, and the text index.
    Tail {
        /// Made one at a time as they are written: held at once, the million keys of 100,000
        /// entries were a quarter of a rebuild's peak memory.
        index: Box<dyn Iterator<Item = Vec<u8>> + Send>,
        /// The text index records (its own range, after the meta records): `doc` records, the
        /// base table, then postings, each in key order.
        text: Box<dyn Iterator<Item = (Vec<u8>, Vec<u8>)> + Send>,
        meta: Vec<(Vec<u8>, Vec<u8>)>,
    },
}

/// Index terms gathered over a whole replay: per dimension and value, the positions (in entry
/// order) of the entries that have it (hot entries' terms, and cold entries' cold-index terms).
#[derive(Default)]
struct IndexBuckets {
    by_term: FxHashMap<(&'static str, String), Vec<u32>>,
    /// True when some value holds a NUL byte, so that sorting by term no longer sorts the keys.
    has_nul: bool,
}

impl IndexBuckets {
    fn add(&mut self, position: u32, state: &EntryState) {
        let terms = if state.is_cold() {
            cold_index_terms(state)
        } else {
            index_terms(state)
        };
        for (dim, value) in terms {
            self.has_nul |= value.contains('\0');
            self.by_term
                .entry((dim, value.into_owned()))
                .or_default()
                .push(position);
        }
    }

    /// The index keys in ascending order, made as they are taken; `entries` maps positions to
    /// entry ids.
    fn into_sorted_keys(
        self,
        entries: std::sync::Arc<Vec<String>>,
    ) -> Box<dyn Iterator<Item = Vec<u8>> + Send> {
        let mut terms: Vec<(Vec<u8>, Vec<u32>)> = self
            .by_term
            .into_iter()
            .map(|((dim, value), positions)| (index_prefix(dim, &value), positions))
            .collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let keys = terms.into_iter().flat_map(move |(prefix, positions)| {
            let entries = entries.clone();
            positions.into_iter().map(move |p| {
                let entry = entries.get(p as usize).map_or("", String::as_str);
                let mut k = Vec::with_capacity(prefix.len() + entry.len());
                k.extend_from_slice(&prefix);
                k.extend_from_slice(entry.as_bytes());
                k
            })
        });
        if self.has_nul {
            // A NUL inside a value sorts its keys apart from their prefix: sort them whole
            // (rare enough to hold them).
            let mut all: Vec<Vec<u8>> = keys.collect();
            all.sort_unstable();
            return Box::new(all.into_iter());
        }
        Box::new(keys)
    }
}

/// The text index of a rebuild, compact: per term the positions of its entries with their term
/// frequencies (8 bytes a posting), and each entry's features once. The records themselves are
/// made one at a time, in key order, as they are written, never all held at once.
/// Entry positions with their term frequencies per field.
type Postings = Vec<(u32, [u8; 4])>;

#[derive(Default)]
struct TextBuckets {
    by_term: FxHashMap<String, Postings>,
    /// Encoded features by entry position, [`DocFeatures::SIZE`] bytes each, one run for all
    /// (a vector per entry cost a tenth more memory than the features themselves).
    features: Vec<u8>,
    /// Whether the entry at each position has features (cold entries have none).
    has_features: Vec<bool>,
}

impl TextBuckets {
    fn add(&mut self, position: u32, text: Analysis) {
        let i = position as usize;
        let size = crate::retrieval::features::DocFeatures::SIZE;
        if self.has_features.len() <= i {
            self.has_features.resize(i + 1, false);
            self.features.resize((i + 1) * size, 0);
        }
        let mut encoded = Vec::with_capacity(size);
        text.features.encode(&mut encoded);
        if let Some(slot) = self.features.get_mut(i * size..(i + 1) * size)
            && encoded.len() == size
        {
            slot.copy_from_slice(&encoded);
            self.has_features[i] = true;
        }
        for (term, tf) in text.tfs() {
            match self.by_term.get_mut(term) {
                Some(list) => list.push((position, tf)),
                None => {
                    self.by_term.insert(term.to_owned(), vec![(position, tf)]);
                }
            }
        }
    }

    /// The `doc` records, the chunks of the base table, then the blocks of postings, each group
    /// in key order, as (key, value) pairs.
    fn into_records(
        self,
        entries: std::sync::Arc<Vec<String>>,
    ) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
        use crate::retrieval::text_index::{
            BASE_CHUNK, BLOCK_POSTINGS, DOC_PREFIX, INLINE_BLOCK, POSITION_BLOCK, base_key,
            block_key, by_positions, push_inline, push_position, push_to_base,
        };
        let size = crate::retrieval::features::DocFeatures::SIZE;
        let features = std::sync::Arc::new((self.features, self.has_features));
        let (f1, e1) = (features.clone(), entries.clone());
        let feature_of = move |f: &(Vec<u8>, Vec<bool>), i: usize| -> Option<Vec<u8>> {
            f.0.get(i * size..(i + 1) * size)
                .filter(|_| f.1.get(i).copied().unwrap_or(false))
                .map(<[u8]>::to_vec)
        };
        let docs = (0..f1.1.len()).filter_map(move |i| {
            let value = feature_of(&f1, i)?;
            let key = [TEXT, DOC_PREFIX, e1.get(i)?.as_bytes()].concat();
            Some((key, value))
        });
        let (f2, e2) = (features.clone(), entries.clone());
        let (f3, e3) = (features, entries);
        let positions = u32::try_from(f2.1.len()).unwrap_or(u32::MAX);
        let base = (0..positions.div_ceil(BASE_CHUNK)).map(move |c| {
            let mut chunk = Vec::new();
            let first = c * BASE_CHUNK;
            for p in first..positions.min(first + BASE_CHUNK) {
                let i = p as usize;
                let id = e2.get(i).map_or("", String::as_str);
                push_to_base(&mut chunk, id.as_bytes(), feature_of(&f2, i).as_deref());
            }
            ([TEXT, base_key(c).as_slice()].concat(), chunk)
        });
        let hot = f3.1.iter().filter(|h| **h).count();
        // Read here: the records are made on another thread, which has its own settings.
        let from_df = tuning::positions_from_df();
        let mut terms: Vec<(String, Postings)> = self.by_term.into_iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let blocks = terms.into_iter().flat_map(move |(term, list)| {
            let positions = by_positions(list.len(), hot, from_df);
            let blocks: Vec<(Vec<u8>, Vec<u8>)> = list
                .chunks(BLOCK_POSTINGS)
                .filter_map(|chunk| {
                    let first = chunk.first()?.0;
                    if positions {
                        let mut block = Vec::with_capacity(1 + chunk.len() * 4);
                        block.push(POSITION_BLOCK);
                        let mut previous = None;
                        for (pos, tf) in chunk {
                            push_position(&mut block, previous, *pos, tf);
                            previous = Some(*pos);
                        }
                        let key = block_key(&term, &first.to_be_bytes());
                        return Some(([TEXT, key.as_slice()].concat(), block));
                    }
                    let mut block = Vec::with_capacity(1 + chunk.len() * (32 + size));
                    block.push(INLINE_BLOCK);
                    for (pos, tf) in chunk {
                        let i = *pos as usize;
                        let f = f3.0.get(i * size..(i + 1) * size)?;
                        push_inline(&mut block, e3.get(i)?.as_bytes(), tf, f);
                    }
                    let key = block_key(&term, e3.get(first as usize)?.as_bytes());
                    Some(([TEXT, key.as_slice()].concat(), block))
                })
                .collect();
            blocks
        });
        docs.chain(base).chain(blocks)
    }
}

/// Whether [`Store::build_from_log_at`] checks the lines' ids against their hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Every line is hashed: a log that may have been edited, merged or pulled.
    Hashes,
    /// Every line was verified before (the log is unchanged since the store applied it, and
    /// this process wrote the rest): the lines are decoded, not hashed again.
    Trusted,
}

/// What [`Store::build_from_log_at`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBuild {
    /// Distinct events applied.
    pub applied: usize,
    /// Parents named by events but absent from the log, by entry and event.
    pub dangling: Vec<Dangling>,
}

/// What the first pass of [`Store::build_from_log_at`] keeps of an event: where its line is,
/// and what grouping by entry needs (the line is read again to fold it).
struct Seen {
    offset: u64,
    len: u32,
    /// 1-based line number.
    number: usize,
    /// A tombstone's line (see [`crate::log::tombstones`]).
    marked: bool,
    id: String,
    entry: String,
    /// The entry a supersede creates in the same line.
    replacement: Option<String>,
    parents: Vec<String>,
}

impl Seen {
    fn line(&self, log: &LogFile) -> Result<String> {
        log.line_at(self.offset, self.len as usize, &self.id, self.number)
    }
}

/// What the first pass found: the events, and what the store's fingerprint of the log needs.
struct FirstPass {
    seen: Vec<Seen>,
    lines: u64,
    hashes: crate::log::stamp::BlockHashes,
}

/// Reads the log once, in chunks: hashes its bytes, counts its lines, and decodes each line
/// (on the cores), keeping a [`Seen`] of each.
fn first_pass(log: &LogFile, verify: Verify) -> Result<FirstPass> {
    use crate::log::read as event_log;
    let path = log.path();
    let mut seen = Vec::new();
    let mut hashes = crate::log::stamp::BlockHashes::stream();
    let mut number = 1;
    log.for_each_chunk(
        |bytes| hashes.push(bytes),
        |offset, chunk| {
            let all: Vec<event_log::Line<'_>> = event_log::lines(chunk, number, offset).collect();
            number += all.len();
            let lines: Vec<event_log::Line<'_>> = all
                .into_iter()
                .filter(|l| !event_log::is_blank(l))
                .collect();
            let parts = crate::parallel::map_chunks(&lines, |part| {
                part.iter()
                    .map(|l| {
                        let seen = |id: String, entry: String, parents, replacement| Seen {
                            offset: l.offset,
                            len: u32::try_from(l.bytes.len()).unwrap_or(u32::MAX),
                            number: l.number,
                            // A line that does not decode failed before this is read.
                            marked: crate::log::tombstones::marked(
                                std::str::from_utf8(l.bytes).unwrap_or_default(),
                            ),
                            id,
                            entry,
                            replacement,
                            parents,
                        };
                        // A line verified before needs no decoding to be grouped (its data is
                        // decoded when its entry is folded): the header is enough.
                        if verify == Verify::Trusted
                            && let Some(h) = std::str::from_utf8(l.bytes)
                                .ok()
                                .and_then(projections::event::trusted_header)
                        {
                            let parents = h.parents.iter().map(|p| (*p).to_owned()).collect();
                            return Ok(seen(h.id.to_owned(), h.entry.to_owned(), parents, None));
                        }
                        let e = match verify {
                            Verify::Hashes => event_log::decode(path, l)?,
                            Verify::Trusted => event_log::decode_trusted(path, l)?,
                        };
                        let replacement = match &e.data {
                            projections::EventData::Supersede {
                                by,
                                replacement: Some(_),
                                ..
                            } => Some(by.clone()),
                            _ => None,
                        };
                        Ok(seen(e.id, e.entry, e.parents, replacement))
                    })
                    .collect::<Result<Vec<_>>>()
            });
            for part in parts {
                seen.extend(part?);
            }
            Ok(())
        },
    )?;
    Ok(FirstPass {
        seen,
        lines: (number - 1) as u64,
        hashes: hashes.finish(),
    })
}

/// Fails on the first tombstone among `seen` that no purge among them vouches for (see
/// [`crate::log::tombstones`]).
fn vouch_seen(log: &LogFile, seen: &[Seen]) -> Result<()> {
    use crate::log::tombstones;
    let mut marked = seen.iter().filter(|s| s.marked).peekable();
    if marked.peek().is_none() {
        return Ok(());
    }
    let by_id: std::collections::HashMap<&str, &Seen> =
        seen.iter().map(|s| (s.id.as_str(), s)).collect();
    for s in marked {
        let purge_of = |p: &str| match by_id.get(p) {
            Some(purge) => Ok(projections::decode_line(&purge.line(log)?).ok()),
            None => Ok(None),
        };
        if let Some(problem) = tombstones::problem(&s.id, &s.line(log)?, purge_of)? {
            return Err(Error::CorruptLog {
                path: log.path().to_path_buf(),
                line: s.number,
                offset: s.offset,
                problem,
            });
        }
    }
    Ok(())
}

fn dangling_parents(seen: &[Seen]) -> Vec<Dangling> {
    dangling_among(seen.iter().map(|s| (&s.id, &s.entry, &s.parents)))
}

impl Store {
    /// Creates a complete store at `path` (replacing whatever is there) holding the projections
    /// of `events`, by bulk ingestion, and closes it. Duplicated events are applied once.
    ///
    /// # Errors
    /// When the store cannot be written.
    pub fn build_at<L: AsRef<str> + Default + Send + Sync>(
        path: &Path,
        events: Vec<(Event, L)>,
        fingerprint: &Fingerprint,
    ) -> Result<usize> {
        // Always a fresh directory: fjall's `clear` followed by ingestion can lose the ingested
        // tables on the next open, and bulk ingestion into an empty database is the fast path.
        // Ingested tables are durable when ingestion finishes; nothing is left to flush.
        if path.exists() {
            fs_err::remove_dir_all(path)?;
        }
        let store = Self::open_raw(path)?;
        store.ingest_all(events, fingerprint)
    }

    fn ingest_all<L: AsRef<str> + Default + Send + Sync>(
        &self,
        mut events: Vec<(Event, L)>,
        fingerprint: &Fingerprint,
    ) -> Result<usize> {
        // The raw events go to their own keyspace on a thread of their own while this one
        // folds. The lines move to that thread, which frees each once written; the events stay
        // where they are (moving them apart would copy every event once more).
        let lines: Vec<L> = events
            .iter_mut()
            .map(|(_, line)| std::mem::take(line))
            .collect();
        let events = events;
        let dangling = dangling_of(&events);
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| self.ingest_lines(&events, lines));
            let derived = self.ingest_projections(&events, fingerprint, &dangling);
            let applied = match writer.join() {
                Ok(r) => r?,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            derived?;
            Ok(applied)
        })
    }

    /// Writes the raw events (id and line, `lines[i]` being the line of `events[i]`), sorted
    /// and without duplicates; returns how many.
    fn ingest_lines<L: AsRef<str>>(&self, events: &[(Event, L)], lines: Vec<L>) -> Result<usize> {
        self.write_events(
            events
                .iter()
                .map(|(e, _)| e.id.as_str())
                .zip(lines)
                .collect(),
        )
    }

    /// Writes `(id, line)` pairs to `events`, sorted and without duplicates, freeing each line
    /// once written; returns how many.
    fn write_events<L: AsRef<str>>(&self, mut lines: Vec<(&str, L)>) -> Result<usize> {
        lines.sort_unstable_by(|a, b| a.0.cmp(b.0));
        lines.dedup_by(|a, b| a.0 == b.0);
        let applied = lines.len();
        if applied > 0 {
            let mut ingestion = self.ks[K_EVENTS]
                .start_ingestion()
                .map_err(|e| self.err(e))?;
            for (id, line) in lines {
                ingestion
                    .write(id, line.as_ref())
                    .map_err(|e| self.err(e))?;
            }
            ingestion.finish().map_err(|e| self.err(e))?;
            self.settle(K_EVENTS);
        }
        Ok(applied)
    }

    /// Waits (briefly) until the background worker has moved what an ingestion into an empty
    /// keyspace wrote to the last level, which costs it no rewrite.
    ///
    /// An ingestion leaves its tables in level 0. Moved down at once, later writes compact into
    /// the levels above them and rewrite them only when those levels fill up. Left in level 0
    /// (the process closing first, which drops the worker's queue), the next flush merges them
    /// with everything into level 1, and every few flushes after that rewrote the whole store
    /// again: a stall of seconds, inside the store lock, every couple of hundred writes.
    fn settle(&self, keyspace: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.ks[keyspace].l0_table_count() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Creates a complete store at `path` (replacing whatever is there) from the complete lines
    /// of `log`, and closes it; returns what it did and the store's fingerprint of the log
    /// (`stamp` the file's stamp, as the caller took it).
    ///
    /// Unlike [`Store::build_at`], which is given every event decoded and a copy of every line,
    /// this holds neither: a first pass reads the log once, verifies every line and keeps what
    /// grouping by entry needs and where the line is; then each chunk of entries reads its
    /// lines again by their offsets and decodes them (without hashing them again) to fold
    /// them, and the raw events are written as they are read again.
    ///
    /// `known`, for a log every line of which was scanned for secrets before (applied by the
    /// store being replaced, which scanned what it projected, or checked by this process's
    /// writes, which refuse a secret), names the entries that store found holding one: only
    /// they are scanned again (a bulk import's replay scanned every entry it had just checked,
    /// a tenth of its time). `None` scans every entry.
    ///
    /// With [`Verify::Trusted`] the first pass does not hash the lines: for a log whose lines
    /// were all verified when the store applied them or written by this process.
    ///
    /// # Errors
    /// [`Error::CorruptLog`] for a line that does not verify (nothing is built); [`Error::Store`]
    /// when the store cannot be written.
    pub fn build_from_log_at(
        path: &Path,
        log: &LogFile,
        stamp: Option<crate::log::stamp::FileStamp>,
        verify: Verify,
        known: Option<&Secrets>,
    ) -> Result<(LogBuild, Fingerprint)> {
        let first = first_pass(log, verify)?;
        let seen = first.seen;
        let fingerprint = Fingerprint {
            len: log.len(),
            lines: first.lines,
            hashes: first.hashes,
            stamp,
        };
        vouch_seen(log, &seen)?;
        let dangling = dangling_parents(&seen);
        if path.exists() {
            fs_err::remove_dir_all(path)?;
        }
        let store = Self::open_raw(path)?;
        let applied = std::thread::scope(|scope| {
            let writer = scope.spawn(|| store.write_events_of(log, &seen));
            let derived = store.ingest_seen(log, &seen, &fingerprint, &dangling, known);
            let applied = match writer.join() {
                Ok(r) => r?,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            derived.map(|()| applied)
        })?;
        Ok((LogBuild { applied, dangling }, fingerprint))
    }

    /// Writes the raw event of each of `seen` (read again from `log`) to `events`, in id order
    /// and once each; returns how many.
    fn write_events_of(&self, log: &LogFile, seen: &[Seen]) -> Result<usize> {
        let mut order: Vec<&Seen> = seen.iter().collect();
        order.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        order.dedup_by(|a, b| a.id == b.id);
        let applied = order.len();
        if applied > 0 {
            let mut ingestion = self.ks[K_EVENTS]
                .start_ingestion()
                .map_err(|e| self.err(e))?;
            for s in order {
                ingestion
                    .write(s.id.as_str(), s.line(log)?)
                    .map_err(|e| self.err(e))?;
            }
            ingestion.finish().map_err(|e| self.err(e))?;
            self.settle(K_EVENTS);
        }
        Ok(applied)
    }

    /// The second pass of [`Store::build_from_log_at`]: group, read again, decode, fold, write.
    fn ingest_seen(
        &self,
        log: &LogFile,
        seen: &[Seen],
        fingerprint: &Fingerprint,
        dangling: &[Dangling],
        known: Option<&Secrets>,
    ) -> Result<()> {
        let mut placed: Vec<(&str, &str, usize)> = Vec::with_capacity(seen.len());
        for (i, s) in seen.iter().enumerate() {
            placed.push((s.entry.as_str(), s.id.as_str(), i));
            if let Some(by) = &s.replacement {
                placed.push((by.as_str(), s.id.as_str(), i));
            }
        }
        placed.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        placed.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        let mut groups: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
        for (i, (entry, _, _)) in placed.iter().enumerate() {
            match groups.last_mut() {
                Some((last, range)) if last == entry => range.end = i + 1,
                _ => groups.push((entry, i..i + 1)),
            }
        }
        let entries: Vec<&str> = groups.iter().map(|(entry, _)| *entry).collect();
        let lines: Vec<usize> = placed.into_iter().map(|(_, _, i)| i).collect();
        let groups: Vec<(&str, &[usize])> = groups
            .into_iter()
            .map(|(entry, range)| (entry, lines.get(range).unwrap_or_default()))
            .collect();
        self.write_groups(
            &groups,
            &entries,
            fingerprint,
            dangling,
            |(entry, members)| {
                let events = members
                    .iter()
                    .filter_map(|i| seen.get(*i))
                    .map(|s| {
                        let line = s.line(log)?;
                        projections::event::decode_verified_line(&line).map_err(|e| self.err(e))
                    })
                    .collect::<Result<Vec<Event>>>()?;
                let refs: Vec<&Event> = events.iter().collect();
                let scan = known.is_none_or(|k| k.contains_key(*entry));
                Ok(fold_group(entry, &refs, scan))
            },
        )
    }

    /// Folds every entry of `events` and writes the whole `projections` keyspace in one pass.
    fn ingest_projections<L>(
        &self,
        events: &[(Event, L)],
        fingerprint: &Fingerprint,
        dangling: &[Dangling],
    ) -> Result<()> {
        // Each event under every entry it projects onto, in entry order; duplicates dropped.
        let mut placed: Vec<(&str, &Event)> = Vec::with_capacity(events.len());
        for (e, _) in events {
            placed.extend(e.entries().map(|entry| (entry, e)));
        }
        placed.sort_unstable_by(|a, b| (a.0, a.1.id.as_str()).cmp(&(b.0, b.1.id.as_str())));
        placed.dedup_by(|a, b| a.0 == b.0 && a.1.id == b.1.id);
        // Groups as ranges of one list of events, not a list per entry.
        let mut groups: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
        for (i, (entry, _)) in placed.iter().enumerate() {
            match groups.last_mut() {
                Some((last, range)) if last == entry => range.end = i + 1,
                _ => groups.push((entry, i..i + 1)),
            }
        }
        let placed: Vec<&Event> = placed.into_iter().map(|(_, e)| e).collect();
        let entries: Vec<&str> = groups.iter().map(|(entry, _)| *entry).collect();
        let groups: Vec<(&str, &[&Event])> = groups
            .into_iter()
            .map(|(entry, range)| (entry, placed.get(range).unwrap_or_default()))
            .collect();
        self.write_groups(
            &groups,
            &entries,
            fingerprint,
            dangling,
            |(entry, events)| Ok(fold_group(entry, events, true)),
        )
    }

    /// Writes the `projections` keyspace from `groups` (one per entry, in entry order, named
    /// by `entries`), which `fold` turns into each entry's records. Folding runs on this thread
    /// (and the cores) while a second thread writes what the previous chunk derived.
    fn write_groups<G: Sync>(
        &self,
        groups: &[G],
        entries: &[&str],
        fingerprint: &Fingerprint,
        dangling: &[Dangling],
        fold: impl Fn(&G) -> Result<Derived> + Sync,
    ) -> Result<()> {
        let (send, receive) = std::sync::mpsc::sync_channel::<Batch>(1);
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || self.write_projections(&receive));
            let folded = self.fold_all(groups, entries, fingerprint, dangling, &send, fold);
            drop(send);
            let written = match writer.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            written.and(folded)
        })
    }

    /// Folds `groups` chunk by chunk and sends the records to the writer, then the index and
    /// the meta records.
    fn fold_all<G: Sync>(
        &self,
        groups: &[G],
        entries: &[&str],
        fingerprint: &Fingerprint,
        dangling: &[Dangling],
        send: &std::sync::mpsc::SyncSender<Batch>,
        fold: impl Fn(&G) -> Result<Derived> + Sync,
    ) -> Result<()> {
        let gone = |_| self.err("the store writer stopped");
        let mut stats = Stats::default();
        let mut text_stats = TextStats::default();
        let mut recent = projections::RecentOperations::default();
        let mut index = IndexBuckets::default();
        let mut text = TextBuckets::default();
        let mut secrets = Secrets::new();
        let fold_chunk = |chunk: &[G]| -> Result<Vec<Derived>> {
            let parts = crate::parallel::map_chunks(chunk, |part| {
                part.iter().map(&fold).collect::<Result<Vec<_>>>()
            });
            let mut batch: Vec<Derived> = Vec::with_capacity(chunk.len());
            for part in parts {
                batch.extend(part?);
            }
            Ok(batch)
        };
        // The next chunk is folded on the cores while this thread gathers the statistics, index
        // terms and postings of the one before (which takes a third as long as folding it, and
        // left the cores idle when the two alternated).
        std::thread::scope(|scope| -> Result<()> {
            let step = tuning::stream_chunk().max(1);
            let mut chunks = groups.chunks(step).enumerate();
            let mut next = chunks
                .next()
                .map(|(no, chunk)| (no, scope.spawn(move || fold_chunk(chunk))));
            while let Some((chunk_no, folding)) = next.take() {
                let mut batch = match folding.join() {
                    Ok(r) => r?,
                    Err(panic) => std::panic::resume_unwind(panic),
                };
                next = chunks
                    .next()
                    .map(|(no, chunk)| (no, scope.spawn(move || fold_chunk(chunk))));
                let first = chunk_no * step;
                for (i, (_, records)) in batch.iter_mut().enumerate() {
                    let position = u32::try_from(first + i).unwrap_or(u32::MAX);
                    for op in &records.ops {
                        recent.note(op.clone());
                    }
                    if let Some(s) = &records.state {
                        stats.apply(s, 1);
                        index.add(position, s);
                        if !records.secrets.is_empty() {
                            secrets.insert(s.id.clone(), std::mem::take(&mut records.secrets));
                        }
                    }
                    if let Some(analysis) = records.text.take() {
                        text_stats.apply_features(&analysis.features, 1);
                        text.add(position, analysis);
                    }
                }
                send.send(Batch::Entries(batch)).map_err(gone)?;
            }
            Ok(())
        })?;
        let mut meta = vec![
            (meta_key("format"), STORE_FORMAT.as_bytes().to_vec()),
            (meta_key("log"), to_json(&FingerprintHead::of(fingerprint))),
            (meta_key(compact::BUILT), to_json(&fingerprint.lines)),
            (meta_key("stats"), to_json(&stats.totals)),
            (meta_key("text_stats"), to_json(&text_stats)),
        ];
        self.hot_count
            .store(0, std::sync::atomic::Ordering::Relaxed);
        meta.extend(recent.0.iter().map(|op| (recent_key(op), to_json(op))));
        meta.extend(
            fingerprint
                .hashes
                .blocks
                .iter()
                .enumerate()
                .map(|(i, hash)| (log_block_key(i), hash.as_bytes().to_vec())),
        );
        meta.extend(
            stats
                .by_created_day
                .iter()
                .map(|(day, counters)| (stats_day_key(day), to_json(counters))),
        );
        if !dangling.is_empty() {
            meta.push((meta_key(DANGLING), to_json(&dangling)));
        }
        if !secrets.is_empty() {
            meta.push((meta_key(SECRETS), to_json(&secrets)));
        }
        meta.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let ids = std::sync::Arc::new(entries.iter().map(|e| (*e).to_owned()).collect());
        let index = index.into_sorted_keys(std::sync::Arc::clone(&ids));
        let text = text.into_records(ids);
        send.send(Batch::Tail {
            index,
            text: Box::new(text),
            meta,
        })
        .map_err(gone)
    }

    /// Writes the batches `fold_all` sends, in key order, as one ingestion.
    fn write_projections(&self, receive: &std::sync::mpsc::Receiver<Batch>) -> Result<()> {
        let mut ingestion = self.ks[K_PROJ].start_ingestion().map_err(|e| self.err(e))?;
        let mut audit: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        while let Ok(batch) = receive.recv() {
            match batch {
                Batch::Entries(batch) => {
                    for (event_keys, records) in batch {
                        let mut own = records.own.into_iter().peekable();
                        // Cold state, entry events, then hot state and versions: key order.
                        while let Some((key, value)) =
                            own.next_if(|(k, _)| k.last() == Some(&T_COLD))
                        {
                            ingestion.write(key, value).map_err(|e| self.err(e))?;
                        }
                        for key in event_keys {
                            ingestion.write(key, b"").map_err(|e| self.err(e))?;
                        }
                        for (key, value) in own {
                            ingestion.write(key, value).map_err(|e| self.err(e))?;
                        }
                        audit.extend(records.audit);
                    }
                }
                Batch::Tail { index, text, meta } => {
                    // The text index (the postings copied into blocks, most of the bytes of a
                    // store) has the last range of the keyspace: it is a second ingestion, made
                    // and written on a thread of its own while this one writes the audit, the
                    // index and the meta records, so that the end of a rebuild keeps both
                    // cores busy. The two ranges are disjoint, so both ingestions move to the
                    // last level as they are.
                    std::thread::scope(|scope| -> Result<()> {
                        let texts = scope.spawn(move || -> Result<()> {
                            let mut ingestion =
                                self.ks[K_PROJ].start_ingestion().map_err(|e| self.err(e))?;
                            for (key, value) in text {
                                ingestion.write(key, value).map_err(|e| self.err(e))?;
                            }
                            ingestion.finish().map_err(|e| self.err(e))
                        });
                        // `~a` < `~i` < `~m`, all after every entry id (`m-…`).
                        let written = (|| {
                            for (key, value) in audit.drain(..) {
                                ingestion.write(key, value).map_err(|e| self.err(e))?;
                            }
                            for key in index {
                                ingestion.write(key, b"").map_err(|e| self.err(e))?;
                            }
                            for (key, value) in meta {
                                ingestion.write(key, value).map_err(|e| self.err(e))?;
                            }
                            ingestion.finish().map_err(|e| self.err(e))
                        })();
                        let texts = match texts.join() {
                            Ok(r) => r,
                            Err(panic) => std::panic::resume_unwind(panic),
                        };
                        written.and(texts)
                    })?;
                    self.settle(K_PROJ);
                    return Ok(());
                }
            }
        }
        // The folding side stopped early with an error of its own.
        Ok(())
    }
}
