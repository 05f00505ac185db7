//! How much each word of a query counts, before it is looked up. Readings of what a user types,
//! all without a model:
//!
//! - a long pasted text (an error log with a request, a ticket, a message) is cut into
//!   sentences, and the sentences that ask for something ("I need…", "can you…", a question)
//!   count fully while the context around them counts less;
//! - in a conversion ("a pdf from markdown", "markdown to pdf", `用markdown生成PDF`,
//!   "из markdown в pdf") the format converted *from* counts less than the one wanted, so that
//!   a skill going the other way (one that turns documents into Markdown) does not come first;
//! - a product name of a format ("powerpoint", "excel") also counts as the format's own name.

use super::tokens::{Script, words};

/// A query of at least this many words is read sentence by sentence.
const LONG_QUERY: usize = 25;
/// How much a word of a long query counts outside the sentences that ask for something.
const CONTEXT_WEIGHT: f32 = 0.5;
/// How much the format a conversion starts from counts.
const SOURCE_WEIGHT: f32 = 0.25;

/// File formats by the words users name them with (lower-case, sorted), each with the format it
/// names: the two sides of a conversion.
const FORMATS: [(&str, &str); 36] = [
    ("csv", "csv"),
    ("deck", "pptx"),
    ("doc", "docx"),
    ("docx", "docx"),
    ("epub", "epub"),
    ("excel", "xlsx"),
    ("gif", "gif"),
    ("html", "html"),
    ("jpeg", "jpeg"),
    ("jpg", "jpeg"),
    ("json", "json"),
    ("latex", "latex"),
    ("markdown", "markdown"),
    ("md", "markdown"),
    ("pdf", "pdf"),
    ("pdfs", "pdf"),
    ("png", "png"),
    ("powerpoint", "pptx"),
    ("pptx", "pptx"),
    ("slide", "pptx"),
    ("slides", "pptx"),
    ("spreadsheet", "xlsx"),
    ("spreadsheets", "xlsx"),
    ("svg", "svg"),
    ("tex", "latex"),
    ("word", "docx"),
    ("workbook", "xlsx"),
    ("xls", "xlsx"),
    ("xlsx", "xlsx"),
    ("xml", "xml"),
    ("ворд", "docx"),
    ("маркдаун", "markdown"),
    ("пдф", "pdf"),
    ("презентацию", "pptx"),
    ("таблицу", "xlsx"),
    ("эксель", "xlsx"),
];

/// Other names of a format (product names, short extensions): such a word also counts as the
/// format's own name. Generic words ("slides", "spreadsheet") do not: they fit other skills too.
const ALIASES: [&str; 8] = [
    "doc",
    "excel",
    "jpg",
    "md",
    "pdfs",
    "powerpoint",
    "tex",
    "xls",
];

/// Words after which a format is the one converted from: "from", and its equivalents.
const FROM: [&str; 6] = ["aus", "desde", "from", "partir", "von", "из"];
/// Words between the format converted from and the one wanted: "to", "into", "as"…
const TO: [&str; 11] = [
    "a", "as", "en", "into", "nach", "to", "vers", "zu", "в", "во", "как",
];
/// Chinese: a run ending in one of these puts a format after it on the "from" side (用 use,
/// 从 from, 把/将 the object marker, 由 by).
const CHINESE_FROM: [char; 5] = ['用', '从', '把', '将', '由'];
/// Chinese: a run holding one of these between two formats makes the first the "from" side
/// (转 convert, 成 into, 为 as, 到 to, 生成 generate, 导出 export).
const CHINESE_TO: [char; 5] = ['转', '成', '为', '到', '出'];

/// Phrases that mark a sentence as the request of a long text (lower-case, whole words).
const REQUEST_CUES: [&[&str]; 24] = [
    &["i", "need"],
    &["we", "need"],
    &["i", "want"],
    &["we", "want"],
    &["i'd", "like"],
    &["i", "would", "like"],
    &["we'd", "like"],
    &["please"],
    &["can", "you"],
    &["could", "you"],
    &["can", "we"],
    &["how", "do", "i"],
    &["how", "can", "i"],
    &["how", "do", "we"],
    &["how", "to"],
    &["help", "me"],
    &["is", "there"],
    &["what's", "the"],
    &["what", "is", "the"],
    &["my", "goal"],
    &["my", "part"],
    &["looking", "for"],
    &["need", "to"],
    &["want", "to"],
];

/// A conversion a query asks for: the formats it starts from and wants (as `FORMATS` names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Conversion {
    pub from: &'static str,
    pub to: &'static str,
}

