//! Scholarly identifiers in free text and in links: DOIs, arXiv ids, PubMed and PubMed Central
//! ids. Each becomes one job whose address is the identifier (`doi:10.1038/nature12373`), so a
//! DOI and its doi.org link are one job.
//!
//! Only forms that say what they are count: a `doi:`/`arXiv:`/`PMID:` label, a resolver link,
//! a bare DOI (`10.` + registrant + `/`, which prose never spells), a bare new-style arXiv id
//! with a real year and month, or `PMC` + digits. A bare number is never a PubMed id.

use url::Url;

use crate::engine::policy::Services;

/// A scholarly identifier, normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identifier {
    /// As written, case kept (DOIs are case-insensitive; the key lower-cases it).
    Doi(String),
    /// Without `arXiv:`, with its version if it had one.
    Arxiv(String),
    Pmid(String),
    /// `PMC` and digits.
    Pmcid(String),
}

impl Identifier {
    /// A DOI as found. arXiv's own DOIs (`10.48550/arXiv.1706.03762`, which DataCite
    /// registers for every paper) are the arXiv id, so a paper has one job whichever a
    /// reference gives.
    pub fn doi(doi: String) -> Identifier {
        match doi.get(..15) {
            Some(prefix) if prefix.eq_ignore_ascii_case("10.48550/arxiv.") => {
                let id = &doi[15..];
                match arxiv_id(id) {
                    Some((a, len)) if len == id.len() => Identifier::Arxiv(a),
                    _ => Identifier::Doi(doi),
                }
            }
            _ => Identifier::Doi(doi),
        }
    }

    /// What the job's address says: `doi:…`, `arxiv:…`, `pmid:…`, `pmcid:…`.
    pub fn uri(&self) -> String {
        match self {
            Identifier::Doi(d) => format!("doi:{d}"),
            Identifier::Arxiv(a) => format!("arxiv:{a}"),
            Identifier::Pmid(p) => format!("pmid:{p}"),
            Identifier::Pmcid(p) => format!("pmcid:{p}"),
        }
    }

    /// The duplicate key: a DOI lower-cased, an arXiv id without its version.
    pub fn key(&self) -> String {
        match self {
            Identifier::Doi(d) => format!("doi:{}", d.to_lowercase()),
            Identifier::Arxiv(a) => {
                format!("arxiv:{}", without_class(without_version(a)).to_lowercase())
            }
            Identifier::Pmid(p) => format!("pmid:{p}"),
            Identifier::Pmcid(p) => format!("pmcid:{}", p.to_ascii_uppercase()),
        }
    }

    /// The service a job for it asks first, as the queue's host for politeness.
    pub fn service_host(&self) -> &'static str {
        match self {
            Identifier::Doi(_) => "doi.org",
            Identifier::Arxiv(_) => "arxiv.org",
            Identifier::Pmid(_) => "pubmed.ncbi.nlm.nih.gov",
            Identifier::Pmcid(_) => "pmc.ncbi.nlm.nih.gov",
        }
    }

    /// The first address a job for it fetches, at the configured services: the DOI's
    /// resolver link (which redirects to the landing page), the arXiv abstract page, the
    /// PubMed page, the PMC article page (which names its PDF; PubMed's search for a PMC id
    /// names none, and finds nothing for an article PubMed does not index).
    pub fn first_url(&self, services: &Services) -> String {
        let base = |s: &str| s.trim_end_matches('/').to_string();
        match self {
            Identifier::Doi(d) => format!("{}/{}", base(&services.doi_resolver), doi_path(d)),
            Identifier::Arxiv(a) => format!("{}/abs/{a}", base(&services.arxiv)),
            Identifier::Pmid(p) => format!("{}/{p}/", base(&services.pubmed)),
            Identifier::Pmcid(p) => format!("{}/articles/{p}/", base(&services.pmc)),
        }
    }

    /// Read back a job's address (`doi:…`), as [`Identifier::uri`] wrote it.
    pub fn from_uri(uri: &str) -> Option<Self> {
        let (scheme, rest) = uri.split_once(':')?;
        match scheme {
            "doi" => Some(Identifier::Doi(rest.to_string())),
            "arxiv" => Some(Identifier::Arxiv(rest.to_string())),
            "pmid" => Some(Identifier::Pmid(rest.to_string())),
            "pmcid" => Some(Identifier::Pmcid(rest.to_string())),
            _ => None,
        }
    }
}

