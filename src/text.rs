//! The ground floor's text utilities. Character windows: the one place where positions counted
//! in Unicode characters become byte offsets, so no reader ever splits a character. `ReadVar`
//! and `ReadState` windows, `$VAR_REF{{name:start:length}}` slices, the executor's head-and-tail
//! truncation ([`truncate_content`]), text from other processes ([`bounded`]) and long text
//! quoted in messages all cut text here. And [`nearest`], the name an
//! error suggests for a mistyped one.

/// A window of a value, counted in Unicode characters.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Chunk {
    pub text: String,
    /// The first character of the window, clamped to `total`.
    pub start: usize,
    /// One past the last character of the window.
    pub end: usize,
    /// The length of the whole value.
    pub total: usize,
    /// Whether characters remain after `end`.
    pub has_more: bool,
}

/// The byte offset where character `count` of `text` starts (`text.len()` when there are fewer).
fn byte_offset(text: &str, count: usize) -> usize {
    // Every character takes one byte at least, and an ASCII one exactly one: most windows are
    // answered without walking the characters.
    if count >= text.len() {
        return text.len();
    }
    if text.as_bytes()[..count].is_ascii() {
        return count;
    }
    text.char_indices()
        .nth(count)
        .map_or(text.len(), |(offset, _)| offset)
}

/// The text after the first `count` characters (empty when there are fewer).
pub fn skip_chars(text: &str, count: usize) -> &str {
    &text[byte_offset(text, count)..]
}

/// The first `count` characters of `text` (all of it when there are fewer).
pub fn take_chars(text: &str, count: usize) -> &str {
    &text[..byte_offset(text, count)]
}

/// `length` characters of `text` from character `start`, clamped to the end of the text. Costs
/// time proportional to `start + length`, not to the length of the text.
pub fn slice_chars(text: &str, start: usize, length: usize) -> &str {
    take_chars(skip_chars(text, start), length)
}

/// The first `count` characters of `text`, followed by `…` when some were cut off: a long text
/// quoted in a message.
pub fn shorten(text: &str, count: usize) -> String {
    let head = take_chars(text, count);
    if head.len() < text.len() {
        format!("{head}…")
    } else {
        text.to_owned()
    }
}

/// A window of `length` characters (`None`: to the end) of any text, from character `start`,
/// clamped to the end; the same windows `ReadVar` gives, for other readers (`ReadState`).
pub fn window(text: &str, start: usize, length: Option<usize>) -> Chunk {
    chunk_of(text, text.chars().count(), start, length)
}

/// [`window`] of a value whose character count (`total`) is already known.
pub fn chunk_of(value: &str, total: usize, start: usize, length: Option<usize>) -> Chunk {
    let start = start.min(total);
    let remaining = total - start;
    let length = length.map_or(remaining, |length| length.min(remaining));
    let end = start + length;
    Chunk {
        text: slice_chars(value, start, length).to_owned(),
        start,
        end,
        total,
        has_more: end < total,
    }
}

/// The candidate closest to `name` by edit distance (ignoring case), when it is close enough
/// to be the name meant: at most two edits, and fewer than half of the name's characters.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let wanted = name.to_lowercase();
    let length = wanted.chars().count();
    candidates
        .into_iter()
        .map(|candidate| {
            (
                strsim::levenshtein(&wanted, &candidate.to_lowercase()),
                candidate,
            )
        })
        .filter(|&(distance, _)| distance <= 2 && distance * 2 < length.max(2))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate.to_owned())
}

