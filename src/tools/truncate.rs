//! The executor's default truncation: keep the head and the tail,
//! replace the middle with a marker that says how much was left out and where it starts.
//! Structured content is cut to the same limit in `truncate/structure.rs`.

mod structure;

pub(crate) use structure::{Fitted, Omitted, allows_extra_member, fit_structure, size};

/// A text cut to at most `limit` characters of content plus a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    pub text: String,
    /// Character offset where the omitted part starts.
    pub omitted_start: usize,
    /// Number of omitted characters.
    pub omitted_length: usize,
}

/// Cuts `text` to `limit` characters (head and tail halves, by Unicode characters); `None` when
/// it already fits.
pub fn truncate_content(text: &str, limit: usize) -> Option<Truncated> {
    // Counting stops as soon as the limit is exceeded, so short texts cost one pass.
    text.chars().nth(limit)?;
    let total = text.chars().count();
    let head_chars = limit.div_ceil(2);
    let tail_chars = limit - head_chars;
    let omitted_length = total - head_chars - tail_chars;
    let head_end = byte_offset(text, head_chars);
    let tail_start = byte_offset(text, total - tail_chars);
    let marker = format!(
        "\n\n[… {omitted_length} characters omitted (characters {head_chars}–{end}) …]\n\n",
        end = head_chars + omitted_length
    );
    let mut cut = String::with_capacity(head_end + marker.len() + (text.len() - tail_start));
    cut.push_str(&text[..head_end]);
    cut.push_str(&marker);
    cut.push_str(&text[tail_start..]);
    Some(Truncated {
        text: cut,
        omitted_start: head_chars,
        omitted_length,
    })
}

fn byte_offset(text: &str, characters: usize) -> usize {
    text.char_indices()
        .nth(characters)
        .map_or(text.len(), |(offset, _)| offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn text_within_the_limit_is_not_cut() {
        assert_eq!(truncate_content("hello", 5), None);
        assert_eq!(truncate_content("", 0), None);
    }

    #[test]
    fn keeps_head_and_tail_and_reports_the_omitted_window() {
        let cut = truncate_content("abcdefghij", 4).unwrap();
        assert_eq!(cut.omitted_start, 2);
        assert_eq!(cut.omitted_length, 6);
        assert_eq!(
            cut.text,
            "ab\n\n[… 6 characters omitted (characters 2–8) …]\n\nij"
        );
    }

    #[test]
    fn never_splits_a_multibyte_character() {
        let cut = truncate_content("日本語のテキスト😀😀😀", 5).unwrap();
        assert!(cut.text.starts_with("日本語\n"));
        assert!(cut.text.ends_with("\n😀😀"));
        assert_eq!(cut.omitted_length, 6);
    }
}