/// A DOI as a URL path: the characters the DOI Handbook says to escape in one (`%`, `"`, `#`,
/// space, `?`), escaped.
fn doi_path(doi: &str) -> String {
    let mut out = String::with_capacity(doi.len());
    for c in doi.chars() {
        match c {
            '%' => out.push_str("%25"),
            '"' => out.push_str("%22"),
            '#' => out.push_str("%23"),
            ' ' => out.push_str("%20"),
            '?' => out.push_str("%3F"),
            c => out.push(c),
        }
    }
    out
}

/// An old-style arXiv id without its subject class: `math.GT/0309136` is `math/0309136`, one
/// paper (arXiv numbers them per archive), which were two jobs.
fn without_class(id: &str) -> std::borrow::Cow<'_, str> {
    match id.split_once('/') {
        Some((archive, number)) if archive.contains('.') => {
            let base = archive.split('.').next().unwrap_or(archive);
            format!("{base}/{number}").into()
        }
        _ => id.into(),
    }
}

fn without_version(id: &str) -> &str {
    match id.rfind('v') {
        Some(i) if i > 0 && i + 1 < id.len() && id[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            &id[..i]
        }
        _ => id,
    }
}

/// An identifier found in a line: where it starts and ends (bytes), and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub id: Identifier,
}

/// The identifier a resolver or repository link names, if it is one: `doi.org/10.…`,
/// `arxiv.org/abs/…`, `arxiv.org/pdf/….pdf`, PubMed and PMC article links.
pub fn from_link(url: &Url) -> Option<Identifier> {
    let host = url.host_str()?.to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    let path = percent_decoded(url.path());
    let path = path.trim_start_matches('/');
    match host {
        // `https://doi.org/10.1000/x/`: the slash a link ends with is not the DOI's.
        "doi.org" | "dx.doi.org" => resolver_path_doi(url).map(Identifier::doi),
        "arxiv.org" | "export.arxiv.org" => {
            let rest = path
                .strip_prefix("abs/")
                .or_else(|| path.strip_prefix("pdf/"))?;
            let rest = rest.trim_end_matches('/');
            let rest = rest.strip_suffix(".pdf").unwrap_or(rest);
            arxiv_id(rest)
                .filter(|(_, len)| *len == rest.len())
                .map(|(a, _)| Identifier::Arxiv(a))
        }
        "pubmed.ncbi.nlm.nih.gov" => {
            let id = path.trim_end_matches('/');
            is_pmid(id).then(|| Identifier::Pmid(id.to_string()))
        }
        "ncbi.nlm.nih.gov" => {
            if let Some(id) = path.strip_prefix("pubmed/") {
                let id = id.trim_end_matches('/');
                return is_pmid(id).then(|| Identifier::Pmid(id.to_string()));
            }
            let id = path.strip_prefix("pmc/articles/")?.trim_end_matches('/');
            pmcid(id)
                .filter(|(_, len)| *len == id.len())
                .map(|(p, _)| Identifier::Pmcid(p))
        }
        "pmc.ncbi.nlm.nih.gov" => {
            let id = path.strip_prefix("articles/")?.trim_end_matches('/');
            pmcid(id)
                .filter(|(_, len)| *len == id.len())
                .map(|(p, _)| Identifier::Pmcid(p))
        }
        _ => None,
    }
}

fn percent_decoded(path: &str) -> String {
    percent_encoding_decode(path).unwrap_or_else(|| path.to_string())
}

fn percent_encoding_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return None;
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| (*b as char).to_digit(16)),
                bytes.get(i + 2).and_then(|b| (*b as char).to_digit(16)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Identifiers written without a link in `line`, in order: labelled ones (`doi:`, `arXiv:`,
/// `PMID:`, `PMCID:`), bare DOIs, bare arXiv ids (new style, and old style with an archive of
/// arXiv's own) and bare PMC ids. Links are left to
/// the URL scanner, which asks [`from_link`].
pub fn in_text(line: &str) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let lower = line.to_ascii_lowercase();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let here = line[i..].chars().next().map_or(1, char::len_utf8);
        // Identifiers start at a word boundary.
        if line[..i].chars().next_back().is_some_and(is_word_char) {
            i += here;
            continue;
        }
        if let Some((span, next)) = labelled(line, &lower, i).or_else(|| bare(line, i)) {
            // Inside a link (`https://doi.org/10.…`): the URL scanner has it.
            if !inside_link(line, span.start) {
                out.push(span);
            }
            i = next;
            continue;
        }
        i += here;
    }
    out
}

