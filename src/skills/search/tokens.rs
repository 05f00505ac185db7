//! Words and terms: how skill text and queries are cut into what the index holds.
//!
//! A word is a run of letters and digits of one script, so text that mixes scripts without
//! spaces (`用PyMC做贝叶斯模型`) still yields `pymc`. Latin-script words are lower-cased and
//! stemmed in English, Cyrillic words in Russian; Chinese, Japanese and Korean runs, written
//! without spaces between words, become overlapping pairs of characters (bigrams), which match
//! CJK text in a skill without a dictionary.

use rust_stemmers::{Algorithm, Stemmer};

/// The scripts that are cut differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Script {
    /// Han, kana and hangul: no spaces between words.
    Cjk,
    Cyrillic,
    /// Latin and everything else.
    Other,
}

fn script_of(character: char) -> Script {
    match character {
        '\u{3040}'..='\u{30ff}'
        | '\u{3400}'..='\u{4dbf}'
        | '\u{4e00}'..='\u{9fff}'
        | '\u{f900}'..='\u{faff}'
        | '\u{ac00}'..='\u{d7af}' => Script::Cjk,
        '\u{0400}'..='\u{04ff}' => Script::Cyrillic,
        _ => Script::Other,
    }
}

/// The words of a text, each with its script, in order.
pub(super) fn words(text: &str) -> impl Iterator<Item = (Script, &str)> {
    text.split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .flat_map(scripts)
}

/// A word cut where its script changes. Most words are ASCII and are not looked at character by
/// character (indexing 10,000 skills cuts millions of words).
fn scripts(word: &str) -> impl Iterator<Item = (Script, &str)> {
    let mut rest = word;
    std::iter::from_fn(move || {
        let script = script_of(rest.chars().next()?);
        let end = if rest.is_ascii() {
            rest.len()
        } else {
            rest.char_indices()
                .find(|&(_, character)| script_of(character) != script)
                .map_or(rest.len(), |(end, _)| end)
        };
        let (word, remaining) = rest.split_at(end);
        rest = remaining;
        Some((script, word))
    })
}

/// The CJK terms of a run: each pair of neighbouring characters, or the character alone when
/// the run is one character long.
pub(super) fn bigrams(run: &str, mut visit: impl FnMut(&str)) {
    let mut boundaries: Vec<usize> = run.char_indices().map(|(index, _)| index).collect();
    boundaries.push(run.len());
    if boundaries.len() == 2 {
        visit(run);
    }
    for window in boundaries.windows(3) {
        visit(&run[window[0]..window[2]]);
    }
}

/// Words too common to say anything about a task, in the languages the glossary covers; a query
/// leaves them out (the index keeps them: they are part of a field's length). Lower-case, sorted.
const STOP_WORDS: [&str; 148] = [
    "a", "about", "after", "al", "als", "also", "an", "and", "any", "are", "as", "at", "auf",
    "aus", "be", "bei", "but", "by", "can", "ce", "con", "could", "dans", "das", "de", "dem",
    "den", "der", "des", "die", "do", "du", "ein", "eine", "einen", "el", "en", "es", "est", "et",
    "for", "from", "für", "get", "had", "has", "have", "he", "her", "his", "how", "i", "if", "il",
    "im", "in", "into", "is", "ist", "it", "its", "je", "la", "las", "le", "les", "lo", "los",
    "me", "mit", "my", "nach", "no", "not", "of", "on", "or", "our", "par", "para", "pas", "per",
    "por", "pour", "qu", "que", "qui", "se", "she", "sie", "so", "some", "su", "sur", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "un", "una",
    "und", "une", "uno", "us", "von", "was", "we", "were", "what", "when", "which", "who", "will",
    "with", "would", "y", "you", "your", "zu", "в", "во", "для", "до", "же", "за", "и", "из",
    "или", "к", "как", "на", "не", "но", "о", "об", "от", "по", "с", "со", "что", "это",
];

/// Whether a lower-cased word is a stop word.
pub(super) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Stems words by script.
pub(super) struct Stemmers {
    english: Stemmer,
    russian: Stemmer,
}

impl Stemmers {
    pub(super) fn new() -> Self {
        Self {
            english: Stemmer::create(Algorithm::English),
            russian: Stemmer::create(Algorithm::Russian),
        }
    }

