//! Ranked skill search, offline and without a model: BM25F over four weighted fields (name,
//! description with tags, headings, body), English stemming so plurals meet their singulars,
//! and typos met by a down-weighted fuzzy expansion of each query term against the vocabulary
//! (optimal string alignment distance 1, or 2 for long terms).
//!
//! Hand-written rather than tantivy (measured: tantivy cost build time and binary size for no gain in quality or speed here): true BM25F field weights,
//! sub-millisecond queries at 10,000 documents, 4.7 s of compile time instead of 85–100 s on
//! our 2-core machines, and no index files to keep in step with the skill folders.
#![expect(
    clippy::cast_precision_loss,
    reason = "scores are approximate; counts and lengths stay far below 2^23"
)]

mod glossary;
mod tokens;
mod weigh;

use self::tokens::{Script, Stemmers};

/// The index's maps, hashed with a fixed seed so that a query does the same work in every run
/// (the cost gate counts it). Their keys are the library's own words; a query only looks up.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
type Set<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// The text of one skill, by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    pub name: String,
    pub description: String,
    pub headings: String,
    pub body: String,
}

const FIELDS: usize = 4;
/// Name, description, headings, body. The body counts least: a long skill's body holds a little of
/// every topic, and when it counted as much as a heading (1.0, with full saturation at 1.2) broad
/// skills such as a 10,000-word API reference took the first places for unrelated long queries.
/// Measured with `examples/search_quality.rs` (BENCHMARKS.md → Search quality).
const WEIGHTS: [f32; FIELDS] = [4.0, 2.5, 1.5, 0.3];
/// How far a field's length scales its counts down (BM25's `b`): fully for the body, so a word
/// met once in 9,000 words weighs a tenth of one met once in 900.
const LENGTH_NORMALISATION: [f32; FIELDS] = [0.3, 0.6, 0.75, 1.0];
/// BM25's `k1`: how soon more matches of a term stop adding to its score. Higher than the
/// textbook 1.2 so that a term in the name or description outweighs the same term in the body.
const SATURATION: f32 = 2.0;
/// How much a fuzzy match counts against an exact one.
const FUZZY_WEIGHT: f32 = 0.3;
/// How much an English word the glossary adds counts against a word of the query.
const TRANSLATION_WEIGHT: f32 = 1.0;
/// How much an English word added for an everyday phrasing ("crashes" → bug) counts against a
/// word of the query.
const PLAIN_WEIGHT: f32 = 0.5;
/// How much of its score a skill keeps when it converts into the format the query converts
/// from ("a pdf from markdown" and a skill that turns documents into Markdown).
const OPPOSITE_DIRECTION: f32 = 0.5;
/// How much a skill's score grows when the query holds its whole name.
const NAMED: f32 = 1.5;

/// An inverted index over the skills' documents, built once and then read only. It is laid out
/// for memory: at 10,000 skills it holds over a million postings, so each one is a few bytes in
/// one shared buffer (see `encode_posting`) rather than a struct in a vector per term, and the
/// vocabulary is one string.
pub struct Index {
    stemmers: Stemmers,
    /// Every term's text, back to back; term `t` ends at `term_ends[t]`.
    vocabulary: String,
    term_ends: Vec<u32>,
    /// Term ids ordered by their text, for binary search.
    sorted_terms: Vec<u32>,
    /// Term ids by (first character, length in characters): the fuzzy expansion looks only at
    /// terms that keep the first letter (or swap the first two), which is where typos rarely
    /// fall, instead of scanning the whole vocabulary.
    by_start: Map<(char, usize), Vec<u32>>,
    /// Every term's postings, back to back; term `t`'s end at `posting_ends[t]`.
    postings: Vec<u8>,
    posting_ends: Vec<u32>,
    /// How many documents hold each term.
    document_counts: Vec<u32>,
    lengths: Vec<[u32; FIELDS]>,
    average_lengths: [f32; FIELDS],
    /// The formats each skill's description says it converts into, by document (few have any).
    outputs: Vec<(u32, &'static str)>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Index")
            .field("documents", &self.lengths.len())
            .field("terms", &self.term_ends.len())
            .field("posting_bytes", &self.postings.len())
            .finish_non_exhaustive()
    }
}

