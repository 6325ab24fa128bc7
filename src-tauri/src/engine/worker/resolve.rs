//! What each resolution stage asks for, and where a job goes from there (DESIGN.md,
//! "References in, papers out"). Pure: the worker does the fetching and saving.
//!
//! - A DOI asks its resolver for CSL-JSON (`csl`), then follows the same link to the landing
//!   page (`landing`); arXiv and PubMed ids start at their landing page.
//! - A landing page, or any page, that names its PDF goes on to `pdf`. A PDF that cannot be
//!   had leaves the job done with the page ([`Finish::Kept`]).
//! - A plain link that is gone (404, 410, no such host) asks the Wayback Machine (`wayback`),
//!   then fetches the snapshot's raw copy (`archived`), when the fallback is on.

use serde::Deserialize;

use crate::engine::fetch::Fetched;
use crate::engine::intake::{Identifier, csl_json};
use crate::engine::policy::{Failure, FailureKind, Policy, Services};
use crate::engine::queue::{Claimed, Finish, Next, Reference, Stage};

/// What a DOI resolver is asked for to answer with metadata instead of a redirect.
pub const CSL_ACCEPT: &str = "application/vnd.citationstyles.csl+json";

/// The address an attempt fetches, and the media type it asks for.
pub fn address(claimed: &Claimed, services: &Services) -> (String, Option<&'static str>) {
    let accept = (claimed.stage == Some(Stage::Csl)).then_some(CSL_ACCEPT);
    if let Some(target) = &claimed.target {
        return (target.clone(), accept);
    }
    match Identifier::from_uri(&claimed.url) {
        Some(id) => (id.first_url(services), accept),
        None => (claimed.url.clone(), accept),
    }
}

pub fn host_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
}

/// The resolver's CSL-JSON as the job's metadata: better than what an entry said, except for
/// the entry's own key and tags. `None` if the answer is not CSL-JSON (a resolver that does
/// not negotiate sends the landing page instead).
pub fn csl_reference(entry: Option<&Reference>, fetched: &Fetched) -> Option<Reference> {
    let (csl, abstract_text) = csl_json::resolver_metadata(&fetched.body)?;
    let entry = entry.cloned().unwrap_or_default();
    Some(Reference {
        title: csl.title.or(entry.title),
        citation_key: entry.citation_key,
        authors: if csl.authors.is_empty() {
            entry.authors
        } else {
            csl.authors
        },
        issued: csl.issued.or(entry.issued),
        container_title: csl.container_title.or(entry.container_title),
        entry_type: csl.kind.or(entry.entry_type),
        tags: entry.tags,
        abstract_text: abstract_text.or(entry.abstract_text),
        ..entry
    })
}

/// Where the landing stage starts: the identifier's own first address (the DOI's resolver
/// link) in its service's lane, wherever the csl stage ended. doi.org answers a request for
/// CSL-JSON with a redirect to the registration agency's metadata service on another host
/// (`api.crossref.org/v1/works/…/transform`), which has no landing page to give.
pub fn landing(claimed: &Claimed, address: &str, services: &Services) -> (String, String) {
    match Identifier::from_uri(&claimed.url) {
        Some(id) => (id.first_url(services), id.service_host().to_string()),
        None => (address.to_string(), claimed.host.clone()),
    }
}

/// A stage redirected to another host: the same stage again, in that host's lane.
pub fn moved(claimed: &Claimed, status: u16, to: String, policy: &Policy) -> Finish {
    let reference = claimed.reference.as_deref().cloned().unwrap_or_default();
    let (Some(stage), Some(host)) = (claimed.stage, host_of(&to)) else {
        return Finish::Failure {
            failure: Failure::new(
                FailureKind::BadRedirect,
                format!("{status} redirect to {to}"),
            ),
            unit: jitter(),
        };
    };
    if reference.hops >= policy.max_redirects {
        return Finish::Failure {
            failure: Failure::new(
                FailureKind::RedirectLoop,
                format!(
                    "too many redirects between hosts (more than {})",
                    policy.max_redirects
                ),
            ),
            unit: jitter(),
        };
    }
    Finish::Next(Box::new(Next {
        stage,
        target: to,
        host,
        http_status: Some(status),
        failure: None,
        reference: Some(Box::new(Reference {
            hops: reference.hops + 1,
            ..reference
        })),
        saved: None,
    }))
}