/// Labelled identifiers that are not one (`doi: 10.1038.`, `PMID: 0314521`,
/// `arXiv:1501.0001`): where each starts and ends in `line`, and what it is not. A label
/// counts only with its colon and a value that starts as the identifier would: "doi is a
/// prefix" is prose.
pub fn malformed(line: &str) -> Vec<(usize, usize, &'static str)> {
    const LABELS: &[(&str, &str)] = &[
        ("doi:", "a DOI (10.<number>/<name>)"),
        ("arxiv:", "an arXiv id (2101.00001, hep-th/9901001)"),
        ("pmcid:", "a PMC id (PMC and digits)"),
        ("pmid:", "a PubMed id (1 to 9 digits, the first not 0)"),
    ];
    let lower = line.to_ascii_lowercase();
    let mut out = Vec::new();
    for (label, what) in LABELS {
        for (i, _) in lower.match_indices(label) {
            if line[..i].chars().next_back().is_some_and(is_word_char)
                || labelled(line, &lower, i).is_some()
            {
                continue;
            }
            let start = i + label.len();
            let value = line[start..].trim_start_matches([' ', '\t']);
            let begun = match *label {
                "doi:" => value.starts_with("10"),
                "pmcid:" => value
                    .get(..3)
                    .is_some_and(|p| p.eq_ignore_ascii_case("pmc")),
                _ => value.starts_with(|c: char| c.is_ascii_digit()),
            };
            if begun {
                let at = line.len() - value.len();
                let len = value.find(char::is_whitespace).unwrap_or(value.len());
                let end = at + value[..len].trim_end_matches(['.', ',', ';', ')']).len();
                out.push((i, end, *what));
            }
        }
    }
    out.sort_unstable();
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-')
}

/// Whether `at` lies inside a token that is a link (`scheme://` or `www.` before it, with no
/// space between).
fn inside_link(line: &str, at: usize) -> bool {
    // No link is longer than this: looking further back for one made a long line of
    // identifiers without spaces quadratic (21 s for 10,000 arXiv ids joined by commas).
    let mut from = at.saturating_sub(super::MAX_URL_LEN);
    while !line.is_char_boundary(from) {
        from += 1;
    }
    let start = line[from..at]
        .rfind(|c: char| c.is_whitespace() || matches!(c, '<' | '"' | '\'' | '(' | '['))
        .map_or(from, |i| from + i + 1);
    let token = &line[start..at];
    token.contains("://")
        || token
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("www."))
}

/// A labelled identifier at `i`: `doi:`, `DOI `, `arXiv:`, `PMID:`, `PMCID:`, with optional
/// spaces after the colon.
fn labelled(line: &str, lower: &str, i: usize) -> Option<(Span, usize)> {
    // Resolver and repository addresses written without a scheme come first: they need no
    // separator after them.
    const HOSTS: &[(&str, Kind)] = &[
        ("dx.doi.org/", Kind::Doi),
        ("doi.org/", Kind::Doi),
        ("arxiv.org/abs/", Kind::Arxiv),
        ("arxiv.org/pdf/", Kind::Arxiv),
    ];
    const LABELS: &[(&str, Kind)] = &[
        ("doi", Kind::Doi),
        ("arxiv", Kind::Arxiv),
        ("pmcid", Kind::Pmcid),
        ("pmid", Kind::Pmid),
    ];
    let mut j;
    let kind;
    if let Some((host, k)) = HOSTS.iter().find(|(h, _)| lower[i..].starts_with(h)) {
        j = i + host.len();
        kind = *k;
    } else {
        let (label, k) = LABELS.iter().find(|(l, _)| lower[i..].starts_with(l))?;
        j = i + label.len();
        kind = *k;
        // `doi:`, `DOI: `, `doi `, `PMID- ` (PubMed's own).
        let sep = line.as_bytes()[j..]
            .iter()
            .take_while(|b| matches!(b, b':' | b' ' | b'\t' | b'-'))
            .count();
        if sep == 0 {
            return None;
        }
        j += sep;
    }
    let found = match kind {
        Kind::Doi => doi_at(&line[j..]).map(|(d, len)| (Identifier::doi(d), len)),
        Kind::Arxiv => arxiv_id(&line[j..]).map(|(a, len)| {
            // `arxiv.org/pdf/1706.03762.pdf`
            let len = len + usize::from(line[j + len..].starts_with(".pdf")) * 4;
            (Identifier::Arxiv(a), len)
        }),
        Kind::Pmid => {
            let len = line[j..].bytes().take_while(u8::is_ascii_digit).count();
            let id = &line[j..j + len];
            (is_pmid(id) && !line[j + len..].starts_with(|c: char| c.is_alphanumeric()))
                .then(|| (Identifier::Pmid(id.to_string()), len))
        }
        Kind::Pmcid => pmcid(&line[j..]).map(|(p, len)| (Identifier::Pmcid(p), len)),
    }?;
    let (id, len) = found;
    Some((
        Span {
            start: i,
            end: j + len,
            id,
        },
        j + len,
    ))
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Doi,
    Arxiv,
    Pmid,
    Pmcid,
}

