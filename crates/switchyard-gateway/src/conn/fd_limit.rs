//! The process's open-file limit and the client-connection cap derived from it.
//!
//! Every client connection is a file descriptor, and while its request runs it
//! usually holds a second one (the upstream socket). A gateway that accepts until
//! `accept` fails with `EMFILE` can no longer open its database, an upstream socket
//! or a connection for the settings UI: under a 1,024-fd soft limit (a common
//! desktop default) 1,100 idle sockets made it unreachable. So the gateway raises the
//! soft limit to the hard one at start (where the OS allows) and caps open client
//! connections well below whatever limit it then has.
//!
//! Failure behaviour: fail-safe. A limit that cannot be read or raised leaves the
//! current one in force and the cap is derived from what is known.

/// The soft limit the gateway raises itself to, at most: the cap never needs more,
/// and some platforms (macOS) refuse "unlimited".
const RAISE_TO_AT_MOST: u64 = 65_536;
/// Fds kept for everything that is not a client connection (listener, runtime,
/// SQLite files, logs, the desktop shell), at least.
const MIN_RESERVE: u64 = 64;
/// Bounds of the derived cap.
const MIN_CAP: u64 = 16;
const MAX_CAP: u64 = 16_384;
/// The cap when the limit is unknown (non-Unix platforms).
const UNKNOWN_LIMIT_CAP: usize = 1_024;

/// Raises the soft `RLIMIT_NOFILE` towards the hard limit (at most 65,536) and
/// returns the soft limit now in force, or `None` where the platform has no such
/// limit. Never lowers the limit.
#[cfg(unix)]
pub fn raise_nofile_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let target = limit.maximum.unwrap_or(RAISE_TO_AT_MOST).min(RAISE_TO_AT_MOST);
    if limit.current.is_some_and(|soft| soft < target) {
        let raised = Rlimit { current: Some(target), maximum: limit.maximum };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!(event = "server.fd_limit_not_raised", error = %e, target);
        }
    }
    // `None` is "unlimited": treat it as the most the gateway would ever ask for.
    Some(getrlimit(Resource::Nofile).current.unwrap_or(RAISE_TO_AT_MOST))
}

/// Raises nothing where there is no `RLIMIT_NOFILE`.
#[cfg(not(unix))]
pub fn raise_nofile_limit() -> Option<u64> {
    None
}

/// The default cap on open client connections for a soft fd limit: keep an eighth
/// (at least 64) in reserve, then halve the rest, since a client connection with a
/// request in flight also holds an upstream socket. 1,024 → 448; 256 → 96; bounded
/// to 16..=16,384 (5,000 concurrent streams need a 20,000-fd limit).
pub fn connection_cap(fd_limit: Option<u64>) -> usize {
    let Some(limit) = fd_limit else { return UNKNOWN_LIMIT_CAP };
    let reserve = (limit / 8).max(MIN_RESERVE);
    let cap = (limit.saturating_sub(reserve) / 2).clamp(MIN_CAP, MAX_CAP);
    usize::try_from(cap).unwrap_or(UNKNOWN_LIMIT_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_below_the_fd_limit() {
        assert_eq!(connection_cap(Some(1_024)), 448);
        assert_eq!(connection_cap(Some(256)), 96);
        assert_eq!(connection_cap(Some(20_000)), 8_750);
        assert_eq!(connection_cap(Some(65_536)), 16_384);
        assert_eq!(connection_cap(Some(10)), 16);
        assert_eq!(connection_cap(None), 1_024);
        for limit in [256_u64, 512, 1_024, 4_096, 8_192] {
            let cap = connection_cap(Some(limit)) as u64;
            assert!(2 * cap + 64 <= limit, "{limit}: {cap} leaves no room for upstream sockets");
        }
    }

    #[cfg(unix)]
    #[test]
    fn raising_never_lowers_the_limit() {
        let before = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let after = raise_nofile_limit();
        assert!(after.is_some());
        assert!(before.is_none_or(|b| after.is_some_and(|a| a >= b.min(RAISE_TO_AT_MOST))));
    }
}
