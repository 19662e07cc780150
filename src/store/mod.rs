//! The projections, materialized in fjall.
//!
//! Two keyspaces. `events` maps each event id to its canonical log line. `projections` holds
//! everything derived, as text keys so that `dump` is readable, in ranges that a replay writes
//! in two ordered passes at once (entries in id order, then audit, index and meta; and the text
//! index, whose range comes after them all):
//!
//! | record         | key                                        | value                       |
//! |----------------|--------------------------------------------|-----------------------------|
//! | cold state     | entry id `\0c`                             | state (archived, expired, purged) |
//! | entry event    | entry id `\0e` event id                    | empty                       |
//! | hot state      | entry id `\0h`                             | current state               |
//! | version        | entry id `\0v` version (8 digits)          | event, type, actor, time    |
//! | audit          | `~a\0` entry id `/` sequence (8 digits)    | audit record                |
//! | index          | `~i\0` dimension `\0` value `\0` entry id  | empty (hot entries only)    |
//! | cold index     | `~i\0cold\0` state `\0` entry id, `~i\0cold_pinned\0true\0` entry id | empty (cold entries only) |
//! | meta           | `~m\0format`, `~m\0log`, `~m\0stats`      | store format, log fingerprint, statistics |
//! | missing parents | `~m\0dangling`                           | the events whose parents the log lacks (absent when none) |
//! | log blocks     | `~m\0log_block\0` block number (10 digits) | hash of one complete MiB of the log (see `Fingerprint`) |
//! | latest operations | `~m\0recent\0` time `\0` event id      | the operation (the latest 20 only) |
//! | day statistics | `~m\0stats_day\0` day                     | statistics of the entries created that day |
//! | text index     | `~t\0doc\0…`, `~t\0text\0…`, `~t\0tblk\0…` | see `crate::retrieval::text_index` |
//!
//! The text index is read and written through the same calls as the index ([`Store::scan_index`],
//! [`Store::index_value`]), which route its prefixes to its own range. Its range comes last so
//! that a replay writes it as a second ingestion, on the other core, while the first writes the
//! index: two ingestions of disjoint key ranges both move to the last level without a rewrite.
//!
//! A version record says which event made the version and when; the entry's state at that
//! version is its events folded up to it (the event is the difference between two versions),
//! which is how [`Store::versions`] answers. The cold states are kept apart from the hot ones by
//! their tag, and only hot entries are in the index.

use crate::error::{Error, Result};
use crate::policy::stored::StoredSecret;
use crate::retrieval::text_index::{Analysis, TextStats, analyze};
use fjall::{Database, Keyspace, KeyspaceCreateOptions};
use projections::{
    AuditRecord, EntryState, Event, EventType, LeanFold, Stats, Version, fold_entry_lean,
    fold_entry_of,
};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bumped whenever the layout or the meaning of a projection changes: a store of another format
/// is rebuilt from the log, never misread.
pub const STORE_FORMAT: &str = "memlog-store-27";

/// Journal size above which opening the store first flushes its memtables and starts a new
/// journal, so that a process replays little whatever the history of writes. Replaying 512 KiB
/// costs 3 to 4 ms; each checkpoint adds a table, and every fourth one starts a compaction that
/// the process closing the store waits for, so a smaller threshold trades replay for stalls. A
/// single write journals about 6.7 KB (12.8 KB before the log's block hashes and the latest
/// operations became records of their own), so 256 KiB checkpoints as often as 512 KiB did,
/// every 40 writes or so, with half the replay. (64 KiB made show, list and add as fast as on a
/// store without later writes, but halved the concurrent writers: 80 -> 44 writes/s.)
const CHECKPOINT_JOURNAL_BYTES: u64 = 256 * 1024;

/// Journal size above which a process that wrote checkpoints the store as it closes, when no
/// other process is waiting for the store: an agent writing alone leaves at most this much to
/// replay, while concurrent writers leave the checkpoints to [`CHECKPOINT_JOURNAL_BYTES`].
/// At 100,000 entries, 200 single writes then leave 37 KB instead of 234 KB, and a query is 1.5
/// to 2 ms faster; 16 concurrent writers (who wait for each other) are unchanged. Each
/// checkpoint adds a table and every fourth a compaction, so a lone writer pays for the shorter
/// replay in slower writes now and then: growing a store to 10,000 entries one `add` at a time
/// took 153 s (122 s at 128 KiB, 109 s with no such checkpoint). 128 KiB left the selective
/// query at 10,000 entries 1.7 times slower in a full bench (SQLite 1.5 times slower in the
/// same run), so the queries' target decides.
pub const QUIET_CHECKPOINT_BYTES: u64 = 64 * 1024;

/// Every keyspace costs a rebuild a few synced files to create and to ingest, which on a busy
/// disk is the larger part of rebuilding a small log: so there are only two.
const KEYSPACES: [&str; 2] = ["events", "projections"];
const K_EVENTS: usize = 0;
const K_PROJ: usize = 1;

const T_COLD: u8 = b'c';
const T_EVENT: u8 = b'e';
const T_HOT: u8 = b'h';
const T_VERSION: u8 = b'v';
const AUDIT: &[u8] = b"~a\0";
const INDEX: &[u8] = b"~i\0";
const META: &[u8] = b"~m\0";
/// The text index's range (see the module's documentation); after every other range.
const TEXT: &[u8] = b"~t\0";

/// The range of an index record whose key, after the range's prefix, is `key`: the text
/// index's records have a range of their own.
fn index_range(key: &[u8]) -> &'static [u8] {
    if crate::retrieval::text_index::is_text_key(key) {
        TEXT
    } else {
        INDEX
    }
}

/// The full key of the index record `key` (after its range's prefix).
fn index_key(key: &[u8]) -> Vec<u8> {
    [index_range(key), key].concat()
}

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

/// The fingerprint as stored: the hashes of the log's complete blocks are records of their own
/// (`~m\0log_block\0` index), written once when a block fills, so a write does not rewrite a
/// record that grows with the log (6 KB at 100 MB of log) and an open reads only this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FingerprintHead {
    len: u64,
    lines: u64,
    /// Complete blocks hashed (their hashes are the `log_block` records).
    blocks: u64,
    /// [`blocks_digest`] of those hashes: a write that appended recognises the blocks it
    /// leaves as they were without reading them.
    #[serde(default)]
    blocks_digest: String,
    partial: String,
    /// The partial block's subtrees (see [`crate::log::stamp::BlockHashes::subtrees`]); a
    /// store written before they were kept has none, and its next write hashes the whole
    /// partial block once.
    #[serde(default)]
    subtrees: Vec<String>,
    stamp: Option<crate::log::stamp::FileStamp>,
}

impl FingerprintHead {
    fn of(f: &Fingerprint) -> Self {
        Self {
            len: f.len,
            lines: f.lines,
            blocks: f.hashes.blocks.len() as u64,
            blocks_digest: blocks_digest(&f.hashes.blocks),
            partial: f.hashes.partial.clone(),
            subtrees: f.hashes.subtrees.clone(),
            stamp: f.stamp.clone(),
        }
    }
}

fn blocks_digest(blocks: &[String]) -> String {
    let mut h = blake3::Hasher::new();
    for b in blocks {
        h.update(b.as_bytes());
    }
    h.finalize().to_hex().to_string()
}

fn log_block_key(i: usize) -> Vec<u8> {
    meta_key(&format!("{LOG_BLOCK_PREFIX}{i:010}"))
}

const LOG_BLOCK_PREFIX: &str = "log_block\0";

/// The materialized projections of one project.
pub struct Store {
    path: PathBuf,
    db: Database,
    ks: [Keyspace; 2],
    /// [`Store::hot_count`] as last read, plus one (0: not read since the last write). Every
    /// create of a bulk `apply` asks for it, and decoding the statistics each time was a
    /// tenth of the staging.
    hot_count: std::sync::atomic::AtomicU64,
    /// Whether the store engine's background worker runs (see [`Access`]): only then can the
    /// store be written.
    access: Access,
}

/// How a store is opened.
///
/// fjall's background worker flushes memtables and merges tables. Started with a store that
/// has tables in level 0 (nearly every store grown by single writes), it first looks for a
/// merge and then sleeps 1 ms, per keyspace, and closing the store waits for it: a command
/// that reads a thousand entries in 2 ms spent another 1 to 2 ms waiting to close. A store
/// opened to be read runs no worker; the session reopens it as a [`Access::Writer`] before its
/// first write (a catch-up), which then costs one more open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Reader,
    Writer,
}

/// What a version record stores; the rest of [`Version`] comes from its key and the fold.
#[derive(Serialize)]
struct VersionRecord<'a> {
    event: &'a str,
    #[serde(rename = "type")]
    event_type: EventType,
    actor: &'a str,
    at: &'a str,
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

fn meta_key(name: &str) -> Vec<u8> {
    [META, name.as_bytes()].concat()
}

/// The latest operations, one record each, in (time, event id) order: a write adds the
/// records of its own operations and removes those they push out, instead of rewriting the
/// whole table (the journal every process replays then grows by a few hundred bytes a write).
const RECENT_PREFIX: &str = "recent\0";

fn recent_key(op: &projections::stats::Operation) -> Vec<u8> {
    meta_key(&format!("{RECENT_PREFIX}{}\0{}", op.at, op.event))
}

/// The statistics of the entries created on `day`: one record per day, so that a write rewrites
/// the days it touches and a date range reads its days only.
fn stats_day_key(day: &str) -> Vec<u8> {
    meta_key(&format!("stats_day\0{day}"))
}

fn entry_key(entry: &str, tag: u8, suffix: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(entry.len() + 2 + suffix.len());
    k.extend_from_slice(entry.as_bytes());
    k.push(0);
    k.push(tag);
    k.extend_from_slice(suffix);
    k
}

fn audit_key(entry: &str, seq: u32) -> Vec<u8> {
    let mut k = AUDIT.to_vec();
    k.extend_from_slice(format!("{entry}/{seq:08}").as_bytes());
    k
}