/// What indexing needs and searching does not: the maps from words to terms, and the postings
/// in document order (one growing buffer, laid out by term once at the end: a growing vector
/// per term would leave its freed copies scattered through the allocator's memory).
struct Builder {
    stemmers: Stemmers,
    terms: Map<String, u32>,
    /// Lower-cased words already seen, by term id, so that indexing stems each word once.
    words: Map<String, u32>,
    vocabulary: Vec<String>,
    /// Each document's `(term, frequencies)` in the posting encoding, the term id in the place
    /// of the gap; document `d` ends at `document_ends[d]`.
    forward: Vec<u8>,
    document_ends: Vec<u32>,
    document_counts: Vec<u32>,
    lengths: Vec<[u32; FIELDS]>,
    outputs: Vec<(u32, &'static str)>,
    /// The current document's term counts by field (kept to reuse its allocation).
    counts: Map<u32, [u16; FIELDS]>,
}

impl Index {
    /// Indexes the documents; a document's position is its id in search results.
    pub fn build(documents: impl IntoIterator<Item = Document>) -> Self {
        let mut builder = Builder {
            stemmers: Stemmers::new(),
            terms: Map::default(),
            words: Map::default(),
            vocabulary: Vec::new(),
            forward: Vec::new(),
            document_ends: Vec::new(),
            document_counts: Vec::new(),
            lengths: Vec::new(),
            outputs: Vec::new(),
            counts: Map::default(),
        };
        for document in documents {
            builder.add(&document);
        }
        // Parsed here, on the thread that builds the index, rather than in the first search.
        glossary::glossary();
        builder.finish()
    }
}

impl Builder {
    fn add(&mut self, document: &Document) {
        let fields = [
            &document.name,
            &document.description,
            &document.headings,
            &document.body,
        ];
        let document_id = offset(self.lengths.len());
        for format in weigh::outputs(&document.description) {
            self.outputs.push((document_id, format));
        }
        let mut counts = std::mem::take(&mut self.counts);
        let mut lengths = [0_u32; FIELDS];
        let mut word = String::new();
        for (field, text) in fields.into_iter().enumerate() {
            let mut count = |term: u32| {
                lengths[field] = lengths[field].saturating_add(1);
                let entry = counts.entry(term).or_default();
                entry[field] = entry[field].saturating_add(1);
            };
            for (script, raw) in tokens::words(text) {
                word.clear();
                word.extend(raw.chars().flat_map(char::to_lowercase));
                if script == Script::Cjk {
                    tokens::bigrams(&word, |bigram| count(self.term_of_stem(bigram)));
                } else {
                    count(self.term_of(script, &word));
                }
            }
        }
        for (term, frequencies) in counts.drain() {
            encode_posting(&mut self.forward, term, frequencies);
            self.document_counts[term as usize] += 1;
        }
        self.document_ends.push(offset(self.forward.len()));
        self.counts = counts;
        self.lengths.push(lengths);
    }

    /// The term id of a lower-cased word; each distinct word is stemmed once.
    fn term_of(&mut self, script: Script, word: &str) -> u32 {
        if let Some(&term) = self.words.get(word) {
            return term;
        }
        let stem = self.stemmers.stem(script, word);
        let term = self.term_of_stem(&stem);
        self.words.insert(word.to_owned(), term);
        term
    }

    /// The term id of a term's text, added to the vocabulary if new.
    fn term_of_stem(&mut self, stem: &str) -> u32 {
        if let Some(&term) = self.terms.get(stem) {
            return term;
        }
        let term = u32::try_from(self.vocabulary.len()).unwrap_or(u32::MAX);
        self.vocabulary.push(stem.to_owned());
        self.document_counts.push(0);
        self.terms.insert(stem.to_owned(), term);
        term
    }

