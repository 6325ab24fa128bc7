//! What a search query says, the same on both backends: words (all required), `"a phrase"`,
//! `word*` (a prefix), `OR` between two terms (in any case), `-word` (without). Anything else
//! in the text is a separator, so any text is a query and none is an error. Each backend
//! writes it in its index's own syntax: FTS5's for SQLite, a `tsquery` for PostgreSQL.

use unicode_normalization::UnicodeNormalization as _;
use unicode_normalization::char::is_combining_mark;

/// Lower case, without the accents FTS5's `remove_diacritics 2` takes off, for PostgreSQL's
/// index and queries: those of the composed Latin letters ("résumé" is "resume"), and the
/// accents FTS5 drops wherever they are left uncomposed (a stress mark on Cyrillic). Every other mark is
/// part of its letter: dropping them all made "мои" "мой", "がっこう" "かっこう" and the
/// Devanagari words "काम", "कमी" and "किमी" one word.
pub fn fold(text: &str) -> String {
    lower(text)
        .chars()
        .filter(|&c| !fts5_diacritic(c))
        .map(|c| {
            if c.is_ascii() {
                return c;
            }
            let mut parts = c.nfd();
            match parts.next() {
                Some(base) if base.is_ascii_alphabetic() && parts.all(is_combining_mark) => base,
                _ => c,
            }
        })
        .collect()
}

/// The combining accents FTS5 drops wherever they stand (`sqlite3Fts5UnicodeIsdiacritic`).
fn fts5_diacritic(c: char) -> bool {
    let (mask0, mask1): (u32, u32) = (0x0802_9FDF, 0x0003_61F8);
    match u32::from(c) {
        c @ 768..800 => mask0 & (1 << (c - 768)) != 0,
        c @ 800..=817 => mask1 & (1 << (c - 800)) != 0,
        _ => false,
    }
}

/// Whether `c` belongs to a word: a letter, a digit, or a mark on one (a vowel sign, a
/// virama, a voicing mark), as FTS5's tokenizer reads words since migration 0023.
pub fn in_word(c: char) -> bool {
    c.is_alphanumeric() || is_combining_mark(c)
}

/// A query in lower case only, as FTS5 reads it (see [`SearchQuery::parse_lower`]).
fn lower(text: &str) -> String {
    // Composed first: a query typed or pasted decomposed ("re" and a combining accent)
    // split at each mark, and the index, which holds the composed form, found nothing.
    // "İ" lowers to "i" and a combining dot, which splits "İstanbul" into two words; FTS5
    // indexed it as "istanbul".
    let composed: String = text.nfc().collect();
    composed.replace('\u{130}', "i").to_lowercase()
}

/// `text` composed (NFC), as both indexes hold it: the query is composed, and a decomposed
/// "й", "が" or Hangul syllable in a text did not match it.
pub fn composed(text: &str) -> std::borrow::Cow<'_, str> {
    if unicode_normalization::is_nfc_quick(text.chars()) == unicode_normalization::IsNormalized::Yes
    {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.nfc().collect())
    }
}

/// `text` as PostgreSQL indexes it: folded ([`fold`]), and everything but letters, digits
/// and their marks made a space, so its parser finds the words Gleaner's own split (and
/// FTS5) find. Its own parse kept `bedload/suspended`, `TiO2/SiO2`, `Node.js` and `2.0.1` as
/// one token each, and `COVID-19` as `covid` and `-19`, so the words inside them were not
/// found.
pub fn searchable(text: &str) -> String {
    fold(text)
        .chars()
        .map(|c| if in_word(c) { c } else { ' ' })
        .collect()
}

/// One word, or the words of a phrase in order; the last one a prefix if `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub words: Vec<String>,
    pub prefix: bool,
}

/// What a match must have: one of some terms, or not a term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    AnyOf(Vec<Term>),
    Not(Term),
}

/// A query: every clause holds for a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub clauses: Vec<Clause>,
}

impl SearchQuery {
    /// The query `text` asks for, folded as PostgreSQL's index is ([`fold`]); `None` when it
    /// has no word a match must have (blank, punctuation, or exclusions alone, which would
    /// match nearly everything).
    pub fn parse(text: &str) -> Option<SearchQuery> {
        Self::parse_folded(&fold(text))
    }

    /// The query `text` asks for in lower case only, for FTS5, which folds the accents itself
    /// (those [`fold`] takes off, on Latin letters).
    pub fn parse_lower(text: &str) -> Option<SearchQuery> {
        Self::parse_folded(&lower(text))
    }

    /// What a query of exclusions alone (`-draft -"old notes"`) leaves out, as one query
    /// matching any of them, folded as [`SearchQuery::parse`] folds; `None` when the query
    /// has a word a match must have, or no word at all. With a filter (a tag, a host, a
    /// batch), such a query lists the filter's documents without these.
    pub fn excluded(text: &str) -> Option<SearchQuery> {
        Self::excluded_folded(&fold(text))
    }

    /// [`SearchQuery::excluded`] in lower case only, for FTS5 (see [`SearchQuery::parse_lower`]).
    pub fn excluded_lower(text: &str) -> Option<SearchQuery> {
        Self::excluded_folded(&lower(text))
    }

