//! A person's name written given names first ("Ashish Vaswani", "Ludwig van Beethoven",
//! "Martin Luther King Jr.", "Smith JK"), turned into the "Family, Given" the library stores,
//! so that a citation names the person and not an organisation called "Ashish Vaswani".
//! A name that may be an organisation's ("World Health Organization", "NASA") stays as it is.

/// Lower-case words that belong to the family name that follows them (BibTeX's `von` part).
const PARTICLES: &[&str] = &[
    "van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "dos", "das", "la", "le",
    "ten", "ter", "zu", "bin", "ibn", "al", "el", "y",
];

const SUFFIXES: &[&str] = &["Jr.", "Jr", "Sr.", "Sr", "II", "III", "IV"];

/// Words that make a name an organisation's, not a person's.
const ORGANISATION_WORDS: &[&str] = &[
    "academy",
    "agency",
    "association",
    "authors",
    "board",
    "brain",
    "center",
    "centre",
    "clinic",
    "collaboration",
    "college",
    "commission",
    "committee",
    "company",
    "consortium",
    "corporation",
    "council",
    "department",
    "editorial",
    "editors",
    "federation",
    "foundation",
    "group",
    "hospital",
    "inc",
    "inc.",
    "gmbh",
    "ag",
    "ai",
    "corp",
    "corp.",
    "co.",
    "plc",
    "llp",
    "bank",
    "library",
    "museum",
    "archive",
    "archives",
    "fund",
    "trust",
    "new",
    "times",
    "journal",
    "magazine",
    "review",
    "initiative",
    "institute",
    "investigators",
    "lab",
    "laboratory",
    "labs",
    "ltd",
    "ltd.",
    "llc",
    "ministry",
    "network",
    "news",
    "office",
    "organisation",
    "organization",
    "press",
    "program",
    "programme",
    "project",
    "research",
    "school",
    "service",
    "services",
    "society",
    "staff",
    "study",
    "team",
    "the",
    "trial",
    "union",
    "university",
    "working",
];

/// Titles before a name, left out of it.
const HONORIFICS: &[&str] = &[
    "Dr.", "Dr", "Prof.", "Prof", "Mr.", "Mrs.", "Ms.", "Sir", "Dame",
];

/// Characters no one person's name holds: a list, a corporate name, an address.
const NOT_ONE_NAME: [char; 6] = [',', ';', '&', '(', '/', '@'];

/// `name` as "Family, Given" when it is one person's name with the given names first; `None`
/// when it already has a comma, is one word, or may be an organisation's.
pub fn family_first(name: &str) -> Option<String> {
    family_and_given(name).map(|(family, given)| format!("{family}, {given}"))
}

/// [`family_first`]'s two parts: the family name and the given names.
pub fn family_and_given(name: &str) -> Option<(String, String)> {
    let mut words: Vec<&str> = name.split_whitespace().collect();
    while words.len() > 1 && HONORIFICS.contains(&words[0]) {
        words.remove(0);
    }
    given_first(name, &words)
}

/// As [`family_first`], and "Family INITIALS" (`Smith JK`, as PubMed writes names and RIS
/// files often carry them) read as such. Not for the web's bylines and `citation_author`s,
/// where a family name in capitals (`Kai LI`) or a company (`Meta AI`) looks the same.
pub fn family_first_or_initials(name: &str) -> Option<String> {
    let words: Vec<&str> = name.split_whitespace().collect();
    if !name.contains(NOT_ONE_NAME)
        && let [family @ .., initials] = words.as_slice()
        && !family.is_empty()
        && family.len() <= 3
        && !SUFFIXES.contains(initials)
        && !ORGANISATION_WORDS.contains(&initials.to_lowercase().as_str())
        && (1..=3).contains(&initials.chars().count())
        && initials.chars().all(|c| c.is_uppercase())
        && family.iter().all(|w| is_capitalised(w) || is_particle(w))
        && family.last().is_some_and(|w| is_capitalised(w))
        && !family
            .iter()
            .any(|w| ORGANISATION_WORDS.contains(&w.to_lowercase().as_str()))
    {
        let given: Vec<String> = initials.chars().map(|c| format!("{c}.")).collect();
        return Some(format!("{}, {}", family.join(" "), given.join(" ")));
    }
    family_first(name)
}

