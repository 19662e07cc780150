//! The projections, materialized in fjall.
//!
//! Keyspaces (all keys and values are bytes; keys are text so that `dump` is readable):
//!
//! | keyspace       | key                                   | value                       |
//! |----------------|---------------------------------------|-----------------------------|
//! | `meta`         | `format`, `log`, `stats`              | store format, log fingerprint, statistics |
//! | `events`       | event id                              | the canonical log line      |
//! | `entry_events` | entry id + event id                   | empty                       |
//! | `entries`      | entry id                              | current state (hot)         |
//! | `cold`         | entry id                              | current state (archived, expired, purged) |
//! | `index`        | dimension `\0` value `\0` entry id    | empty (hot entries only)    |
//! | `index`        | text index (`doc\0…`, `text\0…`)     | see `crate::retrieval::text_index` |
//! | `versions`     | entry id `/` version (8 digits)       | version record              |
//! | `audit`        | entry id `/` sequence (8 digits)      | audit record                |

use crate::error::{Error, Result};
use crate::retrieval::text_index::{TextStats, text_keys};
use fjall::{Database, Keyspace, KeyspaceCreateOptions};
use projections::{AuditRecord, EntryState, Event, Folded, Stats, Version, fold_entry_of};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bumped whenever the layout or the meaning of a projection changes: a store of another format
/// is rebuilt from the log, never misread.
pub const STORE_FORMAT: &str = "memlog-store-7";

/// Journal size above which opening the store first flushes its memtables and starts a new
/// journal, so that a process replays little whatever the history of writes.
const CHECKPOINT_JOURNAL_BYTES: u64 = 128 * 1024;

const KEYSPACES: [&str; 8] = [
    "meta",
    "events",
    "entry_events",
    "entries",
    "cold",
    "index",
    "versions",
    "audit",
];

/// How far into the log the store has applied, and how to recognise that prefix cheaply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Bytes of the log applied (always the end of a complete line).
    pub len: u64,
    /// Lines in that prefix.
    pub lines: u64,
    /// Hashes of the applied prefix, block by block.
    pub hashes: crate::log::stamp::BlockHashes,
    /// The log file's stamp when the store last caught up with it.
    pub stamp: Option<crate::log::stamp::FileStamp>,
}

/// The materialized projections of one project.
pub struct Store {
    path: PathBuf,
    db: Database,
    ks: [Keyspace; 8],
}

/// Bytes in the store's journal files as closed stores leave them (fjall trims a journal to its
/// content when it closes it; a crashed process leaves it preallocated, which also calls for a
/// checkpoint).
fn journal_bytes(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|dir| {
            dir.filter_map(std::result::Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "jnl"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// What makes two active entries duplicates of each other: subject, scope and summary, hashed
/// into one index value so the write policy's check is a single lookup.
pub fn duplicate_key(fields: &projections::EntryFields) -> String {
    let mut h = blake3::Hasher::new();
    for part in [&fields.subject, &fields.scope, &fields.summary] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().to_hex()[..32].to_owned()
}

/// Index dimensions maintained for hot entries.
fn index_keys(s: &EntryState) -> Vec<Vec<u8>> {
    let key = |dim: &str, value: &str| {
        let mut k = Vec::with_capacity(dim.len() + value.len() + s.id.len() + 2);
        k.extend_from_slice(dim.as_bytes());
        k.push(0);
        k.extend_from_slice(value.as_bytes());
        k.push(0);
        k.extend_from_slice(s.id.as_bytes());
        k
    };
    let mut keys = vec![
        key("section", s.fields.section.as_str()),
        key("kind", s.fields.kind.as_str()),
        key("scope", &s.fields.scope),
        key("subject", &s.fields.subject),
        key("status", s.status.as_str()),
        key("lifecycle", s.lifecycle.as_str()),
        key("updated", &s.updated_at),
    ];
    let tags: BTreeSet<&str> = s.fields.tags.iter().map(String::as_str).collect();
    keys.extend(tags.into_iter().map(|t| key("tag", t)));
    if s.pinned {
        keys.push(key("pinned", "true"));
    }
    if s.status == projections::Status::Active {
        keys.push(key("duplicate", &duplicate_key(&s.fields)));
    }
    if s.in_conflict() {
        keys.push(key("conflict", "true"));
    }
    keys
}

fn seq_key(entry: &str, n: u32) -> Vec<u8> {
    format!("{entry}/{n:08}").into_bytes()
}

fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialize into a reused buffer, then copy out exactly: growing a fresh buffer record by
    // record showed up as a large share of a rebuild's allocations. Serializing our own plain
    // types cannot fail.
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(16 * 1024));
    }
    SCRATCH.with_borrow_mut(|buf| {
        buf.clear();
        match serde_json::to_writer(&mut *buf, v) {
            Ok(()) => buf.clone(),
            Err(_) => Vec::new(),
        }
    })
}

