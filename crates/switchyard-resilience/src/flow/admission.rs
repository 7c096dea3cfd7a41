//! The request queue's admission check (SPEC §4.6): a pure function, run before any
//! other work on the request, so a full queue costs the caller nothing.

/// The queue is full: the caller answers `RATE_LIMIT_QUEUE_FULL` at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueFull {
    /// Requests already waiting.
    pub queued: u32,
    /// The configured depth.
    pub max_queue_depth: u32,
}

/// Whether one more request may wait in a queue that holds `queued` waiters;
/// `max_queue_depth` 0 means no limit.
pub fn admit(queued: u32, max_queue_depth: u32) -> Result<(), QueueFull> {
    if max_queue_depth == 0 || queued < max_queue_depth {
        Ok(())
    } else {
        Err(QueueFull { queued, max_queue_depth })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_zero_admits_everyone_and_a_depth_is_a_strict_bound() {
        assert_eq!(admit(1_000_000, 0), Ok(()));
        assert_eq!(admit(0, 1), Ok(()));
        assert_eq!(admit(1, 1), Err(QueueFull { queued: 1, max_queue_depth: 1 }));
        assert_eq!(admit(4, 5), Ok(()));
        assert!(admit(7, 5).is_err());
    }
}
