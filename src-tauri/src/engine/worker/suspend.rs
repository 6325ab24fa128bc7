//! An attempt across a suspend: a closed lid kills the connection, which is no failure of the
//! site's, and spends no retry.

use std::time::Duration;

use crate::engine::clock::Millis;
use crate::engine::policy::{self, Failure, FailureKind};
use crate::engine::queue::Finish;

/// A suspend this long during an attempt makes its network failure the machine's.
const SLEPT_MS: Millis = 2_000;

/// `finish` of an attempt during which the machine slept `slept` ms: a network failure goes
/// back as an offline attempt does, saying so; anything else (a server's answer) is as it was.
pub(super) fn across(finish: Finish, slept: Millis) -> Finish {
    match finish {
        Finish::Failure { failure, .. }
            if slept >= SLEPT_MS
                && matches!(
                    failure.kind,
                    FailureKind::ConnectRefused
                        | FailureKind::ConnectFailed
                        | FailureKind::Timeout
                        | FailureKind::ClosedBeforeResponse
                        | FailureKind::DroppedMidBody
                        | FailureKind::Protocol
                        | FailureKind::DnsTemporary
                        | FailureKind::NetworkDown
                        | FailureKind::Unknown
                ) =>
        {
            Finish::Offline(Failure {
                message: format!(
                    "{} (the computer slept for {} during it)",
                    failure.message,
                    policy::human_duration(Duration::from_millis(slept as u64))
                ),
                ..failure
            })
        }
        other => other,
    }
}