    /// Lays the index out for searching and drops what only indexing needed.
    fn finish(self) -> Index {
        let (postings, posting_ends) =
            invert(&self.forward, &self.document_ends, self.vocabulary.len());
        drop(self.forward);
        drop(self.words);
        drop(self.terms);
        let total_text: usize = self.vocabulary.iter().map(String::len).sum();
        let mut vocabulary = String::with_capacity(total_text);
        let mut term_ends = Vec::with_capacity(self.vocabulary.len());
        let mut by_start: Map<(char, usize), Vec<u32>> = Map::default();
        for (term, text) in self.vocabulary.iter().enumerate() {
            vocabulary.push_str(text);
            term_ends.push(offset(vocabulary.len()));
            if let Some(first) = text.chars().next().filter(|first| !first.is_ascii_digit()) {
                let key = (first, text.chars().count());
                by_start
                    .entry(key)
                    .or_default()
                    .push(u32::try_from(term).unwrap_or(u32::MAX));
            }
        }
        for terms in by_start.values_mut() {
            terms.shrink_to_fit();
        }
        by_start.shrink_to_fit();
        let mut sorted_terms: Vec<u32> = (0..offset(term_ends.len())).collect();
        sorted_terms.sort_unstable_by(|left, right| {
            self.vocabulary[*left as usize].cmp(&self.vocabulary[*right as usize])
        });
        let count = self.lengths.len().max(1) as f32;
        let mut average_lengths = [0.0; FIELDS];
        for (field, average) in average_lengths.iter_mut().enumerate() {
            let total: u64 = self
                .lengths
                .iter()
                .map(|lengths| u64::from(lengths[field]))
                .sum();
            *average = (total as f32 / count).max(1.0);
        }
        let mut lengths = self.lengths;
        lengths.shrink_to_fit();
        let mut document_counts = self.document_counts;
        document_counts.shrink_to_fit();
        let mut outputs = self.outputs;
        outputs.shrink_to_fit();
        Index {
            stemmers: self.stemmers,
            vocabulary,
            term_ends,
            sorted_terms,
            by_start,
            postings,
            posting_ends,
            document_counts,
            lengths,
            average_lengths,
            outputs,
        }
    }
}

/// Lays document-ordered postings out by term: a first pass sizes each term's postings, a second
/// writes them into one buffer allocated once. Returns the buffer and each term's end in it.
fn invert(forward: &[u8], document_ends: &[u32], terms: usize) -> (Vec<u8>, Vec<u32>) {
    let each = |visit: &mut dyn FnMut(u32, u32, [u16; FIELDS])| {
        let mut start = 0;
        for (document, &end) in document_ends.iter().enumerate() {
            let document = offset(document);
            let entries = &forward[..end as usize];
            while let Some((term, frequencies)) = read_entry(entries, &mut start) {
                let frequencies = frequencies.map(|count| u16::try_from(count).unwrap_or(u16::MAX));
                visit(document, term, frequencies);
            }
        }
    };
    let mut sizes = vec![0_u32; terms];
    let mut last_documents = vec![0_u32; terms];
    let mut scratch = Vec::with_capacity(16);
    each(&mut |document, term, frequencies| {
        let term = term as usize;
        scratch.clear();
        encode_posting(&mut scratch, document - last_documents[term], frequencies);
        sizes[term] += offset(scratch.len());
        last_documents[term] = document;
    });
    let mut posting_ends = Vec::with_capacity(terms);
    let mut cursors = Vec::with_capacity(terms);
    let mut total = 0_u32;
    for size in &sizes {
        cursors.push(total);
        total += size;
        posting_ends.push(total);
    }
    drop(sizes);
    let mut postings = vec![0_u8; total as usize];
    last_documents.fill(0);
    each(&mut |document, term, frequencies| {
        let term = term as usize;
        scratch.clear();
        encode_posting(&mut scratch, document - last_documents[term], frequencies);
        let at = cursors[term] as usize;
        postings[at..at + scratch.len()].copy_from_slice(&scratch);
        cursors[term] += offset(scratch.len());
        last_documents[term] = document;
    });
    (postings, posting_ends)
}

/// A length as a `u32` offset (the index stays far below 4 GiB).
fn offset(length: usize) -> u32 {
    u32::try_from(length).unwrap_or(u32::MAX)
}

/// One posting: the gap to the term's previous document (LEB128), a byte whose low four bits
/// say which fields hold the term, then each such field's count (LEB128). A body-only posting
/// with a small gap takes three bytes instead of a twelve-byte struct.
fn encode_posting(buffer: &mut Vec<u8>, gap: u32, frequencies: [u16; FIELDS]) {
    write_varint(buffer, gap);
    let mask = frequencies
        .iter()
        .enumerate()
        .filter(|(_, count)| **count > 0)
        .fold(0_u8, |mask, (field, _)| mask | (1 << field));
    buffer.push(mask);
    for count in frequencies.into_iter().filter(|count| *count > 0) {
        write_varint(buffer, u32::from(count));
    }
}

fn write_varint(buffer: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        buffer.push(u8::try_from(value & 0x7f).unwrap_or(0) | 0x80);
        value >>= 7;
    }
    buffer.push(u8::try_from(value).unwrap_or(0));
}