/// Calls `visit` with each word of the query (its script, the word in lower case) and how much
/// it counts; returns the first conversion the query asks for.
pub(super) fn weigh(query: &str, mut visit: impl FnMut(Script, &str, f32)) -> Option<Conversion> {
    let mut lower = Vec::new();
    if words(query).nth(LONG_QUERY - 1).is_none() {
        return weigh_sentence(query, 1.0, &mut lower, &mut visit);
    }
    let sentences: Vec<(&str, bool)> = sentences(query)
        .map(|sentence| (sentence, asks(sentence)))
        .collect();
    // Only a text that both asks and tells is weighed by sentence.
    let by_sentence = sentences.iter().any(|(_, request)| *request)
        && sentences.iter().any(|(_, request)| !*request);
    let mut conversion = None;
    for (sentence, request) in sentences {
        let weight = if by_sentence && !request {
            CONTEXT_WEIGHT
        } else {
            1.0
        };
        let found = weigh_sentence(sentence, weight, &mut lower, &mut visit);
        conversion = conversion.or(found);
    }
    conversion
}

/// `weigh` for one sentence whose words all count `weight` (`lower` is scratch space).
fn weigh_sentence(
    sentence: &str,
    weight: f32,
    lower: &mut Vec<(Script, String)>,
    visit: &mut impl FnMut(Script, &str, f32),
) -> Option<Conversion> {
    lower.clear();
    lower.extend(words(sentence).map(|(script, word)| (script, word.to_lowercase())));
    let conversions = conversions(lower);
    for (position, (script, word)) in lower.iter().enumerate() {
        let factor = if conversions.iter().any(|(source, _)| *source == position) {
            SOURCE_WEIGHT
        } else {
            1.0
        };
        visit(*script, word, weight * factor);
        // "powerpoint" is another name of the format a skill may be named by: `pptx`.
        if ALIASES.contains(&word.as_str())
            && let Some(format) = format_of(word)
        {
            visit(Script::Other, format, weight * factor);
        }
    }
    let &(source, target) = conversions.first()?;
    format_of(&lower[source].1)
        .zip(format_of(&lower[target].1))
        .map(|(from, to)| Conversion { from, to })
}

/// The formats a skill's description says it converts into ("convert documents to Markdown",
/// "exported to PDF or PPTX"): the format right after "to", "into" or "as", or one word later.
pub(super) fn outputs(description: &str) -> Vec<&'static str> {
    let lower: Vec<String> = words(description)
        .map(|(_, word)| word.to_lowercase())
        .collect();
    let mut found = Vec::new();
    for (position, word) in lower.iter().enumerate() {
        if ["to", "into", "as"].contains(&word.as_str())
            && let Some(format) = lower
                .iter()
                .skip(position + 1)
                .take(2)
                .find_map(|word| format_of(word))
            && !found.contains(&format)
        {
            found.push(format);
        }
    }
    found
}

/// The sentences of a text: cut after `.`, `?`, `!`, `;` or `:` followed by a space (not inside
/// `train.py` or `2.00`), at line ends, and at the CJK full stops.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut characters = rest.char_indices().peekable();
        let mut end = rest.len();
        while let Some((index, character)) = characters.next() {
            let next_is_space = characters
                .peek()
                .is_none_or(|(_, next)| next.is_whitespace());
            let cut = match character {
                '\n' | '。' | '？' | '！' | '；' => true,
                '.' | '?' | '!' | ';' | ':' => next_is_space,
                _ => false,
            };
            if cut {
                end = index + character.len_utf8();
                break;
            }
        }
        let (sentence, remaining) = rest.split_at(end);
        rest = remaining;
        Some(sentence)
    })
}

/// Whether a sentence asks for something: a request phrase, or a question.
fn asks(sentence: &str) -> bool {
    if sentence.trim_end().ends_with('?') {
        return true;
    }
    let lower: Vec<String> = sentence
        .split(|character: char| !(character.is_alphanumeric() || character == '\''))
        .filter(|word| !word.is_empty())
        .map(|word| word.to_lowercase().replace('’', "'"))
        .collect();
    REQUEST_CUES.iter().any(|cue| {
        lower
            .windows(cue.len())
            .any(|window| window.iter().zip(cue.iter()).all(|(word, cue)| word == cue))
    })
}

/// The format a lower-case word names, if it names one.
fn format_of(word: &str) -> Option<&'static str> {
    FORMATS
        .binary_search_by(|(name, _)| (*name).cmp(word))
        .ok()
        .map(|position| FORMATS[position].1)
}