/// The index dimensions and values of a hot entry (tags once each).
fn index_terms(s: &EntryState) -> Vec<(&'static str, std::borrow::Cow<'_, str>)> {
    use std::borrow::Cow::Borrowed;
    let mut terms = vec![
        ("section", Borrowed(s.fields.section.as_str())),
        ("kind", Borrowed(s.fields.kind.as_str())),
        ("scope", Borrowed(s.fields.scope.as_str())),
        ("subject", Borrowed(s.fields.subject.as_str())),
        ("status", Borrowed(s.status.as_str())),
        ("lifecycle", Borrowed(s.lifecycle.as_str())),
        ("updated", Borrowed(s.updated_at.as_str())),
    ];
    let tags: BTreeSet<&str> = s.fields.tags.iter().map(String::as_str).collect();
    terms.extend(tags.into_iter().map(|t| ("tag", Borrowed(t))));
    if s.pinned {
        terms.push(("pinned", Borrowed("true")));
    }
    match s.status {
        projections::Status::Active => {
            terms.push(("duplicate", duplicate_key(&s.fields).into()));
        }
        // What a new entry with the same subject, scope and summary would bring back.
        projections::Status::Superseded | projections::Status::Deprecated => {
            terms.push(("replaced", duplicate_key(&s.fields).into()));
        }
        projections::Status::Draft => {}
    }
    if s.in_conflict() {
        terms.push(("conflict", Borrowed("true")));
    }
    if let Some(valid_to) = projections::stats::expiry_of(s) {
        terms.push(("valid_to", Borrowed(valid_to)));
    }
    terms
}

/// The index dimensions and values of a cold entry: its storage state (`archived`, `expired`,
/// `purged`) under `cold`, and `cold_pinned` when it is pinned, so that listing archived or
/// pinned entries reads those entries only, not every entry of the store.
fn cold_index_terms(s: &EntryState) -> Vec<(&'static str, std::borrow::Cow<'_, str>)> {
    use std::borrow::Cow::Borrowed;
    let state = if s.purged {
        "purged"
    } else {
        s.lifecycle.as_str()
    };
    let mut terms = vec![("cold", Borrowed(state))];
    if s.pinned {
        terms.push(("cold_pinned", Borrowed("true")));
    }
    // An archived entry comes back as it is at its next read: a new entry that repeats it is
    // a duplicate waiting to happen.
    if s.status == projections::Status::Active
        && s.lifecycle == projections::Lifecycle::Archived
        && !s.purged
    {
        terms.push(("duplicate_archived", duplicate_key(&s.fields).into()));
    }
    terms
}

fn cold_index_keys(s: &EntryState) -> Vec<Vec<u8>> {
    cold_index_terms(s)
        .into_iter()
        .map(|(dim, value)| [index_prefix(dim, &value), s.id.as_bytes().to_vec()].concat())
        .collect()
}

/// `dimension \0 value \0`, the part of an index key before the entry id.
fn index_prefix(dim: &str, value: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(INDEX.len() + dim.len() + value.len() + 2);
    k.extend_from_slice(INDEX);
    k.extend_from_slice(dim.as_bytes());
    k.push(0);
    k.extend_from_slice(value.as_bytes());
    k.push(0);
    k
}

/// The text index records of a hot entry, under the text index's range.
fn text_records(id: &str, text: &Analysis) -> Vec<(Vec<u8>, Vec<u8>)> {
    text.records(id)
        .into_iter()
        .map(|(k, v)| ([TEXT, k.as_slice()].concat(), v))
        .collect()
}

fn index_keys(s: &EntryState) -> Vec<Vec<u8>> {
    index_terms(s)
        .into_iter()
        .map(|(dim, value)| {
            let mut k = index_prefix(dim, &value);
            k.extend_from_slice(s.id.as_bytes());
            k
        })
        .collect()
}

/// A record's value as [`Store::dump`] prints it: text (JSON, with any credential redacted) as
/// it is, and a binary value (the text index's postings and features) as `hex:` and its bytes,
/// so that every record is one line and two values that differ print differently.
fn dump_value(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(text) if !text.chars().any(char::is_control) => {
            crate::policy::validate::redact_secrets(text)
        }
        _ => {
            let mut out = String::with_capacity(4 + value.len() * 2);
            out.push_str("hex:");
            for b in value {
                let _ = std::fmt::Write::write_fmt(&mut out, format_args!("{b:02x}"));
            }
            out
        }
    }
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

/// Everything one entry's fold contributes to `projections`, except its entry-event records and
/// its index keys.
struct EntryRecords {
    state: Option<EntryState>,
    /// Records keyed under the entry id, in key order.
    own: Vec<(Vec<u8>, Vec<u8>)>,
    /// Audit records, in key order.
    audit: Vec<(Vec<u8>, Vec<u8>)>,
    /// The text analysis of a hot state, made where the entry is folded (in parallel during a
    /// rebuild).
    text: Option<Analysis>,
    /// The entry's create, supersede and deprecate operations (for the recent operations).
    ops: Vec<projections::stats::Operation>,
    /// Where its state held a secret, now redacted (see [`crate::policy::stored`]).
    secrets: Vec<StoredSecret>,
}

fn derive(entry: &str, folded: LeanFold<'_>) -> EntryRecords {
    derive_scanned(entry, folded, true)
}

/// [`derive`], scanning the entry for secrets only when `scan` (see [`Store::build_from_log_at`]
/// for the entries a build may leave unscanned).
fn derive_scanned(entry: &str, mut folded: LeanFold<'_>, scan: bool) -> EntryRecords {
    // A secret that reached the log without memlog's checks (another clone, `--no-verify`) is
    // redacted here, once per change of the entry, so that no read ever prints it and no index
    // holds it; where it was is kept for `health`.
    let mut secrets = Vec::new();
    if scan {
        if let Some(state) = folded.state.as_mut() {
            secrets = crate::policy::stored::redact_state(state);
        }
        for a in &mut folded.audit {
            secrets.extend(crate::policy::stored::redact_audit(a));
        }
    }
    let mut own = Vec::with_capacity(folded.versions.len() + 1);
    // Tags in key order: cold state, (entry events), hot state, versions.
    if let Some(s) = folded.state.as_ref().filter(|s| s.is_cold()) {
        own.push((entry_key(entry, T_COLD, b""), to_json(s)));
    }
    if let Some(s) = folded.state.as_ref().filter(|s| !s.is_cold()) {
        own.push((entry_key(entry, T_HOT, b""), to_json(s)));
    }
    for (version, event) in &folded.versions {
        let record = VersionRecord {
            event: &event.id,
            event_type: event.event_type(),
            actor: &event.actor,
            at: &event.at,
        };
        own.push((
            entry_key(entry, T_VERSION, format!("{version:08}").as_bytes()),
            to_json(&record),
        ));
    }
    let audit = folded
        .audit
        .iter()
        .map(|a| (audit_key(&a.entry, a.seq), to_json(a)))
        .collect();
    let text = folded.state.as_ref().filter(|s| !s.is_cold()).map(analyze);
    EntryRecords {
        state: folded.state,
        own,
        audit,
        text,
        ops: Vec::new(),
        secrets,
    }
}

/// An entry's state, its text analysis when hot, the keys of its index and text records, and
/// its own and audit records, key and value.
type EntryRecordKeys = (
    Option<EntryState>,
    Option<Analysis>,
    Vec<Vec<u8>>,
    FxHashMap<Vec<u8>, Vec<u8>>,
);

/// An entry's records: its entry-event keys, sorted, and the rest.
type Derived = (Vec<Vec<u8>>, EntryRecords);

/// Where catch-up changes strategy. The answers never depend on these sizes (the store is the
/// fold of the set of events whichever way it was built); tests make them small so that a few
/// lines take every path.
pub mod tuning {
    use std::cell::Cell;

    #[derive(Clone, Copy)]
    struct Sizes {
        apply_chunk: usize,
        append_every: usize,
        bulk_from_bytes: u64,
        stream_chunk: usize,
        positions_from_df: usize,
        compact_from_lines: u64,
        split_walk_from: usize,
        scan_created_from: usize,
    }

    const DEFAULT: Sizes = Sizes {
        apply_chunk: 4096,
        append_every: 4096,
        bulk_from_bytes: 1 << 18,
        stream_chunk: 2048,
        positions_from_df: 1024,
        compact_from_lines: 2048,
        split_walk_from: 16_384,
        scan_created_from: 256,
    };

    thread_local! {
        static SIZES: Cell<Sizes> = const { Cell::new(DEFAULT) };
    }

    /// Events applied per atomic write of an incremental catch-up.
    pub fn apply_chunk() -> usize {
        SIZES.get().apply_chunk
    }

    /// Updates a bulk import stages before it appends them (bounding its memory); the store
    /// catches up once, at the end.
    pub fn append_every() -> usize {
        SIZES.get().append_every
    }

    /// Bytes of new log from which a catch-up that adds at least half as many bytes as the store
    /// has applied replays the whole log instead. 256 KiB is about 250 creates: the point where
    /// applying them one by one (about 230 µs each) costs as much as a replay's fixed part
    /// (about 40 ms: a new store's files and their fsyncs). Imports into a fresh project, by
    /// alternating runs: 1,000 creates 343 → 229 ms with 1 MiB here; 300 creates 141 → 132 ms;
    /// 150, below it either way, 108 ms.
    pub fn bulk_from_bytes() -> u64 {
        SIZES.get().bulk_from_bytes
    }

    /// Log lines applied since a store was built from which it may be due for compaction
    /// (see `store::compact`).
    pub fn compact_from_lines() -> u64 {
        SIZES.get().compact_from_lines
    }

    /// Entries folded per step of a rebuild: enough to keep every core busy, few enough that
    /// the derived records of the steps in flight (one folding, one gathered, one queued, one
    /// written) stay small. 2,048 entries of 100,000 keep a rebuild's peak at about 285 MiB
    /// (295 MiB with 4,096).
    pub fn stream_chunk() -> usize {
        SIZES.get().stream_chunk
    }

    /// Entries a term must be in (beside a share of them) for a rebuild to write its postings
    /// by positions rather than inline (see [`crate::retrieval::text_index`]).
    pub fn positions_from_df() -> usize {
        SIZES.get().positions_from_df
    }

    /// Postings by positions a query walks from which it splits the walk between the cores
    /// (see `retrieval::search`): below it, starting threads costs more than it saves.
    pub fn split_walk_from() -> usize {
        SIZES.get().split_walk_from
    }