/// A landing page saved, its PDF next: the job moves to the PDF's host.
pub fn to_pdf(pdf_url: &str, landing: &str, reference: Reference, status: u16) -> Option<Next> {
    let host = host_of(pdf_url)?;
    Some(Next {
        stage: Stage::Pdf,
        target: pdf_url.to_string(),
        host,
        http_status: Some(status),
        failure: None,
        reference: Some(Box::new(Reference {
            landing_url: Some(landing.to_string()),
            ..reference
        })),
        saved: None,
    })
}

/// Gone for good: the failures the Wayback fallback gives a second chance.
fn is_gone(failure: &Failure) -> bool {
    match failure.kind {
        FailureKind::NoSuchHost => true,
        FailureKind::ClientError => matches!(failure.http_status, Some(404 | 410)),
        _ => false,
    }
}

/// Where a failed attempt leaves its job: on to another stage, done with what it has, or the
/// failure as it is (the policy then decides between a retry and death).
pub fn after_failure(
    claimed: &Claimed,
    address: &str,
    failure: Failure,
    policy: &Policy,
) -> Finish {
    let fatal = failure.class() == crate::engine::policy::ErrorClass::Fatal;
    let failure = no_such_doi(failure, claimed, policy);
    match claimed.stage {
        // The landing page stays the document.
        Some(Stage::Pdf) if fatal => Finish::Kept(failure),
        // No metadata to give (406, say), from the resolver, its agency or the publisher it
        // sent the request to: the landing page still is, asked of the resolver without the
        // header. The resolver's own 404 is "no such DOI"; a 404 or 410 of the page it sent
        // the request to is that page's failure, as the landing page is gone.
        Some(Stage::Csl)
            if fatal
                && failure.kind == FailureKind::ClientError
                && !is_no_such_doi(&failure)
                && (at_resolver(&failure, policy)
                    || !matches!(failure.http_status, Some(404 | 410))) =>
        {
            let (target, host) = landing(claimed, address, &policy.services);
            Finish::Next(Box::new(Next {
                stage: Stage::Landing,
                target,
                host,
                http_status: failure.http_status,
                failure: Some(Failure {
                    message: format!(
                        "{} (no CSL-JSON metadata; the landing page is next)",
                        failure.message
                    ),
                    ..failure
                }),
                reference: None,
                saved: None,
            }))
        }
        None if policy.wayback_fallback
            && is_gone(&failure)
            && Identifier::from_uri(&claimed.url).is_none() =>
        {
            to_wayback(claimed, failure, &policy.services)
        }
        Some(Stage::Wayback) if fatal => dead_link_failure(
            claimed,
            &format!(
                "the Wayback Machine could not be asked: {}",
                failure.message
            ),
            failure.kind,
        ),
        Some(Stage::Archived) => Finish::Failure {
            failure: Failure {
                message: format!(
                    "the archived copy could not be fetched: {}",
                    failure.message
                ),
                ..failure
            },
            unit: jitter(),
        },
        _ => Finish::Failure {
            failure,
            unit: jitter(),
        },
    }
}

fn jitter() -> f64 {
    use rand::Rng;
    rand::rng().random_range(-1.0..=1.0)
}

