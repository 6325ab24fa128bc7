//! Lease owner ids, and whether the process behind one still runs: the recovery of jobs whose
//! worker is gone asks this before it looks at a lease's expiry.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use rand::Rng as _;

use crate::engine::queue::Liveness;

/// Owner ids of the workers alive in this process.
pub(super) fn live_owners() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

/// "pid-<pid>-<start>-<random>@<boot>": the pid and its start time let any process on this
/// machine tell whether the owner still runs (a pid can be given out again); the random part
/// tells two workers of one process apart; the boot names the machine (and its boot), since a
/// queue in PostgreSQL is shared with other machines, whose pids say nothing here.
pub(super) fn new_owner_id() -> String {
    let nonce: u32 = rand::rng().random();
    let pid = std::process::id();
    let start = process_start(pid).unwrap_or(0);
    format!("pid-{pid}-{start}-{nonce:08x}@{}", this_boot())
}

/// This machine's boot, in short, and the PID namespace pids are read in: owners of another
/// boot (another machine, or this one before a restart) or of another namespace (a container
/// on this machine, which shares its boot id) are judged by their lease. A container's pids
/// are not this namespace's, so they looked like processes gone, and two members of a lab on
/// one host took each other's jobs back on every recovery.
fn this_boot() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        let boot: String = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|b| b.trim().replace('-', "").chars().take(12).collect())
            .unwrap_or_else(|_| "local".into());
        // `pid:[4026531836]`: the namespace's inode.
        match std::fs::read_link("/proc/self/ns/pid") {
            Ok(ns) => {
                let ns = ns.to_string_lossy();
                let inode: String = ns.chars().filter(char::is_ascii_digit).collect();
                format!("{boot}.{inode}")
            }
            Err(_) => boot,
        }
    })
}

/// Whether the process behind a lease owner id still runs: ours, another worker of this
/// process, or a process of this machine that started when the id says. An id of another
/// form is not ours to judge.
pub fn liveness(owner: &str, me: &str) -> Liveness {
    if owner == me {
        return Liveness::Alive;
    }
    // An owner of another machine (or boot) cannot be asked: its lease decides.
    let owner = match owner.split_once('@') {
        Some((_, boot)) if boot != this_boot() => return Liveness::Unknown,
        Some((local, _)) => local,
        None => owner,
    };
    let mut parts = owner.strip_prefix("pid-").map(|rest| rest.split('-'));
    let Some(pid) = parts
        .as_mut()
        .and_then(|p| p.next())
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return Liveness::Unknown;
    };
    let rest: Vec<&str> = parts.map(|p| p.collect()).unwrap_or_default();
    // "pid-<pid>-<start>-<nonce>"; earlier versions wrote "pid-<pid>-<nonce>".
    let started: Option<u64> = match rest.as_slice() {
        [start, _nonce] => start.parse().ok(),
        _ => None,
    };
    if pid == std::process::id() {
        // Our own process: another worker in it is alive exactly while it is registered; any
        // other owner with our pid was an earlier process that happened to get the same id.
        return match live_owners().lock() {
            Ok(set) if set.iter().any(|o| o.split('@').next() == Some(owner)) => Liveness::Alive,
            Ok(_) => Liveness::Gone,
            Err(_) => Liveness::Unknown,
        };
    }
    if !cfg!(target_os = "linux") {
        return Liveness::Unknown;
    }
    match (process_start(pid), started) {
        (None, _) => Liveness::Gone,
        // The pid was given to another process since.
        (Some(now), Some(then)) if now != then => Liveness::Gone,
        _ => Liveness::Alive,
    }
}

/// When a process started, in clock ticks after boot (`/proc/<pid>/stat`, field 22), or
/// `None` if there is no such process.
pub(super) fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_of_another_pid_namespace_on_this_boot_is_judged_by_its_lease() {
        // A pid no process has here: gone, if the owner is of this namespace.
        let ours = format!("pid-4194000-1-0000abcd@{}", this_boot());
        assert_eq!(liveness(&ours, "me"), Liveness::Gone);
        // The same pid in a container on this machine (same boot id, another namespace).
        let boot = this_boot().split('.').next().unwrap_or_default();
        let container = format!("pid-4194000-1-0000abcd@{boot}.4026532000");
        assert_eq!(liveness(&container, "me"), Liveness::Unknown);
        assert!(this_boot().contains('.'), "{}", this_boot());
    }
}
