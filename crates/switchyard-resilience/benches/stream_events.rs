//! Per-event cost of the stream watchdogs' reading of an SSE event, over every event
//! of the recorded upstream streams (`tests/fixtures/upstream-recordings`): the stall
//! watchdog alone (`is_progress`), both watchdogs as two parses (`is_progress` and
//! `throughput::classify`), and both from one parse (`judge::judge`). The ratio of
//! the last two is what the one pass saves when the throughput watchdog is on.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_resilience::stream_watch::judge::judge;
use switchyard_resilience::stream_watch::{is_progress, throughput};

#[path = "common/recorded.rs"]
mod recorded;
use recorded::recorded_events;

fn stream_events(c: &mut Criterion) {
    let events = recorded_events();
    assert!(!events.is_empty(), "no recorded events found");
    let mut group = c.benchmark_group(format!("all {} recorded events", events.len()));
    group.bench_function("stall watchdog only (is_progress)", |b| {
        b.iter(|| events.iter().filter(|(e, d)| is_progress(black_box(e), black_box(d))).count())
    });
    group.bench_function("both watchdogs, two parses", |b| {
        b.iter(|| {
            events
                .iter()
                .map(|(e, d)| (is_progress(black_box(e), black_box(d)), throughput::classify(e, d)))
                .filter(|(p, _)| *p)
                .count()
        })
    });
    group.bench_function("both watchdogs, one parse (judge)", |b| {
        b.iter(|| events.iter().filter(|(e, d)| judge(black_box(e), black_box(d)).progress).count())
    });
    group.finish();
}

criterion_group!(benches, stream_events);
criterion_main!(benches);
