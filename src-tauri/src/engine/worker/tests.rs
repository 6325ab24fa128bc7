use super::*;
use crate::engine::clock::ManualClock;
use crate::engine::sqlite::Store;

fn worker(dir: &std::path::Path) -> Arc<Worker> {
    let store: Arc<dyn Queue> = Arc::new(Store::open_in_memory().expect("store"));
    Worker::new(
        store,
        ManualClock::new(1_000_000),
        Library::new(dir.join("library")),
        Policy::default(),
    )
    .expect("worker")
}

fn failed(job_id: i64, kind: FailureKind) -> (Claimed, Finish) {
    let claimed = Claimed {
        job_id,
        url: format!("http://h{job_id}.example/"),
        host: format!("h{job_id}.example"),
        attempt: 1,
        started_at: 0,
        owner: "w".into(),
        throttled: false,
        reference: None,
        stage: None,
        target: None,
        document: None,
    };
    let failure = Failure::new(kind, format!("{kind:?}"));
    (claimed, Finish::Failure { failure, unit: 1.0 })
}

fn offline_now(w: &Worker) -> bool {
    w.offline().is_some()
}

/// An offline machine's probe that times out has not reached a server: the finding holds,
/// and the timeout spends no retry. A refused connection is an answer, and ends it.
#[test]
fn only_an_answer_ends_an_offline_finding() {
    let dir = tempfile::tempdir().expect("dir");
    let w = worker(dir.path());
    let policy = Policy::default();
    let mut group: Vec<_> = (1..=OFFLINE_AFTER as i64)
        .map(|id| failed(id, FailureKind::NetworkDown))
        .collect();
    w.observe_network(&mut group, &policy, 1_000_000);
    assert!(offline_now(&w), "found offline");

    let mut probe = vec![failed(10, FailureKind::Timeout)];
    w.observe_network(&mut probe, &policy, 1_001_000);
    assert!(offline_now(&w), "a timeout is no answer");
    assert!(
        matches!(probe[0].1, Finish::Offline(_)),
        "the probe's timeout spends no retry: {:?}",
        probe[0].1
    );

    // A link to a host that does not exist fails as ever: it says nothing of the network.
    let mut probe = vec![failed(12, FailureKind::NoSuchHost)];
    w.observe_network(&mut probe, &policy, 1_001_500);
    assert!(offline_now(&w));
    assert!(
        matches!(probe[0].1, Finish::Failure { .. }),
        "{:?}",
        probe[0].1
    );

    let mut probe = vec![failed(11, FailureKind::ConnectRefused)];
    w.observe_network(&mut probe, &policy, 1_002_000);
    assert!(!offline_now(&w), "a refusal is an answer");
    assert!(matches!(probe[0].1, Finish::Failure { .. }));
}
