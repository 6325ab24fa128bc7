//! Fenced code blocks in Markdown, followed line by line: the lines a tidy-up or a heading
//! change must leave exactly as they are.

/// Where a text is, line after line: inside a fenced code block or not.
#[derive(Debug, Default)]
pub(crate) struct Fences {
    /// The open fence's character and length.
    open: Option<(char, usize)>,
}

impl Fences {
    /// Whether `line` (the text's next line) is code: a fence, or a line between two.
    pub(crate) fn is_code(&mut self, line: &str) -> bool {
        let t = line.trim_start_matches([' ', '\t']);
        let run = |ch: char| t.chars().take_while(|&c| c == ch).count();
        if let Some((ch, len)) = self.open {
            let closing = t.trim_end();
            if run(ch) >= len && closing.chars().all(|c| c == ch) {
                self.open = None;
            }
            return true;
        }
        for ch in ['`', '~'] {
            let len = run(ch);
            // A backtick in the info string makes the line a code span, not a fence.
            if len >= 3 && !(ch == '`' && t[len..].contains('`')) {
                self.open = Some((ch, len));
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::Fences;

    fn code_lines(text: &str) -> Vec<bool> {
        let mut fences = Fences::default();
        text.lines().map(|l| fences.is_code(l)).collect()
    }

    #[test]
    fn lines_between_fences_are_code_and_a_longer_fence_holds_a_shorter_one() {
        assert_eq!(
            code_lines("# a\n````py\n```\n# b\n````\nc\n~~~\n```\n~~~\nd"),
            [
                false, true, true, true, true, false, true, true, true, false
            ]
        );
        // A code span at a line's start opens nothing.
        assert_eq!(code_lines("```a``` b\n# c"), [false, false]);
    }
}