/// Reads a LEB128 number at `position`, moving past it.
fn read_varint(bytes: &[u8], position: &mut usize) -> u32 {
    let mut value = 0_u32;
    let mut shift = 0;
    while let Some(&byte) = bytes.get(*position) {
        *position += 1;
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    value
}

/// Decodes a term's postings: `(document, frequencies by field)`.
fn decode_postings(bytes: &[u8]) -> impl Iterator<Item = (u32, [u32; FIELDS])> + '_ {
    let mut position = 0;
    let mut document = 0_u32;
    std::iter::from_fn(move || {
        let (gap, frequencies) = read_entry(bytes, &mut position)?;
        document += gap;
        Some((document, frequencies))
    })
}

/// Reads one encoded entry at `position` (its leading number as written), moving past it.
fn read_entry(bytes: &[u8], position: &mut usize) -> Option<(u32, [u32; FIELDS])> {
    if *position >= bytes.len() {
        return None;
    }
    let leading = read_varint(bytes, position);
    let mask = bytes.get(*position).copied().unwrap_or(0);
    *position += 1;
    let mut frequencies = [0_u32; FIELDS];
    for (field, frequency) in frequencies.iter_mut().enumerate() {
        if mask & (1 << field) != 0 {
            *frequency = read_varint(bytes, position);
        }
    }
    Some((leading, frequencies))
}

impl Index {
    fn term_text(&self, term: u32) -> &str {
        let term = term as usize;
        let start = if term == 0 {
            0
        } else {
            self.term_ends[term - 1] as usize
        };
        &self.vocabulary[start..self.term_ends[term] as usize]
    }

    fn find_term(&self, text: &str) -> Option<u32> {
        self.sorted_terms
            .binary_search_by(|&term| self.term_text(term).cmp(text))
            .ok()
            .map(|position| self.sorted_terms[position])
    }

    fn postings_of(&self, term: u32) -> &[u8] {
        let term = term as usize;
        let start = if term == 0 {
            0
        } else {
            self.posting_ends[term - 1] as usize
        };
        &self.postings[start..self.posting_ends[term] as usize]
    }

    /// The best `limit` documents for a query among those `keep` accepts, best first.
    pub fn search(
        &self,
        query: &str,
        keep: impl Fn(usize) -> bool,
        limit: usize,
    ) -> Vec<(usize, f32)> {
        let mut scores = vec![0.0_f32; self.lengths.len()];
        let (query_terms, conversion) = self.query_terms(query);
        // How many of each skill's name words the query holds (a full-weight word of its own).
        let mut name_words = vec![0_u8; self.lengths.len()];
        for query_term in query_terms {
            let text = query_term.text.as_str();
            if let Some(term) = self.find_term(text) {
                let names = (query_term.weight >= 1.0).then_some(&mut name_words[..]);
                self.score_term(term, query_term.weight, &mut scores, names);
            }
            if query_term.fuzzy {
                for term in self.near_terms(text) {
                    self.score_term(term, FUZZY_WEIGHT * query_term.weight, &mut scores, None);
                }
            }
        }
        if let Some(conversion) = conversion {
            self.demote_opposite(conversion, &mut scores);
        }
        // A skill whose whole name the query holds counts more.
        let named = |document: usize| {
            let name_length = self.lengths[document][0];
            name_length > 0 && u32::from(name_words[document]) >= name_length
        };
        let mut ranked: Vec<(usize, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|&(document, score)| score > 0.0 && keep(document))
            .map(|(document, score)| {
                let factor = if named(document) { NAMED } else { 1.0 };
                (document, score * factor)
            })
            .collect();
        let order = |left: &(usize, f32), right: &(usize, f32)| {
            right.1.total_cmp(&left.1).then(left.0.cmp(&right.0))
        };
        // Only the best `limit` need sorting: select them first (linear), then sort those.
        if limit > 0 && ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        ranked.truncate(limit);
        ranked
    }

