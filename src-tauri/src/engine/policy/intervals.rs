//! Per-host intervals: the least time between two requests to one host, across every process
//! on the queue, beside the connection limit. The defaults are what the services ask for.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Host (as the queue stores it) → the least time between the starts of two of its requests.
pub type HostIntervals = BTreeMap<String, Duration>;

/// No intervals, for claims that need none (tests, tools).
pub static NO_INTERVALS: HostIntervals = BTreeMap::new();

/// The rates the services publish: arXiv asks for one request every 3 s, NCBI for at most
/// three a second without an API key, and the Wayback Machine allows about 60 a minute.
pub fn default_intervals() -> HostIntervals {
    [
        ("arxiv.org", 3_000),
        ("export.arxiv.org", 3_000),
        ("eutils.ncbi.nlm.nih.gov", 340),
        ("pubmed.ncbi.nlm.nih.gov", 340),
        ("www.ncbi.nlm.nih.gov", 340),
        ("pmc.ncbi.nlm.nih.gov", 340),
        ("web.archive.org", 1_000),
        ("archive.org", 1_000),
    ]
    .into_iter()
    .map(|(h, ms)| (h.to_string(), Duration::from_millis(ms)))
    .collect()
}

/// The intervals a claim holds: each a quarter longer, up to 250 ms more. A claim records its
/// start when it takes the job, but the request leaves later (the commit, a connection), and
/// that lag differs between processes: the server saw 336 ms between two processes' requests
/// under a 400 ms interval. Held between claims with this margin, the interval holds where
/// the requests arrive.
pub fn as_claimed(intervals: &HostIntervals) -> HostIntervals {
    intervals
        .iter()
        .map(|(host, d)| {
            let margin = (*d / 4).min(Duration::from_millis(250));
            (host.clone(), *d + margin)
        })
        .collect()
}

/// As stored with the policy: host → milliseconds.
pub(super) fn serialize<S: Serializer>(m: &HostIntervals, s: S) -> Result<S::Ok, S::Error> {
    let ms: BTreeMap<&str, u64> = m
        .iter()
        .map(|(h, d)| (h.as_str(), d.as_millis() as u64))
        .collect();
    ms.serialize(s)
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<HostIntervals, D::Error> {
    let ms = BTreeMap::<String, u64>::deserialize(d)?;
    Ok(ms
        .into_iter()
        .map(|(h, ms)| (h, Duration::from_millis(ms)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_holds_each_interval_with_a_margin_for_the_requests_lag() {
        let set: HostIntervals = [
            ("a.example".to_string(), Duration::from_millis(400)),
            ("arxiv.org".to_string(), Duration::from_secs(3)),
            ("off.example".to_string(), Duration::ZERO),
        ]
        .into_iter()
        .collect();
        let claimed = as_claimed(&set);
        assert_eq!(claimed["a.example"], Duration::from_millis(500));
        assert_eq!(claimed["arxiv.org"], Duration::from_millis(3_250));
        assert_eq!(claimed["off.example"], Duration::ZERO);
    }

    #[test]
    fn intervals_are_stored_as_milliseconds_and_read_back() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct P {
            #[serde(with = "super")]
            m: HostIntervals,
        }
        let p = P {
            m: default_intervals(),
        };
        let text = serde_json::to_string(&p).expect("json");
        assert!(text.contains("\"arxiv.org\":3000"), "{text}");
        assert_eq!(serde_json::from_str::<P>(&text).expect("back"), p);
    }
}
