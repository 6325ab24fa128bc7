//! TeX markup in BibTeX field values, turned into plain Unicode text: `{\"o}` → ö, `\&` → &,
//! `\emph{x}` → x, `--` → –, braces and math delimiters gone.

use unicode_normalization::UnicodeNormalization;

/// The plain text of a field value written in TeX, whitespace collapsed, composed to NFC.
pub(super) fn to_text(tex: &str) -> String {
    let chars: Vec<char> = tex.chars().collect();
    let mut out = String::with_capacity(tex.len());
    let mut math = false;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        i += 1;
        match c {
            '\\' => i = command(&chars, i, &mut out),
            '{' | '}' => {}
            '$' => math = !math,
            '^' | '_' if math => {}
            '~' => out.push(' '),
            '-' if next == Some('-') => {
                if chars.get(i + 1) == Some(&'-') {
                    out.push('—');
                    i += 2;
                } else {
                    out.push('–');
                    i += 1;
                }
            }
            '`' if next == Some('`') => {
                out.push('“');
                i += 1;
            }
            '\'' if next == Some('\'') => {
                out.push('”');
                i += 1;
            }
            c => out.push(c),
        }
    }
    collapse_whitespace(&out).nfc().collect()
}

/// A field read as written (`doi`, `url`, `eprint`): braces gone and `\_`, `\%`, `\&`, `\#`,
/// `\$`, `\~` unescaped, nothing else changed.
pub(super) fn verbatim(tex: &str) -> String {
    let mut out = String::with_capacity(tex.len());
    let mut chars = tex.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(&e @ ('_' | '%' | '&' | '#' | '$' | '~' | '{' | '}')) => {
                    out.push(e);
                    chars.next();
                }
                _ => out.push('\\'),
            },
            '{' | '}' => {}
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// After a backslash at `chars[i - 1]`: writes what the command stands for and returns where
/// the text goes on.
fn command(chars: &[char], i: usize, out: &mut String) -> usize {
    let Some(&first) = chars.get(i) else {
        return i;
    };
    if let Some(mark) = symbol_accent(first) {
        return accent(chars, i + 1, mark, first, false, out);
    }
    if !first.is_ascii_alphabetic() {
        match first {
            ' ' | '\\' | ',' | ';' | ':' | '\n' | '\t' => out.push(' '),
            '-' | '/' | '!' | '@' => {}
            c => out.push(c),
        }
        return i + 1;
    }
    let end = chars[i..]
        .iter()
        .position(|c| !c.is_ascii_alphabetic())
        .map_or(chars.len(), |n| i + n);
    let name: String = chars[i..end].iter().collect();
    if let Some((mark, spacing)) = letter_accent(&name) {
        return accent(chars, end, mark, spacing, true, out);
    }
    // TeX takes the spaces after a control word as its end (`Stra\ss e` is Straße).
    let after = chars[end..]
        .iter()
        .position(|c| *c != ' ' && *c != '\t')
        .map_or(chars.len(), |n| end + n);
    if let Some(text) = symbol(&name) {
        out.push_str(text);
        return after;
    }
    match name.as_str() {
        // `\href{link}{text}` is its text; `\noopsort{key}` only sorts.
        "href" | "noopsort" | "SortNoop" | "sortnoop" => skip_group(chars, after),
        // Anything else (`\emph`, `\textit`, `\mathrm`, `\url`) is dropped; its argument,
        // a group, is read as text.
        _ => after,
    }
}

/// Past the brace group starting at `chars[i]` (`{…}`), if one does.
fn skip_group(chars: &[char], i: usize) -> usize {
    if chars.get(i) != Some(&'{') {
        return i;
    }
    let mut depth = 0usize;
    for (n, c) in chars[i..].iter().enumerate() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + n + 1;
                }
            }
            _ => {}
        }
    }
    chars.len()
}

/// An accent on the letter at `chars[i]` (`\"o`, `\"{o}`, `\'{\i}`, `\c c`): the letter and
/// the combining mark, composed later. Without a letter (`\~{}`) the accent is written as
/// itself. Only the letter is taken; the braces around it are left to drop.
fn accent(
    chars: &[char],
    i: usize,
    mark: char,
    spacing: char,
    word: bool,
    out: &mut String,
) -> usize {
    let mut k = i;
    if word {
        while chars.get(k).is_some_and(|c| *c == ' ' || *c == '\t') {
            k += 1;
        }
    }
    while chars.get(k) == Some(&'{') {
        k += 1;
    }
    let base = match chars.get(k) {
        Some('\\')
            if matches!(chars.get(k + 1), Some('i' | 'j'))
                && !chars.get(k + 2).is_some_and(char::is_ascii_alphabetic) =>
        {
            chars.get(k + 1).map(|c| (*c, k + 2))
        }
        Some(c) if c.is_alphanumeric() => Some((*c, k + 1)),
        _ => None,
    };
    match base {
        Some((letter, next)) => {
            out.push(letter);
            if mark != '\0' {
                out.push(mark);
            }
            next
        }
        None => {
            out.push(spacing);
            // The letter-less accent's empty group (`\~{}`) is dropped by the caller.
            i
        }
    }
}

