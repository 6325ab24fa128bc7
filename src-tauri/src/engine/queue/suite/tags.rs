//! Tags at intake and through a step.
//!
//! Each test runs on every backend (see [`super`]).

#![allow(unused_imports)]

use std::time::Duration;

use crate::engine::clock::Millis;
use crate::engine::policy::{Decision, Failure, FailureKind, HostIntervals, NO_INTERVALS, Policy};
use crate::engine::queue::{
    ActionResult, ClaimRequest, Claimed, Enqueued, Finish, Hit, Indexed, LibraryQuery, Liveness,
    NewJob, Next, Queue, Reference, Settled, Stage, StallKind, StallState, Status, Success,
};
use crate::engine::sqlite::testing::job;

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn tagged(url: &str, tags: &[&str]) -> NewJob {
    NewJob {
        reference: Some(Box::new(Reference {
            title: Some("Entry".into()),
            tags: strings(tags),
            ..Reference::default()
        })),
        ..job(url)
    }
}

/// The tag index as the queue shows it: each tag's name and how many jobs carry it.
fn index_rows(s: &dyn Queue) -> Vec<(String, u64)> {
    let mut rows = s.tag_counts().expect("counts");
    rows.sort();
    rows
}

super::on_every_backend! {
    fn intake_normalises_tags_into_the_index_and_the_metadata_alike(s) {
        s.enqueue(
            None,
            &[
                tagged(
                    "https://a.example/1",
                    &[" Quantum  sensing", "thesis", "THESIS", ""],
                ),
                job("https://a.example/2"),
            ],
            5,
            0,
        )
        .expect("enqueue");
        assert_eq!(s.job_tags(1).expect("tags"), ["Quantum sensing", "thesis"]);
        assert_eq!(
            s.job(1)
                .expect("job")
                .expect("there")
                .reference
                .expect("ref")
                .tags,
            ["Quantum sensing", "thesis"]
        );
        assert_eq!(
            index_rows(s),
            [("Quantum sensing".to_string(), 1), ("thesis".to_string(), 1)]
        );
        assert!(s.job_tags(2).expect("none").is_empty());
        assert!(s.job_tags(99).expect("no job").is_empty());
    }

    fn citation_keys_are_kept_once_per_job_and_key_and_a_delete_frees_them(s) {
        s.enqueue(None, &[job("https://a.example/1"), job("https://a.example/2")], 5, 0)
            .expect("enqueue");
        let kept = s
            .keep_citation_keys(&[(1, "Smith2020".into()), (2, "smith2020".into())])
            .expect("keep");
        assert_eq!(kept, 1, "a key another job has, without regard to case, is not kept");
        assert_eq!(s.keep_citation_keys(&[(1, "other".into())]).expect("keep"), 0);
        assert_eq!(s.citation_keys().expect("keys"), [(1, "Smith2020".to_string())]);
        s.delete(&[1]).expect("delete");
        assert!(s.citation_keys().expect("keys").is_empty());
        assert_eq!(s.keep_citation_keys(&[(2, "smith2020".into())]).expect("keep"), 1);
        assert_eq!(s.citation_keys().expect("keys"), [(2, "smith2020".to_string())]);
        // A job deleted while an export ran gets no key, which its id's next job would inherit.
        s.delete(&[2]).expect("delete");
        assert_eq!(s.keep_citation_keys(&[(2, "Jones2021".into())]).expect("keep"), 0);
        assert!(s.citation_keys().expect("keys").is_empty());
    }

    fn a_citation_key_brought_later_is_kept_once_and_never_over_one_given(s) {
        s.enqueue(
            None,
            &[tagged("https://a.example/1", &["x"]), job("https://a.example/2"),
              job("https://a.example/3"), job("https://a.example/4")],
            5,
            0,
        )
        .expect("enqueue");
        assert!(s.adopt_citation_key(1, "Mueller:2020").expect("adopt"));
        let r = s.job(1).expect("job").expect("there").reference.expect("ref");
        assert_eq!(r.citation_key.as_deref(), Some("Mueller:2020"));
        assert_eq!((r.title.as_deref(), r.tags.as_slice()), (Some("Entry"), &strings(&["x"])[..]));
        assert!(!s.adopt_citation_key(1, "other").expect("adopt"), "the first key stays");
        // A plain link gets one too.
        assert!(s.adopt_citation_key(2, "doe2020").expect("adopt"));
        assert_eq!(
            s.job(2).expect("job").expect("there").reference.expect("ref").citation_key.as_deref(),
            Some("doe2020")
        );
        // A key an export gave out is never changed.
        s.keep_citation_keys(&[(3, "smith2020".into())]).expect("keep");
        assert!(!s.adopt_citation_key(3, "Smith:2020").expect("adopt"));
        // A job being fetched is left to its fetch, and no job is no job.
        let c = s.claim("w", 1, Duration::from_secs(60), 8).expect("claim").expect("job");
        assert!(!s.adopt_citation_key(c.job_id, "late").expect("adopt"));
        assert!(!s.adopt_citation_key(99, "none").expect("adopt"));
    }

    fn a_step_keeps_the_tags_the_job_has_and_a_delete_takes_them(s) {
        s.enqueue(None, &[tagged("https://a.example/1", &["thesis"])], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w", 1, Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        // Set by hand while the fetch is in flight: the success's metadata (the claim's
        // tags) does not undo it.
        s.set_tags(c.job_id, &strings(&["by hand"])).expect("set");
        let mut reference = c.reference.clone().expect("reference");
        reference.authors = vec!["Okafor, Chidi".into()];
        let success = Success {
            http_status: 200,
            final_url: c.url.clone(),
            document: Some("/lib/1.md".into()),
            reference: Some(reference),
            ..Success::default()
        };
        s.complete(&c, &success, &Policy::default(), 2)
            .expect("complete")
            .expect("done");
        let r = s
            .job(c.job_id)
            .expect("job")
            .expect("there")
            .reference
            .expect("ref");
        assert_eq!(r.tags, ["by hand"]);
        assert_eq!(r.authors, ["Okafor, Chidi"]);
        assert_eq!(index_rows(s), [("by hand".to_string(), 1)]);
        s.delete(&[c.job_id]).expect("delete");
        assert!(index_rows(s).is_empty());
        assert!(s.tag_counts().expect("counts").is_empty());
    }
}