/// Everything one entry contributes to the keyspaces, by keyspace index.
struct EntryRecords {
    state: Option<EntryState>,
    kvs: Vec<(usize, Vec<u8>, Vec<u8>)>,
}

const K_META: usize = 0;
const K_EVENTS: usize = 1;
const K_ENTRY_EVENTS: usize = 2;
const K_ENTRIES: usize = 3;
const K_COLD: usize = 4;
const K_INDEX: usize = 5;
const K_VERSIONS: usize = 6;
const K_AUDIT: usize = 7;

fn derive(folded: Folded) -> EntryRecords {
    let mut kvs = Vec::new();
    for v in &folded.versions {
        kvs.push((K_VERSIONS, seq_key(&v.entry, v.version), to_json(v)));
    }
    for a in &folded.audit {
        kvs.push((K_AUDIT, seq_key(&a.entry, a.seq), to_json(a)));
    }
    if let Some(s) = &folded.state {
        let target = if s.is_cold() { K_COLD } else { K_ENTRIES };
        kvs.push((target, s.id.clone().into_bytes(), to_json(s)));
        if !s.is_cold() {
            kvs.extend(index_keys(s).into_iter().map(|k| (K_INDEX, k, Vec::new())));
            kvs.extend(text_keys(s).into_iter().map(|(k, v)| (K_INDEX, k, v)));
        }
    }
    EntryRecords {
        state: folded.state,
        kvs,
    }
}

/// Entries folded per step of a rebuild: enough to keep every core busy, few enough that the
/// derived records of one step stay small.
const STREAM_CHUNK: usize = 8192;

/// Keyspaces keyed by entry id, which a rebuild writes as one stream in entry order.
const STREAMED: [usize; 5] = [K_ENTRY_EVENTS, K_ENTRIES, K_COLD, K_VERSIONS, K_AUDIT];

impl Store {
    /// Opens (creating if needed) the store at `path`. A store of another format is wiped.
    /// Returns the store and whether it is empty (and so needs a full build).
    ///
    /// # Errors
    /// [`Error::Store`] when fjall cannot open it.
    pub fn open(path: &Path) -> Result<(Self, bool)> {
        let mut store = Self::open_raw(path)?;
        if journal_bytes(path) > CHECKPOINT_JOURNAL_BYTES {
            // Only flush here: closing, removing the journal and reopening within one process
            // lost the whole store (tests/cli/store_laws.rs, once the text index made journals
            // grow past the threshold). The journal is removed by a session's checkpoint when
            // it ends, before its process exits.
            store.flush()?;
        }
        let format = store.ks[K_META]
            .get("format")
            .map_err(|e| Error::store(path, e))?;
        let fresh = match format.as_deref() {
            Some(f) if f == STORE_FORMAT.as_bytes() => store.ks[K_META]
                .get("log")
                .map_err(|e| Error::store(path, e))?
                .is_none(),
            None if store.ks[K_META]
                .is_empty()
                .map_err(|e| Error::store(path, e))? =>
            {
                true
            }
            _ => {
                drop(store);
                fs_err::remove_dir_all(path)?;
                store = Self::open_raw(path)?;
                true
            }
        };
        Ok((store, fresh))
    }

    fn open_raw(path: &Path) -> Result<Self> {
        fs_err::create_dir_all(path)?;
        let db = Database::builder(path)
            .cache_size(8 * 1024 * 1024)
            .worker_threads(1)
            .open()
            .map_err(|e| Error::store(path, e))?;
        let opts = || KeyspaceCreateOptions::default().max_memtable_size(8 * 1024 * 1024);
        let mut handles = Vec::with_capacity(KEYSPACES.len());
        for name in KEYSPACES {
            handles.push(db.keyspace(name, opts).map_err(|e| Error::store(path, e))?);
        }
        let ks: [Keyspace; 8] = handles
            .try_into()
            .map_err(|_| Error::store(path, "keyspace count mismatch"))?;
        Ok(Self {
            path: path.to_path_buf(),
            db,
            ks,
        })
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::store(&self.path, e)
    }

