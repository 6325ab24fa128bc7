//! The syntax of one BibTeX block (`@type{key, field = value, …}`, `@string{…}`,
//! `@comment{…}`, `@preamble{…}`), once the reader has cut it out of the file.

use std::collections::HashMap;

/// The longest a field's value may grow to by `@string` expansion and `#` concatenation: a
/// chain of macros that doubles at each step stays bounded.
pub(super) const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// What one block of a BibTeX file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Block {
    /// `@comment` and `@preamble`: nothing to read.
    Ignored,
    /// `@string{name = value}`: a macro (its name lower-cased) and its expansion.
    String { name: String, value: String },
    /// An entry: its citation key and its fields (names lower-cased, values with macros
    /// expanded, TeX markup as written), the first of a repeated field kept.
    Entry {
        key: Option<String>,
        fields: Vec<(String, String)>,
    },
}

/// Why a block could not be read: where (a byte offset into the block), its citation key if it
/// got that far, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub offset: usize,
    pub key: Option<String>,
    pub message: String,
}

/// Read one block, `text` starting at its `@`. `macros` are the `@string`s defined so far.
pub(super) fn parse_block(
    text: &str,
    macros: &HashMap<String, String>,
) -> Result<Block, SyntaxError> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        pos: 0,
        key: None,
        macros,
    };
    p.parse()
}

/// The kind of block `text` (starting at its `@`) is, lower-cased: `article`, `string`.
pub(super) fn block_kind(text: &str) -> String {
    let rest = text.strip_prefix('@').unwrap_or(text).trim_start();
    let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
    rest[..end].to_ascii_lowercase()
}

/// The citation key of an entry's first line, if it has one (for naming an entry that could
/// not be read whole).
pub(super) fn key_of(text: &str) -> Option<String> {
    let open = text.find(['{', '('])?;
    let rest = text[open + 1..].trim_start();
    let end =
        rest.find(|c: char| c.is_whitespace() || matches!(c, ',' | '=' | '{' | '}' | '(' | ')'))?;
    let key = &rest[..end];
    (!key.is_empty() && rest[end..].trim_start().starts_with(',')).then(|| key.to_string())
}

/// A character of an entry type, field or macro name.
fn is_name_char(c: char) -> bool {
    !c.is_whitespace()
        && !matches!(
            c,
            '"' | '#' | '%' | '\'' | '(' | ')' | ',' | '=' | '{' | '}'
        )
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    key: Option<String>,
    macros: &'a HashMap<String, String>,
}

