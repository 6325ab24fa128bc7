//! A search hit's snippet as plain text. The index holds each document's Markdown, so FTS5's
//! `snippet()` returns Markdown: link targets, `\` escapes, emphasis marks. Those are taken
//! out here, and the matched words, which the query marks with [`OPEN`] and [`CLOSE`], are
//! then put between `**` (the CLI's and the window's one mark), so a bold word in the text can
//! never pass for a match.

/// What the ranked query has `snippet()` put around each matched word: control characters no
/// document text holds (the extractor drops them).
pub(crate) const OPEN: char = '\u{2}';
pub(crate) const CLOSE: char = '\u{3}';

/// Markdown made plain: `[text](target)` and `![alt](target)` keep their words, escapes lose
/// their backslash, heading, quote, emphasis and code marks go, and whitespace collapses.
pub(crate) fn plain(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut chars = markdown.chars().peekable();
    let mut line_start = true;
    while let Some(c) = chars.next() {
        // Heading and quote marks count only before a line's first word.
        let still_start = line_start && (c.is_whitespace() || matches!(c, '#' | '>'));
        match c {
            '\\' if chars.peek().is_some_and(|n| n.is_ascii_punctuation()) => {
                match chars.next() {
                    // The text's own star (`2**10`) as its lookalike: two of them would pass
                    // for the match mark.
                    Some('*') => out.push('\u{2217}'),
                    Some(n) => out.push(n),
                    None => {}
                }
            }
            // A link's target, or a reference's label, is not text to read.
            ']' if chars.peek() == Some(&'(') => {
                let mut depth = 0usize;
                for n in chars.by_ref() {
                    match n {
                        '(' => depth += 1,
                        ')' if depth <= 1 => break,
                        ')' => depth -= 1,
                        _ => {}
                    }
                }
            }
            '[' | ']' | '*' | '`' => {}
            '!' if chars.peek() == Some(&'[') => {}
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
            }
            '#' | '>' if line_start => {}
            '\n' => {
                out.push(' ');
                line_start = true;
                continue;
            }
            c => out.push(c),
        }
        line_start = still_start;
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    words.join(" ")
}

/// A snippet from the ranked query, plain, with its matches between `**`.
pub(crate) fn marked(snippet: &str) -> String {
    plain(snippet)
        .replace([OPEN, CLOSE], "**")
        // A mark around nothing (a match that was only markup) says nothing.
        .replace("****", "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts_own_stars_never_pass_for_a_match_mark() {
        let snippet =
            format!("We compute 2\\*\\*10 and x\\*\\*y as the {OPEN}exponent{CLOSE} grows");
        assert_eq!(
            marked(&snippet),
            "We compute 2\u{2217}\u{2217}10 and x\u{2217}\u{2217}y as the **exponent** grows"
        );
    }

    #[test]
    fn links_escapes_and_emphasis_are_taken_out() {
        assert_eq!(
            plain("See [the paper](https://x.example/a_(b)) and ![a plot](p.png) \\<img\\> here."),
            "See the paper and a plot <img> here."
        );
        assert_eq!(
            plain("## Results\n\n> quoted **bold** and __strong__ and `code`\n- item"),
            "Results quoted bold and strong and code - item"
        );
    }

    #[test]
    fn only_the_matched_words_are_marked() {
        let s =
            format!("The **bold** claim about {OPEN}nitrogen{CLOSE}-vacancy [centres](https://x)");
        assert_eq!(
            marked(&s),
            "The bold claim about **nitrogen**-vacancy centres"
        );
    }

    #[test]
    fn a_hash_inside_a_line_stays() {
        assert_eq!(plain("C# and F# are #1"), "C# and F# are #1");
        assert_eq!(plain("# Title\nC#"), "Title C#");
    }
}
