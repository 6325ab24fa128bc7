//! Shared pieces of Gleaner's end-to-end tests: the fault-injecting HTTP server and helpers to
//! run the real `gleaner` binary against a private data folder.

pub mod desktop;
pub mod proxy;
pub mod scholarly;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `gleaner` binary built beside this test executable (target/<profile>/gleaner).
/// `scripts/test.sh` builds it before the tests run.
pub fn gleaner_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash>  →  target/<profile>/gleaner
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps");
    let bin = profile_dir.join(format!("gleaner{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo build -p gleaner --bins` (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// The queue backends the engine's tests run on: each such test runs once on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub const ALL: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

    /// A new, empty queue of this kind, and the data folder that goes with it (its library
    /// is `library/` there): SQLite in the folder, or PostgreSQL in a schema of its own on
    /// the test server (`GLEANER_TEST_DATABASE_URL`; scripts/test.sh starts one).
    pub fn open(
        self,
    ) -> (
        tempfile::TempDir,
        std::sync::Arc<dyn gleaner::engine::queue::Queue>,
    ) {
        let dir = tempfile::tempdir().expect("temp data dir");
        let database = match self {
            Backend::Sqlite => None,
            Backend::Postgres => Some(gleaner::engine::postgres::testing::fresh_database_url()),
        };
        let queue = gleaner::engine::queue::open_with(dir.path(), database.as_deref())
            .unwrap_or_else(|e| panic!("{self:?} queue: {e}"));
        (dir, queue)
    }

    /// As [`Backend::open`], with two connections to the one queue, as two processes have.
    pub fn open_twice(
        self,
    ) -> (
        tempfile::TempDir,
        std::sync::Arc<dyn gleaner::engine::queue::Queue>,
        std::sync::Arc<dyn gleaner::engine::queue::Queue>,
    ) {
        let dir = tempfile::tempdir().expect("temp data dir");
        let database = match self {
            Backend::Sqlite => None,
            Backend::Postgres => Some(gleaner::engine::postgres::testing::fresh_database_url()),
        };
        let open = || {
            gleaner::engine::queue::open_with(dir.path(), database.as_deref())
                .unwrap_or_else(|e| panic!("{self:?} queue: {e}"))
        };
        let (a, b) = (open(), open());
        (dir, a, b)
    }
}

/// A throwaway data folder and a way to run the CLI against it.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp data dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("gleaner.db")
    }

    /// A `gleaner` command with this sandbox as its data folder and a quiet environment.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(gleaner_bin());
        c.env("GLEANER_DATA_DIR", self.dir.path())
            .env_remove("GLEANER_LOG")
            .stdin(Stdio::null());
        c
    }

    /// Run to completion and capture the output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run gleaner")
    }

    /// Run with `input` on standard input, to completion, and capture the output.
    pub fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        use std::io::Write as _;
        let mut child = self
            .cmd()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn gleaner");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
        child.wait_with_output().expect("wait for gleaner")
    }

    /// Run and parse stdout as JSON, asserting success.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "gleaner {args:?} failed: {}",
            stderr(&out)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("gleaner {args:?}: not JSON ({e}): {}", stdout(&out)))
    }

    /// Open the sandbox's database directly (read-only checks).
    pub fn sql(&self) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(self.db_path()).expect("open db");
        c.busy_timeout(std::time::Duration::from_secs(10))
            .expect("busy timeout");
        c
    }
}