    /// Entries read from which `stats` over a range of days finds their creation days in one
    /// scan of the text index's feature records rather than entry by entry.
    pub fn scan_created_from() -> usize {
        SIZES.get().scan_created_from
    }

    /// Makes every threshold tiny on this thread, for tests: chunks of two events, appends of
    /// three updates, a replay from 600 bytes, rebuild steps of three entries, postings by
    /// positions for any term in an eighth of the entries, compaction due from 8 lines, a
    /// query's walk split from two postings, creation days scanned for any entry read.
    pub fn shrink_for_tests() {
        SIZES.set(Sizes {
            apply_chunk: 2,
            append_every: 3,
            bulk_from_bytes: 600,
            stream_chunk: 3,
            positions_from_df: 1,
            compact_from_lines: 8,
            split_walk_from: 2,
            scan_created_from: 0,
        });
    }

    /// Undoes [`shrink_for_tests`] on this thread.
    pub fn restore_defaults() {
        SIZES.set(DEFAULT);
    }
}

/// Options shared by both keyspaces. lz4 on every level: the values are JSON text, and writing
/// a third of the bytes costs a rebuild less than compressing them.
///
/// A rebuild writes each keyspace as one large table. Its index and filter are partitioned, so
/// that a short-lived process looking up a few keys reads a few small blocks of them rather
/// than the whole index and filter of the table.
fn keyspace_options() -> KeyspaceCreateOptions {
    use fjall::config::{CompressionPolicy, PartitioningPolicy};
    KeyspaceCreateOptions::default()
        .max_memtable_size(8 * 1024 * 1024)
        .data_block_compression_policy(CompressionPolicy::all(fjall::CompressionType::Lz4))
        .index_block_partitioning_policy(PartitioningPolicy::all(true))
        .filter_block_partitioning_policy(PartitioningPolicy::all(true))
        .compaction_strategy(std::sync::Arc::new(
            fjall::compaction::Leveled::default().with_table_target_size(TABLE_TARGET_BYTES),
        ))
}

/// Size of the tables compaction writes. Leveled compaction sizes its first level at four
/// tables: with fjall's default 64 MiB tables that is 256 MiB, more than the whole store of
/// 100,000 entries, so every merge of the newest tables rewrote the whole store (a stall of
/// seconds, inside the store lock, every couple of hundred single writes). With 8 MiB tables
/// the first level held 32 MiB above the bulk of the data, and only it was rewritten that often;
/// but a pull of 10,000 events fills it, and then every fourth checkpoint rewrote those 32 MiB
/// (0.6 to 0.8 s inside the lock). With 2 MiB tables the first level holds 8 MiB, what a pull
/// adds moves on to the second level without a rewrite, and the merge every fourth checkpoint
/// costs about 0.1 s. Concurrent writes right after a pull, 4 runs of each: 33 to 46 writes/s
/// with 8 MiB tables, 49 to 77 with 2 MiB; show, list and stats are as fast.
const TABLE_TARGET_BYTES: u64 = 2 * 1024 * 1024;

/// Tables in level 0 at which leveled compaction merges them into level 1 (fjall's default).
const L0_COMPACTION_TABLES: usize = 4;

/// How long [`Store::checkpoint_settled`] waits for level 0 to empty before it leaves the merge
/// to later processes (a merge of the 34 MB a pull of 10,000 events leaves takes about 1 s).
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Time without a change in level 0 after which it flushes another tiny table.
const SETTLE_STUCK: std::time::Duration = std::time::Duration::from_millis(250);
/// How long a flush waits for its memtables to reach the disk (a memtable of 8 MiB takes well
/// under a second) before it reports a failure instead of waiting forever.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(20);
/// Tiny tables it flushes at most, per keyspace.
const SETTLE_PADS: usize = 8;

/// An event whose parent the log does not hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Dangling {
    pub entry: String,
    pub event: String,
    pub parent: String,
}

