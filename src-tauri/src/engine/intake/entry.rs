//! One entry of a reference file (BibTeX, RIS, CSL-JSON, MEDLINE) or of a bookmark export, as read,
//! before intake decides what to fetch for it.

use serde::Serialize;

/// An entry's own fields, as the file gives them (trimmed, markup such as BibTeX braces
/// removed). Intake takes its DOI, else its arXiv id, else its PubMed id, else its PMC id, else its URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The entry's name in its file: BibTeX's citation key, RIS's `ID`, CSL-JSON's `id`, a
    /// bookmark's title. Rejections name the entry by it.
    pub key: Option<String>,
    /// As written: `10.1038/nature12373`, or a `https://doi.org/…` link.
    pub doi: Option<String>,
    /// An arXiv id as written (`2106.09685v2`, `hep-th/9901001`, `arXiv:…`).
    pub arxiv: Option<String>,
    /// A PubMed id as written.
    pub pmid: Option<String>,
    /// A PubMed Central id as written (`PMC6738312`).
    pub pmcid: Option<String>,
    /// A web address as written.
    pub url: Option<String>,
    pub title: Option<String>,
    /// "Family, Given", in the entry's order.
    pub authors: Vec<String>,
    /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
    pub issued: Option<String>,
    /// The journal, proceedings or site.
    pub container_title: Option<String>,
    /// BibTeX `keywords`, RIS `KW`, CSL `keyword`, a bookmark's folder path.
    pub tags: Vec<String>,
    /// What kind of work, as CSL names it ([`crate::engine::intake::reference_file::csl_type`]):
    /// `paper-conference`, `chapter`…; `None` when the file does not say or says "misc".
    pub kind: Option<String>,
}

/// What reading a reference file or a bookmark export gave, item by item, in file order.
// Items are read one at a time and handed on at once (never stored in bulk): a box per
// entry would cost more than the unused bytes of the other variants.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Entry(Entry),
    /// Left out on purpose and said so, without failing the intake (a `place:` or
    /// `javascript:` bookmark).
    Skipped {
        what: String,
        reason: String,
    },
    /// Could not be read (a malformed entry); the others still count.
    Rejected {
        what: String,
        reason: String,
    },
}