/// An identifier without a label at `i`: a bare DOI, a new-style arXiv id, a PMC id.
fn bare(line: &str, i: usize) -> Option<(Span, usize)> {
    let rest = &line[i..];
    let (id, len) = if rest.starts_with("10.") {
        doi_at(rest).map(|(d, len)| (Identifier::doi(d), len))?
    } else if rest.starts_with("PMC") {
        pmcid(rest).map(|(p, len)| (Identifier::Pmcid(p), len))?
    } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
        let (a, len) = new_style_arxiv(rest)?;
        (Identifier::Arxiv(a), len)
    } else if rest.starts_with(|c: char| c.is_ascii_lowercase()) {
        // `hep-th/9901001`: only arXiv's own archive names, with seven digits after them.
        let (a, len) = old_style_arxiv(rest)?;
        (Identifier::Arxiv(a), len)
    } else {
        return None;
    };
    Some((
        Span {
            start: i,
            end: i + len,
            id,
        },
        i + len,
    ))
}

/// A DOI at the start of `s` (`10.` + 4–9 digit registrant, optionally `.sub`, `/`, a suffix),
/// with sentence punctuation and unbalanced brackets trimmed off its end; the DOI and the
/// bytes it took.
/// The DOI a resolver's link names, its whole path.
fn resolver_path_doi(url: &Url) -> Option<String> {
    let path = percent_decoded(url.path());
    // `https://doi.org/10.1000/x/`: the slash a link ends with is not the DOI's.
    let path = path.trim_start_matches('/').trim_end_matches('/');
    doi_at(path)
        .filter(|(_, len)| *len == path.len())
        .map(|(d, _)| d)
}

/// The DOI of a field that holds one as files and pages write it: bare, `doi:…`, or a resolver
/// link.
pub fn doi_in_field(field: &str) -> Option<String> {
    // Sentence punctuation a field was typed with (`https://doi.org/10.1000/abc.`) is no DOI's.
    let f = field.trim().trim_end_matches(['.', ',', ';', ':']);
    // A resolver's link without its scheme, as it is often copied: `doi.org/10.1000/abc`.
    let lower = f.get(..11).unwrap_or(f).to_ascii_lowercase();
    let linked;
    let f = match ["doi.org/", "dx.doi.org/", "www.doi.org/"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        true => {
            linked = format!("https://{f}");
            linked.as_str()
        }
        false => f,
    };
    if let Ok(url) = Url::parse(f)
        && matches!(url.scheme(), "http" | "https")
    {
        let host = url.host_str()?.to_ascii_lowercase();
        return matches!(host.trim_start_matches("www."), "doi.org" | "dx.doi.org")
            .then(|| resolver_path_doi(&url))
            .flatten();
    }
    let f = f
        .get(..4)
        .filter(|p| p.eq_ignore_ascii_case("doi:"))
        .map_or(f, |_| &f[4..])
        .trim();
    doi_at(f).map(|(doi, _)| doi)
}