fn given_first(name: &str, words: &[&str]) -> Option<(String, String)> {
    if name.contains(NOT_ONE_NAME) || !(2..=6).contains(&words.len()) {
        return None;
    }
    if words.iter().any(|w| {
        w.chars().any(|c| c.is_ascii_digit())
            || ORGANISATION_WORDS.contains(&w.to_lowercase().as_str())
            || w.eq_ignore_ascii_case("and")
    }) {
        return None;
    }
    let (words, suffix) = match words {
        [rest @ .., last] if SUFFIXES.contains(last) => (rest, Some(*last)),
        all => (all, None),
    };
    let [given @ .., family_last] = words else {
        return None;
    };
    if given.is_empty()
        || !is_capitalised(family_last)
        || !(is_capitalised(given[0]) || is_initial(given[0]))
    {
        return None;
    }
    // The particles just before the last word go with it: "van Beethoven".
    let von = given
        .iter()
        .rposition(|w| !is_particle(w))
        .map_or(0, |i| i + 1);
    let (given, particles) = given.split_at(von);
    if given.is_empty()
        || !given
            .iter()
            .all(|w| is_capitalised(w) || is_initial(w) || is_particle(w))
    {
        return None;
    }
    let family: Vec<&str> = particles.iter().chain([family_last]).copied().collect();
    let given: Vec<&str> = given.iter().copied().chain(suffix).collect();
    Some((family.join(" "), given.join(" ")))
}

fn is_particle(word: &str) -> bool {
    PARTICLES.contains(&word)
}

/// A capital and then lower case ("Vaswani", "O'Neil", "McDonald", "Jean-Paul", "Ørsted"): a
/// word in capitals throughout ("NASA") may be an organisation's.
fn is_capitalised(word: &str) -> bool {
    let mut letters = word.chars().filter(|c| c.is_alphabetic());
    letters.next().is_some_and(char::is_uppercase) && letters.any(char::is_lowercase)
}

/// "J.", "J.-P.", "A.N.".
fn is_initial(word: &str) -> bool {
    word.ends_with('.')
        && word
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase)
        && word.chars().any(char::is_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::family_first;

    fn f(name: &str) -> Option<String> {
        family_first(name)
    }

    #[test]
    fn given_names_first_become_family_first() {
        assert_eq!(f("Ashish Vaswani").as_deref(), Some("Vaswani, Ashish"));
        assert_eq!(f("Jean-Paul Sartre").as_deref(), Some("Sartre, Jean-Paul"));
        assert_eq!(f("A. N. Other").as_deref(), Some("Other, A. N."));
        assert_eq!(f("J.-P. Serre").as_deref(), Some("Serre, J.-P."));
        assert_eq!(f("Mary Ann O'Neil").as_deref(), Some("O'Neil, Mary Ann"));
        assert_eq!(
            f("Hans Christian Ørsted").as_deref(),
            Some("Ørsted, Hans Christian")
        );
        assert_eq!(f("  Noam   Shazeer ").as_deref(), Some("Shazeer, Noam"));
    }

    #[test]
    fn particles_go_with_the_family_and_suffixes_after_the_given_names() {
        assert_eq!(
            f("Ludwig van Beethoven").as_deref(),
            Some("van Beethoven, Ludwig")
        );
        assert_eq!(
            f("Johannes van der Waals").as_deref(),
            Some("van der Waals, Johannes")
        );
        assert_eq!(
            f("Martin Luther King Jr.").as_deref(),
            Some("King, Martin Luther Jr.")
        );
        assert_eq!(f("John Smith III").as_deref(), Some("Smith, John III"));
        assert_eq!(f("John Paul II").as_deref(), Some("Paul, John II"));
    }

    #[test]
    fn family_then_initials_reads_as_pubmed_writes_it_where_a_file_says_so() {
        let ris = super::family_first_or_initials;
        assert_eq!(ris("Smith JK").as_deref(), Some("Smith, J. K."));
        assert_eq!(ris("van Gogh V").as_deref(), Some("van Gogh, V."));
        assert_eq!(ris("Ada Lovelace").as_deref(), Some("Lovelace, Ada"));
        assert_eq!(ris("Siemens AG"), None);
        // On the web the same shape is a family name in capitals or a company.
        assert_eq!(f("Smith JK"), None);
    }

    #[test]
    fn titles_before_a_name_are_left_out() {
        assert_eq!(f("Dr. Jane Smith").as_deref(), Some("Smith, Jane"));
        assert_eq!(f("Prof Ada Lovelace").as_deref(), Some("Lovelace, Ada"));
        assert_eq!(f("Dr. Smith"), None);
    }

    #[test]
    fn organisations_one_word_and_family_first_names_stay_as_they_are() {
        for name in [
            "World Health Organization",
            "ATLAS Collaboration",
            "The Associated Press",
            "Google Brain",
            "NASA",
            "Reuters Staff",
            "Vaswani, Ashish",
            "Jane Doe and John Roe",
            "Plato",
            "王小明",
            "Covid-19 Investigators",
            "Research Team 4",
            "lowercase person",
            "BBC News",
            "Kai LI",
            "Jane DOE",
            "Meta AI",
            "Google AI",
            "Siemens GmbH",
            "British Library",
            "World Bank",
            "New Scientist",
        ] {
            assert_eq!(f(name), None, "{name}");
        }
    }
}
