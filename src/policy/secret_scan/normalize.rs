//! The view of a text that the rules scan beside the text itself.
//!
//! A credential broken up by something a reader removes without thinking is as leaked as the
//! credential: an invisible character inside it (a soft hyphen, a zero-width joiner, a
//! variation selector, a tag character), a line break in the middle of it, or `_` written as
//! `%5F` in a URL. The rules look for the shapes credentials have, so the text is scanned a
//! second time as a reader would read it: invisible characters removed, a line break between two
//! parts of a token-looking run joined, and escapes of characters that never need escaping
//! decoded. Every byte of the view remembers the span of the text it came from, so that a
//! finding covers (and a redaction removes) the original characters, the inserted ones too.

/// A normalized view of a text and, for each of its bytes, the span of the text it stands for.
pub(super) struct View {
    pub text: String,
    /// `spans[i]`: the original span (start, end) of the character that made byte `i`.
    spans: Vec<(usize, usize)>,
}

impl View {
    /// The view of `text`, or `None` when it would be the text itself (nearly always: the check
    /// costs one pass over the bytes).
    pub fn of(text: &str) -> Option<Self> {
        let may_differ = text.bytes().any(|b| b >= 0xC2 || b == b'%' || b == b'\n');
        if !may_differ {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut spans = Vec::with_capacity(text.len());
        let mut changed = false;
        // The token-looking run the view ends in, kept as it grows: looking back from every
        // line break would take quadratic time on a hostile file of short lines.
        let mut run = Run::default();
        let mut chars = text.char_indices();
        while let Some((i, c)) = chars.next() {
            let end = i + c.len_utf8();
            if is_ignorable(c) {
                changed = true;
                continue;
            }
            if c == '%'
                && let Some(decoded) = unreserved_escape(text.get(end..end + 2).unwrap_or(""))
            {
                out.push(decoded);
                run.push(decoded);
                spans.push((i, end + 2));
                chars.next();
                chars.next();
                changed = true;
                continue;
            }
            if c == '\n' || (c == '\r' && text.get(end..end + 1) == Some("\n")) {
                let after = if c == '\r' { end + 1 } else { end };
                if run.joins(text.get(after..).unwrap_or("")) {
                    if c == '\r' {
                        chars.next();
                    }
                    changed = true;
                    continue;
                }
            }
            out.push(c);
            run.push(c);
            spans.extend(std::iter::repeat_n((i, end), c.len_utf8()));
        }
        changed.then_some(Self { text: out, spans })
    }

    /// The original span of the view's span `start..end`.
    pub fn original(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let first = self.spans.get(start)?;
        let last = self.spans.get(end.checked_sub(1)?)?;
        Some((first.0, last.1))
    }
}

/// A character that shows nothing: the invisible characters that fields refuse or prose
/// keeps (joiners, the soft hyphen), variation selectors, tag characters and the other
/// default-ignorable code points.
fn is_ignorable(c: char) -> bool {
    crate::safe_text::is_invisible(c)
        || matches!(
            c,
            '\u{FE00}'..='\u{FE0F}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// The character a `%XX` escape (its two digits `hex`) stands for when it is one that never
/// needs escaping (a letter, a digit, `-`, `.`, `_`, `~`): written so only to hide it. Other
/// escapes (`%2F`, `%3D`) mean what they say and are left alone.
fn unreserved_escape(hex: &str) -> Option<char> {
    let byte = u8::from_str_radix(hex, 16)
        .ok()
        .filter(|_| hex.len() == 2)?;
    let c = char::from(byte);
    (c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')).then_some(c)
}

/// Characters of a token: what credentials are made of.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=')
}

/// The run of token characters at the end of the view.
#[derive(Default)]
struct Run {
    len: usize,
    /// A digit or an underscore is among them.
    marked: bool,
    /// The last of them is `=`: a name given an empty value (`DB_PASSWORD=`), or a token's
    /// padding, which ends it.
    ends_with_equals: bool,
}

impl Run {
    fn push(&mut self, c: char) {
        if is_token_char(c) {
            self.len += 1;
            self.marked |= c.is_ascii_digit() || c == '_';
            self.ends_with_equals = c == '=';
        } else {
            *self = Self::default();
        }
    }

    /// Whether a line break after this run, `after` (the text after the break) following it,
    /// is inside a token-looking run: at least 8 token characters before it, a token character
    /// right after it, and a digit or an underscore on either side (`AKIAFAKE` then
    /// `T9LGMXG9EDN5`). Prose (a word at the end of a line) is not joined to the next line.
    ///
    /// The run after the break is read up to its end, which is at the latest the next line
    /// break: every byte is read twice at most, however many lines the text has.
    ///
    /// A line that ends in `=` or whose next line is an assignment (`DB_USER=app`,
    /// `server.ssl.key-alias=api`) is a line of a configuration file, not half a token.
    fn joins(&self, after: &str) -> bool {
        let next: Vec<char> = after.chars().take_while(|&c| is_token_char(c)).collect();
        // `DB_USER=app`, and a dotted name (`server.ssl.key-alias=api`, `spring.datasource:`).
        let dotted_name = after
            .trim_start_matches(|c: char| (is_token_char(c) && c != '=') || c == '.')
            .starts_with([':', '='])
            && after.starts_with(|c: char| c.is_ascii_alphabetic());
        let assignment = dotted_name
            || next
                .iter()
                .position(|c| *c == '=')
                .is_some_and(|i| next[i..].iter().any(|c| *c != '='));
        self.len >= 8
            && !self.ends_with_equals
            && !assignment
            && !next.is_empty()
            && (self.marked || next.iter().any(|c| c.is_ascii_digit() || *c == '_'))
    }
}