fn to_wayback(claimed: &Claimed, failure: Failure, services: &Services) -> Finish {
    // The archive is asked about the page, never about the user name and password in its link.
    let page = crate::engine::intake::without_credentials(&claimed.url);
    let target = match url::Url::parse_with_params(&services.wayback, [("url", &*page)]) {
        Ok(u) => u.to_string(),
        Err(_) => {
            return Finish::Failure {
                failure,
                unit: jitter(),
            };
        }
    };
    let Some(host) = host_of(&target) else {
        return Finish::Failure {
            failure,
            unit: jitter(),
        };
    };
    let reference = Reference {
        dead_link: Some(failure.message.clone()),
        ..claimed.reference.as_deref().cloned().unwrap_or_default()
    };
    Finish::Next(Box::new(Next {
        stage: Stage::Wayback,
        target,
        host,
        http_status: failure.http_status,
        failure: Some(Failure {
            message: format!(
                "{}; asking the Wayback Machine for an archived copy",
                failure.message
            ),
            ..failure
        }),
        reference: Some(Box::new(reference)),
        saved: None,
    }))
}

/// The job dies of its dead link, with what became of the search for a copy.
fn dead_link_failure(claimed: &Claimed, what: &str, kind: FailureKind) -> Finish {
    let dead = claimed
        .reference
        .as_ref()
        .and_then(|r| r.dead_link.clone())
        .unwrap_or_else(|| "the link is gone".into());
    Finish::Failure {
        failure: Failure::new(kind, format!("{dead}; {what}")),
        unit: jitter(),
    }
}

/// The availability API's answer (`archive.org/wayback/available`).
#[derive(Deserialize)]
struct Availability {
    #[serde(default)]
    archived_snapshots: Snapshots,
}

#[derive(Deserialize, Default)]
struct Snapshots {
    closest: Option<Closest>,
}

#[derive(Deserialize)]
struct Closest {
    #[serde(default = "yes")]
    available: bool,
    url: String,
    timestamp: String,
    status: Option<String>,
}

fn yes() -> bool {
    true
}

/// The timestamp the availability API is asked for the second time: the snapshot closest to
/// it is the oldest.
const OLDEST: &str = "19960101";

/// The Wayback Machine answered: on to its snapshot, or dead with no copy. Asked without a
/// timestamp, it names the newest snapshot, which for a dead page is usually its 404 or a
/// redirect to the site's home page: then it is asked again for the oldest.
pub fn after_wayback(claimed: &Claimed, fetched: &Fetched) -> Finish {
    let answer: Availability = match serde_json::from_slice(&fetched.body) {
        Ok(a) => a,
        Err(e) => {
            return dead_link_failure(
                claimed,
                &format!("the Wayback Machine's answer could not be read ({e})"),
                FailureKind::Unparsable,
            );
        }
    };
    let reference = claimed.reference.as_deref().cloned().unwrap_or_default();
    let asked = claimed.target.as_deref().unwrap_or_default();
    let first_ask =
        !url::Url::parse(asked).is_ok_and(|u| u.query_pairs().any(|(k, _)| k == "timestamp"));
    let closest = answer.archived_snapshots.closest.filter(|c| c.available);
    let usable = |c: &Closest| c.status.as_deref().is_none_or(|s| s.starts_with('2'));
    let closest = match closest {
        Some(c) if usable(&c) => c,
        Some(c) if first_ask => {
            let oldest = url::Url::parse(asked).ok().map(|mut u| {
                u.query_pairs_mut().append_pair("timestamp", OLDEST);
                u.to_string()
            });
            let status = c.status.unwrap_or_default();
            if let Some((target, host)) = oldest.and_then(|t| Some((t.clone(), host_of(&t)?))) {
                return Finish::Next(Box::new(Next {
                    stage: Stage::Wayback,
                    target,
                    host,
                    http_status: Some(fetched.status),
                    failure: None,
                    reference: Some(Box::new(Reference {
                        newest_snapshot: Some((status, c.timestamp)),
                        ..reference
                    })),
                    saved: None,
                }));
            }
            return dead_link_failure(
                claimed,
                &format!(
                    "no usable archived copy (the Wayback Machine's newest snapshot of it is {})",
                    a_status(&status)
                ),
                FailureKind::ClientError,
            );
        }
        other => {
            let what = match (&reference.newest_snapshot, other) {
                (None, _) => {
                    "no archived copy exists (the Wayback Machine has no snapshot of it)".into()
                }
                (Some((status, _)), None) => format!(
                    "no usable archived copy (the Wayback Machine's newest snapshot of it is \
                     {}, and it has no older one)",
                    a_status(status)
                ),
                (Some((status, newest)), Some(oldest)) if *newest == oldest.timestamp => format!(
                    "no usable archived copy (the Wayback Machine's only snapshot of it is {})",
                    a_status(status)
                ),
                (Some((status, _)), Some(oldest)) => format!(
                    "no usable archived copy (the Wayback Machine's newest snapshot of it is \
                     {}, and its oldest {})",
                    a_status(status),
                    a_status(oldest.status.as_deref().unwrap_or_default())
                ),
            };
            return dead_link_failure(claimed, &what, FailureKind::ClientError);
        }
    };
    let snapshot =
        archived_at(&closest.timestamp).map(|at| (raw_copy(&closest.url, &closest.timestamp), at));
    let Some((target, at)) = snapshot else {
        return dead_link_failure(
            claimed,
            "the Wayback Machine named a snapshot without a time it could be read by",
            FailureKind::Unparsable,
        );
    };
    let Some(host) = host_of(&target) else {
        return dead_link_failure(
            claimed,
            "the Wayback Machine named a snapshot that is no web address",
            FailureKind::BadUrl,
        );
    };
    let reference = Reference {
        archived_at: Some(at),
        newest_snapshot: None,
        ..reference
    };
    Finish::Next(Box::new(Next {
        stage: Stage::Archived,
        target,
        host,
        http_status: Some(fetched.status),
        failure: None,
        reference: Some(Box::new(reference)),
        saved: None,
    }))
}