pub fn doi_at(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    if !s.starts_with("10.") {
        return None;
    }
    let mut j = 3;
    let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
    if !(4..=9).contains(&digits) {
        return None;
    }
    j += digits;
    // Sub-registrants: 10.1000.10/…
    while j < b.len() && b[j] == b'.' {
        let d = b[j + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if d == 0 {
            break;
        }
        j += 1 + d;
    }
    if b.get(j) != Some(&b'/') {
        return None;
    }
    j += 1;
    let suffix_start = j;
    // The suffix runs to whitespace, to a character beyond ASCII (quotes, dashes), or to one
    // that never ends a DOI in prose. A comma too: Crossref's DOIs have none, and a CSV's next
    // cell follows one.
    let stops = |c: char| {
        !c.is_ascii_graphic()
            || matches!(
                c,
                '"' | '<' | '>' | '{' | '}' | '|' | '\\' | '^' | '`' | ','
            )
    };
    let mut end = j;
    loop {
        end = s[end..].find(stops).map_or(s.len(), |k| end + k);
        // A SICI's part in angle brackets (`<249::AID-JBM14>` in Wiley's DOIs of 1996–2003,
        // `<0130:DNF>` in the AMS's) belongs to the DOI; other angle brackets delimit it.
        let Some(inside) = s[end..].strip_prefix('<') else {
            break;
        };
        match inside.find(stops) {
            Some(k) if inside[k..].starts_with('>') && inside[..k].contains(':') => {
                end += k + 2;
            }
            _ => break,
        }
    }
    // A Markdown link whose text is the DOI: `[doi:10.1/x](https://doi.org/10.1/x)`.
    let end = s[j..end].find("](").map_or(end, |k| j + k);
    let mut doi = &s[..end];
    // Trailing punctuation and unbalanced closing brackets belong to the sentence.
    loop {
        let before = doi.len();
        doi = doi.trim_end_matches(['.', ',', ';', ':', '!', '?', '\'', '*']);
        for (open, close) in [('(', ')'), ('[', ']')] {
            if doi.ends_with(close) && doi.matches(close).count() > doi.matches(open).count() {
                doi = &doi[..doi.len() - 1];
            }
        }
        if doi.len() == before {
            break;
        }
    }
    (doi.len() > suffix_start).then(|| (doi.to_string(), doi.len()))
}

/// An arXiv id at the start of `s`: new style (`2106.09685`, `0704.0001`, with `v2`) or old
/// style (`hep-th/9901001`, `math.AG/0601001`); the id and the bytes it took.
pub fn arxiv_id(s: &str) -> Option<(String, usize)> {
    new_style_arxiv(s).or_else(|| old_style_arxiv(s))
}

/// `YYMM.NNNN` (2007–2014) or `YYMM.NNNNN` (from 2015), with an optional version, not glued to
/// more digits or letters.
fn new_style_arxiv(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    if b.len() < 9 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'.' {
        return None;
    }
    let yy = (b[0] - b'0') * 10 + (b[1] - b'0');
    let mm = (b[2] - b'0') * 10 + (b[3] - b'0');
    // From April 2007, and not past 2049: `9912.12345` is a number, not December 1999.
    if !(7..=49).contains(&yy) || !(1..=12).contains(&mm) || (yy == 7 && mm < 4) {
        return None;
    }
    let n = b[5..].iter().take_while(|c| c.is_ascii_digit()).count();
    let want = if yy >= 15 { 5 } else { 4 };
    if n != want {
        return None;
    }
    let mut end = 5 + n;
    end += version_len(&s[end..]);
    if s[end..].starts_with(|c: char| c.is_alphanumeric()) {
        return None;
    }
    Some((s[..end].to_string(), end))
}

/// The archives of arXiv's old-style ids, before April 2007.
const OLD_ARCHIVES: &[&str] = &[
    "acc-phys", "adap-org", "alg-geom", "ao-sci", "astro-ph", "atom-ph", "bayes-an", "chao-dyn",
    "chem-ph", "cmp-lg", "comp-gas", "cond-mat", "cs", "dg-ga", "funct-an", "gr-qc", "hep-ex",
    "hep-lat", "hep-ph", "hep-th", "math", "math-ph", "mtrl-th", "nlin", "nucl-ex", "nucl-th",
    "patt-sol", "physics", "plasm-ph", "q-alg", "q-bio", "quant-ph", "solv-int", "supr-con",
];

/// `archive[.XX]/YYMMNNN` with an optional version.
fn old_style_arxiv(s: &str) -> Option<(String, usize)> {
    // An archive's name is short ("cond-mat.stat-mech" is the longest): no search to the end
    // of a long line for each candidate.
    let slash = s.bytes().take(24).position(|b| b == b'/')?;
    let (archive, rest) = (&s[..slash], &s[slash + 1..]);
    let base = archive.split('.').next().unwrap_or(archive);
    if !OLD_ARCHIVES.contains(&base.to_ascii_lowercase().as_str()) {
        return None;
    }
    if let Some(class) = archive.split_once('.').map(|(_, c)| c)
        && !(class.len() == 2 && class.chars().all(|c| c.is_ascii_alphabetic()))
    {
        return None;
    }
    let b = rest.as_bytes();
    if b.len() < 7 || !b[..7].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut end = slash + 1 + 7;
    end += version_len(&s[end..]);
    if s[end..].starts_with(|c: char| c.is_alphanumeric()) {
        return None;
    }
    Some((s[..end].to_string(), end))
}

fn version_len(s: &str) -> usize {
    match s.strip_prefix('v') {
        Some(v) => {
            let d = v.bytes().take_while(u8::is_ascii_digit).count();
            if d > 0 { 1 + d } else { 0 }
        }
        None => 0,
    }
}

/// PubMed ids are 1–8 digits today (about 39 million).
fn is_pmid(s: &str) -> bool {
    (1..=9).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0')
}

/// `PMC` + digits at the start of `s`, not glued to more letters or digits.
pub fn pmcid(s: &str) -> Option<(String, usize)> {
    let rest = s.get(..3).filter(|p| p.eq_ignore_ascii_case("pmc"))?;
    let _ = rest;
    let n = s[3..].bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=9).contains(&n) || s[3 + n..].starts_with(|c: char| c.is_alphanumeric()) {
        return None;
    }
    Some((format!("PMC{}", &s[3..3 + n]), 3 + n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(line: &str) -> Vec<String> {
        in_text(line).into_iter().map(|s| s.id.uri()).collect()
    }

    #[test]
    fn labelled_identifiers_in_their_written_forms() {
        assert_eq!(ids("doi:10.1038/nature12373"), ["doi:10.1038/nature12373"]);
        assert_eq!(
            ids("DOI: 10.1038/nature12373."),
            ["doi:10.1038/nature12373"]
        );
        assert_eq!(ids("arXiv:1706.03762"), ["arxiv:1706.03762"]);
        assert_eq!(ids("arXiv:2106.09685v2,"), ["arxiv:2106.09685v2"]);
        assert_eq!(ids("arXiv: hep-th/9901001"), ["arxiv:hep-th/9901001"]);
        assert_eq!(ids("(arXiv:math.AG/0601001)"), ["arxiv:math.AG/0601001"]);
        assert_eq!(ids("PMID: 31452104"), ["pmid:31452104"]);
        assert_eq!(ids("PMID- 31452104"), ["pmid:31452104"]);
        assert_eq!(ids("pmid:31452104;"), ["pmid:31452104"]);
        assert_eq!(ids("PMCID: PMC6738312"), ["pmcid:PMC6738312"]);
        assert_eq!(ids("see PMC6738312."), ["pmcid:PMC6738312"]);
        assert_eq!(
            ids("dx.doi.org/10.1038/nature12373"),
            ["doi:10.1038/nature12373"]
        );
        assert_eq!(ids("arxiv.org/pdf/1706.03762.pdf"), ["arxiv:1706.03762"]);
    }

    /// One old-style paper with and without its subject class was two jobs; a DOI field
    /// holding a resolver's link without its scheme, or with a full stop after it, was "not a
    /// DOI".
    #[test]
    fn an_arxiv_class_is_no_part_of_the_key_and_doi_fields_as_typed() {
        let key = |line: &str| in_text(line)[0].id.key();
        assert_eq!(key("arXiv:math.GT/0309136"), key("arXiv:math/0309136"));
        assert_eq!(key("arXiv:math.GT/0309136v2"), "arxiv:math/0309136");
        assert_eq!(key("arXiv:1706.03762v1"), "arxiv:1706.03762");
        assert_eq!(
            doi_in_field("doi.org/10.1000/abc2").as_deref(),
            Some("10.1000/abc2")
        );
        assert_eq!(
            doi_in_field("https://doi.org/10.1000/abc3.").as_deref(),
            Some("10.1000/abc3")
        );
        assert_eq!(
            doi_in_field("DX.DOI.org/10.1000/abc4").as_deref(),
            Some("10.1000/abc4")
        );
        assert_eq!(doi_in_field("example.org/10.1000/abc5"), None);
    }

    #[test]
    fn bare_dois_and_new_style_arxiv_ids() {
        assert_eq!(ids("10.1038/nature12373"), ["doi:10.1038/nature12373"]);
        // Punctuation and a closing parenthesis of the sentence stay outside.
        assert_eq!(
            ids("(see 10.1016/S0140-6736(20)30183-5)."),
            ["doi:10.1016/S0140-6736(20)30183-5"]
        );
        assert_eq!(ids("2106.09685"), ["arxiv:2106.09685"]);
        // Old style, bare, with one of arXiv's own archives only.
        assert_eq!(ids("hep-th/9901001"), ["arxiv:hep-th/9901001"]);
        assert_eq!(ids("see astro-ph/0601001v2."), ["arxiv:astro-ph/0601001v2"]);
        assert!(ids("and/or 1234567").is_empty());
        assert_eq!(ids("0704.0001v1"), ["arxiv:0704.0001v1"]);
    }

    #[test]
    fn a_sici_doi_keeps_its_angle_brackets_and_other_angle_brackets_delimit() {
        let sici = "10.1002/(SICI)1097-4636(199606)31:2<249::AID-JBM14>3.0.CO;2-N";
        assert_eq!(ids(sici), [format!("doi:{sici}")]);
        assert_eq!(ids(&format!("doi:{sici}.")), [format!("doi:{sici}")]);
        assert_eq!(ids("<10.1038/nature12373>"), ["doi:10.1038/nature12373"]);
        assert_eq!(ids("10.1038/nature12373<br>"), ["doi:10.1038/nature12373"]);
        assert_eq!(ids("10.1000/a<b::c"), ["doi:10.1000/a"], "never closed");
    }

    #[test]
    fn the_ams_and_esa_sici_dois_are_whole() {
        // One colon inside the brackets: two different papers of one issue used to meet as
        // `10.1175/1520-0469(1963)020`.
        for sici in [
            "10.1175/1520-0469(1963)020<0130:DNF>2.0.CO;2",
            "10.1890/0012-9658(2002)083[0001:AMFTPP]2.0.CO;2",
        ] {
            assert_eq!(ids(sici), [format!("doi:{sici}")]);
            assert_eq!(ids(&format!("doi: {sici}.")), [format!("doi:{sici}")]);
            let link = url::Url::parse(&format!("https://doi.org/{sici}")).expect("a link");
            assert_eq!(from_link(&link), Some(Identifier::doi(sici.to_string())));
        }
    }

    #[test]
    fn a_doi_ends_at_a_comma() {
        assert_eq!(
            ids("Kucsko G.,Nanometre,2013,10.1038/nature12373,https://www.scopus.com/x"),
            ["doi:10.1038/nature12373"]
        );
    }

    #[test]
    fn text_beyond_ascii_around_identifiers_is_walked_by_characters() {
        assert_eq!(
            ids("«doi:10.1038/nature12373» — ü"),
            ["doi:10.1038/nature12373"]
        );
        assert_eq!(ids("é10.1038/x ü2106.09685"), Vec::<String>::new());
    }

    #[test]
    fn words_that_only_look_like_identifiers_are_prose() {
        for prose in [
            "version 10.2 of the tool",
            "we measured 1234.5678 units",
            "in 2019.12345 terms",
            "the 1706.0376 value",      // four digits after 2015: not an id
            "page 31452104 of the log", // bare numbers are never PMIDs
            "PMIDs are numbers",
            "a pmid is assigned later",
            "doing work",
            "doi is a prefix",
            "PMC is a database",
            "at 13.2021 we",
            "9912.12345 is not a month",
            "it cost 10.50/month",
            "arxiving",
            "hep-th/99",
        ] {
            assert_eq!(ids(prose), Vec::<String>::new(), "{prose}");
        }
    }

    #[test]
    fn links_are_left_to_the_url_scanner_and_read_back_by_from_link() {
        assert!(ids("https://doi.org/10.1038/nature12373").is_empty());
        assert!(ids("<https://arxiv.org/abs/1706.03762>").is_empty());
        let link = |s: &str| from_link(&Url::parse(s).expect("url")).map(|i| i.uri());
        assert_eq!(
            link("https://doi.org/10.1038/nature12373"),
            Some("doi:10.1038/nature12373".into())
        );
        assert_eq!(
            link("https://doi.org/10.1000/xyz/"),
            Some("doi:10.1000/xyz".into())
        );
        assert_eq!(
            link("http://dx.doi.org/10.1016/S0140-6736%2820%2930183-5"),
            Some("doi:10.1016/S0140-6736(20)30183-5".into())
        );
        assert_eq!(
            link("https://arxiv.org/abs/1706.03762v5"),
            Some("arxiv:1706.03762v5".into())
        );
        assert_eq!(
            link("https://arxiv.org/pdf/2106.09685v2.pdf"),
            Some("arxiv:2106.09685v2".into())
        );
        assert_eq!(
            link("https://arxiv.org/abs/hep-th/9901001"),
            Some("arxiv:hep-th/9901001".into())
        );
        assert_eq!(
            link("https://pubmed.ncbi.nlm.nih.gov/31452104/"),
            Some("pmid:31452104".into())
        );
        assert_eq!(
            link("https://www.ncbi.nlm.nih.gov/pmc/articles/PMC6738312/"),
            Some("pmcid:PMC6738312".into())
        );
        // Other pages of those sites stay pages.
        assert_eq!(link("https://arxiv.org/list/cs.CL/recent"), None);
        assert_eq!(link("https://doi.org/"), None);
        assert_eq!(link("https://pubmed.ncbi.nlm.nih.gov/?term=cancer"), None);
    }

    /// A PMC id starts at its PMC article page, in PMC's lane: PubMed's search for it
    /// (`?term=PMC…`, its first address before) names no PDF, and finds nothing for an
    /// article PubMed does not index, whose "No results" page became the paper.
    #[test]
    fn each_identifier_starts_at_its_services_page() {
        let services = Services::default();
        let first = |uri: &str| {
            let id = Identifier::from_uri(uri).expect("an identifier");
            (id.first_url(&services), id.service_host())
        };
        assert_eq!(
            first("pmcid:PMC6738312"),
            (
                "https://pmc.ncbi.nlm.nih.gov/articles/PMC6738312/".into(),
                "pmc.ncbi.nlm.nih.gov"
            )
        );
        assert_eq!(
            first("pmid:31452104"),
            (
                "https://pubmed.ncbi.nlm.nih.gov/31452104/".into(),
                "pubmed.ncbi.nlm.nih.gov"
            )
        );
        assert_eq!(
            first("doi:10.1038/nature12373"),
            ("https://doi.org/10.1038/nature12373".into(), "doi.org")
        );
        let elsewhere = Services {
            pmc: "http://127.0.0.2:8080/".into(),
            ..Services::default()
        };
        assert_eq!(
            Identifier::Pmcid("PMC1".into()).first_url(&elsewhere),
            "http://127.0.0.2:8080/articles/PMC1/"
        );
    }

    #[test]
    fn one_doi_in_its_forms_has_one_key_and_arxiv_versions_share_theirs() {
        let key = |s: &str| in_text(s)[0].id.key();
        assert_eq!(key("doi:10.1038/NATURE12373"), key("10.1038/nature12373"));
        assert_eq!(
            from_link(&Url::parse("https://doi.org/10.1038/Nature12373").expect("url"))
                .expect("doi")
                .key(),
            key("doi:10.1038/nature12373")
        );
        assert_eq!(key("arXiv:2106.09685v2"), key("arXiv:2106.09685"));
        assert_eq!(key("arXiv:2106.09685v2"), "arxiv:2106.09685");
        // arXiv's DataCite DOI is the paper's arXiv id.
        assert_eq!(
            key("doi:10.48550/arXiv.1706.03762"),
            key("arXiv:1706.03762")
        );
        assert_eq!(ids("10.48550/ARXIV.2106.09685"), ["arxiv:2106.09685"]);
    }

    /// Real reference lists in three house styles: every identifier is found once, and the
    /// prose around them (volume numbers, pages, years) gives nothing.
    #[test]
    fn reference_lists_in_nature_apa_and_ieee_styles() {
        let nature = "\
1. Kucsko, G. et al. Nanometre-scale thermometry in a living cell. Nature 500, 54–58 (2013). doi:10.1038/nature12373
2. Vaswani, A. et al. Attention is all you need. In Adv. Neural Inf. Process. Syst. 30, 5998–6008 (2017). arXiv:1706.03762
3. Jumper, J. et al. Highly accurate protein structure prediction with AlphaFold. Nature 596, 583–589 (2021).
4. Hu, E. J. et al. LoRA: low-rank adaptation of large language models. Preprint at https://arxiv.org/abs/2106.09685 (2021).";
        let apa = "\
Kucsko, G., Maurer, P. C., Yao, N. Y., Kubo, M., Noh, H. J., Lo, P. K., Park, H., & Lukin, M. D. (2013). Nanometre-scale thermometry in a living cell. Nature, 500(7460), 54–58. https://doi.org/10.1038/nature12373
Zhou, F., Yu, T., Du, R., Fan, G., Liu, Y., Liu, Z., ... Cao, B. (2020). Clinical course and risk factors for mortality of adult inpatients with COVID-19 in Wuhan, China. The Lancet, 395(10229), 1054–1062. https://doi.org/10.1016/S0140-6736(20)30566-3
Smith, J. (2019). A study of things. Journal of Examples, 12(3), 45–67. PMID: 31452104";
        let ieee = "\
[1] G. Kucsko et al., \"Nanometre-scale thermometry in a living cell,\" Nature, vol. 500, no. 7460, pp. 54–58, 2013, doi: 10.1038/nature12373.
[2] A. Vaswani et al., \"Attention is all you need,\" in Proc. NeurIPS, 2017, pp. 5998–6008, arXiv: 1706.03762.
[3] J. Maldacena, \"The large N limit of superconformal field theories and supergravity,\" Adv. Theor. Math. Phys., vol. 2, pp. 231–252, 1998, arXiv:hep-th/9711200.
[4] R. Roe, \"A trial,\" J. Trials, vol. 3, 2019, PMCID: PMC6738312.";
        let all = |text: &str| -> Vec<String> { text.lines().flat_map(ids).collect() };
        assert_eq!(all(nature), ["doi:10.1038/nature12373", "arxiv:1706.03762"]);
        // APA's identifiers are links: the URL scanner takes those.
        assert_eq!(all(apa), ["pmid:31452104"]);
        assert_eq!(
            all(ieee),
            [
                "doi:10.1038/nature12373",
                "arxiv:1706.03762",
                "arxiv:hep-th/9711200",
                "pmcid:PMC6738312"
            ]
        );
    }
}