impl Parser<'_> {
    fn fail<T>(&self, message: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            offset: self.pos,
            key: self.key.clone(),
            message: message.into(),
        })
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    /// Whitespace and `%` comments to their line's end, between an entry's fields (biber and
    /// many hand-kept files comment a field out that way).
    fn skip_gap(&mut self) {
        loop {
            self.skip_ws();
            if self.peek() != Some(b'%') {
                return;
            }
            let rest = self.text.get(self.pos..).unwrap_or("");
            self.pos += rest.find('\n').unwrap_or(rest.len());
        }
    }

    /// What is at the cursor, for an error message: a character, or the end.
    fn found(&self) -> String {
        match self.text.get(self.pos..).and_then(|r| r.chars().next()) {
            Some(c) => format!("`{c}`"),
            None => "the end of the entry".into(),
        }
    }

    fn name(&mut self) -> &str {
        let start = self.pos;
        let rest = self.text.get(start..).unwrap_or("");
        let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    fn parse(&mut self) -> Result<Block, SyntaxError> {
        if self.peek() != Some(b'@') {
            return self.fail("an entry starts with `@`");
        }
        self.pos += 1;
        self.skip_ws();
        let kind = self.name().to_ascii_lowercase();
        self.skip_ws();
        let close = match self.peek() {
            Some(b'{') => b'}',
            Some(b'(') => b')',
            _ => {
                return self.fail(format!(
                    "expected `{{` after `@{kind}`, found {}",
                    self.found()
                ));
            }
        };
        self.pos += 1;
        match kind.as_str() {
            "comment" | "preamble" => Ok(Block::Ignored),
            "string" => self.string(close),
            _ => self.entry(close),
        }
    }

    fn string(&mut self, close: u8) -> Result<Block, SyntaxError> {
        self.skip_ws();
        let name = self.name().to_ascii_lowercase();
        if name.is_empty() {
            return self.fail(format!("@string: expected a name, found {}", self.found()));
        }
        self.skip_ws();
        if self.peek() != Some(b'=') {
            return self.fail(format!(
                "@string: expected `=` after `{name}`, found {}",
                self.found()
            ));
        }
        self.pos += 1;
        let value = self.value(&name)?;
        self.skip_ws();
        if self.peek() == Some(b',') {
            self.pos += 1;
            self.skip_ws();
        }
        if self.peek() != Some(close) {
            return self.fail(format!(
                "@string: expected `{}` after the value of `{name}`, found {}",
                close as char,
                self.found()
            ));
        }
        Ok(Block::String { name, value })
    }

    fn entry(&mut self, close: u8) -> Result<Block, SyntaxError> {
        self.skip_ws();
        let start = self.pos;
        let rest = self.text.get(start..).unwrap_or("");
        let len = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | '=' | '{' | '}' | '(' | ')'))
            .unwrap_or(rest.len());
        let key = &rest[..len];
        self.pos += len;
        self.skip_ws();
        if self.peek() == Some(b'=') {
            return self.fail("it has no citation key: a field comes first");
        }
        if !key.is_empty() {
            self.key = Some(key.to_string());
        }
        match self.peek() {
            Some(b',') => self.pos += 1,
            Some(b) if b == close => {
                return Ok(Block::Entry {
                    key: self.key.take(),
                    fields: Vec::new(),
                });
            }
            _ => {
                return self.fail(format!(
                    "expected `,` after the citation key, found {}",
                    self.found()
                ));
            }
        }
        let mut fields: Vec<(String, String)> = Vec::new();
        loop {
            self.skip_gap();
            while self.peek() == Some(b',') {
                self.pos += 1;
                self.skip_gap();
            }
            match self.peek() {
                Some(b) if b == close => break,
                None => return self.fail(format!("not closed with `{}`", close as char)),
                _ => {}
            }
            let name = self.name().to_ascii_lowercase();
            if name.is_empty() {
                return self.fail(format!("expected a field name, found {}", self.found()));
            }
            self.skip_ws();
            if self.peek() != Some(b'=') {
                return self.fail(format!(
                    "expected `=` after field `{name}`, found {}",
                    self.found()
                ));
            }
            self.pos += 1;
            let value = self.value(&name)?;
            self.skip_gap();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b) if b == close => {}
                _ => {
                    return self.fail(format!(
                        "missing `,` after field `{name}` (found {})",
                        self.found()
                    ));
                }
            }
            if !fields.iter().any(|(n, _)| *n == name) {
                fields.push((name, value));
            }
        }
        Ok(Block::Entry {
            key: self.key.take(),
            fields,
        })
    }

    /// A value: pieces (`{…}`, `"…"`, a number, a macro) joined by `#`.
    fn value(&mut self, field: &str) -> Result<String, SyntaxError> {
        let mut out = String::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'{') => {
                    let (start, end) = self.delimited(field, b'}')?;
                    out.push_str(&self.text[start..end]);
                }
                Some(b'"') => {
                    let (start, end) = self.delimited(field, b'"')?;
                    out.push_str(&self.text[start..end]);
                }
                Some(b) if b.is_ascii_digit() => {
                    let start = self.pos;
                    while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    out.push_str(&self.text[start..self.pos]);
                }
                Some(_) => {
                    let name = self.name().to_ascii_lowercase();
                    if name.is_empty() {
                        return self.fail(format!(
                            "expected a value for field `{field}`, found {}",
                            self.found()
                        ));
                    }
                    // An undefined macro is empty, as BibTeX has it.
                    if let Some(expansion) = self.macros.get(&name) {
                        out.push_str(expansion);
                    }
                }
                None => return self.fail(format!("field `{field}` has no value")),
            }
            if out.len() > MAX_VALUE_BYTES {
                return self.fail(format!(
                    "field `{field}` is longer than {} MiB",
                    MAX_VALUE_BYTES / (1024 * 1024)
                ));
            }
            self.skip_ws();
            if self.peek() == Some(b'#') {
                self.pos += 1;
            } else {
                return Ok(out);
            }
        }
    }

    /// A `{…}` or `"…"` piece, the cursor at its opening delimiter: the range of what is
    /// inside. Braces inside must balance; a `"` inside braces is part of the text.
    fn delimited(&mut self, field: &str, end: u8) -> Result<(usize, usize), SyntaxError> {
        let open = self.pos;
        self.pos += 1;
        let start = self.pos;
        let mut depth = usize::from(end == b'}');
        while let Some(b) = self.peek() {
            match b {
                b'{' => depth += 1,
                b'}' if depth == 0 => {
                    return self.fail(format!("field `{field}` has a `}}` that closes nothing"));
                }
                b'}' => {
                    depth -= 1;
                    if depth == 0 && end == b'}' {
                        self.pos += 1;
                        return Ok((start, self.pos - 1));
                    }
                }
                b'"' if depth == 0 && end == b'"' => {
                    self.pos += 1;
                    return Ok((start, self.pos - 1));
                }
                _ => {}
            }
            self.pos += 1;
        }
        self.pos = open;
        self.fail(format!(
            "the braces or quotes of field `{field}` do not balance"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Block, SyntaxError> {
        let mut macros = HashMap::new();
        macros.insert("jul".to_string(), "July".to_string());
        macros.insert("nat".to_string(), "Nature".to_string());
        parse_block(text, &macros)
    }

    fn fields(text: &str) -> Vec<(String, String)> {
        match parse(text) {
            Ok(Block::Entry { fields, .. }) => fields,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn values_in_braces_quotes_numbers_and_macros() {
        let got = fields(
            "@Article{k,\n  Title = {A {Braced} \"quote\"},\n  note = \"Say {\"}hi{\"}\",\n  \
             year = 2013, month = jul, journal = nat # { } # \"News\", pages={1--2},\n}",
        );
        let want = [
            ("title", "A {Braced} \"quote\""),
            ("note", "Say {\"}hi{\"}"),
            ("year", "2013"),
            ("month", "July"),
            ("journal", "Nature News"),
            ("pages", "1--2"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn keys_kinds_and_parentheses() {
        assert_eq!(
            parse("@misc(key:2020/a-b, title = \"x (y)\")"),
            Ok(Block::Entry {
                key: Some("key:2020/a-b".into()),
                fields: vec![("title".into(), "x (y)".into())],
            })
        );
        assert_eq!(
            parse("@misc{onlykey}"),
            Ok(Block::Entry {
                key: Some("onlykey".into()),
                fields: vec![],
            })
        );
        assert_eq!(
            parse("@misc{, url = {https://example.com}}"),
            Ok(Block::Entry {
                key: None,
                fields: vec![("url".into(), "https://example.com".into())],
            })
        );
        assert_eq!(block_kind("@ InProceedings {x,"), "inproceedings");
        assert_eq!(
            key_of("@article{vaswani2017,\n"),
            Some("vaswani2017".into())
        );
        assert_eq!(key_of("@article{title = {x}"), None);
        assert_eq!(parse("@comment{anything {at} all"), Ok(Block::Ignored));
        assert_eq!(
            parse("@PREAMBLE{ \"\\newcommand{\\noop}[1]{}\" }"),
            Ok(Block::Ignored)
        );
    }

    #[test]
    fn strings_define_macros() {
        assert_eq!(
            parse("@String{ JNL = nat # \" Physics\" }"),
            Ok(Block::String {
                name: "jnl".into(),
                value: "Nature Physics".into(),
            })
        );
        assert!(parse("@string{= \"x\"}").is_err());
        assert!(parse("@string{a \"x\"}").is_err());
    }

    #[test]
    fn an_undefined_macro_is_empty_and_a_repeated_field_keeps_its_first_value() {
        assert_eq!(
            fields("@article{k, journal = undefinedmacro, title = {A}, title = {B}}"),
            [
                ("journal".to_string(), String::new()),
                ("title".into(), "A".into())
            ]
        );
    }

    #[test]
    fn errors_say_what_and_where() {
        let err = |text: &str| parse(text).err().map(|e| (e.key, e.message, e.offset));
        let (key, message, offset) =
            err("@article{k1,\n title = {A}\n author = {B}\n}").unwrap_or_default();
        assert_eq!(key.as_deref(), Some("k1"));
        assert_eq!(message, "missing `,` after field `title` (found `a`)");
        assert_eq!(offset, 27, "at `author`");
        let (key, message, _) = err("@article{title = {A}}").unwrap_or_default();
        assert_eq!(key, None);
        assert_eq!(message, "it has no citation key: a field comes first");
        let (_, message, _) = err("@article{k2 title = {A}}").unwrap_or_default();
        assert_eq!(message, "expected `,` after the citation key, found `t`");
        let (_, message, _) = err("@article{k3, title {A}}").unwrap_or_default();
        assert_eq!(message, "expected `=` after field `title`, found `{`");
        let (_, message, _) = err("@article{k4, title = }").unwrap_or_default();
        assert_eq!(message, "expected a value for field `title`, found `}`");
        let (_, message, _) = err("@article{k5, title = \"A}\"}").unwrap_or_default();
        assert_eq!(message, "field `title` has a `}` that closes nothing");
        let (_, message, _) = err("@article{k6, title = {A").unwrap_or_default();
        assert_eq!(
            message,
            "the braces or quotes of field `title` do not balance"
        );
        let (_, message, _) = err("@article k7").unwrap_or_default();
        assert_eq!(message, "expected `{` after `@article`, found `k`");
        assert!(err("@article{k8, title = {A},").is_some());
        assert!(err("@article{k9, = {A}}").is_some());
    }

    #[test]
    fn expansion_is_bounded() {
        let mut macros = HashMap::new();
        macros.insert("a".to_string(), "x".repeat(MAX_VALUE_BYTES / 2 + 1));
        let got = parse_block("@article{k, title = a # a}", &macros);
        assert!(
            got.is_err_and(|e| e.message == "field `title` is longer than 1 MiB"),
            "a value past the limit is an error"
        );
    }
}