    fn excluded_folded(folded: &str) -> Option<SearchQuery> {
        let mut terms = Vec::new();
        for clause in Self::clauses_of(folded) {
            match clause {
                Clause::Not(term) => terms.push(term),
                Clause::AnyOf(_) => return None,
            }
        }
        (!terms.is_empty()).then(|| SearchQuery {
            clauses: vec![Clause::AnyOf(terms)],
        })
    }

    fn parse_folded(folded: &str) -> Option<SearchQuery> {
        let clauses = Self::clauses_of(folded);
        clauses
            .iter()
            .any(|c| matches!(c, Clause::AnyOf(_)))
            .then_some(SearchQuery { clauses })
    }

    fn clauses_of(folded: &str) -> Vec<Clause> {
        let mut clauses: Vec<Clause> = Vec::new();
        let mut pending_or = false;
        let mut chars = folded.chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
                continue;
            }
            let negate = c == '-';
            if negate {
                chars.next();
            }
            let raw: String = if chars.peek() == Some(&'"') {
                chars.next();
                chars.by_ref().take_while(|&c| c != '"').collect()
            } else {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                if word == "or" && !negate {
                    pending_or = matches!(clauses.last(), Some(Clause::AnyOf(_)));
                    continue;
                }
                word
            };
            let words: Vec<String> = raw
                .split(|c: char| !in_word(c))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect();
            if words.is_empty() {
                continue;
            }
            let prefix = raw.ends_with('*');
            let term = Term { words, prefix };
            match (negate, pending_or, clauses.last_mut()) {
                (true, ..) => clauses.push(Clause::Not(term)),
                (false, true, Some(Clause::AnyOf(terms))) => terms.push(term),
                _ => clauses.push(Clause::AnyOf(vec![term])),
            }
            pending_or = false;
        }
        clauses
    }

    /// The words a match has, each with whether it is a prefix: what a snippet marks.
    pub fn marks(&self) -> Vec<(String, bool)> {
        let mut marks = Vec::new();
        for clause in &self.clauses {
            if let Clause::AnyOf(terms) = clause {
                for term in terms {
                    let last = term.words.len() - 1;
                    marks.extend(
                        term.words
                            .iter()
                            .enumerate()
                            .map(|(i, w)| (w.clone(), term.prefix && i == last)),
                    );
                }
            }
        }
        marks
    }

    /// PostgreSQL's `tsquery` (`to_tsquery('simple', …)`): a term's words one after another
    /// (`<->`), as the index holds them ([`searchable`]); a prefix's last word marked. Words
    /// are letters and digits only, so nothing in them is the `tsquery`'s syntax.
    pub fn to_tsquery(&self) -> String {
        let term = |t: &Term| {
            let last = t.words.len() - 1;
            let words: Vec<String> = t
                .words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if t.prefix && i == last {
                        format!("'{w}':*")
                    } else {
                        format!("'{w}'")
                    }
                })
                .collect();
            match words.as_slice() {
                [one] => one.clone(),
                _ => format!("({})", words.join(" <-> ")),
            }
        };
        self.clauses
            .iter()
            .map(|clause| match clause {
                Clause::AnyOf(terms) if terms.len() == 1 => term(&terms[0]),
                Clause::AnyOf(terms) => {
                    format!(
                        "({})",
                        terms.iter().map(term).collect::<Vec<_>>().join(" | ")
                    )
                }
                Clause::Not(t) => format!("!{}", term(t)),
            })
            .collect::<Vec<_>>()
            .join(" & ")
    }

    /// FTS5's query syntax: each term a quoted phrase, so nothing in it is syntax; FTS5's
    /// `NOT` is binary, so the exclusions come after everything a match has, in one.
    pub fn to_fts5(&self) -> String {
        let term = |t: &Term| {
            format!(
                "\"{}\"{}",
                t.words.join(" "),
                if t.prefix { "*" } else { "" }
            )
        };
        let mut out = self
            .clauses
            .iter()
            .filter_map(|clause| match clause {
                Clause::AnyOf(terms) if terms.len() == 1 => Some(term(&terms[0])),
                Clause::AnyOf(terms) => Some(format!(
                    "({})",
                    terms.iter().map(term).collect::<Vec<_>>().join(" OR ")
                )),
                Clause::Not(_) => None,
            })
            .collect::<Vec<_>>()
            .join(" AND ");
        // One NOT of all the exclusions: a NOT each nested one level deeper, and FTS5 refuses a
        // tree deeper than 256 (its ORs are one level however many).
        let excluded: Vec<String> = self
            .clauses
            .iter()
            .filter_map(|clause| match clause {
                Clause::Not(t) => Some(term(t)),
                Clause::AnyOf(_) => None,
            })
            .collect();
        if !excluded.is_empty() {
            out = format!("({out}) NOT ({})", excluded.join(" OR "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::SearchQuery;

    fn both(text: &str) -> Option<(String, String)> {
        SearchQuery::parse(text).map(|q| (q.to_tsquery(), q.to_fts5()))
    }

    #[test]
    fn any_text_is_a_query_of_words_in_both_syntaxes() {
        let pair = |ts: &str, fts: &str| Some((ts.to_string(), fts.to_string()));
        assert_eq!(
            both("Café  résumé"),
            pair("'cafe' & 'resume'", "\"cafe\" AND \"resume\"")
        );
        assert_eq!(
            both("\"deep learning\" OR neural or nets"),
            pair(
                "(('deep' <-> 'learning') | 'neural' | 'nets')",
                "(\"deep learning\" OR \"neural\" OR \"nets\")"
            )
        );
        assert_eq!(
            both("transl* -draft -\"old copy\""),
            pair(
                "'transl':* & !'draft' & !('old' <-> 'copy')",
                "(\"transl\"*) NOT (\"draft\" OR \"old copy\")"
            )
        );
        assert_eq!(
            both("C++ (draft\" NEAR/"),
            pair("'c' & 'draft' & 'near'", "\"c\" AND \"draft\" AND \"near\"")
        );
        assert_eq!(both("3.14"), pair("('3' <-> '14')", "\"3 14\""));
        assert_eq!(
            both("o'brien back\\slash"),
            pair(
                "('o' <-> 'brien') & ('back' <-> 'slash')",
                "\"o brien\" AND \"back slash\""
            )
        );
        assert_eq!(both("stand*"), pair("'stand':*", "\"stand\"*"));
        // OR with nothing before it, or after an exclusion, is a word's separator.
        assert_eq!(both("or cats"), pair("'cats'", "\"cats\""));
        assert_eq!(
            both("-dogs or cats"),
            pair("!'dogs' & 'cats'", "(\"cats\") NOT (\"dogs\")")
        );
        assert_eq!(both("-only"), None);
        assert_eq!(both("!!! ***"), None);
        assert_eq!(both("   "), None);
    }

    #[test]
    fn fts5_gets_the_words_in_lower_case_only_and_no_control_character_reaches_postgresql() {
        let q =
            SearchQuery::parse_lower("Новый ΚΕΊΜΕΝΑ 한국어 がっこう हिन्दी Café").expect("query");
        assert_eq!(
            q.to_fts5(),
            // The virama and the vowel signs are marks, part of the word as FTS5 reads it.
            "\"новый\" AND \"κείμενα\" AND \"한국어\" AND \"がっこう\" AND \"हिन्दी\" AND \"café\""
        );
        let q = SearchQuery::parse("a\0b c").expect("query");
        assert!(!q.to_tsquery().contains('\0'), "{}", q.to_tsquery());
    }

    /// PostgreSQL's index folds as SQLite's does: every letter with a mark (and every mark
    /// after a letter), folded by [`fold`] and by FTS5's tokenizer, gives the same word.
    #[test]
    fn fold_takes_off_the_marks_fts5_takes_off_and_no_other() {
        use unicode_normalization::UnicodeNormalization as _;
        let conn = rusqlite::Connection::open_in_memory().expect("sqlite");
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = \"unicode61 remove_diacritics 2 \
                 categories 'L* N* Co M*'\"); \
             CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');",
        )
        .expect("fts5");
        let mut words = Vec::new();
        for c in (0x80..0x3_0000).filter_map(char::from_u32) {
            if c.is_alphanumeric() && c.nfd().count() > 1 {
                words.push(format!("q{c}q"));
            } else if super::is_combining_mark(c) {
                words.push(format!("qa{c}q"));
                words.push(format!("qи{c}q"));
            }
        }
        let mut insert = conn
            .prepare("INSERT INTO t (rowid, x) VALUES (?1, ?2)")
            .expect("insert");
        for (i, w) in words.iter().enumerate() {
            // FTS5 reads the text composed, as Gleaner indexes it.
            insert
                .execute(rusqlite::params![i as i64, super::composed(w)])
                .expect("row");
        }
        let mut differ = Vec::new();
        let mut terms = conn.prepare("SELECT doc, term FROM v").expect("vocab");
        let rows = terms
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .expect("vocab");
        for row in rows {
            let (doc, term) = row.expect("row");
            let word = &words[doc as usize];
            if super::fold(word) != term && super::fold(word).to_uppercase() != term.to_uppercase()
            {
                differ.push(format!(
                    "{word:?}: fts5 {term:?}, fold {:?}",
                    super::fold(word)
                ));
            }
        }
        // FTS5's own table leaves "ǡ" whole and takes "ẛ" (a long s) to "s".
        differ.retain(|d| {
            !['ǡ', 'Ǡ', 'ẛ']
                .iter()
                .any(|&x| d.starts_with(&format!("\"q{x}q\"")))
        });
        assert!(
            differ.is_empty(),
            "{} differ: {:?}",
            differ.len(),
            &differ[..differ.len().min(20)]
        );
    }

    #[test]
    fn marks_are_the_words_a_match_has() {
        let q = SearchQuery::parse("\"deep learn*\" -draft net").expect("query");
        assert_eq!(
            q.marks(),
            [
                ("deep".to_string(), false),
                ("learn".to_string(), true),
                ("net".to_string(), false)
            ]
        );
    }
}