/// The combining mark of an accent written as a symbol (`\'`, `\"`).
fn symbol_accent(c: char) -> Option<char> {
    Some(match c {
        '\'' => '\u{301}',
        '`' => '\u{300}',
        '^' => '\u{302}',
        '"' => '\u{308}',
        '~' => '\u{303}',
        '=' => '\u{304}',
        '.' => '\u{307}',
        _ => return None,
    })
}

/// The combining mark of an accent written as a letter (`\c{c}`, `\v{s}`), and what to write
/// when it has no letter. The tie (`\t{oo}`) keeps its letters without a mark.
fn letter_accent(name: &str) -> Option<(char, char)> {
    Some(match name {
        "c" => ('\u{327}', '¸'),
        "v" => ('\u{30c}', 'ˇ'),
        "u" => ('\u{306}', '˘'),
        "H" => ('\u{30b}', '˝'),
        "k" => ('\u{328}', '˛'),
        "r" => ('\u{30a}', '˚'),
        "d" => ('\u{323}', '.'),
        "b" => ('\u{331}', '_'),
        "t" => ('\0', ' '),
        _ => return None,
    })
}

/// What a control word without an argument stands for.
fn symbol(name: &str) -> Option<&'static str> {
    Some(match name {
        "ss" => "ß",
        "o" => "ø",
        "O" => "Ø",
        "ae" => "æ",
        "AE" => "Æ",
        "oe" => "œ",
        "OE" => "Œ",
        "aa" => "å",
        "AA" => "Å",
        "l" => "ł",
        "L" => "Ł",
        "i" => "ı",
        "j" => "ȷ",
        "dh" => "ð",
        "DH" => "Ð",
        "dj" => "đ",
        "DJ" => "Đ",
        "th" => "þ",
        "TH" => "Þ",
        "ng" => "ŋ",
        "NG" => "Ŋ",
        "textendash" => "–",
        "textemdash" => "—",
        "textquoteleft" => "‘",
        "textquoteright" => "’",
        "textquotedblleft" => "“",
        "textquotedblright" => "”",
        "textquotesingle" => "'",
        "textquotedbl" => "\"",
        "guillemotleft" | "guillemetleft" => "«",
        "guillemotright" | "guillemetright" => "»",
        "ldots" | "dots" | "textellipsis" => "…",
        "textasciitilde" => "~",
        "textasciicircum" => "^",
        "textbackslash" => "\\",
        "textbar" => "|",
        "textless" => "<",
        "textgreater" => ">",
        "textunderscore" => "_",
        "textbraceleft" => "{",
        "textbraceright" => "}",
        "textdollar" => "$",
        "textperiodcentered" | "cdot" => "·",
        "textbullet" => "•",
        "textdegree" => "°",
        "textregistered" => "®",
        "texttrademark" => "™",
        "textcopyright" | "copyright" => "©",
        "S" => "§",
        "P" => "¶",
        "pounds" | "textsterling" => "£",
        "euro" | "texteuro" => "€",
        "textexclamdown" => "¡",
        "textquestiondown" => "¿",
        "TeX" => "TeX",
        "LaTeX" => "LaTeX",
        "BibTeX" => "BibTeX",
        "quad" | "qquad" | "enspace" | "thinspace" | "par" | "newline" => " ",
        "alpha" => "α",
        "beta" => "β",
        "gamma" => "γ",
        "delta" => "δ",
        "epsilon" | "varepsilon" => "ε",
        "zeta" => "ζ",
        "eta" => "η",
        "theta" | "vartheta" => "θ",
        "iota" => "ι",
        "kappa" => "κ",
        "lambda" => "λ",
        "mu" => "μ",
        "nu" => "ν",
        "xi" => "ξ",
        "pi" => "π",
        "rho" => "ρ",
        "sigma" => "σ",
        "tau" => "τ",
        "upsilon" => "υ",
        "phi" | "varphi" => "φ",
        "chi" => "χ",
        "psi" => "ψ",
        "omega" => "ω",
        "Gamma" => "Γ",
        "Delta" => "Δ",
        "Theta" => "Θ",
        "Lambda" => "Λ",
        "Xi" => "Ξ",
        "Pi" => "Π",
        "Sigma" => "Σ",
        "Phi" => "Φ",
        "Psi" => "Ψ",
        "Omega" => "Ω",
        "times" => "×",
        "pm" => "±",
        "to" | "rightarrow" => "→",
        "leftarrow" => "←",
        "leq" | "le" => "≤",
        "geq" | "ge" => "≥",
        "neq" | "ne" => "≠",
        "approx" => "≈",
        "sim" => "∼",
        "infty" => "∞",
        "ell" => "ℓ",
        "partial" => "∂",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accents_become_letters_in_every_spelling() {
        for (tex, text) in [
            (r#"Schr{\"o}dinger"#, "Schrödinger"),
            (r#"Schr\"odinger"#, "Schrödinger"),
            (r#"Schr\"{o}dinger"#, "Schrödinger"),
            (r"Caf{\'e}", "Café"),
            (r"\`a la", "à la"),
            (r"\^{o}", "ô"),
            (r"Espa\~na", "España"),
            (r"\={a}", "ā"),
            (r"\.{Z}", "Ż"),
            (r"Gar{\c c}on", "Garçon"),
            (r"Gar\c{c}on", "Garçon"),
            (r"Dvo{\v r}{\'a}k", "Dvořák"),
            (r"Erd{\H o}s", "Erdős"),
            (r"\k{a}", "ą"),
            (r#"\r{a}ngstr\"om"#, "ångström"),
            (r"\u{g}", "ğ"),
            (r"Ha\d{n}", "Haṇ"),
            (r"Bal{\'\i}k", "Balík"),
            (r"Bal\'{\i}k", "Balík"),
            (r"{\O}rsted and {\aa}", "Ørsted and å"),
            (r"Stra\ss e and Stra{\ss}e", "Straße and Straße"),
            (r"{\L}{\'o}d{\'z}", "Łódź"),
            (r"\AE{}sir {\oe}uvre", "Æsir œuvre"),
        ] {
            assert_eq!(to_text(tex), text, "{tex}");
        }
    }

    #[test]
    fn escapes_braces_and_formatting_are_plain_text() {
        for (tex, text) in [
            (r"Smith \& Wesson", "Smith & Wesson"),
            (r"50\% of \$5 \#1 a\_b", "50% of $5 #1 a_b"),
            (
                r"{{Attention}} Is {All} You Need",
                "Attention Is All You Need",
            ),
            (
                r"\emph{Nature} and \textbf{\textit{bold}}",
                "Nature and bold",
            ),
            ("pages 1--10 --- or not", "pages 1–10 — or not"),
            ("``quoted''", "“quoted”"),
            ("A~B", "A B"),
            (r"$\alpha$-synuclein and $^{13}$C", "α-synuclein and 13C"),
            (r"\href{https://example.com}{the site}", "the site"),
            (r"{\noopsort{a}}Zeta", "Zeta"),
            (r"\LaTeX\ is fine", "LaTeX is fine"),
            ("  many\n\t spaces  ", "many spaces"),
            (r"\unknown{kept}", "kept"),
            (r"\~{}user", "~user"),
            (r"\{literal\}", "{literal}"),
        ] {
            assert_eq!(to_text(tex), text, "{tex}");
        }
    }

    #[test]
    fn odd_markup_never_panics() {
        for tex in [
            "\\",
            "{",
            "}",
            "\\\"",
            "\\'{",
            "\\c",
            "\\c{",
            "\\v{}",
            "\\href{",
            "$",
            "--",
            "-",
            "\\'{\\",
            "\\'{\\i",
            "\\t",
            "{{{{{",
            "}}}}",
            "\\\\\\",
            "é\\'",
            "\\\u{301}",
        ] {
            let _ = to_text(tex);
            let _ = verbatim(tex);
        }
        assert_eq!(to_text(r"\'"), "'");
        assert_eq!(to_text(r"\c"), "¸");
    }

    #[test]
    fn verbatim_fields_keep_what_tex_would_change() {
        assert_eq!(verbatim(" {10.1000/a--b_c} "), "10.1000/a--b_c");
        assert_eq!(verbatim(r"10.1000/a\_b"), "10.1000/a_b");
        assert_eq!(
            verbatim(r"https://example.com/~me/a\%20b?x=1\&y=2"),
            "https://example.com/~me/a%20b?x=1&y=2"
        );
        assert_eq!(verbatim(r"C:\path"), r"C:\path");
    }
}