    fn get_json<T: for<'de> Deserialize<'de>>(&self, k: usize, key: &[u8]) -> Result<Option<T>> {
        match self.ks[k].get(key).map_err(|e| self.err(e))? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| self.err(e)),
        }
    }

    /// The log prefix this store reflects, if any.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn fingerprint(&self) -> Result<Option<Fingerprint>> {
        self.get_json(K_META, b"log")
    }

    /// Number of distinct events applied.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn event_count(&self) -> Result<usize> {
        self.ks[K_EVENTS].len().map_err(|e| self.err(e))
    }

    /// True when the event is already applied.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn has_event(&self, id: &str) -> Result<bool> {
        self.ks[K_EVENTS].contains_key(id).map_err(|e| self.err(e))
    }

    /// Applies events incrementally: each touched entry is refolded from all its events and its
    /// old contribution replaced by the new one. Already-applied events are skipped.
    ///
    /// # Errors
    /// When the store cannot be read or written, or a stored event no longer decodes.
    pub fn apply(&self, events: Vec<(Event, String)>, fingerprint: &Fingerprint) -> Result<usize> {
        // An event projects onto every entry it names (a supersede with its replacement: the
        // replaced entry and the new one).
        let mut by_entry: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        let mut batch = self.db.batch().durability(None);
        let mut applied = 0;
        for (event, line) in events {
            if !seen.insert(event.id.clone()) || self.has_event(&event.id)? {
                continue;
            }
            batch.insert(&self.ks[K_EVENTS], event.id.as_bytes(), line.as_bytes());
            applied += 1;
            for entry in event.entries() {
                by_entry
                    .entry(entry.to_owned())
                    .or_default()
                    .push(event.clone());
            }
        }
        let mut stats: Stats = self.get_json(K_META, b"stats")?.unwrap_or_default();
        let mut text_stats = self.text_stats()?;
        for (entry, new) in by_entry {
            let mut all = self.entry_events(&entry)?;
            for event in new {
                let mut k = entry.clone().into_bytes();
                k.extend_from_slice(event.id.as_bytes());
                batch.insert(&self.ks[K_ENTRY_EVENTS], k, b"".as_slice());
                all.push(event);
            }
            let old = self.entry_records(&entry)?;
            if let Some(s) = &old.state {
                stats.apply(s, -1);
                text_stats.apply(s, -1);
            }
            let new = derive(fold_entry_of(&entry, &all));
            if let Some(s) = &new.state {
                stats.apply(s, 1);
                text_stats.apply(s, 1);
            }
            // A key written twice in one batch has no defined winner: remove only what the new
            // records do not write again.
            let rewritten: BTreeSet<(usize, Vec<u8>)> = new
                .kvs
                .iter()
                .map(|(k, key, _)| (*k, key.clone()))
                .collect();
            for (k, key, _) in old.kvs {
                if !rewritten.contains(&(k, key.clone())) {
                    batch.remove(&self.ks[k], key);
                }
            }
            for (k, key, value) in new.kvs {
                batch.insert(&self.ks[k], key, value);
            }
        }
        batch.insert(&self.ks[K_META], "stats", to_json(&stats));
        batch.insert(&self.ks[K_META], "text_stats", to_json(&text_stats));
        batch.insert(&self.ks[K_META], "log", to_json(fingerprint));
        batch.insert(&self.ks[K_META], "format", STORE_FORMAT);
        batch.commit().map_err(|e| self.err(e))?;
        Ok(applied)
    }

    /// The keys an entry currently has in the derived keyspaces.
    fn entry_records(&self, entry: &str) -> Result<EntryRecords> {
        let mut kvs = Vec::new();
        let state: Option<EntryState> = match self.get_json(K_ENTRIES, entry.as_bytes())? {
            Some(s) => Some(s),
            None => self.get_json(K_COLD, entry.as_bytes())?,
        };
        if let Some(s) = &state {
            let target = if s.is_cold() { K_COLD } else { K_ENTRIES };
            kvs.push((target, entry.as_bytes().to_vec(), Vec::new()));
            if !s.is_cold() {
                kvs.extend(index_keys(s).into_iter().map(|k| (K_INDEX, k, Vec::new())));
                kvs.extend(
                    text_keys(s)
                        .into_iter()
                        .map(|(k, _)| (K_INDEX, k, Vec::new())),
                );
            }
        }
        for k in [K_VERSIONS, K_AUDIT] {
            for item in self.ks[k].prefix(format!("{entry}/")) {
                let key = item.key().map_err(|e| self.err(e))?;
                kvs.push((k, key.to_vec(), Vec::new()));
            }
        }
        Ok(EntryRecords { state, kvs })
    }

    /// All stored events of one entry.
    ///
    /// # Errors
    /// When the store cannot be read or a stored line no longer decodes.
    pub fn entry_events(&self, entry: &str) -> Result<Vec<Event>> {
        let mut out = Vec::new();
        for item in self.ks[K_ENTRY_EVENTS].prefix(entry.as_bytes()) {
            let key = item.key().map_err(|e| self.err(e))?;
            let id = &key[entry.len()..];
            if let Some(line) = self.ks[K_EVENTS].get(id).map_err(|e| self.err(e))? {
                let text = std::str::from_utf8(&line).map_err(|e| self.err(e))?;
                out.push(projections::decode_line(text).map_err(|e| self.err(e))?);
            }
        }
        Ok(out)
    }

    /// Creates a complete store at `path` (replacing whatever is there) holding the projections
    /// of `events`, by bulk ingestion, and closes it. Duplicated events are applied once.
    ///
    /// # Errors
    /// When the store cannot be written.
    pub fn build_at(
        path: &Path,
        events: Vec<(Event, String)>,
        fingerprint: &Fingerprint,
    ) -> Result<usize> {
        // Always a fresh directory: fjall's `clear` followed by ingestion can lose the ingested
        // tables on the next open, and bulk ingestion into an empty database is the fast path.
        if path.exists() {
            fs_err::remove_dir_all(path)?;
        }
        let store = Self::open_raw(path)?;
        let applied = store.ingest_all(events, fingerprint)?;
        store.flush()?;
        Ok(applied)
    }

    fn ingest_all(&self, events: Vec<(Event, String)>, fingerprint: &Fingerprint) -> Result<usize> {
        let mut seen = std::collections::HashSet::with_capacity(events.len());
        let mut lines: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(events.len());
        let mut by_entry: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        for (event, line) in events {
            if !seen.insert(event.id.clone()) {
                continue;
            }
            lines.push((event.id.clone().into_bytes(), line.into_bytes()));
            let mut entries = event.entries().map(str::to_owned).collect::<Vec<_>>();
            if let Some(last) = entries.pop() {
                for entry in entries {
                    by_entry.entry(entry).or_default().push(event.clone());
                }
                by_entry.entry(last).or_default().push(event);
            }
        }
        drop(seen);
        let applied = lines.len();

        // Keyspaces keyed by entry id (entry_events, entries, cold, versions, audit) are written
        // as a stream, a chunk of entries at a time in ascending id order, so the derived records
        // of the whole log never sit in memory at once. Index keys and raw events are keyed
        // otherwise and are sorted at the end.
        let mut streams = STREAMED
            .iter()
            .map(|&k| self.ks[k].start_ingestion().map_err(|e| self.err(e)))
            .collect::<Result<Vec<_>>>()?;
        let mut index: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut stats = Stats::default();
        let mut text_stats = TextStats::default();
        let mut groups = by_entry.into_iter();
        loop {
            let chunk: Vec<(String, Vec<Event>)> = groups.by_ref().take(STREAM_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let parts = crate::parallel::map_chunks(&chunk, |part| {
                let mut stats = Stats::default();
                let mut text_stats = TextStats::default();
                let mut kvs = Vec::new();
                for (entry, events) in part {
                    for e in events {
                        let mut k = entry.clone().into_bytes();
                        k.extend_from_slice(e.id.as_bytes());
                        kvs.push((K_ENTRY_EVENTS, k, Vec::new()));
                    }
                    let records = derive(fold_entry_of(entry, events));
                    if let Some(s) = &records.state {
                        stats.apply(s, 1);
                        text_stats.apply(s, 1);
                    }
                    kvs.extend(records.kvs);
                }
                (stats, text_stats, kvs)
            });
            drop(chunk);
            let mut by_keyspace: [Vec<(Vec<u8>, Vec<u8>)>; 8] = Default::default();
            for (part, text_part, kvs) in parts {
                stats.merge(&part);
                text_stats.merge(&text_part);
                for (k, key, value) in kvs {
                    if k == K_INDEX {
                        index.push((key, value));
                    } else {
                        by_keyspace[k].push((key, value));
                    }
                }
            }
            for (stream, k) in streams.iter_mut().zip(STREAMED) {
                let table = &mut by_keyspace[k];
                table.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                for (key, value) in table.drain(..) {
                    stream.write(key, value).map_err(|e| self.err(e))?;
                }
            }
        }
        for stream in streams {
            stream.finish().map_err(|e| self.err(e))?;
        }

        let mut meta = vec![
            (b"format".to_vec(), STORE_FORMAT.as_bytes().to_vec()),
            (b"log".to_vec(), to_json(fingerprint)),
            (b"stats".to_vec(), to_json(&stats)),
            (b"text_stats".to_vec(), to_json(&text_stats)),
        ];
        for (k, table) in [
            (K_EVENTS, &mut lines),
            (K_INDEX, &mut index),
            (K_META, &mut meta),
        ] {
            table.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            table.dedup_by(|a, b| a.0 == b.0);
            if table.is_empty() {
                continue;
            }
            let mut ingestion = self.ks[k].start_ingestion().map_err(|e| self.err(e))?;
            for (key, value) in table.drain(..) {
                ingestion.write(key, value).map_err(|e| self.err(e))?;
            }
            ingestion.finish().map_err(|e| self.err(e))?;
        }
        Ok(applied)
    }

    /// The state of an entry, hot or cold.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn entry(&self, id: &str) -> Result<Option<EntryState>> {
        match self.get_json(K_ENTRIES, id.as_bytes())? {
            Some(s) => Ok(Some(s)),
            None => self.get_json(K_COLD, id.as_bytes()),
        }
    }

    /// Entry ids (hot and cold) starting with `prefix`, at most `limit`.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        let mut out = BTreeSet::new();
        for k in [K_ENTRIES, K_COLD] {
            for item in self.ks[k].prefix(prefix.as_bytes()).take(limit) {
                let key = item.key().map_err(|e| self.err(e))?;
                out.insert(String::from_utf8_lossy(&key).into_owned());
            }
        }
        Ok(out.into_iter().take(limit).collect())
    }

    /// The shortest prefix of `id`, at least `min` characters long, that names no other entry
    /// (as git shortens commit ids).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn short_id(&self, id: &str, min: usize) -> Result<String> {
        for len in min.min(id.len())..id.len() {
            let Some(prefix) = id.get(..len) else { break };
            if self.ids_with_prefix(prefix, 2)?.len() <= 1 {
                return Ok(prefix.to_owned());
            }
        }
        Ok(id.to_owned())
    }

    /// Hot entries, most recently updated first, that pass `keep`, at most `limit`.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn recent(
        &self,
        limit: usize,
        keep: impl Fn(&EntryState) -> bool,
    ) -> Result<Vec<EntryState>> {
        let mut out = Vec::new();
        for item in self.ks[K_INDEX].prefix(b"updated\0").rev() {
            if out.len() >= limit {
                break;
            }
            let key = item.key().map_err(|e| self.err(e))?;
            let Some(pos) = key.iter().rposition(|b| *b == 0) else {
                continue;
            };
            if let Some(s) = self.get_json::<EntryState>(K_ENTRIES, &key[pos + 1..])?
                && keep(&s)
            {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Ids of hot entries whose index dimension `dim` (e.g. `subject`) equals `value`.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn ids_with(&self, dim: &str, value: &str) -> Result<Vec<String>> {
        let mut prefix = Vec::with_capacity(dim.len() + value.len() + 2);
        prefix.extend_from_slice(dim.as_bytes());
        prefix.push(0);
        prefix.extend_from_slice(value.as_bytes());
        prefix.push(0);
        let mut ids = Vec::new();
        for item in self.ks[K_INDEX].prefix(&prefix) {
            let key = item.key().map_err(|e| self.err(e))?;
            ids.push(String::from_utf8_lossy(&key[prefix.len()..]).into_owned());
        }
        Ok(ids)
    }

    /// Number of hot entries.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn hot_count(&self) -> Result<usize> {
        // From the statistics: counting the keyspace would read every entry.
        Ok(usize::try_from(self.stats()?.hot_entries).unwrap_or(0))
    }

    /// Statistics of the text index.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn text_stats(&self) -> Result<TextStats> {
        Ok(self.get_json(K_META, b"text_stats")?.unwrap_or_default())
    }

    /// Visits the index records whose key starts with `prefix`, in key order, with the rest of
    /// the key and the value, until `visit` returns false.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn scan_index(
        &self,
        prefix: &[u8],
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        for item in self.ks[K_INDEX].prefix(prefix) {
            let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
            if !visit(&key[prefix.len()..], &value) {
                break;
            }
        }
        Ok(())
    }

    /// Hot entries by id, in the order given (ids that are not hot are left out).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn hot_entries(&self, ids: &[&str]) -> Result<Vec<EntryState>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = self.get_json(K_ENTRIES, id.as_bytes())? {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Every version of an entry, oldest first.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn versions(&self, entry: &str) -> Result<Vec<Version>> {
        let mut versions: Vec<Version> = self.prefix_json(K_VERSIONS, &format!("{entry}/"))?;
        projections::fill_changes(&mut versions);
        Ok(versions)
    }

    /// Audit records of one entry, or of all entries (ordered by time, then event id).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn audit(&self, entry: Option<&str>) -> Result<Vec<AuditRecord>> {
        match entry {
            Some(e) => self.prefix_json(K_AUDIT, &format!("{e}/")),
            None => {
                let mut all: Vec<AuditRecord> = self.prefix_json(K_AUDIT, "")?;
                all.sort_by(|a, b| (&a.at, &a.entry, a.seq).cmp(&(&b.at, &b.entry, b.seq)));
                Ok(all)
            }
        }
    }

    fn prefix_json<T: for<'de> Deserialize<'de>>(&self, k: usize, prefix: &str) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for item in self.ks[k].prefix(prefix.as_bytes()) {
            let value = item.value().map_err(|e| self.err(e))?;
            out.push(serde_json::from_slice(&value).map_err(|e| self.err(e))?);
        }
        Ok(out)
    }

    /// The statistics counters.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn stats(&self) -> Result<Stats> {
        Ok(self.get_json(K_META, b"stats")?.unwrap_or_default())
    }

    /// Writes every projection record canonically, one per line: keyspace, key, value. The log
    /// fingerprint is left out, so two stores built from the same *set* of events dump the same
    /// bytes whatever the order of their logs.
    ///
    /// # Errors
    /// When the store cannot be read or `out` written.
    pub fn dump(&self, out: &mut dyn std::io::Write) -> Result<()> {
        for (k, name) in KEYSPACES.iter().enumerate() {
            for item in self.ks[k].iter() {
                let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
                if k == K_META && &*key == b"log" {
                    continue;
                }
                writeln!(
                    out,
                    "{name}\t{}\t{}",
                    String::from_utf8_lossy(&key).escape_default(),
                    String::from_utf8_lossy(&value)
                )?;
            }
        }
        Ok(())
    }

    /// Writes every memtable to tables, closes the store and removes its journal, which then
    /// holds nothing that is not in a table; the next open starts an empty one. fjall starts a
    /// new journal only after 64 MiB and replays the whole active journal on every open, so
    /// without this a store grown by single writes gets slower to open with every write.
    pub fn checkpoint(self) -> Result<()> {
        self.flush()?;
        let path = self.path.clone();
        drop(self);
        for item in fs_err::read_dir(&path)? {
            let item = item?;
            if item.path().extension().is_some_and(|e| e == "jnl") {
                fs_err::remove_file(item.path())?;
            }
        }
        if let Ok(dir) = fs_err::File::open(&path) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Forces memtables to disk so the next process opens without replaying a long journal.
    ///
    /// # Errors
    /// When fjall fails.
    pub fn flush(&self) -> Result<()> {
        for ks in &self.ks {
            ks.rotate_memtable_and_wait().map_err(|e| self.err(e))?;
            // fjall waits only when it rotated a non-empty active memtable: memtables recovered
            // from a journal on open are sealed and flushed in the background, and removing the
            // journal before they reach a table loses them (a checkpoint on open did).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while ks.sealed_memtable_count() > 0 {
                if std::time::Instant::now() > deadline {
                    return Err(self.err("timed out waiting for memtables to be flushed"));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}
pub mod session;