/// The parents named among `events` (id, entry, parents) that are not among them, sorted.
fn dangling_among<'a>(
    events: impl Iterator<Item = (&'a String, &'a String, &'a Vec<String>)> + Clone,
) -> Vec<Dangling> {
    let ids: std::collections::HashSet<&str> =
        events.clone().map(|(id, _, _)| id.as_str()).collect();
    let mut out: Vec<Dangling> = events
        .flat_map(|(id, entry, parents)| {
            parents
                .iter()
                .filter(|p| !ids.contains(p.as_str()))
                .map(|p| Dangling {
                    entry: entry.clone(),
                    event: id.clone(),
                    parent: p.clone(),
                })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How a store error says the store lost data (see [`crate::error::store_damaged`]): the
/// session that finds it, or the next one, rebuilds the store from the log.
const UNRECOVERABLE: &str = "Unrecoverable";

/// The meta record of the events whose parents the log lacks.
const DANGLING: &str = "dangling";

/// The meta record of the entries whose stored text held a secret, redacted when projected:
/// entry id to where (see [`crate::policy::stored`]). Absent when there are none.
const SECRETS: &str = "secrets";

/// A store opened by [`Store::open_checked`].
pub enum Opened {
    /// The store, and whether it is empty (and so needs a full build).
    Current(Store, bool),
    /// A store written by another version of memlog, closed and left as it was: the format it
    /// names (`None` when it names none).
    OtherFormat(Option<String>),
}

impl Opened {
    /// Why a store of another format is rebuilt, for the user.
    pub fn other_format_reason(found: Option<&str>) -> String {
        match found {
            Some(found) => format!(
                "the store was written by another version of memlog (store format `{found}`; \
                 this version's is `{STORE_FORMAT}`)"
            ),
            None => "the store names no format (written by an early version of memlog, or not \
                     by memlog)"
                .to_owned(),
        }
    }
}

/// Entry id to the secrets redacted from its state.
pub type Secrets = BTreeMap<String, Vec<StoredSecret>>;

/// The parents named among `events` that are not among them, by entry and event.
fn dangling_of<L>(events: &[(Event, L)]) -> Vec<Dangling> {
    dangling_among(events.iter().map(|(e, _)| (&e.id, &e.entry, &e.parents)))
}

impl Store {
    /// Opens (creating if needed) the store at `path`. A store of another format is wiped.
    /// Returns the store and whether it is empty (and so needs a full build).
    ///
    /// # Errors
    /// [`Error::Store`] when fjall cannot open it.
    pub fn open(path: &Path) -> Result<(Self, bool)> {
        match Self::open_checked(path, Access::Writer)? {
            Opened::Current(store, fresh) => Ok((store, fresh)),
            Opened::OtherFormat(_) => {
                fs_err::remove_dir_all(path)?;
                Ok((Self::open_raw(path)?, true))
            }
        }
    }

    /// [`Store::open`], leaving a store of another format as it is (closed) and saying what
    /// format it is, so that the caller can rebuild it beside itself and say why.
    ///
    /// # Errors
    /// [`Error::Store`] when fjall cannot open it.
    pub fn open_checked(path: &Path, access: Access) -> Result<Opened> {
        if journal_bytes(path) > CHECKPOINT_JOURNAL_BYTES {
            Self::open_raw(path)?.checkpoint()?;
        }
        let store = Self::open_with(path, access)?;
        let format = store.ks[K_PROJ]
            .get(meta_key("format"))
            .map_err(|e| Error::store(path, e))?;
        let fresh = match format.as_deref() {
            Some(f) if f == STORE_FORMAT.as_bytes() => {
                store.check_events_kept()?;
                store.ks[K_PROJ]
                    .get(meta_key("log"))
                    .map_err(|e| Error::store(path, e))?
                    .is_none()
            }
            None if store.db.keyspace_count() == KEYSPACES.len() && store.is_empty()? => true,
            other => {
                let found = other.map(|f| String::from_utf8_lossy(f).into_owned());
                return Ok(Opened::OtherFormat(found));
            }
        };
        Ok(Opened::Current(store, fresh))
    }

    /// Refuses a store whose `events` keyspace is empty while it projects entries: the store
    /// engine opens a keyspace whose files were lost (its `current` file, or its directory) as a
    /// new, empty one, and such a store, served as caught up with the log, answered `history`
    /// with nothing and dropped an entry refolded by the next write. The session rebuilds it.
    fn check_events_kept(&self) -> Result<()> {
        let projects_entries = self.ks[K_PROJ]
            .first_key_value()
            .map(|guard| guard.key().map_err(|e| self.err(e)))
            .transpose()?
            .is_some_and(|key| !key.starts_with(b"~"));
        if projects_entries && self.ks[K_EVENTS].is_empty().map_err(|e| self.err(e))? {
            return Err(self.err(format!(
                "{UNRECOVERABLE}: it projects entries but holds none of their events (a file of \
                 the store was lost)"
            )));
        }
        Ok(())
    }

    fn is_empty(&self) -> Result<bool> {
        for ks in &self.ks {
            if !ks.is_empty().map_err(|e| self.err(e))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn open_raw(path: &Path) -> Result<Self> {
        Self::open_with(path, Access::Writer)
    }

    fn open_with(path: &Path, access: Access) -> Result<Self> {
        fs_err::create_dir_all(path)?;
        let builder = Database::builder(path).cache_size(8 * 1024 * 1024);
        let builder = match access {
            Access::Writer => builder.worker_threads(1),
            // No worker at all: what it would do (flush, merge) only follows writes.
            Access::Reader => builder.worker_threads_unchecked(0),
        };
        let db = builder.open().map_err(|e| Error::store(path, e))?;
        let mut handles = Vec::with_capacity(KEYSPACES.len());
        for name in KEYSPACES {
            handles.push(
                db.keyspace(name, keyspace_options)
                    .map_err(|e| Error::store(path, e))?,
            );
        }
        let ks: [Keyspace; 2] = handles
            .try_into()
            .map_err(|_| Error::store(path, "keyspace count mismatch"))?;
        Ok(Self {
            path: path.to_path_buf(),
            db,
            ks,
            hot_count: std::sync::atomic::AtomicU64::new(0),
            access,
        })
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::store(&self.path, e)
    }

    /// How the store was opened.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The same store, opened as a [`Access::Writer`] (closed and opened again when it was
    /// opened to be read).
    ///
    /// # Errors
    /// [`Error::Store`] when fjall cannot open it.
    pub fn into_writer(self) -> Result<Self> {
        if self.access == Access::Writer {
            return Ok(self);
        }
        let path = self.path.clone();
        drop(self);
        Self::open_raw(&path)
    }

    /// Refuses to write a store opened to be read: without the engine's worker, its memtables
    /// would never reach a table and a flush would wait forever.
    fn check_writer(&self) -> Result<()> {
        match self.access {
            Access::Writer => Ok(()),
            Access::Reader => Err(self.err(
                "it was opened to be read and cannot be written (a defect: please report it)",
            )),
        }
    }

    fn get_json<T: for<'de> Deserialize<'de>>(&self, key: &[u8]) -> Result<Option<T>> {
        match self.ks[K_PROJ].get(key).map_err(|e| self.err(e))? {
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
        let Some(head) = self.get_json::<FingerprintHead>(&meta_key("log"))? else {
            return Ok(None);
        };
        let blocks = self.log_blocks(head.blocks)?;
        Ok(Some(Fingerprint {
            len: head.len,
            lines: head.lines,
            hashes: crate::log::stamp::BlockHashes {
                blocks,
                partial: head.partial,
                subtrees: head.subtrees,
            },
            stamp: head.stamp,
        }))
    }

    /// The log file's stamp when the store last caught up with it (`None` inside when it had
    /// none), without the block hashes: what the common case, an unchanged log, compares.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn log_stamp(&self) -> Result<Option<Option<crate::log::stamp::FileStamp>>> {
        Ok(self
            .get_json::<FingerprintHead>(&meta_key("log"))?
            .map(|h| h.stamp))
    }

    /// The first `n` stored block hashes of the log.
    fn log_blocks(&self, n: u64) -> Result<Vec<String>> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let mut out = Vec::with_capacity(n.min(1 << 16));
        for item in self.ks[K_PROJ].prefix(meta_key(LOG_BLOCK_PREFIX)).take(n) {
            let value = item.value().map_err(|e| self.err(e))?;
            out.push(String::from_utf8_lossy(&value).into_owned());
        }
        if out.len() != n {
            return Err(self.err(format!(
                "the log fingerprint names {n} block hashes, the store holds {}",
                out.len()
            )));
        }
        Ok(out)
    }

    /// Writes `next` into `batch`: its head, and the block hashes that differ from those stored
    /// (in the common case, an append, only the blocks the append completed, found without
    /// reading the others).
    fn write_fingerprint(
        &self,
        batch: &mut fjall::OwnedWriteBatch,
        next: &Fingerprint,
    ) -> Result<()> {
        let proj = &self.ks[K_PROJ];
        let head = self.get_json::<FingerprintHead>(&meta_key("log"))?;
        let kept = head.as_ref().and_then(|h| {
            let n = usize::try_from(h.blocks).ok()?;
            let prefix = next.hashes.blocks.get(..n)?;
            (blocks_digest(prefix) == h.blocks_digest).then_some(n)
        });
        if let Some(n) = kept {
            for (i, hash) in next.hashes.blocks.iter().enumerate().skip(n) {
                batch.insert(proj, log_block_key(i), hash.as_bytes());
            }
            batch.insert(proj, meta_key("log"), to_json(&FingerprintHead::of(next)));
            return Ok(());
        }
        let old = match head {
            Some(head) => self.log_blocks(head.blocks)?,
            None => Vec::new(),
        };
        for (i, hash) in next.hashes.blocks.iter().enumerate() {
            if old.get(i) != Some(hash) {
                batch.insert(proj, log_block_key(i), hash.as_bytes());
            }
        }
        for i in next.hashes.blocks.len()..old.len() {
            batch.remove(proj, log_block_key(i));
        }
        batch.insert(proj, meta_key("log"), to_json(&FingerprintHead::of(next)));
        Ok(())
    }

    /// Number of distinct events applied.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn event_count(&self) -> Result<usize> {
        self.ks[K_EVENTS].len().map_err(|e| self.err(e))
    }

    /// The ids and lines of the applied events whose ids `keep` rejects, in id order.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn event_lines_except(&self, keep: impl Fn(&str) -> bool) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for item in self.ks[K_EVENTS].iter() {
            let (id, line) = item.into_inner().map_err(|e| self.err(e))?;
            let id = String::from_utf8_lossy(&id).into_owned();
            if !keep(&id) {
                out.push((id, String::from_utf8_lossy(&line).into_owned()));
            }
        }
        Ok(out)
    }

    /// The events of the store of another format at `path` (see [`Opened::OtherFormat`]) whose
    /// ids `in_log` does not name, as (id, line): the store may hold the only copy of lines
    /// deleted from the log, and a rebuild for a new format would lose that witness. Only what
    /// still reads as an event line under its own id is returned (the `events` keyspace has
    /// kept its layout across formats; a store where it did not yields nothing).
    ///
    /// # Errors
    /// When the store cannot be opened or read.
    pub fn other_format_events_except(
        path: &Path,
        in_log: impl Fn(&str) -> bool,
    ) -> Result<Vec<(String, String)>> {
        let lines = Self::open_raw(path)?.event_lines_except(in_log)?;
        Ok(lines
            .into_iter()
            .filter(|(id, line)| {
                crate::log::line_id::stated_id(line.as_bytes()) == Some((id.as_str(), true))
            })
            .collect())
    }

    /// True when the event is already applied.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn has_event(&self, id: &str) -> Result<bool> {
        self.ks[K_EVENTS].contains_key(id).map_err(|e| self.err(e))
    }

    /// Whether the store holds event `id` as exactly `line` (not, say, the tombstone `gc` made
    /// of it, or a line altered under its id).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn has_line(&self, id: &str, line: &[u8]) -> Result<bool> {
        let stored = self.ks[K_EVENTS].get(id).map_err(|e| self.err(e))?;
        Ok(stored.is_some_and(|s| *s == *line))
    }

    /// The stored event `id`, decoded.
    ///
    /// # Errors
    /// When the store cannot be read or the stored line no longer decodes.
    pub fn stored_event(&self, id: &str) -> Result<Option<Event>> {
        let Some(line) = self.ks[K_EVENTS].get(id).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let text = std::str::from_utf8(&line).map_err(|e| self.err(e))?;
        Ok(Some(
            projections::decode_line(text).map_err(|e| self.err(e))?,
        ))
    }

    /// Applies events incrementally: each touched entry is refolded from all its events and its
    /// old contribution replaced by the new one. Already-applied events are skipped.
    ///
    /// # Errors
    /// When the store cannot be read or written, or a stored event no longer decodes.
    pub fn apply(&self, events: Vec<(Event, String)>, fingerprint: &Fingerprint) -> Result<usize> {
        // Long runs are applied in chunks, each one atomic write, so that memory stays bounded.
        // Only the last chunk records the new fingerprint: after a crash in between, the next
        // catch-up applies the same lines again, and the chunks already written are skipped as
        // applied events (their entries were refolded from all their events then).
        // The missing parents are recorded with the fingerprint, as of all the events.
        self.check_writer()?;
        let dangling = self.dangling_after(&events)?;
        let mut events = events;
        let mut applied = 0;
        let chunk = tuning::apply_chunk();
        while events.len() > chunk {
            let rest = events.split_off(chunk);
            applied += self.apply_chunk(events, None)?;
            events = rest;
        }
        Ok(applied + self.apply_chunk(events, Some((fingerprint, dangling)))?)
    }

    /// The events whose parents the log lacks, as [`Store::dangling`] answers it, once
    /// `events` are applied: those recorded whose parents are not among `events`, and those of
    /// `events` whose parents are neither among them nor applied. `None` when there were none
    /// and are none (nothing to write).
    fn dangling_after(&self, events: &[(Event, String)]) -> Result<Option<Vec<Dangling>>> {
        let ids: std::collections::HashSet<&str> =
            events.iter().map(|(e, _)| e.id.as_str()).collect();
        let before = self.dangling()?;
        let had = !before.is_empty();
        let mut out: Vec<Dangling> = before
            .into_iter()
            .filter(|d| !ids.contains(d.parent.as_str()))
            .collect();
        for (e, _) in events {
            for p in &e.parents {
                if !ids.contains(p.as_str()) && !self.has_event(p)? {
                    out.push(Dangling {
                        entry: e.entry.clone(),
                        event: e.id.clone(),
                        parent: p.clone(),
                    });
                }
            }
        }
        out.sort();
        out.dedup();
        Ok((had || !out.is_empty()).then_some(out))
    }

    /// Every event whose parent the log does not hold (a line deleted by hand, a partial
    /// copy), as of the last build or catch-up: one read of one record, absent when none.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn dangling(&self) -> Result<Vec<Dangling>> {
        Ok(self.get_json(&meta_key(DANGLING))?.unwrap_or_default())
    }

    /// The entries whose stored text held a secret (redacted in every state read from here),
    /// with where: one read of one record, absent when none.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn secrets(&self) -> Result<Secrets> {
        Ok(self.get_json(&meta_key(SECRETS))?.unwrap_or_default())
    }

    fn apply_chunk(
        &self,
        events: Vec<(Event, String)>,
        last: Option<(&Fingerprint, Option<Vec<Dangling>>)>,
    ) -> Result<usize> {
        // An event projects onto every entry it names (a supersede with its replacement: the
        // replaced entry and the new one).
        let mut by_entry: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        let mut batch = self.db.batch().durability(None);
        let mut applied = 0;
        let (events_ks, proj) = (&self.ks[K_EVENTS], &self.ks[K_PROJ]);
        for (event, line) in events {
            if !seen.insert(event.id.clone()) || self.has_event(&event.id)? {
                continue;
            }
            batch.insert(events_ks, event.id.as_bytes(), line.as_bytes());
            applied += 1;
            for entry in event.entries() {
                by_entry
                    .entry(entry.to_owned())
                    .or_default()
                    .push(event.clone());
            }
        }
        let mut stats = Stats {
            totals: self.stats_totals()?,
            ..Stats::default()
        };
        let mut days = BTreeSet::new();
        let mut text_stats = self.text_stats()?;
        let old_recent = self.recent_operations()?;
        let mut recent = old_recent.clone();
        let old_secrets = self.secrets()?;
        let mut secrets = old_secrets.clone();
        for event in by_entry.values().flatten() {
            recent.note_event(event);
        }
        for (entry, new) in by_entry {
            let mut all = self.entry_events(&entry)?;
            for event in new {
                batch.insert(
                    proj,
                    entry_key(&entry, T_EVENT, event.id.as_bytes()),
                    b"".as_slice(),
                );
                all.push(event);
            }
            let (old_state, old_text, old_derived, old_records) = self.entry_records(&entry)?;
            if let Some(s) = &old_state {
                self.load_stats_day(&mut stats, &mut days, s)?;
                stats.apply(s, -1);
            }
            if let Some(t) = &old_text {
                text_stats.apply_features(&t.features, -1);
                // Its postings in blocks, if a rebuild wrote some, no longer hold.
                batch.insert(
                    proj,
                    index_key(&crate::retrieval::text_index::mask_key(&entry)),
                    b"".as_slice(),
                );
            }
            let refs: Vec<&Event> = all.iter().collect();
            let mut new = derive(&entry, fold_entry_lean(&entry, &refs));
            secrets.remove(&entry);
            if new.state.is_some() && !new.secrets.is_empty() {
                secrets.insert(entry.clone(), std::mem::take(&mut new.secrets));
            }
            if let Some(s) = &new.state {
                self.load_stats_day(&mut stats, &mut days, s)?;
                stats.apply(s, 1);
            }
            if let Some(t) = &new.text {
                text_stats.apply_features(&t.features, 1);
            }
            let mut new_kvs = new.own;
            new_kvs.extend(new.audit);
            if let (Some(s), Some(t)) = (&new.state, &new.text) {
                new_kvs.extend(index_keys(s).into_iter().map(|k| (k, Vec::new())));
                new_kvs.extend(text_records(&s.id, t));
            }
            if let Some(s) = new.state.as_ref().filter(|s| s.is_cold()) {
                new_kvs.extend(cold_index_keys(s).into_iter().map(|k| (k, Vec::new())));
            }
            // A key written twice in one batch has no defined winner: remove only what the new
            // records do not write again. A record the store already holds as it is (an earlier
            // version, an earlier audit record) is not written again: a write to an entry of 400
            // versions journaled 150 KB of them, and so checkpointed the store every time.
            let rewritten: BTreeSet<&[u8]> = new_kvs.iter().map(|(k, _)| k.as_slice()).collect();
            for key in old_derived.iter().chain(old_records.keys()) {
                if !rewritten.contains(key.as_slice()) {
                    batch.remove(proj, key.clone());
                }
            }
            for (key, value) in new_kvs {
                if old_records.get(&key) != Some(&value) {
                    batch.insert(proj, key, value);
                }
            }
        }
        batch.insert(proj, meta_key("stats"), to_json(&stats.totals));
        self.hot_count
            .store(0, std::sync::atomic::Ordering::Relaxed);
        for day in &days {
            match stats.by_created_day.get(day) {
                Some(counters) => batch.insert(proj, stats_day_key(day), to_json(counters)),
                None => batch.remove(proj, stats_day_key(day)),
            }
        }
        batch.insert(proj, meta_key("text_stats"), to_json(&text_stats));
        if secrets != old_secrets {
            if secrets.is_empty() {
                batch.remove(proj, meta_key(SECRETS));
            } else {
                batch.insert(proj, meta_key(SECRETS), to_json(&secrets));
            }
        }
        for op in old_recent.0.iter().filter(|op| !recent.0.contains(op)) {
            batch.remove(proj, recent_key(op));
        }
        for op in recent.0.iter().filter(|op| !old_recent.0.contains(op)) {
            batch.insert(proj, recent_key(op), to_json(op));
        }
        if let Some((fingerprint, dangling)) = last {
            self.write_fingerprint(&mut batch, fingerprint)?;
            match dangling {
                Some(d) if d.is_empty() => batch.remove(proj, meta_key(DANGLING)),
                Some(d) => batch.insert(proj, meta_key(DANGLING), to_json(&d)),
                None => {}
            }
        }
        batch.insert(proj, meta_key("format"), STORE_FORMAT);
        batch.commit().map_err(|e| self.err(e))?;
        Ok(applied)
    }

    /// Loads the statistics record of the day `s` was created, once per apply.
    fn load_stats_day(
        &self,
        stats: &mut Stats,
        loaded: &mut BTreeSet<String>,
        s: &EntryState,
    ) -> Result<()> {
        let day = projections::time::day_of(&s.created_at);
        if loaded.insert(day.to_owned())
            && let Some(counters) = self.get_json(&stats_day_key(day))?
        {
            stats.by_created_day.insert(day.to_owned(), counters);
        }
        Ok(())
    }

    /// An entry's current state, its text analysis when it is hot, the keys of its index and
    /// text records (made from the state: a rebuild keeps the postings in blocks, not under
    /// these keys), and its own and audit records as stored, key and value: a change writes
    /// only those that differ, so that a write to an entry of many versions does not rewrite
    /// them all.
    fn entry_records(&self, entry: &str) -> Result<EntryRecordKeys> {
        let mut derived = Vec::new();
        let mut records = FxHashMap::default();
        let state = self.entry(entry)?;
        let text = state.as_ref().filter(|s| !s.is_cold()).map(analyze);
        if let (Some(s), Some(t)) = (&state, &text) {
            derived.extend(index_keys(s));
            derived.extend(text_records(&s.id, t).into_iter().map(|(k, _)| k));
        }
        if let Some(s) = state.as_ref().filter(|s| s.is_cold()) {
            derived.extend(cold_index_keys(s));
        }
        let mut own = entry.as_bytes().to_vec();
        own.push(0);
        let mut audit = AUDIT.to_vec();
        audit.extend_from_slice(format!("{entry}/").as_bytes());
        for prefix in [own.as_slice(), audit.as_slice()] {
            for item in self.ks[K_PROJ].prefix(prefix) {
                let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
                if prefix == own.as_slice() && key.get(own.len()) == Some(&T_EVENT) {
                    continue;
                }
                records.insert(key.to_vec(), value.to_vec());
            }
        }
        Ok((state, text, derived, records))
    }

    /// All stored events of one entry.
    ///
    /// # Errors
    /// When the store cannot be read or a stored line no longer decodes.
    pub fn entry_events(&self, entry: &str) -> Result<Vec<Event>> {
        let prefix = entry_key(entry, T_EVENT, b"");
        let mut out = Vec::new();
        for item in self.ks[K_PROJ].prefix(&prefix) {
            let key = item.key().map_err(|e| self.err(e))?;
            let id = &key[prefix.len()..];
            // Every event of an entry is in `events`: one missing means a file of the store
            // was lost, and folding the entry without it would serve (and write) a wrong state.
            let Some(line) = self.ks[K_EVENTS].get(id).map_err(|e| self.err(e))? else {
                return Err(self.err(format!(
                    "{UNRECOVERABLE}: event {} of entry {entry} is missing from its events (a \
                     file of the store was lost)",
                    String::from_utf8_lossy(id)
                )));
            };
            let text = std::str::from_utf8(&line).map_err(|e| self.err(e))?;
            out.push(projections::decode_line(text).map_err(|e| self.err(e))?);
        }
        Ok(out)
    }

    /// Calls `f` with the state of every entry, hot or cold, in id order, one at a time (an
    /// export of every entry holds one at a time, not all of them).
    ///
    /// # Errors
    /// When the store cannot be read, or `f` fails.
    pub fn for_each_state(&self, mut f: impl FnMut(EntryState) -> Result<()>) -> Result<()> {
        // Entry ids sort before every other record (`~a`, `~i`, `~m`).
        for item in self.ks[K_PROJ].range(..b"~".to_vec()) {
            let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
            // Entry records are `<id>\0<tag>…`; the states are the tags `h` and `c` alone.
            let Some(nul) = key.iter().position(|b| *b == 0) else {
                continue;
            };
            if key.len() != nul + 2 || !matches!(key[nul + 1], T_HOT | T_COLD) {
                continue;
            }
            f(serde_json::from_slice(&value).map_err(|e| self.err(e))?)?;
        }
        Ok(())
    }

    /// The state of an entry, hot or cold.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn entry(&self, id: &str) -> Result<Option<EntryState>> {
        match self.get_json(&entry_key(id, T_HOT, b""))? {
            Some(s) => Ok(Some(s)),
            None => self.get_json(&entry_key(id, T_COLD, b"")),
        }
    }

    /// Entry ids (hot and cold) starting with `prefix`, at most `limit`.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if prefix.starts_with('~') {
            return Ok(out);
        }
        for item in self.ks[K_PROJ].prefix(prefix.as_bytes()) {
            if out.len() >= limit {
                break;
            }
            let key = item.key().map_err(|e| self.err(e))?;
            if let [entry @ .., 0, T_HOT | T_COLD] = &*key {
                out.push(String::from_utf8_lossy(entry).into_owned());
            }
        }
        Ok(out)
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
        Ok(self.recent_among(limit, usize::MAX, |_| true, keep)?.0)
    }

    /// [`Store::recent`] that reads only entries whose id passes `pre` (a cheap test made
    /// before the entry is decoded) and gives up after looking at `budget` ids; also says
    /// whether every id was looked at.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn recent_among(
        &self,
        limit: usize,
        budget: usize,
        pre: impl Fn(&[u8]) -> bool,
        keep: impl Fn(&EntryState) -> bool,
    ) -> Result<(Vec<EntryState>, bool)> {
        let mut out = Vec::new();
        let prefix = [INDEX, b"updated\0"].concat();
        for (looked, item) in self.ks[K_PROJ].prefix(&prefix).rev().enumerate() {
            if out.len() >= limit {
                return Ok((out, false));
            }
            if looked >= budget {
                return Ok((out, false));
            }
            let key = item.key().map_err(|e| self.err(e))?;
            let Some(pos) = key.iter().rposition(|b| *b == 0) else {
                continue;
            };
            if !pre(&key[pos + 1..]) {
                continue;
            }
            let id = String::from_utf8_lossy(&key[pos + 1..]);
            if let Some(s) = self.get_json::<EntryState>(&entry_key(&id, T_HOT, b""))?
                && keep(&s)
            {
                out.push(s);
            }
        }
        Ok((out, true))
    }

    /// Ids of hot entries whose index dimension `dim` (e.g. `subject`) equals `value`.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn ids_with(&self, dim: &str, value: &str) -> Result<Vec<String>> {
        let prefix = index_prefix(dim, value);
        let mut ids = Vec::new();
        for item in self.ks[K_PROJ].prefix(&prefix) {
            let key = item.key().map_err(|e| self.err(e))?;
            ids.push(String::from_utf8_lossy(&key[prefix.len()..]).into_owned());
        }
        Ok(ids)
    }

    /// The groups of active entries with the same subject, scope and summary (what the write
    /// policy refuses, and a merge of two branches can bring), each sorted by id, from the
    /// duplicate index.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn duplicate_groups(&self) -> Result<Vec<Vec<EntryState>>> {
        let prefix = index_prefix("duplicate", "");
        let prefix = &prefix[..prefix.len() - 1];
        let mut keyed: Vec<(Vec<u8>, String)> = Vec::new();
        for item in self.ks[K_PROJ].prefix(prefix) {
            let key = item.key().map_err(|e| self.err(e))?;
            let rest = &key[prefix.len()..];
            if let Some(cut) = rest.iter().position(|b| *b == 0) {
                let id = String::from_utf8_lossy(&rest[cut + 1..]).into_owned();
                keyed.push((rest[..cut].to_vec(), id));
            }
        }
        let mut groups = Vec::new();
        for same in keyed.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
            let mut states = Vec::new();
            for (_, id) in same {
                if let Some(s) = self.entry(id)?
                    && s.status == projections::Status::Active
                {
                    states.push(s);
                }
            }
            // The hash names the group; the fields confirm it.
            let first = states.first().map(|s| s.fields.clone());
            states.retain(|s| {
                first.as_ref().is_some_and(|f| {
                    (&f.subject, &f.scope, &f.summary)
                        == (&s.fields.subject, &s.fields.scope, &s.fields.summary)
                })
            });
            if states.len() > 1 {
                groups.push(states);
            }
        }
        Ok(groups)
    }

    /// Statistics of the text index.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn text_stats(&self) -> Result<TextStats> {
        Ok(self.get_json(&meta_key("text_stats"))?.unwrap_or_default())
    }

    /// Visits the index records whose key (after the index range's own prefix) starts with
    /// `prefix`, in key order, with the rest of the key and the value, until `visit` returns
    /// false.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn scan_index(
        &self,
        prefix: &[u8],
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let full = index_key(prefix);
        for item in self.ks[K_PROJ].prefix(&full) {
            let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
            if !visit(&key[full.len()..], &value) {
                break;
            }
        }
        Ok(())
    }

    /// Ids of the entries whose postings in blocks are masked, in order (see
    /// [`crate::retrieval::text_index`]).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn text_masks(&self) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        self.scan_index(crate::retrieval::text_index::MASK_PREFIX, |id, _| {
            out.push(id.to_vec());
            true
        })?;
        Ok(out)
    }

    /// Every posting of the text index as `text\0<term>\0<id>` → value, in key order, whether
    /// a rebuild wrote it in a block or a later write alone: what [`Store::dump`] prints.
    fn logical_postings(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        use crate::retrieval::text_index::{
            BASE_PREFIX, BLOCK_PREFIX, Block, TERM_PREFIX, for_each_in_base, for_each_inline,
            for_each_position,
        };
        let masks = self.text_masks()?;
        let mut out = Vec::new();
        let mut base: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        self.scan_index(BASE_PREFIX, |key, value| {
            let parsed = for_each_in_base(value, |id, f| {
                let encoded = f.map(|f| {
                    let mut v = Vec::new();
                    f.encode(&mut v);
                    v
                });
                base.push((id.to_vec(), encoded));
            });
            if parsed.is_none() {
                out.push(([BASE_PREFIX, key].concat(), b"<damaged chunk>".to_vec()));
            }
            true
        })?;
        self.scan_index(BLOCK_PREFIX, |key, value| {
            let term = key.split(|b| *b == 0).next().unwrap_or_default();
            let masked = |id: &[u8]| masks.binary_search_by(|m| m.as_slice().cmp(id)).is_ok();
            let mut posting = |id: &[u8], tf: [u8; 4], features: &[u8]| {
                if !masked(id) {
                    let v = [tf.as_slice(), features].concat();
                    out.push(([TERM_PREFIX, term, b"\0", id].concat(), v));
                }
            };
            let mut lacking = Vec::new();
            let parsed = match Block::of(value) {
                Some(Block::Inline(postings)) => for_each_inline(postings, |id, p| {
                    let mut features = Vec::new();
                    p.features.encode(&mut features);
                    posting(id, p.tf, &features);
                    true
                }),
                Some(Block::Positions(postings)) => for_each_position(postings, |position, tf| {
                    match base.get(position as usize) {
                        Some((id, Some(features))) => posting(id, tf, features),
                        _ => lacking.push(position),
                    }
                    true
                }),
                None => None,
            };
            for position in lacking {
                out.push((
                    [BLOCK_PREFIX, key].concat(),
                    format!("<posting at {position}, which the base table lacks>").into_bytes(),
                ));
            }
            if parsed.is_none() {
                out.push(([BLOCK_PREFIX, key].concat(), b"<damaged block>".to_vec()));
            }
            true
        })?;
        self.scan_index(TERM_PREFIX, |key, value| {
            out.push(([TERM_PREFIX, key].concat(), value.to_vec()));
            true
        })?;
        out.sort();
        Ok(out)
    }

    /// The value of one index record (the key after the index range's own prefix), held as the
    /// store returned it, not copied: a chunk of the base table is 90 KB.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn index_value(&self, key: &[u8]) -> Result<Option<fjall::Slice>> {
        self.ks[K_PROJ].get(index_key(key)).map_err(|e| self.err(e))
    }

    /// Hot entries by id, in the order given (ids that are not hot are left out).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn hot_entries(&self, ids: &[&str]) -> Result<Vec<EntryState>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = self.get_json(&entry_key(id, T_HOT, b""))? {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Cold entries by id, in the order given (ids that are not cold are left out).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn cold_entries_by_id(&self, ids: &[&str]) -> Result<Vec<EntryState>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = self.get_json(&entry_key(id, T_COLD, b""))? {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Ids of cold entries in storage state `state` (`archived`, `expired` or `purged`), in id
    /// order, from the cold index (no scan of the entries).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn cold_ids(&self, state: &str) -> Result<Vec<String>> {
        self.ids_with("cold", state)
    }

    /// Ids of pinned cold entries, in id order, from the cold index.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn cold_pinned_ids(&self) -> Result<Vec<String>> {
        self.ids_with("cold_pinned", "true")
    }

    /// Cold entries (archived, expired, purged) that pass `keep`, in id order: the page after
    /// the first `offset`, at most `limit`, and how many pass in all. Cold entries have no
    /// index, so this reads every entry key: a listing for people, not for hot paths.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn cold_entries(
        &self,
        offset: usize,
        limit: usize,
        keep: impl Fn(&EntryState) -> bool,
    ) -> Result<(Vec<EntryState>, usize)> {
        let mut out = Vec::new();
        let mut total = 0;
        for item in self.ks[K_PROJ].prefix(projections::event::ENTRY_PREFIX.as_bytes()) {
            let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
            if !matches!(&*key, [.., 0, T_COLD]) {
                continue;
            }
            let state: EntryState = serde_json::from_slice(&value).map_err(|e| self.err(e))?;
            if !keep(&state) {
                continue;
            }
            if total >= offset && out.len() < limit {
                out.push(state);
            }
            total += 1;
        }
        Ok((out, total))
    }

    /// Number of hot entries.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn hot_count(&self) -> Result<usize> {
        use std::sync::atomic::Ordering;
        let known = self.hot_count.load(Ordering::Relaxed);
        let n = match known.checked_sub(1) {
            Some(n) => n,
            None => {
                // From the statistics: counting the keyspace would read every entry.
                let n = u64::try_from(self.stats_totals()?.hot_entries).unwrap_or(0);
                self.hot_count.store(n.saturating_add(1), Ordering::Relaxed);
                n
            }
        };
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Every version of an entry, oldest first: its events folded, one snapshot per version.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn versions(&self, entry: &str) -> Result<Vec<Version>> {
        let mut versions = fold_entry_of(entry, &self.entry_events(entry)?).versions;
        // Folded from the events, as the log holds them: a credential that reached the log is
        // shown `[redacted]` in every version, as in the entry.
        for v in &mut versions {
            crate::policy::stored::redact_state(&mut v.state);
            v.actor = crate::policy::stored::without_secrets(&v.actor);
        }
        projections::fill_changes(&mut versions);
        Ok(versions)
    }

    /// Audit records of one entry, or of all entries (ordered by time, then event id).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn audit(&self, entry: Option<&str>) -> Result<Vec<AuditRecord>> {
        let mut prefix = AUDIT.to_vec();
        match entry {
            Some(e) => {
                prefix.extend_from_slice(format!("{e}/").as_bytes());
                self.prefix_json(&prefix)
            }
            None => {
                let mut all: Vec<AuditRecord> = self.prefix_json(&prefix)?;
                all.sort_by(|a, b| (&a.at, &a.entry, a.seq).cmp(&(&b.at, &b.entry, b.seq)));
                Ok(all)
            }
        }
    }

    fn prefix_json<T: for<'de> Deserialize<'de>>(&self, prefix: &[u8]) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for item in self.ks[K_PROJ].prefix(prefix) {
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
        let prefix = stats_day_key("");
        let mut by_created_day = BTreeMap::new();
        for item in self.ks[K_PROJ].prefix(&prefix) {
            let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
            let day = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            by_created_day.insert(
                day,
                serde_json::from_slice(&value).map_err(|e| self.err(e))?,
            );
        }
        Ok(Stats {
            totals: self.stats_totals()?,
            by_created_day,
        })
    }

    /// The statistics counters over all entries.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn stats_totals(&self) -> Result<projections::stats::Counters> {
        Ok(self.get_json(&meta_key("stats"))?.unwrap_or_default())
    }

    /// The statistics counters of the entries created from day `from` to day `to`
    /// (`YYYY-MM-DD`, both included, `None` open): reads one record per day of the range.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn stats_created_between(
        &self,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<projections::stats::Counters> {
        if from.is_none() && to.is_none() {
            return self.stats_totals();
        }
        let mut out = projections::stats::Counters::default();
        let start = stats_day_key(from.unwrap_or(""));
        // Past every day key: the day part never holds a byte above `9`.
        let end = to.map_or_else(|| stats_day_key("\u{7f}"), stats_day_key);
        if start > end {
            return Ok(out);
        }
        for item in self.ks[K_PROJ].range(start..=end) {
            let value = item.value().map_err(|e| self.err(e))?;
            let counters: projections::stats::Counters =
                serde_json::from_slice(&value).map_err(|e| self.err(e))?;
            out.merge(&counters);
        }
        Ok(out)
    }

    /// The latest create, supersede and deprecate operations.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn recent_operations(&self) -> Result<projections::RecentOperations> {
        let mut ops = Vec::with_capacity(projections::stats::RECENT_OPERATIONS);
        let prefix = meta_key(RECENT_PREFIX);
        for item in self.ks[K_PROJ]
            .prefix(&prefix)
            .rev()
            .take(projections::stats::RECENT_OPERATIONS)
        {
            let value = item.value().map_err(|e| self.err(e))?;
            ops.push(serde_json::from_slice(&value).map_err(|e| self.err(e))?);
        }
        Ok(projections::RecentOperations(ops))
    }

    /// Reads every record of the store and returns how many there are: a damaged block (a
    /// checksum that fails, a block that does not decode) is found now, by `health`, rather
    /// than by the read that needs it part way through its output (`dump`).
    ///
    /// # Errors
    /// [`Error::Store`] naming what could not be read.
    pub fn read_all(&self) -> Result<u64> {
        let mut records = 0u64;
        for ks in &self.ks {
            for item in ks.iter() {
                item.into_inner().map_err(|e| self.err(e))?;
                records += 1;
            }
        }
        Ok(records)
    }

    /// Writes every projection record canonically, one per line: the kind of record, its key
    /// and its value. The log fingerprint is left out, so two stores built from the same *set*
    /// of events dump the same bytes whatever the order of their logs; the text index's postings
    /// come last, one per entry and term, whether they are in blocks or not.
    ///
    /// # Errors
    /// When the store cannot be read or `out` written.
    pub fn dump(&self, out: &mut dyn std::io::Write) -> Result<()> {
        for (k, ks) in self.ks.iter().enumerate() {
            for item in ks.iter() {
                let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
                let (name, shown) = if k == K_EVENTS {
                    ("events", key.to_vec())
                } else if let Some(rest) = key.strip_prefix(META) {
                    // Where the store stands with the log, and when it was last built: how it
                    // got its state, not the state.
                    if rest == b"log"
                        || rest == compact::BUILT.as_bytes()
                        || rest.starts_with(LOG_BLOCK_PREFIX.as_bytes())
                    {
                        continue;
                    }
                    ("meta", rest.to_vec())
                } else if let Some(rest) =
                    key.strip_prefix(INDEX).or_else(|| key.strip_prefix(TEXT))
                {
                    use crate::retrieval::text_index::{
                        BASE_PREFIX, BLOCK_PREFIX, MASK_PREFIX, TERM_PREFIX,
                    };
                    if [BASE_PREFIX, BLOCK_PREFIX, MASK_PREFIX, TERM_PREFIX]
                        .iter()
                        .any(|p| rest.starts_with(p))
                    {
                        // Postings are printed below, one per entry, whatever their layout.
                        continue;
                    }
                    ("index", rest.to_vec())
                } else if let Some(rest) = key.strip_prefix(AUDIT) {
                    ("audit", rest.to_vec())
                } else {
                    match key.iter().position(|b| *b == 0) {
                        Some(p) => {
                            let (entry, tail) = (&key[..p], &key[p + 1..]);
                            let suffix = tail.get(1..).unwrap_or_default();
                            match tail.first() {
                                Some(&T_HOT) => ("entries", entry.to_vec()),
                                Some(&T_COLD) => ("cold", entry.to_vec()),
                                Some(&T_EVENT) => ("entry_events", [entry, suffix].concat()),
                                Some(&T_VERSION) => ("versions", [entry, b"/", suffix].concat()),
                                _ => ("unknown", key.to_vec()),
                            }
                        }
                        None => ("unknown", key.to_vec()),
                    }
                };
                // The raw events are the log's lines, which may hold a secret that reached
                // the log without memlog's checks: never printed.
                writeln!(
                    out,
                    "{name}\t{}\t{}",
                    String::from_utf8_lossy(&shown).escape_default(),
                    dump_value(&value)
                )?;
            }
        }
        for (key, value) in self.logical_postings()? {
            writeln!(
                out,
                "index\t{}\t{}",
                String::from_utf8_lossy(&key).escape_default(),
                dump_value(&value)
            )?;
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
        let mut journals: Vec<(u64, PathBuf)> = Vec::new();
        for item in fs_err::read_dir(&path)? {
            let p = item?.path();
            if p.extension().is_some_and(|e| e == "jnl")
                && let Some(id) = p
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.parse().ok())
            {
                journals.push((id, p));
            }
        }
        journals.sort();
        // The newest journal is emptied, not removed: fjall recovers its sequence counter from
        // the tables only while replaying an existing journal, and a store reopened without one
        // would number new writes below the flushed ones, which would then hide them.
        if let Some((_, active)) = journals.pop() {
            fs_err::OpenOptions::new()
                .write(true)
                .open(&active)?
                .set_len(0)?;
        }
        for (_, sealed) in journals {
            fs_err::remove_file(sealed)?;
        }
        if let Ok(dir) = fs_err::File::open(&path) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// [`Store::checkpoint`] after a bulk write (a catch-up after a pull, many events applied
    /// one by one), which first merges what the write left in level 0 down into the levels
    /// below. Left there, it would be merged by the checkpoint that adds the fourth table to
    /// level 0, in some later process and inside the store lock: after a pull of 10,000 events,
    /// a stall of 0.7 s in a later single write. Here the merge is paid once, by the catch-up.
    /// A merge starts only at four tables in level 0, so a keyspace with fewer gets tiny tables
    /// until it has four: each holds one of its own records written again unchanged. A flush
    /// made while a merge runs starts none (so level 0 may keep four tables and no merge
    /// coming): when level 0 has not changed for [`SETTLE_STUCK`], another tiny table goes in.
    /// Past [`SETTLE_WAIT`] the merge is left to later processes, as it was before.
    ///
    /// # Errors
    /// When fjall fails.
    pub fn checkpoint_settled(self) -> Result<()> {
        self.flush()?;
        let deadline = std::time::Instant::now() + SETTLE_WAIT;
        for ks in &self.ks {
            let mut pads = 0;
            let mut seen = (ks.l0_table_count(), std::time::Instant::now());
            while ks.l0_table_count() > 0 && std::time::Instant::now() < deadline {
                let l0 = ks.l0_table_count();
                if l0 != seen.0 {
                    seen = (l0, std::time::Instant::now());
                }
                // A flush starts a merge when it leaves enough tables in level 0, unless one is
                // running already: when nothing has moved for a while, flush again.
                let stuck = seen.1.elapsed() > SETTLE_STUCK;
                if (l0 < L0_COMPACTION_TABLES || stuck) && pads < SETTLE_PADS {
                    let Some(item) = ks.first_key_value() else {
                        break;
                    };
                    let (key, value) = item.into_inner().map_err(|e| self.err(e))?;
                    ks.insert(key, value).map_err(|e| self.err(e))?;
                    self.rotate_and_wait(ks)?;
                    pads += 1;
                    seen = (ks.l0_table_count(), std::time::Instant::now());
                    continue;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        self.checkpoint()
    }

    /// Bytes in the store's journal, which the next process to open the store replays.
    pub fn journal_bytes(&self) -> u64 {
        journal_bytes(&self.path)
    }

    /// Forces memtables to disk so the next process opens without replaying a long journal.
    ///
    /// # Errors
    /// When fjall fails.
    pub fn flush(&self) -> Result<()> {
        self.check_writer()?;
        for ks in &self.ks {
            self.rotate_and_wait(ks)?;
        }
        Ok(())
    }

    /// Seals the active memtable of `ks` and waits until every sealed memtable is a table,
    /// memtables recovered from a journal on open included (emptying the journal before they
    /// reach a table would lose them). fjall's own wait never ends when its flush fails (a
    /// full disk), holding the store lock forever; this one gives up after
    /// [`FLUSH_WAIT`] with an error that names the likely cause, and the journal still holds
    /// everything.
    fn rotate_and_wait(&self, ks: &fjall::Keyspace) -> Result<()> {
        ks.rotate_memtable().map_err(|e| self.err(e))?;
        let deadline = std::time::Instant::now() + FLUSH_WAIT;
        while ks.sealed_memtable_count() > 0 {
            if std::time::Instant::now() > deadline {
                return Err(self.err(format!(
                    "its memtables were not written to disk within {} s (is the disk full?); \
                     nothing is lost: the store's journal holds them",
                    FLUSH_WAIT.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
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
pub mod compact;
mod rebuild;
pub mod session;

pub use rebuild::{LogBuild, Verify};

#[cfg(test)]
mod tests {
    use super::*;
    use projections::{EntryFields, EventData, Kind, Section, Status};

    fn fields(n: usize) -> EntryFields {
        EntryFields {
            section: Section::ALL[n % 4],
            kind: Kind::ALL[n % 8],
            subject: format!("subject-{}", n % 3),
            scope: "repo".into(),
            summary: format!("summary {n} \"quoted\""),
            content: format!("content {n}\nsecond line"),
            tags: vec![format!("t{}", n % 2), "all".into()],
            confidence: 0.5,
            evidence: vec![],
            related_entries: vec![],
            valid_from: None,
            valid_to: None,
            review_interval: None,
        }
    }

    fn build(kind: &str, n: usize) -> Event {
        let at = format!("2026-01-01T00:00:{:02}.000Z", n % 60);
        let data = EventData::Create {
            fields: fields(n),
            status: Status::Active,
        };
        Event::build(kind, "tester", &at, vec![], data).unwrap_or_else(|e| panic!("{e}"))
    }

    fn dump(path: &Path) -> String {
        let (store, _) = Store::open(path).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        store.dump(&mut out).unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(out).unwrap_or_default()
    }

    /// The fingerprint read back is the one written, whatever happened to the log's blocks in
    /// between (grown by an append, rewritten in the middle, cut short), whether a rebuild or
    /// an apply wrote it; and its block records stay out of the dump.
    #[test]
    fn fingerprints_round_trip_through_block_records() {
        use crate::log::stamp::{BLOCK, BlockHashes};
        let fp = |log: &[u8]| Fingerprint {
            len: log.len() as u64,
            lines: 7,
            hashes: BlockHashes::of(log),
            stamp: None,
        };
        let log: Vec<u8> = (0..3 * BLOCK + 100).map(|i| (i % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s");
        let events = vec![(build("", 1), build("", 1).to_line().unwrap_or_default())];
        Store::build_at(&path, events, &fp(&log)).unwrap_or_else(|e| panic!("{e}"));
        let dumped = dump(&path);
        let (store, _) = Store::open(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(store.fingerprint().ok().flatten(), Some(fp(&log)));
        let mut grown = log.clone();
        grown.extend(std::iter::repeat_n(7u8, BLOCK));
        let mut rewritten = grown.clone();
        rewritten[BLOCK + 5] ^= 1;
        let cut = &log[..BLOCK + 9];
        for next in [fp(&grown), fp(&rewritten), fp(cut), fp(&log)] {
            store.apply(vec![], &next).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(store.fingerprint().ok().flatten(), Some(next.clone()));
            assert_eq!(store.log_stamp().ok().flatten(), Some(None));
        }
        drop(store);
        assert_eq!(dump(&path), dumped);
    }

    /// Building from the log's bytes gives the same store as building from decoded events,
    /// duplicates, one-line supersedes and missing parents included.
    #[test]
    fn build_from_log_equals_build_from_events() {
        let mut events: Vec<Event> = (0..40).map(|n| build("", n)).collect();
        let target = events[3].clone();
        let at = "2026-01-02T00:00:00.000Z";
        let supersede = Event::supersede_with_replacement(
            &target.entry,
            "tester",
            at,
            vec![target.id.clone()],
            fields(99),
            Status::Active,
            Some("newer".into()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let orphan = Event::build(
            &events[5].entry,
            "tester",
            at,
            vec!["0".repeat(64)],
            EventData::Deprecate { reason: None },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        events.push(supersede);
        events.push(orphan.clone());
        events.push(events[7].clone());
        let mut buf = Vec::new();
        for e in &events {
            buf.extend_from_slice(e.to_line().unwrap_or_default().as_bytes());
            buf.push(b'\n');
        }
        let fp = Fingerprint {
            len: buf.len() as u64,
            lines: events.len() as u64,
            hashes: crate::log::stamp::BlockHashes::of(&buf),
            stamp: None,
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let pairs: Vec<(Event, String)> = events
            .iter()
            .map(|e| (e.clone(), e.to_line().unwrap_or_default()))
            .collect();
        let applied = Store::build_at(&a, pairs, &fp).unwrap_or_else(|e| panic!("{e}"));
        let log_path = dir.path().join("events.jsonl");
        fs_err::write(&log_path, &buf).unwrap_or_else(|e| panic!("{e}"));
        let log = crate::log::by_offset::LogFile::open(&log_path).unwrap_or_else(|e| panic!("{e}"));
        let (built, read) = Store::build_from_log_at(&b, &log, None, Verify::Hashes, None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read, fp, "the fingerprint of the log read");
        assert_eq!(applied, 42);
        assert_eq!(built.applied, 42);
        assert_eq!(
            built.dangling,
            vec![Dangling {
                entry: orphan.entry.clone(),
                event: orphan.id.clone(),
                parent: "0".repeat(64),
            }]
        );
        let (left, right) = (dump(&a), dump(&b));
        assert!(left.contains("entries\t"), "{left}");
        assert_eq!(left, right);
    }

    /// The events whose parents the log lacks are recorded by a build and by each apply, for
    /// as long as they lack them: an apply that brings the parent clears the record, as a
    /// build from all the events would.
    #[test]
    fn missing_parents_are_kept_until_the_parent_comes() {
        let create = build("", 1);
        let deprecate = Event::build(
            &create.entry,
            "tester",
            "2026-01-02T00:00:00.000Z",
            vec![create.id.clone()],
            EventData::Deprecate { reason: None },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let other = build("", 2);
        let line = |e: &Event| (e.clone(), e.to_line().unwrap_or_default());
        let fp = Fingerprint {
            len: 0,
            lines: 0,
            hashes: crate::log::stamp::BlockHashes::of(&[]),
            stamp: None,
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (path, whole) = (dir.path().join("s"), dir.path().join("whole"));
        Store::build_at(&path, vec![line(&deprecate)], &fp).unwrap_or_else(|e| panic!("{e}"));
        let (store, _) = Store::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let missing = Dangling {
            entry: create.entry.clone(),
            event: deprecate.id.clone(),
            parent: create.id.clone(),
        };
        let dangling = |store: &Store| store.dangling().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dangling(&store), vec![missing.clone()]);
        store
            .apply(vec![line(&other)], &fp)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dangling(&store), vec![missing]);
        store
            .apply(vec![line(&create)], &fp)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dangling(&store), vec![]);
        drop(store);
        let all = vec![line(&deprecate), line(&other), line(&create)];
        Store::build_at(&whole, all, &fp).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dump(&path), dump(&whole));
    }

    /// A rebuild that writes its common terms' postings by positions holds the same postings,
    /// feature records and everything else as one that writes them all inline; masks and later
    /// postings apply to both alike.
    #[test]
    fn postings_by_positions_hold_what_inline_ones_do() {
        let events: Vec<Event> = (0..40).map(|n| build("", n)).collect();
        let pairs: Vec<(Event, String)> = events
            .iter()
            .map(|e| (e.clone(), e.to_line().unwrap_or_default()))
            .collect();
        let fp = Fingerprint {
            len: 0,
            lines: 0,
            hashes: crate::log::stamp::BlockHashes::of(&[]),
            stamp: None,
        };
        let forms = |path: &Path| {
            let (store, _) = Store::open(path).unwrap_or_else(|e| panic!("{e}"));
            let mut forms = BTreeSet::new();
            store
                .scan_index(crate::retrieval::text_index::BLOCK_PREFIX, |_, v| {
                    forms.insert(v.first().copied().unwrap_or_default());
                    true
                })
                .unwrap_or_else(|e| panic!("{e}"));
            forms
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (inline, positions) = (dir.path().join("inline"), dir.path().join("positions"));
        Store::build_at(&inline, pairs.clone(), &fp).unwrap_or_else(|e| panic!("{e}"));
        tuning::shrink_for_tests();
        Store::build_at(&positions, pairs, &fp).unwrap_or_else(|e| panic!("{e}"));
        tuning::restore_defaults();
        use crate::retrieval::text_index::{INLINE_BLOCK, POSITION_BLOCK};
        assert_eq!(forms(&inline), BTreeSet::from([INLINE_BLOCK]));
        // "summary", "content" and "second" are in every entry, "t0" in half, a number in one.
        assert_eq!(
            forms(&positions),
            BTreeSet::from([INLINE_BLOCK, POSITION_BLOCK])
        );
        let (left, right) = (dump(&inline), dump(&positions));
        let all = left.matches("index\ttext\\u{0}content\\u{0}m-").count();
        assert_eq!(all, 40, "{left}");
        assert_eq!(left, right);
        // A later supersede masks the entry in both, and its new postings stand alone.
        let target = &events[3];
        let supersede = Event::supersede_with_replacement(
            &target.entry,
            "tester",
            "2026-01-02T00:00:00.000Z",
            vec![target.id.clone()],
            fields(99),
            Status::Active,
            Some("newer".into()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let line = supersede.to_line().unwrap_or_default();
        for path in [&inline, &positions] {
            let (store, _) = Store::open(path).unwrap_or_else(|e| panic!("{e}"));
            store
                .apply(vec![(supersede.clone(), line.clone())], &fp)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(dump(&inline), dump(&positions));
        assert_ne!(dump(&inline), left);
    }

    /// After a bulk write, a settled checkpoint leaves nothing in level 0 of any keyspace (so
    /// no later process merges it inside the store lock), and the store holds what a store
    /// built at once from the same events holds.
    #[test]
    fn settled_checkpoint_empties_level_zero() {
        let pair = |e: Event| {
            let line = e.to_line().unwrap_or_default();
            (e, line)
        };
        let fp = Fingerprint {
            len: 1,
            lines: 1,
            hashes: crate::log::stamp::BlockHashes::of(b"x"),
            stamp: None,
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (grown, whole) = (dir.path().join("grown"), dir.path().join("whole"));
        let first: Vec<_> = (0..20).map(|n| pair(build("", n))).collect();
        Store::build_at(&grown, first, &fp).unwrap_or_else(|e| panic!("{e}"));
        let (store, _) = Store::open(&grown).unwrap_or_else(|e| panic!("{e}"));
        for round in 0..2 {
            let more: Vec<_> = (0..10)
                .map(|n| pair(build("", 20 + round * 10 + n)))
                .collect();
            store.apply(more, &fp).unwrap_or_else(|e| panic!("{e}"));
            store.flush().unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(store.ks.iter().all(|ks| ks.l0_table_count() > 0));
        store.checkpoint_settled().unwrap_or_else(|e| panic!("{e}"));
        let (store, _) = Store::open(&grown).unwrap_or_else(|e| panic!("{e}"));
        let l0: Vec<usize> = store.ks.iter().map(Keyspace::l0_table_count).collect();
        assert_eq!(l0, vec![0, 0]);
        drop(store);
        let all: Vec<_> = (0..40).map(|n| pair(build("", n))).collect();
        Store::build_at(&whole, all, &fp).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dump(&grown), dump(&whole));
    }

    /// A line that does not verify stops the build and names the line.
    #[test]
    fn build_from_log_refuses_a_damaged_line() {
        let mut line = build("", 1).to_line().unwrap_or_default();
        line = line.replacen("summary 1", "summary 2", 1);
        let buf = format!("{line}\n").into_bytes();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log_path = dir.path().join("x");
        fs_err::write(&log_path, &buf).unwrap_or_else(|e| panic!("{e}"));
        let log = crate::log::by_offset::LogFile::open(&log_path).unwrap_or_else(|e| panic!("{e}"));
        let result =
            Store::build_from_log_at(&dir.path().join("s"), &log, None, Verify::Hashes, None);
        assert!(
            matches!(result, Err(Error::CorruptLog { line: 1, .. })),
            "{result:?}"
        );
    }
}
