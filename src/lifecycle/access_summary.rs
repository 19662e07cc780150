//! The folded access counts (`.memlog/access-summary.tsv`): a header, then one line per entry
//! ever read with its count, then one line per entry with its first and last access, both in id
//! order.
//!
//! ```text
//! memlog-access-summary 1→1:40210,2:31877,5:20016→3310204
//! m-00a7…→2
//! …
//! m-00a7…→2026-11-01T09:12:44.120Z→2026-11-20T17:03:10.871Z
//! …
//! ```
//!
//! (→ is a tab.)
//!
//! The header holds how many entries have each count, and the length in bytes of the count
//! lines. The read-outs (`stats`, `lifecycle report`) need only how many entries were read how
//! often: the header gives that for the summary, and an entry read again since the fold is
//! found among the count lines (a third of the file) without parsing the others. Only the
//! lifecycle engine reads the times. The JSON object older versions wrote
//! (`access-summary.json`, 12 MB at 100,000 entries) took `stats` 120 ms to parse; it is still
//! read when no summary of this form exists, and the next fold replaces it.

use super::access_log::AccessStats;
use crate::error::Result;
use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

/// The summary's file in a project's state directory.
pub const FILE: &str = "access-summary.tsv";
/// The summary as older versions wrote it: a JSON object of [`AccessStats`] by entry id.
pub const OLD_FILE: &str = "access-summary.json";
/// The first words of the header line: the form and its version.
const HEADER: &str = "memlog-access-summary 1";

/// The longest header read: past it, the header is taken as damaged and the lines are counted.
const HEADER_MAX: u64 = 64 * 1024;

/// How many entries have each access count (count, entries), the count of an entry never read
/// (0) left out.
pub type Histogram = BTreeMap<u64, u64>;

/// What a summary's header states.
struct Header {
    histogram: Histogram,
    /// Bytes of the count lines.
    counts_len: usize,
    /// Bytes of the time lines: with the header's and the counts', the file's size. A file of
    /// another size was edited (lines added, removed, a byte-order mark) and is read whole.
    times_len: usize,
}

/// A summary read from disk, kept as bytes and parsed on demand.
#[derive(Debug, Default)]
pub struct Summary {
    /// The count lines (`id`, tab, count), each ending in a newline.
    counts: Vec<u8>,
    /// The time lines (`id`, tab, first access, tab, last access), when they were read.
    times: Vec<u8>,
    histogram: Histogram,
}