/// A text from outside the server — a user function's error, an upstream server's answer or
/// stderr, a script's output, a value a caller sent — cut to `limit` characters (its head and
/// tail around a marker, [`truncate_content`]) before it reaches the model or a log; returned
/// as it is when it fits.
pub fn bounded(text: String, limit: usize) -> String {
    match truncate_content(&text, limit) {
        Some(cut) => cut.text,
        None => text,
    }
}

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
    let head = take_chars(text, head_chars);
    let tail = skip_chars(text, total - tail_chars);
    let marker = format!(
        "\n\n[… {omitted_length} characters omitted (characters {head_chars}–{end}) …]\n\n",
        end = head_chars + omitted_length
    );
    let mut cut = String::with_capacity(head.len() + marker.len() + tail.len());
    cut.push_str(head);
    cut.push_str(&marker);
    cut.push_str(tail);
    Some(Truncated {
        text: cut,
        omitted_start: head_chars,
        omitted_length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn slices_past_the_end_are_clamped() {
        assert_eq!(slice_chars("abc", 1, 100), "bc");
        assert_eq!(slice_chars("abc", 3, 1), "");
        assert_eq!(slice_chars("abc", usize::MAX, usize::MAX), "");
    }

    #[test]
    fn slices_of_multibyte_text_never_split_a_character() {
        let text = "héllo 😀 wörld";
        assert_eq!(slice_chars(text, 1, 4), "éllo");
        assert_eq!(slice_chars(text, 6, 1), "😀");
        assert_eq!(slice_chars(text, 7, 100), " wörld");
        assert_eq!(take_chars(text, 7), "héllo 😀");
        assert_eq!(skip_chars(text, 7), " wörld");
        assert_eq!((take_chars(text, 99), skip_chars(text, 99)), (text, ""));
    }

    #[test]
    fn shortened_text_ends_with_an_ellipsis_only_when_cut() {
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("", 0), "");
        assert_eq!(shorten("a", 0), "…");
    }

    #[test]
    fn a_window_counts_the_whole_text_and_says_whether_more_remains() {
        assert_eq!(
            window("ab😀cd", 1, Some(2)),
            Chunk {
                text: "b😀".to_owned(),
                start: 1,
                end: 3,
                total: 5,
                has_more: true,
            }
        );
        assert_eq!(
            window("ab😀cd", 9, None),
            Chunk {
                text: String::new(),
                start: 5,
                end: 5,
                total: 5,
                has_more: false,
            }
        );
    }

    #[test]
    fn foreign_text_is_bounded_once_and_kept_when_it_fits() {
        assert_eq!(bounded("short".to_owned(), 5), "short");
        let cut = bounded("E".repeat(1000), 10);
        assert_eq!(
            cut,
            "EEEEE\n\n[… 990 characters omitted (characters 5–995) …]\n\nEEEEE"
        );
    }

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

/// A value between a header and a footer that say what it is for the model (which window of a
/// variable or file, how to read on, that it was cut): the frame is presentation, never data —
/// `_outputPath`, `†steps` and the cached result keep the value alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Framed {
    /// The line(s) above the value.
    pub header: String,
    /// The value, as text.
    pub text: String,
    /// Whether `text` is JSON that is stored as the value it spells (a whole variable written
    /// as JSON); otherwise it is stored as a string.
    pub json: bool,
    /// What follows the value (empty for nothing).
    pub footer: String,
}

impl Framed {
    /// `text` under `header`, stored as a string.
    pub fn new(header: String, text: String) -> Self {
        Self {
            header,
            text,
            json: false,
            footer: String::new(),
        }
    }

    /// The value as data.
    pub fn value(&self) -> serde_json::Value {
        if self.json
            && let Ok(value) = serde_json::from_str(&self.text)
        {
            return value;
        }
        serde_json::Value::String(self.text.clone())
    }

    /// The value in its frame, as the model reads it.
    pub fn shown(&self) -> String {
        self.around(&self.text)
    }

    /// The frame around `body` (the value's text, or what is left of it once cut), as the
    /// model reads it.
    pub fn around(&self, body: &str) -> String {
        let mut shown =
            String::with_capacity(self.header.len() + body.len() + self.footer.len() + 1);
        shown.push_str(&self.header);
        if !self.header.is_empty() {
            shown.push('\n');
        }
        shown.push_str(body);
        shown.push_str(&self.footer);
        shown
    }
}
