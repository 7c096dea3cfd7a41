//! `GET /api/events`: the change feed as Server-Sent Events, so a browser UI can
//! refetch on change instead of polling (the desktop app gets the same topics as IPC
//! events). One SSE event per changed topic, named like the IPC event
//! (`cooldownsChanged`, ...), data `{"at": <unix ms>}`; bursts are coalesced.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;

use crate::control::next_batch;
use crate::state::AppState;

/// How long a burst of changes is gathered into one batch.
const COALESCE: Duration = Duration::from_millis(150);

/// The SSE stream; ends as soon as the gateway starts shutting down, so an open
/// UI tab does not hold the shutdown for its whole grace period.
pub async fn stream(State(state): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let control = state.management.control().clone();
    let rx = control.subscribe();
    let clock = state.clock.clone();
    let events = futures_util::stream::unfold(rx, move |mut rx| {
        let (clock, control) = (clock.clone(), control.clone());
        async move {
            let topics = tokio::select! {
                batch = next_batch(&mut rx, COALESCE) => batch?,
                () = control.closed() => return None,
            };
            let at = clock.now_wall().0;
            let batch: Vec<Result<Event, Infallible>> = topics
                .into_iter()
                .map(|t| Ok(Event::default().event(t.event_name()).data(format!("{{\"at\":{at}}}"))))
                .collect();
            Some((futures_util::stream::iter(batch), rx))
        }
    });
    Sse::new(futures_util::StreamExt::flatten(events)).keep_alive(KeepAlive::default())
}