/// A snapshot's HTTP status as a message says it: "a 404", "a 302 redirect".
fn a_status(status: &str) -> String {
    match status {
        "" | "-" => "one of no known status".into(),
        s if s.starts_with('3') => format!("a {s} redirect"),
        s => format!("a {s}"),
    }
}

/// The snapshot's raw copy: `…/web/<timestamp>id_/<url>` is the page as archived, without the
/// archive's toolbar and rewritten links.
fn raw_copy(url: &str, timestamp: &str) -> String {
    let marker = format!("/web/{timestamp}/");
    match url.find(&marker) {
        Some(at) => format!(
            "{}/web/{timestamp}id_/{}",
            &url[..at],
            &url[at + marker.len()..]
        ),
        None => url.to_string(),
    }
}

/// A Wayback timestamp (`20130919044612`) as RFC 3339.
fn archived_at(ts: &str) -> Option<String> {
    let d = ts.as_bytes();
    if d.len() < 8 || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let part = |from: usize| ts.get(from..from + 2).unwrap_or("00");
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        &ts[..4],
        part(4),
        part(6),
        part(8),
        part(10),
        part(12)
    ))
}

/// Whether the DOI resolver itself gave this answer, rather than the page it redirected to.
fn at_resolver(failure: &Failure, policy: &Policy) -> bool {
    let origin = |u: &str| url::Url::parse(u).ok().map(|u| u.origin());
    let by = failure.answered_by.as_deref().and_then(origin);
    by.is_some() && by == origin(&policy.services.doi_resolver)
}

const NO_SUCH_DOI: &str = "no such DOI: ";

fn is_no_such_doi(failure: &Failure) -> bool {
    failure.message.starts_with(NO_SUCH_DOI)
}