    fn score_term(
        &self,
        term: u32,
        weight: f32,
        scores: &mut [f32],
        mut name_words: Option<&mut [u8]>,
    ) {
        let total = self.lengths.len() as f32;
        let frequency = self.document_counts[term as usize] as f32;
        let rarity = (1.0 + (total - frequency + 0.5) / (frequency + 0.5)).ln();
        for (document, frequencies) in decode_postings(self.postings_of(term)) {
            let lengths = &self.lengths[document as usize];
            let mut weighted = 0.0;
            for field in 0..FIELDS {
                let count = frequencies[field] as f32;
                if count > 0.0 {
                    let relative = lengths[field] as f32 / self.average_lengths[field];
                    let b = LENGTH_NORMALISATION[field];
                    weighted += WEIGHTS[field] * count / (1.0 - b + b * relative);
                }
            }
            scores[document as usize] += weight * rarity * weighted / (SATURATION + weighted);
            if frequencies[0] > 0
                && let Some(name_words) = name_words.as_deref_mut()
            {
                let count = &mut name_words[document as usize];
                *count = count.saturating_add(1);
            }
        }
    }

    /// Lowers the skills that convert into the format the query converts from, unless they also
    /// convert into the one it wants.
    fn demote_opposite(&self, conversion: weigh::Conversion, scores: &mut [f32]) {
        let converts_into = |document: u32, format: &str| {
            self.outputs
                .iter()
                .any(|&(at, output)| at == document && output == format)
        };
        for &(document, output) in &self.outputs {
            if output == conversion.from && !converts_into(document, conversion.to) {
                scores[document as usize] *= OPPOSITE_DIRECTION;
            }
        }
    }

    /// Vocabulary terms within the typo distance of `term` (not `term` itself).
    fn near_terms<'a>(&'a self, term: &'a str) -> impl Iterator<Item = u32> + 'a {
        let length = term.chars().count();
        let distance = match length {
            0..=3 => 0,
            4..=7 => 1,
            _ => 2,
        };
        let mut starts: Vec<char> = term.chars().take(2).collect();
        starts.dedup();
        let keys = starts.into_iter().flat_map(move |first| {
            (length.saturating_sub(distance)..=length + distance).map(move |size| (first, size))
        });
        keys.filter(move |_| distance > 0)
            .filter_map(|key| self.by_start.get(&key))
            .flatten()
            .copied()
            .filter(move |&slot| {
                let candidate = self.term_text(slot);
                candidate != term && strsim::osa_distance(candidate, term) <= distance
            })
    }
}

/// One term of a query and how much it counts.
#[derive(Debug, Clone, PartialEq)]
struct QueryTerm {
    text: String,
    weight: f32,
    /// Whether near spellings count too (not for CJK bigrams nor for translations).
    fuzzy: bool,
}

