//! BibTeX's name lists (`author = {Vaswani, Ashish and Noam Shazeer and {World Health
//! Organization}}`) as "Family, Given".

use super::tex::to_text;

/// The people of a name list, each "Family, Given" (or only a name, for a corporate author in
/// braces), in order; `and others` is left out.
pub(super) fn authors(list: &str) -> Vec<String> {
    split_names(list)
        .iter()
        .filter(|name| !name.eq_ignore_ascii_case("others"))
        .filter_map(|name| person(name))
        .collect()
}

/// Byte ranges of `text` cut at whitespace (and `~`) outside braces.
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let gap = depth == 0 && (c.is_whitespace() || c == '~');
        match (gap, start) {
            (true, Some(s)) => {
                out.push(&text[s..i]);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// The names of a list: its words grouped between the words `and` (in any case) outside braces.
fn split_names(list: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for word in words(list) {
        if word.eq_ignore_ascii_case("and") {
            names.push(current.join(" "));
            current.clear();
        } else {
            current.push(word);
        }
    }
    names.push(current.join(" "));
    names.retain(|n| !n.is_empty());
    names
}

/// Parts of a name cut at commas outside braces, trimmed.
fn comma_parts(name: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in name.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(name[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(name[start..].trim());
    parts
}

/// One name as "Family, Given": `Family, Given`, `Family, Jr, Given` (the suffix goes after
/// the given names) or `Given von Family` (the `von` part, its lower-case words, belongs to the
/// family name).
fn person(name: &str) -> Option<String> {
    let parts = comma_parts(name);
    let (family, given) = match parts.as_slice() {
        [one] => {
            let words = words(one);
            let von = words[..words.len().saturating_sub(1)]
                .iter()
                .position(|w| starts_lower_case(w))
                .unwrap_or(words.len().saturating_sub(1));
            (words[von..].join(" "), words[..von].join(" "))
        }
        [family, given] => (family.to_string(), given.to_string()),
        [family, suffix, given @ ..] => {
            (family.to_string(), format!("{} {suffix}", given.join(" ")))
        }
        [] => return None,
    };
    let (family, given) = (to_text(&family), to_text(&given));
    match (family.is_empty(), given.is_empty()) {
        (true, true) => None,
        (false, true) => Some(family),
        (true, false) => Some(given),
        (false, false) => Some(format!("{family}, {given}")),
    }
}

/// Whether a word of a name starts with a lower-case letter, as BibTeX tells a `von` part: a
/// word in braces counts as capitalised, unless its braces start with an accent (`{\'e}`).
fn starts_lower_case(word: &str) -> bool {
    if word.starts_with('{') && !word.starts_with("{\\") {
        return false;
    }
    to_text(word)
        .chars()
        .find(|c| c.is_alphabetic())
        .is_some_and(char::is_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_comma_given_and_given_family_both_read() {
        assert_eq!(
            authors("Vaswani, Ashish and Noam Shazeer and Parmar, Niki"),
            ["Vaswani, Ashish", "Shazeer, Noam", "Parmar, Niki"]
        );
        assert_eq!(authors("A. N. Other"), ["Other, A. N."]);
        assert_eq!(authors("Knuth"), ["Knuth"]);
        assert_eq!(authors("D.~E. Knuth"), ["Knuth, D. E."]);
    }

    #[test]
    fn von_parts_suffixes_and_accents() {
        assert_eq!(authors("Ludwig van Beethoven"), ["van Beethoven, Ludwig"]);
        assert_eq!(
            authors("van der Waals, Johannes"),
            ["van der Waals, Johannes"]
        );
        assert_eq!(authors("Jean de La Fontaine"), ["de La Fontaine, Jean"]);
        assert_eq!(
            authors("King, Jr., Martin Luther"),
            ["King, Martin Luther Jr."]
        );
        assert_eq!(
            authors(r#"M{\"u}ller, J{\"o}rg and {\'E}mile Zola"#),
            ["Müller, Jörg", "Zola, Émile"]
        );
        assert_eq!(authors(r"{\'e}mile de Zola"), ["émile de Zola"]);
    }

    #[test]
    fn braced_names_are_one_corporate_name() {
        assert_eq!(
            authors("{World Health Organization} and Smith, John"),
            ["World Health Organization", "Smith, John"]
        );
        assert_eq!(
            authors("{Barnes and Noble, Inc.}"),
            ["Barnes and Noble, Inc."],
            "and and commas inside braces do not split"
        );
        assert_eq!(authors("{{ATLAS Collaboration}}"), ["ATLAS Collaboration"]);
    }

    #[test]
    fn and_others_and_stray_separators_are_left_out() {
        assert_eq!(authors("Smith, John and others"), ["Smith, John"]);
        assert_eq!(
            authors("Smith, John AND\n  Doe, Jane"),
            ["Smith, John", "Doe, Jane"]
        );
        assert_eq!(authors(" and Smith, John and and "), ["Smith, John"]);
        assert_eq!(authors(""), Vec::<String>::new());
        assert_eq!(authors(", ,"), Vec::<String>::new());
        assert_eq!(authors("Smith, "), ["Smith"]);
        assert_eq!(authors(", John"), ["John"]);
        assert_eq!(
            authors("{unbalanced and} } { and").len(),
            1,
            "one name, read somehow"
        );
    }
}