impl Summary {
    /// The summary in `state_dir` (the current form, else the older JSON object, else empty),
    /// with its times only `with_times`.
    ///
    /// # Errors
    /// When a file exists but cannot be read.
    pub fn read(state_dir: &Path, with_times: bool) -> Result<Self> {
        match fs_err::File::open(state_dir.join(FILE)) {
            Ok(file) => {
                let size = file.metadata()?.len();
                let mut file = std::io::BufReader::with_capacity(64 * 1024, file);
                let mut header = String::new();
                // A header is a few hundred bytes; one edited by hand may be anything.
                (&mut file).take(HEADER_MAX).read_line(&mut header)?;
                let Some(stated) = parse_header(&header).filter(|h| h.states_size(&header, size))
                else {
                    // Not a header this version writes (cut short, edited by hand): the file is
                    // read as a whole and counted again from its lines.
                    let mut rest = Vec::new();
                    file.read_to_end(&mut rest)?;
                    return Ok(Self::of_lines(header.into_bytes(), rest));
                };
                // A header edited by hand may state any length: never more than the file.
                let cap = usize::try_from(size).unwrap_or(usize::MAX);
                let mut counts = vec![0; stated.counts_len.min(cap)];
                let read = read_up_to(&mut file, &mut counts)?;
                counts.truncate(read);
                let mut times = Vec::new();
                if with_times {
                    file.read_to_end(&mut times)?;
                }
                // Lines edited by hand (sorted otherwise, repeated, cut, with carriage returns):
                // the header's split no longer holds, and the lines are counted again. (One
                // pass comparing ids: about 2 ms for 100,000 entries read.)
                if !in_order(&counts, 1) || (with_times && !in_order(&times, 2)) {
                    if !with_times {
                        file.read_to_end(&mut times)?;
                    }
                    counts.extend_from_slice(&times);
                    return Ok(Self::of_lines(header.into_bytes(), counts));
                }
                Ok(Self {
                    counts,
                    times,
                    histogram: stated.histogram,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match fs_err::read(state_dir.join(OLD_FILE)) {
                    Ok(bytes) => {
                        let old: BTreeMap<String, AccessStats> =
                            serde_json::from_slice(&bytes).unwrap_or_default();
                        Ok(Self::parse(&render(&old)))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The histogram the header of the summary in `state_dir` states, read without the
    /// lines; `None` when there is no summary of the current form or its header does not read.
    ///
    /// # Errors
    /// When the file exists but cannot be read.
    pub fn stated_histogram(state_dir: &Path) -> Result<Option<Histogram>> {
        let file = match fs_err::File::open(state_dir.join(FILE)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let size = file.metadata()?.len();
        let mut header = String::new();
        std::io::BufReader::new(file)
            .take(HEADER_MAX)
            .read_line(&mut header)?;
        Ok(parse_header(&header)
            .filter(|h| h.states_size(&header, size))
            .map(|h| h.histogram))
    }

    /// A summary of the bytes of a whole file of the current form.
    fn parse(bytes: &[u8]) -> Self {
        let end = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
        let (header, rest) = bytes.split_at(end);
        let header_text = std::str::from_utf8(header).unwrap_or_default();
        match parse_header(header_text) {
            Some(stated)
                if stated.states_size(header_text, bytes.len() as u64)
                    && in_order(&rest[..stated.counts_len.min(rest.len())], 1)
                    && in_order(&rest[stated.counts_len.min(rest.len())..], 2) =>
            {
                let split = stated.counts_len.min(rest.len());
                Self {
                    counts: rest[..split].to_vec(),
                    times: rest[split..].to_vec(),
                    histogram: stated.histogram,
                }
            }
            _ => Self::of_lines(header.to_vec(), rest.to_vec()),
        }
    }

    /// A summary whose header did not read, or whose lines are not as memlog writes them
    /// (edited by hand: out of order, repeated, with a byte-order mark or carriage returns):
    /// its lines sorted into counts and times, in id order, an entry named twice taking the
    /// larger count and the earliest first and latest last access, and its histogram counted
    /// from them.
    fn of_lines(first: Vec<u8>, rest: Vec<u8>) -> Self {
        let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
        let mut times: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
        let first = first.strip_prefix(BOM.as_bytes()).unwrap_or(&first);
        for line in first
            .split(|b| *b == b'\n')
            .chain(rest.split(|b| *b == b'\n'))
        {
            if line.starts_with(HEADER.as_bytes()) {
                continue;
            }
            if let Some((id, n)) = id_and_count(line) {
                let kept = counts.entry(id).or_insert(n);
                *kept = (*kept).max(n);
            } else if let Some((id, f, l)) = id_and_times(line) {
                let kept = times.entry(id).or_insert((f, l));
                *kept = (kept.0.min(f), kept.1.max(l));
            }
        }
        let mut s = Self::default();
        let mut histogram = Histogram::new();
        for (id, n) in &counts {
            s.counts
                .extend_from_slice(format!("{id}\t{n}\n").as_bytes());
            *histogram.entry(*n).or_insert(0) += 1;
        }
        for (id, (f, l)) in &times {
            s.times
                .extend_from_slice(format!("{id}\t{f}\t{l}\n").as_bytes());
        }
        s.histogram = histogram;
        s
    }

    /// How many entries have each count.
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }

    fn count_lines(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts.split(|b| *b == b'\n').filter_map(id_and_count)
    }

    /// Each entry with its count and (when they were read) its times, in id order; lines that
    /// do not read are skipped.
    pub fn entries(&self) -> impl Iterator<Item = (&str, AccessStats)> {
        let mut times = self
            .times
            .split(|b| *b == b'\n')
            .filter_map(id_and_times)
            .peekable();
        self.count_lines().map(move |(id, count)| {
            while times.next_if(|(t, _, _)| *t < id).is_some() {}
            let (first, last) = times
                .next_if(|(t, _, _)| *t == id)
                .map_or((String::new(), String::new()), |(_, f, l)| {
                    (f.to_owned(), l.to_owned())
                });
            (id, AccessStats { count, first, last })
        })
    }

    /// The counts of `ids` (ascending, each once), in their order, by one walk over the count
    /// lines.
    pub fn counts_of(&self, ids: &[&str]) -> Vec<u64> {
        let body = self.counts.as_slice();
        let mut out = Vec::with_capacity(ids.len());
        // The start of the first line not yet passed.
        let mut at = 0;
        let key_at = |at: usize| {
            let rest = body.get(at..).unwrap_or_default();
            let end = memchr::memchr2(b'\t', b'\n', rest).unwrap_or(rest.len());
            &rest[..end]
        };
        for id in ids {
            while at < body.len() && key_at(at) < id.as_bytes() {
                at = memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i + 1);
            }
            let hit = at < body.len() && key_at(at) == id.as_bytes();
            out.push(if hit {
                let end = memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i);
                id_and_count(&body[at..end]).map_or(0, |(_, n)| n)
            } else {
                0
            });
        }
        out
    }
}

/// Reads into `buf` until it is full or the file ends; returns how much was read.
fn read_up_to(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut read = 0;
    while read < buf.len() {
        match file.read(&mut buf[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(read)
}

/// The histogram of `summary` with the reads since the fold added: `reads` (entry id, reads
/// since; ids ascending, each once) moves each entry from the count the summary holds to that
/// count plus its reads.
pub fn add_reads(summary: &Summary, reads: &[(&str, u64)]) -> Histogram {
    let mut histogram = summary.histogram().clone();
    let ids: Vec<&str> = reads.iter().map(|(id, _)| *id).collect();
    for ((_, added), before) in reads.iter().zip(summary.counts_of(&ids)) {
        if *added == 0 {
            continue;
        }
        if before > 0
            && let Some(n) = histogram.get_mut(&before)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                histogram.remove(&before);
            }
        }
        *histogram.entry(before.saturating_add(*added)).or_insert(0) += 1;
    }
    histogram
}

/// The bytes of a summary of `all` (entries in id order; those whose id or times would break
/// a line, which memlog never makes, left out).
pub fn render(all: &BTreeMap<String, AccessStats>) -> Vec<u8> {
    let fits = |s: &str| !s.bytes().any(|b| matches!(b, b'\t' | b'\n' | b'\r'));
    let kept: Vec<(&String, &AccessStats)> = all
        .iter()
        .filter(|(id, s)| {
            s.count > 0 && !id.is_empty() && fits(id) && fits(&s.first) && fits(&s.last)
        })
        .collect();
    let mut histogram = Histogram::new();
    let mut counts = Vec::with_capacity(kept.len() * 32);
    let mut times = Vec::with_capacity(kept.len() * 80);
    for (id, s) in &kept {
        *histogram.entry(s.count).or_insert(0) += 1;
        counts.extend_from_slice(format!("{id}\t{}\n", s.count).as_bytes());
        times.extend_from_slice(format!("{id}\t{}\t{}\n", s.first, s.last).as_bytes());
    }
    let parts: Vec<String> = histogram.iter().map(|(c, n)| format!("{c}:{n}")).collect();
    let mut out = format!(
        "{HEADER}\t{}\t{}\t{}\n",
        parts.join(","),
        counts.len(),
        times.len()
    )
    .into_bytes();
    out.extend_from_slice(&counts);
    out.extend_from_slice(&times);
    out
}

/// The byte-order mark an editor may put before the header.
const BOM: &str = "\u{feff}";

/// Whether lines (the count lines, or the time lines) are as memlog writes them: whole lines
/// without carriage returns, each with `tabs` tabs (one in a count line, two in a time line),
/// the ids strictly ascending (so that one walk finds an entry).
fn in_order(lines: &[u8], tabs: usize) -> bool {
    if lines.last().is_some_and(|b| *b != b'\n') || memchr::memchr(b'\r', lines).is_some() {
        return false;
    }
    let mut previous: Option<&[u8]> = None;
    for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        if memchr::memchr_iter(b'\t', line).count() != tabs {
            return false;
        }
        let id = &line[..memchr::memchr(b'\t', line).unwrap_or(line.len())];
        if previous.is_some_and(|p| p >= id) {
            return false;
        }
        previous = Some(id);
    }
    true
}

impl Header {
    /// Whether the file, `header` (its first line, as read) and `size` bytes in all, is as long
    /// as this header says: lines added or removed by hand, or a byte-order mark, change it.
    fn states_size(&self, header: &str, size: u64) -> bool {
        let stated = header
            .len()
            .checked_add(self.counts_len)
            .and_then(|n| n.checked_add(self.times_len));
        stated.is_some_and(|n| n as u64 == size)
    }
}

fn parse_header(line: &str) -> Option<Header> {
    let mut fields = line
        .trim_end()
        .strip_prefix(HEADER)?
        .strip_prefix('\t')?
        .split('\t');
    let histogram_text = fields.next()?;
    let counts_len = fields.next()?.parse().ok()?;
    let times_len = fields.next()?.parse().ok()?;
    if fields.next().is_some() {
        return None;
    }
    let mut histogram = Histogram::new();
    let mut entries_stated: u64 = 0;
    for part in histogram_text.split(',').filter(|p| !p.is_empty()) {
        let (count, entries) = part.split_once(':')?;
        let (count, entries): (u64, u64) = (count.parse().ok()?, entries.parse().ok()?);
        if count == 0 || entries == 0 || histogram.insert(count, entries).is_some() {
            return None;
        }
        entries_stated = entries_stated.checked_add(entries)?;
    }
    // Each entry has a count line of at least four bytes (`m` and a tab, a digit, a newline): a
    // header that states more entries than its lines can hold was not written by memlog.
    if entries_stated > (counts_len / 4) as u64 {
        return None;
    }
    Some(Header {
        histogram,
        counts_len,
        times_len,
    })
}

fn id_and_count(line: &[u8]) -> Option<(&str, u64)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let tab = memchr::memchr(b'\t', line)?;
    let id = std::str::from_utf8(&line[..tab])
        .ok()
        .filter(|s| !s.is_empty())?;
    let count = std::str::from_utf8(&line[tab + 1..])
        .ok()?
        .parse()
        .ok()
        .filter(|n| *n > 0)?;
    Some((id, count))
}

fn id_and_times(line: &[u8]) -> Option<(&str, &str, &str)> {
    let line = std::str::from_utf8(line).ok()?;
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut fields = line.split('\t');
    let id = fields.next()?;
    let first = fields.next()?;
    let last = fields.next()?;
    fields.next().is_none().then_some((id, first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(count: u64) -> AccessStats {
        AccessStats {
            count,
            first: "2026-11-01T00:00:00.000Z".into(),
            last: "2026-11-02T00:00:00.000Z".into(),
        }
    }

    proptest::proptest! {
        /// A summary reads back as written and finds each entry's count; the histogram it
        /// states is the one its lines make.
        #[test]
        fn a_summary_reads_back_as_written(
            all in proptest::collection::btree_map(0usize..400, 1u64..60, 0..200),
            asked in proptest::collection::btree_set(0usize..420, 0..300),
        ) {
            let id = |i: usize| format!("m-{i:026}");
            let all: BTreeMap<String, AccessStats> =
                all.iter().map(|(i, n)| (id(*i), stats(*n))).collect();
            let summary = Summary::parse(&render(&all));
            let back: BTreeMap<String, AccessStats> =
                summary.entries().map(|(i, s)| (i.to_owned(), s)).collect();
            proptest::prop_assert_eq!(&back, &all);
            let mut histogram = Histogram::new();
            for s in all.values() {
                *histogram.entry(s.count).or_insert(0) += 1;
            }
            proptest::prop_assert_eq!(summary.histogram(), &histogram);
            let ids: Vec<String> = asked.iter().map(|i| id(*i)).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let expected: Vec<u64> =
                refs.iter().map(|i| all.get(*i).map_or(0, |s| s.count)).collect();
            // A file whose header does not read is read from its lines alike.
            let bytes = render(&all);
            let header_end = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
            let headless = Summary::parse(&bytes[header_end..]);
            proptest::prop_assert_eq!(&headless.counts_of(&refs), &expected);
            proptest::prop_assert_eq!(headless.histogram(), summary.histogram());
            proptest::prop_assert_eq!(&summary.counts_of(&refs), &expected);
        }
    }

    proptest::proptest! {
        /// A summary edited by hand (its lines in another order, some repeated with a smaller
        /// count, carriage returns, a byte-order mark) still reads, in full, as the entries it
        /// names: nothing is lost at the next fold.
        #[test]
        fn a_summary_edited_by_hand_reads_as_its_entries(
            all in proptest::collection::btree_map(0usize..400, 1u64..60, 1..100),
            order in proptest::collection::vec(proptest::num::usize::ANY, 0..300),
            repeat in proptest::collection::vec(proptest::num::usize::ANY, 0..5),
            crlf in proptest::bool::ANY,
            bom in proptest::bool::ANY,
        ) {
            let id = |i: usize| format!("m-{i:026}");
            let all: BTreeMap<String, AccessStats> =
                all.iter().map(|(i, n)| (id(*i), stats(*n))).collect();
            let bytes = render(&all);
            let text = String::from_utf8(bytes).unwrap_or_default();
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let header = lines.remove(0);
            for r in &repeat {
                let (i, _) = all.iter().nth(r % all.len()).unwrap_or_else(|| panic!("entry"));
                lines.push(format!("{i}\t1"));
            }
            for (k, o) in order.iter().enumerate() {
                let (a, b) = (k % lines.len(), o % lines.len());
                lines.swap(a, b);
            }
            let end = if crlf { "\r\n" } else { "\n" };
            let mut edited = String::from(if bom { "\u{feff}" } else { "" });
            edited.push_str(&header);
            edited.push_str(end);
            for l in &lines {
                edited.push_str(l);
                edited.push_str(end);
            }
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            fs_err::write(dir.path().join(FILE), &edited).unwrap_or_else(|e| panic!("{e}"));
            let summary = Summary::read(dir.path(), true).unwrap_or_else(|e| panic!("{e}"));
            let back: BTreeMap<String, AccessStats> =
                summary.entries().map(|(i, s)| (i.to_owned(), s)).collect();
            proptest::prop_assert_eq!(&back, &all);
            // Read for `stats` (counts only): the same counts and histogram.
            let counts = Summary::read(dir.path(), false).unwrap_or_else(|e| panic!("{e}"));
            let ids: Vec<&str> = all.keys().map(String::as_str).collect();
            let expected: Vec<u64> = all.values().map(|s| s.count).collect();
            proptest::prop_assert_eq!(counts.counts_of(&ids), expected);
            let mut histogram = Histogram::new();
            for s in all.values() {
                *histogram.entry(s.count).or_insert(0) += 1;
            }
            proptest::prop_assert_eq!(counts.histogram(), &histogram);
        }
    }

    /// A header that states more count lines than the file holds reads what there is.
    #[test]
    fn a_header_longer_than_its_file_reads_what_there_is() {
        let all: BTreeMap<String, AccessStats> = [("m-a".to_owned(), stats(3))].into();
        let bytes = render(&all);
        let header_end = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut edited = b"memlog-access-summary 1\t3:1\t999999999999999999\n".to_vec();
        edited.extend_from_slice(&bytes[header_end..]);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        fs_err::write(dir.path().join(FILE), &edited).unwrap_or_else(|e| panic!("{e}"));
        let summary = Summary::read(dir.path(), false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary.counts_of(&["m-a"]), vec![3]);
    }

    /// A header that states more entries than its count lines can hold, a count of zero or a
    /// count twice is not believed: the lines are counted instead.
    #[test]
    fn a_header_that_cannot_be_true_is_counted_again() {
        let all: BTreeMap<String, AccessStats> =
            [("m-a".to_owned(), stats(3)), ("m-b".to_owned(), stats(5))].into();
        let bytes = render(&all);
        let header_end = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        let counts_len = bytes[header_end..]
            .split(|b| *b == b'\n')
            .take(2)
            .map(|l| l.len() + 1)
            .sum::<usize>();
        for histogram in ["3:1000", "0:1,3:1", "3:1,3:1,5:1", "3:18446744073709551615"] {
            let mut edited =
                format!("memlog-access-summary 1\t{histogram}\t{counts_len}\n").into_bytes();
            edited.extend_from_slice(&bytes[header_end..]);
            let summary = Summary::parse(&edited);
            assert_eq!(
                summary.histogram(),
                &Histogram::from([(3, 1), (5, 1)]),
                "{histogram}"
            );
        }
    }

    /// A header that does not read is counted again from the lines.
    #[test]
    fn a_damaged_header_is_counted_again() {
        let all: BTreeMap<String, AccessStats> =
            [("m-a".to_owned(), stats(3)), ("m-b".to_owned(), stats(3))].into();
        let mut bytes = render(&all);
        let header_end = bytes.iter().position(|b| *b == b'\n').unwrap_or(0);
        bytes.splice(
            ..header_end,
            b"memlog-access-summary 1\t3:x\t20".iter().copied(),
        );
        let summary = Summary::parse(&bytes);
        assert_eq!(summary.histogram(), &Histogram::from([(3, 2)]));
    }
}