    /// The term of a lower-cased, non-CJK word; British spellings meet American ones.
    pub(super) fn stem(&self, script: Script, word: &str) -> String {
        match script {
            Script::Cyrillic => self.russian.stem(word).into_owned(),
            Script::Cjk | Script::Other => self.english.stem(&american(word)).into_owned(),
        }
    }
}

/// British endings and the American ones that replace them, longest first within a family.
/// The stemmer keeps them apart ("analyse" → `analys`, "analyze" → `analyz`; "optimise" →
/// `optimis`, "optimize" → `optim`), and the typo match reaches few of them, so a query written
/// in British English missed the skills, which are mostly written in American English. Applied
/// to the skills' words and the query's alike, so a word that merely ends like one ("promise")
/// changes on both sides and still meets itself.
const BRITISH_ENDINGS: [(&str, &str); 22] = [
    ("isations", "izations"),
    ("isation", "ization"),
    ("ising", "izing"),
    ("ised", "ized"),
    ("iser", "izer"),
    ("ises", "izes"),
    ("ise", "ize"),
    ("ysing", "yzing"),
    ("ysed", "yzed"),
    ("yses", "yzes"),
    ("yse", "yze"),
    ("ours", "ors"),
    ("oured", "ored"),
    ("ouring", "oring"),
    ("our", "or"),
    ("elling", "eling"),
    ("elled", "eled"),
    ("eller", "eler"),
    ("ogues", "ogs"),
    ("ogue", "og"),
    ("tres", "ters"),
    ("tre", "ter"),
];
/// The shortest word whose ending is rewritten: "rise", "four", "tour" and "metre"'s kin keep
/// theirs (whole words below that length are rarely British spellings).
const BRITISH_SHORTEST: usize = 6;

/// A lower-cased word in American spelling ("colour" → "color", "summarise" → "summarize").
fn american(word: &str) -> std::borrow::Cow<'_, str> {
    if word.len() >= BRITISH_SHORTEST && word.is_ascii() {
        for (british, american) in BRITISH_ENDINGS {
            if let Some(stem) = word.strip_suffix(british) {
                return format!("{stem}{american}").into();
            }
        }
    }
    word.into()
}

/// Calls `visit` with every term of a text, in order: stems for words, bigrams for CJK runs.
pub(super) fn terms(stemmers: &Stemmers, text: &str, mut visit: impl FnMut(&str)) {
    let mut lower = String::new();
    for (script, word) in words(text) {
        lower.clear();
        lower.extend(word.chars().flat_map(char::to_lowercase));
        match script {
            Script::Cjk => bigrams(&lower, &mut visit),
            Script::Cyrillic | Script::Other => visit(&stemmers.stem(script, &lower)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn all_terms(text: &str) -> Vec<String> {
        let mut found = Vec::new();
        terms(&Stemmers::new(), text, |term| found.push(term.to_owned()));
        found
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(is_stop_word("the") && is_stop_word("для") && !is_stop_word("pdf"));
    }

    #[test]
    fn scripts_split_words_written_together() {
        let found: Vec<(Script, &str)> = words("用PyMC做 RNA-seq数据").collect();
        assert_eq!(
            found,
            [
                (Script::Cjk, "用"),
                (Script::Other, "PyMC"),
                (Script::Cjk, "做"),
                (Script::Other, "RNA"),
                (Script::Other, "seq"),
                (Script::Cjk, "数据"),
            ]
        );
    }

    #[test]
    fn british_spellings_meet_american_ones() {
        let stemmers = Stemmers::new();
        for (british, american) in [
            ("colour", "color"),
            ("summarise", "summarize"),
            ("analyse", "analyze"),
            ("optimisation", "optimization"),
            ("modelling", "modeling"),
            ("tumours", "tumors"),
            ("centre", "center"),
            ("catalogue", "catalog"),
        ] {
            assert_eq!(
                stemmers.stem(Script::Other, british),
                stemmers.stem(Script::Other, american),
                "{british}"
            );
        }
        assert_eq!(stemmers.stem(Script::Other, "four"), "four");
    }

    #[test]
    fn cjk_runs_become_bigrams_and_words_are_stemmed_by_script() {
        assert_eq!(all_terms("贝叶斯模型"), ["贝叶", "叶斯", "斯模", "模型"]);
        assert_eq!(all_terms("用 Merging файлы"), ["用", "merg", "файл"]);
    }
}