/// The calling thread's time on a CPU and time runnable but waiting for one, in ns, from
/// /proc/thread-self/schedstat. On a shared machine the second is the other tenants' share,
/// which a wall-clock rate cannot tell apart from the code's own cost. None where /proc
/// cannot tell.
pub fn thread_cpu_and_wait_ns() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = s.split_whitespace().map(|f| f.parse::<u64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// This process's peak resident memory so far (VmHWM), in KiB; 0 where /proc cannot tell.
pub fn peak_rss_kib() -> u64 {
    vm_hwm_kib("self").unwrap_or(0)
}

/// Another process's peak resident memory so far (VmHWM), in KiB, while it runs.
pub fn peak_rss_kib_of(pid: u32) -> Option<u64> {
    vm_hwm_kib(&pid.to_string())
}

fn vm_hwm_kib(proc_entry: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{proc_entry}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The queue benchmarks' no-op handler: every claimed job succeeds at once.
pub fn succeed_all(
    claimed: Vec<gleaner::engine::queue::Claimed>,
) -> Vec<(
    gleaner::engine::queue::Claimed,
    gleaner::engine::queue::Finish,
)> {
    claimed
        .into_iter()
        .map(|c| {
            let ok = gleaner::engine::queue::Success {
                http_status: 200,
                final_url: c.url.clone(),
                ..Default::default()
            };
            (c, gleaner::engine::queue::Finish::Success(ok))
        })
        .collect()
}

/// Set in the copy of a test that runs inside its own network namespace.
pub const IN_NETNS: &str = "GLEANER_TEST_IN_NETNS";

/// For tests that take the network away: in the outer process, run the test `name` of this
/// test binary again under `unshare --map-root-user --net` (a fresh network namespace, loopback
/// down), assert that it ran and passed, and return true; inside that copy, return false so the
/// caller carries on with the scenario.
pub fn ran_in_network_namespace(name: &str) -> bool {
    if std::env::var_os(IN_NETNS).is_some() {
        return false;
    }
    let out = Command::new("unshare")
        .args(["--map-root-user", "--net", "--"])
        .arg(std::env::current_exe().expect("this test binary"))
        .args(["--exact", name, "--nocapture"])
        .env(IN_NETNS, "1")
        .output()
        .expect("unshare (util-linux) runs");
    let (so, se) = (stdout(&out), stderr(&out));
    assert!(
        out.status.success(),
        "the test inside a network namespace failed (unshare needs user or root namespaces)\n{so}\n{se}"
    );
    assert!(so.contains("1 passed"), "the inner test did not run:\n{so}");
    true
}

/// A real, small tmpfs (the disk-full tests need a disk that really fills up). Mounting needs
/// root, which CI has; it is unmounted when dropped.
pub struct Tmpfs {
    dir: Mounted,
}

enum Mounted {
    Own(tempfile::TempDir),
    At(PathBuf),
}

fn mount_tmpfs(dir: &Path, size: &str) {
    let out = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0755"),
            "tmpfs",
        ])
        .arg(dir)
        .output()
        .expect("run mount");
    assert!(
        out.status.success(),
        "cannot mount a tmpfs (the disk-full tests run as root, as CI does): {}",
        stderr(&out)
    );
}

impl Tmpfs {
    /// Mount a tmpfs of `size` (as `mount -o size=` takes it: `2m`, `512k`).
    pub fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().expect("mount point");
        mount_tmpfs(dir.path(), size);
        Self {
            dir: Mounted::Own(dir),
        }
    }

    /// Mount a tmpfs of `size` at `path` (created if missing), e.g. a data folder's library.
    pub fn mount_at(path: &Path, size: &str) -> Self {
        std::fs::create_dir_all(path).expect("mount point");
        mount_tmpfs(path, size);
        Self {
            dir: Mounted::At(path.to_path_buf()),
        }
    }

    pub fn path(&self) -> &Path {
        match &self.dir {
            Mounted::Own(d) => d.path(),
            Mounted::At(p) => p,
        }
    }

    /// Make it bigger (or smaller) in place, as freeing space would.
    pub fn resize(&self, size: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(self.path())
            .output()
            .expect("run mount");
        assert!(out.status.success(), "cannot remount: {}", stderr(&out));
    }

    /// Fill what is left with a file named `filler`, until the disk says it is full.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write as _;
        let path = self.path().join("filler");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("filler");
        let chunk = vec![0u8; 4096];
        loop {
            match f.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy, so that a process the test left behind cannot keep the mount alive.
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}
