//! Stored text made safe to show: text that arrives through git (a merged log line) can hold
//! what writes refuse, and must never drive a terminal nor hide in a generated file.

/// True for a character that is never shown as it is: a control character (C0, DEL, C1 such
/// as U+009B CSI), a bidirectional embedding, override or isolate, or an invisible zero-width
/// space, word joiner or byte order mark.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` on one line: every [`is_unsafe`] character, line breaks and tabs included, becomes a
/// space.
pub fn safe(text: &str) -> String {
    text.chars()
        .map(|c| if is_unsafe(c) { ' ' } else { c })
        .collect()
}

/// `text` with its lines and tabs kept: every other [`is_unsafe`] character (a carriage return
/// too) becomes a space.
pub fn safe_lines(text: &str) -> String {
    text.chars()
        .map(|c| {
            if is_unsafe(c) && !matches!(c, '\n' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The first `n` characters of `text`, on one line ([`safe`]), ending in `…` when cut.
pub fn clip(text: &str, n: usize) -> String {
    let one_line = safe(text);
    if one_line.chars().count() <= n {
        one_line
    } else {
        let mut s: String = one_line.chars().take(n.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_that_drives_a_terminal_or_hides_text_is_kept() {
        let text = "a\u{1b}[31mb\u{7}c\u{9b}2Jd\u{7f}e\u{202e}f\u{2066}g\u{200b}h\u{feff}i\r\n\tj";
        for shown in [safe(text), clip(text, 100)] {
            assert!(!shown.chars().any(is_unsafe), "{shown:?}");
            assert_eq!(shown.chars().count(), text.chars().count(), "{shown:?}");
        }
        assert_eq!(
            safe_lines(text),
            "a [31mb c 2Jd e f g h i \n\tj",
            "lines and tabs are kept"
        );
        assert_eq!(clip("é👍 ok", 3), "é👍…");
    }
}