impl Index {
    /// The query's terms, each once: its own words (stop words left out) weighed by
    /// `weigh::weigh`, then the English words of the glossary concepts it names; and the
    /// conversion it asks for, if any.
    fn query_terms(&self, query: &str) -> (Vec<QueryTerm>, Option<weigh::Conversion>) {
        let mut found: Vec<QueryTerm> = Vec::new();
        // Stop words are left out unless the query is made of nothing else.
        let only_stop_words =
            tokens::words(query).all(|(_, word)| tokens::is_stop_word(&word.to_lowercase()));
        let conversion = weigh::weigh(query, |script, word, weight| {
            if tokens::is_stop_word(word) && !only_stop_words {
                return;
            }
            if script == Script::Cjk {
                tokens::bigrams(word, |bigram| {
                    found.push(QueryTerm {
                        text: bigram.to_owned(),
                        weight,
                        fuzzy: false,
                    });
                });
            } else {
                found.push(QueryTerm {
                    text: self.stemmers.stem(script, word),
                    weight,
                    fuzzy: true,
                });
            }
        });
        let mut plain = Vec::new();
        glossary::glossary().paraphrase(&found, |english, weight| {
            plain.push(QueryTerm {
                text: english.to_owned(),
                weight: PLAIN_WEIGHT * weight,
                fuzzy: false,
            });
        });
        found.append(&mut plain);
        let known = |script: Script, word: &str| {
            self.find_term(&self.stemmers.stem(script, word)).is_some()
        };
        glossary::glossary().translate(query, known, |english| {
            found.push(QueryTerm {
                text: english.to_owned(),
                weight: TRANSLATION_WEIGHT,
                fuzzy: false,
            });
        });
        // One entry per term: the highest weight, and fuzzy if any occurrence was.
        found.sort_by(|left, right| {
            left.text
                .cmp(&right.text)
                .then(right.weight.total_cmp(&left.weight))
                .then(right.fuzzy.cmp(&left.fuzzy))
        });
        found.dedup_by(|later, kept| later.text == kept.text);
        (found, conversion)
    }
}

/// The headings of a markdown body (lines starting with `#`, outside code fences).
pub fn headings(body: &str) -> String {
    let mut in_code = false;
    let mut found = String::new();
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
        } else if !in_code && trimmed.starts_with('#') {
            found.push_str(trimmed.trim_start_matches('#').trim());
            found.push('\n');
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn document(name: &str, description: &str, body: &str) -> Document {
        Document {
            name: name.replace('-', " "),
            description: description.to_owned(),
            headings: headings(body),
            body: body.to_owned(),
        }
    }

    fn index() -> Index {
        Index::build([
            document(
                "pdf-tools",
                "Merge and split PDF files.",
                "# Merging\nUse qpdf.",
            ),
            document(
                "csv-cleaner",
                "Clean CSV data before analysis.",
                "# Cleaning\nDrop empty rows.",
            ),
            document(
                "notes",
                "Take notes.",
                "# Tips\nSometimes a pdf shows up in the notes.",
            ),
        ])
    }

    fn names(results: &[(usize, f32)]) -> Vec<usize> {
        results.iter().map(|&(document, _)| document).collect()
    }

    #[test]
    fn the_name_and_description_outrank_the_body() {
        assert_eq!(names(&index().search("pdf", |_| true, 5)), [0, 2]);
    }

    #[test]
    fn plurals_and_typos_still_match() {
        let index = index();
        assert_eq!(names(&index.search("merging PDFs", |_| true, 1)), [0]);
        assert_eq!(names(&index.search("mrege fiels", |_| true, 1)), [0]);
        assert_eq!(names(&index.search("claen", |_| true, 1)), [1]);
    }

    #[test]
    fn filters_and_limits_apply() {
        let index = index();
        assert_eq!(
            names(&index.search("pdf", |document| document != 0, 5)),
            [2]
        );
        assert_eq!(index.search("zebra", |_| true, 5), []);
    }

    #[test]
    fn stop_words_count_only_when_the_query_has_nothing_else() {
        let index = index();
        assert_eq!(names(&index.search("the pdf", |_| true, 5)), [0, 2]);
        assert_eq!(names(&index.search("the", |_| true, 5)), [2]);
    }

    #[test]
    fn postings_round_trip_through_their_byte_encoding() {
        let mut buffer = Vec::new();
        encode_posting(&mut buffer, 3, [0, 0, 0, 1]);
        encode_posting(&mut buffer, 300, [1, 0, 2, u16::MAX]);
        assert_eq!(buffer.len(), 3 + 2 + 1 + 1 + 1 + 3, "{buffer:?}");
        let decoded: Vec<_> = decode_postings(&buffer).collect();
        assert_eq!(
            decoded,
            [(3, [0, 0, 0, 1]), (303, [1, 0, 2, u32::from(u16::MAX)])]
        );
    }

    #[test]
    fn headings_skip_code_blocks() {
        assert_eq!(headings("# A\n```\n# not\n```\n## B\n"), "A\nB\n");
    }
}
