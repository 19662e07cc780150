//! Scanning an input of any size in bounded memory: a pre-commit hook pipes whole logs
//! (`git show :ai-memory/p/events.jsonl | memlog secrets scan -`), and a log of 100,000 entries
//! is some 100 MB.
//!
//! The input is read line by line into parts of about [`Limits::part_bytes`], each cut at a line
//! end and scanned as a document; each part after the first starts with the last
//! [`Limits::overlap_lines`] lines of the one before, so that a credential over several lines
//! (a key block) at a cut is seen whole, and a finding seen in both parts is reported once. A
//! line longer than [`Limits::line_bytes`] (an endless input with no line end, `/dev/zero`) stops
//! the scan with an error rather than filling memory.

use super::{Finding, scan_document};
use std::collections::HashSet;
use std::io::{BufRead, Read};

/// How an input is cut.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of a part, at least (a part ends at the first line end past them).
    pub part_bytes: usize,
    /// Lines of a part scanned again at the start of the next.
    pub overlap_lines: usize,
    /// Longest line read.
    pub line_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            part_bytes: 1024 * 1024,
            overlap_lines: 200,
            line_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a scan stopped.
#[derive(Debug)]
pub enum StreamError {
    /// Reading failed.
    Io(std::io::Error),
    /// This line (1-based) is longer than [`Limits::line_bytes`].
    LineTooLong(usize),
}

/// Scans everything `input` holds, calling `found` with each finding (its line counted from the
/// start of the input), in the order of the parts.
///
/// # Errors
/// When reading fails, or a line is too long.
pub fn scan_reader(
    mut input: impl BufRead,
    limits: Limits,
    mut found: impl FnMut(Finding),
) -> Result<(), StreamError> {
    // The part being gathered, and where each of its lines starts.
    let mut part: Vec<u8> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    // The input's line number of the part's first line.
    let mut first_line = 1;
    // Lines of the part not scanned yet start at this index of `starts`.
    let mut fresh = 0;
    // Findings already reported in lines a later part scans again.
    let mut reported: HashSet<(usize, usize, &'static str)> = HashSet::new();
    let mut scan = |part: &[u8], first_line: usize, reported: &mut HashSet<_>| {
        let text = String::from_utf8_lossy(part);
        for mut f in scan_document(&text) {
            f.line += first_line - 1;
            if reported.insert((f.line, f.column, f.rule)) {
                found(f);
            }
        }
    };
    loop {
        let at = part.len();
        let limit = u64::try_from(limits.line_bytes).unwrap_or(u64::MAX) + 1;
        let read = (&mut input)
            .take(limit)
            .read_until(b'\n', &mut part)
            .map_err(StreamError::Io)?;
        if read == 0 {
            break;
        }
        if read > limits.line_bytes {
            return Err(StreamError::LineTooLong(first_line + starts.len()));
        }
        starts.push(at);
        if part.len() >= limits.part_bytes {
            scan(&part, first_line, &mut reported);
            // Keep the last lines for the next part: at most `overlap_lines`, and at most half a
            // part of them, so that every part moves on.
            let mut keep = starts.len();
            while keep > 0
                && starts.len() - (keep - 1) <= limits.overlap_lines
                && part.len() - starts[keep - 1] <= limits.part_bytes / 2
            {
                keep -= 1;
            }
            let cut = starts.get(keep).copied().unwrap_or(part.len());
            part.drain(..cut);
            first_line += keep;
            starts = starts[keep..].iter().map(|s| s - cut).collect();
            fresh = starts.len();
            // Findings before the kept lines can no longer be seen again.
            reported.retain(|(line, _, _)| *line >= first_line);
        }
    }
    if fresh < starts.len() {
        scan(&part, first_line, &mut reported);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";

    fn lines_found(text: &str, limits: Limits) -> Vec<(usize, &'static str)> {
        let mut out = Vec::new();
        scan_reader(text.as_bytes(), limits, |f| out.push((f.line, f.rule)))
            .unwrap_or_else(|e| panic!("{e:?}"));
        out
    }

    fn small() -> Limits {
        Limits {
            part_bytes: 64,
            overlap_lines: 3,
            line_bytes: 1024,
        }
    }

    /// Cut into parts or scanned whole, an input gives the same findings on the same lines,
    /// each once: tokens on every line, and a key block across a cut.
    #[test]
    fn parts_find_what_the_whole_finds() {
        let mut text = String::new();
        for i in 0..40 {
            if i % 7 == 3 {
                text.push_str(&format!("deploy token {TOKEN}\n"));
            } else if i == 20 {
                text.push_str(
                    "-----BEGIN RSA PRIVATE KEY-----\nMIIEFAKEKEYQ7ZK2MV\n-----END RSA PRIVATE KEY-----\n",
                );
            } else {
                text.push_str(&format!("an ordinary line number {i}\n"));
            }
        }
        let whole: Vec<(usize, &str)> = scan_document(&text)
            .into_iter()
            .map(|f| (f.line, f.rule))
            .collect();
        assert!(whole.len() >= 6, "{whole:?}");
        assert_eq!(lines_found(&text, small()), whole);
        assert_eq!(lines_found(&text, Limits::default()), whole);
    }

    proptest::proptest! {
        /// The law of the parts: whatever the cut (part size, overlap), an input of lines gives
        /// exactly the findings a scan of it whole gives, on the same lines, each once.
        #[test]
        fn any_cut_finds_what_the_whole_finds(
            picks in proptest::collection::vec(0usize..6, 0..60),
            part_bytes in 16usize..400,
            overlap_lines in 2usize..6,
        ) {
            let forms = [
                "an ordinary line".to_owned(),
                format!("deploy token {TOKEN}"),
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEFAKEKEYQ7ZK2MV\n-----END RSA PRIVATE KEY-----".to_owned(),
                "password: Wq8#rLm2!vPz".to_owned(),
                "see https://x.example.com/a?token=FAKE1234abcdEFGH".to_owned(),
                String::new(),
            ];
            let text: String = picks.iter().map(|&i| format!("{}\n", forms[i])).collect();
            let mut whole: Vec<(usize, usize, &str)> = scan_document(&text)
                .into_iter()
                .map(|f| (f.line, f.column, f.rule))
                .collect();
            let limits = Limits { part_bytes, overlap_lines, line_bytes: 1024 };
            let mut parts = Vec::new();
            scan_reader(text.as_bytes(), limits, |f| parts.push((f.line, f.column, f.rule)))
                .unwrap_or_else(|e| panic!("{e:?}"));
            whole.sort_unstable();
            parts.sort_unstable();
            proptest::prop_assert_eq!(parts, whole);
        }
    }

    /// A line with no end past the limit stops the scan, naming the line.
    #[test]
    fn an_endless_line_stops_the_scan() {
        let text = format!("first\n{}", "x".repeat(2000));
        let r = scan_reader(text.as_bytes(), small(), |_| {});
        assert!(matches!(r, Err(StreamError::LineTooLong(2))), "{r:?}");
    }

    /// A token on the last line, with or without a line end, is found.
    #[test]
    fn the_last_line_is_scanned() {
        let text = format!("{}\ntoken {TOKEN}", "filler line\n".repeat(30));
        assert_eq!(lines_found(&text, small()), vec![(32, "github-token")]);
    }
}