/// A DOI the resolver itself answers 404 for does not exist: say so, rather than "404 Not
/// Found" (a publisher's page gone after the redirect stays a plain 404).
fn no_such_doi(failure: Failure, claimed: &Claimed, policy: &Policy) -> Failure {
    let Some(Identifier::Doi(doi)) = Identifier::from_uri(&claimed.url) else {
        return failure;
    };
    if failure.http_status == Some(404) && at_resolver(&failure, policy) {
        Failure {
            message: format!(
                "{NO_SUCH_DOI}{doi} (the DOI resolver has no record of it: 404 Not Found)"
            ),
            ..failure
        }
    } else {
        failure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(url: &str, stage: Option<Stage>) -> Claimed {
        Claimed {
            job_id: 1,
            url: url.into(),
            host: "example.com".into(),
            attempt: 1,
            started_at: 0,
            owner: "w".into(),
            throttled: false,
            reference: None,
            stage,
            target: None,
            document: None,
        }
    }

    fn fetched(body: &str) -> Fetched {
        Fetched {
            status: 200,
            final_url: "https://archive.org/wayback/available".into(),
            content_type: Some("application/json".into()),
            body: body.as_bytes().to_vec(),
        }
    }

    fn gone(status: u16) -> Failure {
        Failure {
            http_status: Some(status),
            ..Failure::new(FailureKind::ClientError, format!("{status} Gone"))
        }
    }

    #[test]
    fn a_snapshot_is_fetched_as_its_raw_copy_with_its_time() {
        let body = r#"{"url": "example.com/a", "archived_snapshots": {"closest": {"status": "200",
            "available": true, "url": "http://web.archive.org/web/20130919044612/http://example.com/a",
            "timestamp": "20130919044612"}}}"#;
        let Finish::Next(next) = after_wayback(
            &claimed("http://example.com/a", Some(Stage::Wayback)),
            &fetched(body),
        ) else {
            panic!("not on to the snapshot");
        };
        assert_eq!(next.stage, Stage::Archived);
        assert_eq!(
            next.target,
            "http://web.archive.org/web/20130919044612id_/http://example.com/a"
        );
        assert_eq!(next.host, "web.archive.org");
        let at = next.reference.and_then(|r| r.archived_at);
        assert_eq!(at.as_deref(), Some("2013-09-19T04:46:12Z"));
    }

    /// The availability API without a timestamp names the newest snapshot, for a dead page
    /// usually its 404: the oldest is asked for next (it said "no snapshot" before), and the
    /// death names what was found.
    #[test]
    fn no_snapshot_is_death_naming_the_dead_link() {
        let api = "https://archive.org/wayback/available?url=http%3A%2F%2Fexample.com%2Fa";
        let mut c = claimed("http://example.com/a", Some(Stage::Wayback));
        c.target = Some(api.into());
        c.reference = Some(Box::new(Reference {
            dead_link: Some("404 Not Found".into()),
            ..Reference::default()
        }));
        let none = r#"{"url": "example.com/a", "archived_snapshots": {}}"#;
        let snapshot = |status: &str, ts: &str| {
            format!(
                r#"{{"archived_snapshots": {{"closest": {{"status": "{status}", "available": true,
                "url": "http://web.archive.org/web/{ts}/http://example.com/a", "timestamp": "{ts}"}}}}}}"#
            )
        };
        let dies = |c: &Claimed, body: &str| {
            let Finish::Failure { failure, .. } = after_wayback(c, &fetched(body)) else {
                panic!("not a failure: {body}");
            };
            assert_eq!(failure.class(), crate::engine::policy::ErrorClass::Fatal);
            failure.message
        };
        assert_eq!(
            dies(&c, none),
            "404 Not Found; no archived copy exists (the Wayback Machine has no snapshot of it)"
        );
        // The newest is a 404: the oldest is asked for, in the archive's lane.
        let Finish::Next(next) = after_wayback(&c, &fetched(&snapshot("404", "20230101000000")))
        else {
            panic!("the oldest is not asked for");
        };
        assert_eq!(next.stage, Stage::Wayback);
        assert_eq!(next.target, format!("{api}&timestamp=19960101"));
        assert_eq!(next.host, "archive.org");
        let mut second = c.clone();
        second.target = Some(next.target.clone());
        second.reference = next.reference.clone();
        for (body, said) in [
            (
                snapshot("302", "20130919044612"),
                "newest snapshot of it is a 404, and its oldest a 302 redirect)",
            ),
            (
                snapshot("404", "20230101000000"),
                "only snapshot of it is a 404)",
            ),
            (
                none.to_string(),
                "newest snapshot of it is a 404, and it has no older one)",
            ),
        ] {
            let message = dies(&second, &body);
            assert!(
                message
                    .starts_with("404 Not Found; no usable archived copy (the Wayback Machine's ")
                    && message.ends_with(said),
                "{message}"
            );
        }
        // The oldest is a 200: on to it.
        let Finish::Next(next) =
            after_wayback(&second, &fetched(&snapshot("200", "20130919044612")))
        else {
            panic!("not on to the oldest");
        };
        assert_eq!(next.stage, Stage::Archived);
        assert_eq!(
            next.target,
            "http://web.archive.org/web/20130919044612id_/http://example.com/a"
        );
        assert_eq!(next.reference.and_then(|r| r.newest_snapshot), None);
    }

    #[test]
    fn only_a_plain_link_that_is_gone_goes_to_the_archive_and_only_when_asked() {
        let on = Policy {
            wayback_fallback: true,
            ..Policy::default()
        };
        let link = claimed("http://example.com/a", None);
        for failure in [
            gone(404),
            gone(410),
            Failure::new(FailureKind::NoSuchHost, "no such host"),
        ] {
            let Finish::Next(next) = after_failure(&link, "http://example.com/a", failure, &on)
            else {
                panic!("not sent to the archive");
            };
            assert_eq!(next.stage, Stage::Wayback);
            assert_eq!(
                next.target,
                "https://archive.org/wayback/available?url=http%3A%2F%2Fexample.com%2Fa"
            );
        }
        let cases = [
            (gone(403), &link, &on),
            (gone(404), &link, &Policy::default()),
        ];
        for (failure, c, policy) in cases {
            assert!(matches!(
                after_failure(c, "x", failure, policy),
                Finish::Failure { .. }
            ));
        }
        let doi = claimed("doi:10.1/x", Some(Stage::Landing));
        assert!(matches!(
            after_failure(&doi, "x", gone(404), &on),
            Finish::Failure { .. }
        ));
    }

    #[test]
    fn a_pdf_that_cannot_be_had_keeps_the_landing_page_but_a_transient_one_is_retried() {
        let pdf = claimed("doi:10.1/x", Some(Stage::Pdf));
        let p = Policy::default();
        assert!(matches!(
            after_failure(&pdf, "x", gone(403), &p),
            Finish::Kept(_)
        ));
        let busy = Failure {
            http_status: Some(503),
            ..Failure::new(FailureKind::ServerError, "503")
        };
        assert!(matches!(
            after_failure(&pdf, "x", busy, &p),
            Finish::Failure { .. }
        ));
    }

    /// A 4xx of the csl stage from whichever host (doi.org's agency on api.crossref.org, a
    /// publisher the resolver sent the request to) goes on to the landing page at the DOI's
    /// resolver link, in doi.org's lane; the resolver's own 404 is "no such DOI", and another
    /// host's 404 that page's own failure.
    #[test]
    fn a_csl_refusal_from_any_host_goes_on_to_the_landing_page_at_the_resolver() {
        let p = Policy::default();
        let mut csl = claimed("doi:10.1038/nature12373", Some(Stage::Csl));
        csl.host = "api.crossref.org".into();
        let agency = "https://api.crossref.org/v1/works/10.1038%2Fnature12373/transform";
        csl.target = Some(agency.into());
        let refused = |status: u16, by: &str| Failure {
            answered_by: Some(by.into()),
            ..gone(status)
        };
        for failure in [
            refused(406, agency),
            refused(400, agency),
            refused(406, "https://www.nature.com/articles/nature12373"),
            refused(403, "https://www.nature.com/articles/nature12373"),
            refused(406, "https://doi.org/10.1038/nature12373"),
        ] {
            let Finish::Next(next) = after_failure(&csl, agency, failure, &p) else {
                panic!("not on to the landing page");
            };
            assert_eq!(next.stage, Stage::Landing);
            assert_eq!(next.target, "https://doi.org/10.1038/nature12373");
            assert_eq!(next.host, "doi.org");
        }
        let Finish::Failure { failure, .. } = after_failure(
            &csl,
            agency,
            refused(404, "https://doi.org/10.1038/nature12373"),
            &p,
        ) else {
            panic!("the resolver's 404 went on");
        };
        assert!(
            failure.message.starts_with("no such DOI"),
            "{}",
            failure.message
        );
        // The page the resolver sent the request to is gone: that page's 404, not a detour.
        let gone_page = refused(404, "https://www.nature.com/articles/nature12373");
        let Finish::Failure { failure, .. } = after_failure(&csl, agency, gone_page, &p) else {
            panic!("a publisher's 404 went on");
        };
        assert!(failure.message.starts_with("404"), "{}", failure.message);
        assert_eq!(
            landing(&csl, agency, &p.services),
            (
                "https://doi.org/10.1038/nature12373".to_string(),
                "doi.org".to_string()
            )
        );
    }

    #[test]
    fn csl_json_wins_over_the_entry_but_keeps_its_key_and_tags() {
        let entry = Reference {
            title: Some("my title".into()),
            citation_key: Some("kucsko2013".into()),
            tags: vec!["thesis".into()],
            ..Reference::default()
        };
        let body = r#"{"type": "article-journal", "DOI": "10.1038/nature12373",
            "title": "Nanometre-scale thermometry in a living cell",
            "author": [{"family": "Kucsko", "given": "G."}, {"family": "Maurer", "given": "P. C."}],
            "issued": {"date-parts": [[2013, 7, 31]]}, "container-title": "Nature",
            "abstract": "<jats:title>Abstract</jats:title><jats:p>Sensitive probing of temperature.</jats:p>"}"#;
        let r = csl_reference(Some(&entry), &fetched(body)).expect("CSL-JSON");
        assert_eq!(
            r.title.as_deref(),
            Some("Nanometre-scale thermometry in a living cell")
        );
        assert_eq!(r.authors, ["Kucsko, G.", "Maurer, P. C."]);
        assert_eq!(r.issued.as_deref(), Some("2013-07-31"));
        assert_eq!(r.container_title.as_deref(), Some("Nature"));
        assert_eq!(
            r.abstract_text.as_deref(),
            Some("Sensitive probing of temperature.")
        );
        assert_eq!(r.citation_key.as_deref(), Some("kucsko2013"));
        assert_eq!(r.tags, ["thesis"]);
        assert!(csl_reference(None, &fetched("<html>landing</html>")).is_none());
    }

    /// The resolver's type is the work's (a chapter went out as a journal article); a file's
    /// type stays when the resolver says none the export tells apart.
    #[test]
    fn the_resolver_s_type_is_kept_over_the_file_s() {
        let entry = Reference {
            entry_type: Some("paper-conference".into()),
            ..Reference::default()
        };
        let chapter = r#"{"type": "book-chapter", "DOI": "10.1007/chap1", "title": "A chapter"}"#;
        let r = csl_reference(Some(&entry), &fetched(chapter)).expect("CSL-JSON");
        assert_eq!(r.entry_type.as_deref(), Some("chapter"));
        let other = r#"{"type": "posted-content", "DOI": "10.1007/x", "title": "X"}"#;
        let r = csl_reference(Some(&entry), &fetched(other)).expect("CSL-JSON");
        assert_eq!(r.entry_type.as_deref(), Some("paper-conference"));
    }
}