/// The conversions in these words, as positions (the format converted from, the one wanted). A
/// format is converted from only when another format is wanted: "tables from a pdf" converts
/// nothing.
fn conversions(lower: &[(Script, String)]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    // Most queries name at most one format: nothing to convert, and nothing allocated.
    if lower
        .iter()
        .filter(|(_, word)| format_of(word).is_some())
        .count()
        < 2
    {
        return pairs;
    }
    let formats: Vec<(usize, &str)> = lower
        .iter()
        .enumerate()
        .filter_map(|(position, (_, word))| format_of(word).map(|format| (position, format)))
        .collect();
    let after = |position: usize| {
        formats
            .iter()
            .copied()
            .find(|&(at, _)| at > position && at <= position + 3)
    };
    for (position, (script, word)) in lower.iter().enumerate() {
        let script = *script;
        let from_marker = FROM.contains(&word.as_str())
            || (script == Script::Cjk && word.ends_with(CHINESE_FROM));
        let to_marker =
            TO.contains(&word.as_str()) || (script == Script::Cjk && word.contains(CHINESE_TO));
        if from_marker && let Some((source, from)) = after(position) {
            // "a pdf from markdown": another format on either side is the one wanted.
            if let Some(&(target, _)) = formats.iter().find(|(_, format)| *format != from) {
                pairs.push((source, target));
            }
        }
        if to_marker {
            let before = formats
                .iter()
                .copied()
                .rev()
                .find(|&(at, _)| at < position && at + 3 >= position);
            if let (Some((source, from)), Some((target, to))) = (before, after(position))
                && from != to
            {
                pairs.push((source, target));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn weights(query: &str) -> Vec<(String, f32)> {
        let mut found = Vec::new();
        weigh(query, |_, word, weight| {
            found.push((word.to_owned(), weight));
        });
        found
    }

    #[test]
    fn formats_and_cues_are_sorted_or_lower_case() {
        assert!(FORMATS.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert!(
            REQUEST_CUES
                .iter()
                .flat_map(|cue| cue.iter())
                .all(|word| word.to_lowercase() == *word)
        );
    }

    #[test]
    fn the_format_converted_from_counts_less() {
        let source = |query: &str| {
            weights(query)
                .into_iter()
                .filter(|(_, weight)| *weight < 1.0)
                .map(|(word, _)| word)
                .collect::<Vec<_>>()
        };
        assert_eq!(source("make a pdf from markdown"), ["markdown"]);
        assert_eq!(source("convert markdown to PDF"), ["markdown"]);
        assert_eq!(source("turn my slides into a pdf"), ["slides"]);
        assert_eq!(source("用markdown生成PDF"), ["markdown"]);
        assert_eq!(source("把PDF转成Word"), ["pdf"]);
        assert_eq!(source("сделать pdf из markdown"), ["markdown"]);
        assert_eq!(source("extract tables from a pdf"), Vec::<String>::new());
        assert_eq!(source("用PyMC做贝叶斯模型"), Vec::<String>::new());
        assert_eq!(source("pdfs to pdf"), Vec::<String>::new());
        assert_eq!(
            weigh("convert a Word file into an EPUB", |_, _, _| ()),
            Some(Conversion {
                from: "docx",
                to: "epub"
            })
        );
    }

    #[test]
    fn a_description_names_what_its_skill_converts_into() {
        assert_eq!(
            outputs("Convert files and office documents to Markdown. Supports PDF, DOCX."),
            ["markdown"]
        );
        assert_eq!(
            outputs("Posters in HTML that can be exported to PDF or PPTX."),
            ["pdf"]
        );
        assert_eq!(outputs("Read and merge PDF files."), Vec::<&str>::new());
    }

    #[test]
    fn a_long_text_counts_its_request_fully_and_its_context_less() {
        let text = "We ran the migration yesterday and the staging database looked fine after it. \
            The logs show nothing unusual in the scheduler either. Since then three dashboards \
            stopped loading. Can you help me find what broke?";
        let found = weights(text);
        let weight_of = |word: &str| {
            found
                .iter()
                .find(|(found, _)| found == word)
                .map(|(_, weight)| *weight)
        };
        assert_eq!(weight_of("migration"), Some(CONTEXT_WEIGHT));
        assert_eq!(weight_of("broke"), Some(1.0));
        assert_eq!(
            weights("Can you help me find what broke? The logs show nothing."),
            weights("Can you help me find what broke? The logs show nothing.")
                .into_iter()
                .map(|(word, _)| (word, 1.0))
                .collect::<Vec<_>>(),
            "a short query is one sentence"
        );
    }

    #[test]
    fn sentences_are_cut_at_their_ends_not_inside_file_names() {
        let found: Vec<&str> = sentences("Run train.py now. It failed: 2.00 GiB?\nYes").collect();
        assert_eq!(
            found,
            [
                "Run train.py now.",
                " It failed:",
                " 2.00 GiB?",
                "\n",
                "Yes"
            ]
        );
    }
}
