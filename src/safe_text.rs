//! Stored text made safe to show: text that arrives through git (a merged log line) can hold
//! what writes refuse, and must never drive a terminal nor hide in a generated file.

/// True for a character that is never shown as it is: a control character (C0, DEL, C1 such
/// as U+009B CSI), a bidirectional embedding, override, isolate or mark (the Arabic letter mark
/// U+061C too), an invisible zero-width space, word joiner or byte order mark, or a tag
/// character (U+E0000–U+E007F): a whole sentence written in tag characters shows as nothing
/// and is read by a language model all the same.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// True for a character that shows nothing and tells two names apart that read the same: every
/// [`is_unsafe`] character that is no control character, the zero-width non-joiner and joiner
/// (U+200C, U+200D), the soft hyphen, the deprecated format characters (U+206A–U+206F), the
/// variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF) and the fillers and invisible vowels
/// that render as nothing. Prose keeps the joiners and the variation selectors (emoji
/// sequences and several scripts need them); a subject, a tag, an evidence URI or an actor has
/// no use for any of these.
pub fn is_invisible(c: char) -> bool {
    (is_unsafe(c) && !c.is_control())
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200C}'
                | '\u{200D}'
                | '\u{206A}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FFA0}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// What an [`is_invisible`] character is and does, for a message that names it.
pub fn describe_invisible(c: char) -> &'static str {
    match c {
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {
            "a bidirectional override or isolate, which shows text in another order than it is stored"
        }
        '\u{200E}' | '\u{200F}' | '\u{061C}' => "a direction mark, which cannot be seen",
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' => {
            "a zero-width character, which cannot be seen"
        }
        '\u{E0000}'..='\u{E007F}' => {
            "a tag character, which cannot be seen (text written in them is hidden)"
        }
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => {
            "a variation selector, which cannot be seen"
        }
        _ => "an invisible format character, which cannot be seen",
    }
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

    #[test]
    fn what_is_blanked_when_shown_is_invisible_and_joiners_are_invisible_too() {
        for c in [
            '\u{202E}', '\u{2066}', '\u{200B}', '\u{200E}', '\u{2060}', '\u{FEFF}',
        ] {
            assert!(is_unsafe(c) && is_invisible(c), "U+{:04X}", c as u32);
        }
        for c in ['\u{200C}', '\u{200D}', '\u{00AD}'] {
            assert!(!is_unsafe(c) && is_invisible(c), "U+{:04X}", c as u32);
        }
        assert!(!is_invisible('\n') && !is_invisible('é') && !is_invisible('👍'));
        assert!(describe_invisible('\u{202E}').starts_with("a bidirectional"));
        assert!(describe_invisible('\u{200D}').starts_with("a zero-width"));
    }

    #[test]
    fn tag_characters_and_the_arabic_letter_mark_are_unsafe_and_variation_selectors_invisible() {
        for c in ['\u{E0001}', '\u{E0041}', '\u{E007F}', '\u{061C}'] {
            assert!(is_unsafe(c) && is_invisible(c), "U+{:04X}", c as u32);
        }
        for c in ['\u{FE0F}', '\u{FE00}', '\u{E0100}'] {
            assert!(!is_unsafe(c) && is_invisible(c), "U+{:04X}", c as u32);
        }
        assert!(describe_invisible('\u{E0041}').starts_with("a tag character"));
        assert!(describe_invisible('\u{061C}').starts_with("a direction mark"));
    }
}
