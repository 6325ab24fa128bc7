//! A host's interval held across processes, counted where the requests arrive. In a test
//! binary of its own: the interval is held between claims, with a margin for the lag until a
//! request leaves (`policy::as_claimed`); sibling tests' processes starving a worker of the CPU
//! for longer than that margin were what made this test fail now and then
//! (docs/ARCHITECTURE.md, "Per-host intervals").

use gleaner_tests::Sandbox;
use gleaner_tests::server::FaultServer;

/// `--host-interval` spaces the requests to one host across processes, beside the connection
/// limit, counted where the requests arrive: two workers on one queue, four jobs of one host.
#[test]
fn a_host_interval_holds_across_two_worker_processes() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let urls: Vec<String> = (0..4).map(|i| server.url(&format!("/ok/{i}"))).collect();
    let mut args = vec!["add"];
    args.extend(urls.iter().map(String::as_str));
    assert!(sb.run(&args).status.success());
    let flags = [
        "--host-interval",
        "127.0.0.1=400ms",
        "--per-host",
        "4",
        "--concurrency",
        "4",
        "run",
        "--until-idle",
    ];
    let workers: Vec<_> = (0..2)
        .map(|_| {
            sb.cmd()
                .args(flags)
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("worker")
        })
        .collect();
    for mut w in workers {
        assert!(w.wait().expect("wait").success());
    }
    let times = server.request_times("/ok/");
    assert_eq!(times.len(), 4);
    let gaps: Vec<u128> = times
        .windows(2)
        .map(|w| w[1].duration_since(w[0]).unwrap_or_default().as_millis())
        .collect();
    // Arrival lags its claim by a few milliseconds either way.
    assert!(gaps.iter().all(|&g| g >= 350), "gaps in ms: {gaps:?}");
}
