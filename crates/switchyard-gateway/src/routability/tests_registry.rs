//! The latest Test result of each connection (`POST /api/providers/{id}/test`), so
//! a failed Test shows on the connection's status until it is superseded: by a
//! passing Test, by an edit of the connection, or by a request it serves.
//! In memory: a restart forgets them (the next Test or request tells again).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use switchyard_types::routability::LastTestView;

/// Test results by connection.
#[derive(Debug, Default)]
pub struct ConnectionTests {
    latest: Mutex<HashMap<String, LastTestView>>,
    /// How many stored results are failures: the request path's fast exit.
    failing: AtomicUsize,
}

impl ConnectionTests {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, LastTestView>) -> T) -> T {
        let mut map = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        let out = f(&mut map);
        self.failing.store(map.values().filter(|t| !t.ok).count(), Ordering::Release);
        out
    }

    /// Records a Test's result.
    pub fn record(&self, connection: &str, result: LastTestView) {
        self.with(|m| m.insert(connection.to_owned(), result));
    }

    /// The latest result.
    pub fn latest(&self, connection: &str) -> Option<LastTestView> {
        self.with(|m| m.get(connection).cloned())
    }

    /// The failed results not yet superseded.
    pub fn failing(&self) -> HashMap<String, LastTestView> {
        if self.failing.load(Ordering::Acquire) == 0 {
            return HashMap::new();
        }
        self.with(|m| m.iter().filter(|(_, t)| !t.ok).map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    /// A request succeeded on `connection`: a failed Test no longer describes it.
    pub fn note_success(&self, connection: &str) {
        if self.failing.load(Ordering::Acquire) == 0 {
            return;
        }
        self.with(|m| {
            if m.get(connection).is_some_and(|t| !t.ok) {
                m.remove(connection);
            }
        });
    }

    /// The connection was edited or deleted: its old result no longer applies.
    pub fn forget(&self, connection: &str) {
        self.with(|m| m.remove(connection));
    }
}
