//! Hot-path cost of the resilience engine: candidate filtering plus outcome
//! recording, with 50 connections × 20 models of state (cooldowns, lockouts and
//! breaker counts spread over them). Numbers are reported in
//! `docs/benchmarks-engine.md`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_resilience::{
    AttemptOutcome, AuthCategory, ConnectionConfig, Engine, ManualClock, Target, TransportFailure,
};
use switchyard_types::{ResilienceSettings, UnixMillis};

const PROVIDERS: usize = 5;
const CONNECTIONS: usize = 50;
const MODELS: usize = 20;

struct World {
    clock: Arc<ManualClock>,
    engine: Engine,
    providers: Vec<String>,
    connections: Vec<String>,
    models: Vec<String>,
}

impl World {
    fn target(&self, c: usize, m: usize) -> Target<'_> {
        Target {
            provider: &self.providers[c % PROVIDERS],
            connection: &self.connections[c],
            model: &self.models[m],
        }
    }
}

fn world(lockouts: bool) -> World {
    let clock = Arc::new(ManualClock::new(UnixMillis(1_772_366_400_000)));
    let engine = Engine::new(clock.clone());
    let mut settings = ResilienceSettings::default();
    settings.model_lockout.enabled = lockouts;
    engine.apply_settings(&settings);
    let providers: Vec<String> = (0..PROVIDERS).map(|p| format!("provider-{p}")).collect();
    let connections: Vec<String> = (0..CONNECTIONS).map(|c| format!("connection-{c:02}")).collect();
    let models: Vec<String> = (0..MODELS).map(|m| format!("model-{m:02}")).collect();
    engine.sync_connections(connections.iter().enumerate().map(|(c, id)| ConnectionConfig {
        id: id.clone(),
        provider: providers[c % PROVIDERS].clone(),
        category: if c % PROVIDERS < 2 { AuthCategory::Oauth } else { AuthCategory::ApiKey },
        disable_cooling: false,
        quota_families: None,
    }));
    let w = World { clock, engine, providers, connections, models };
    let headers: &[(&str, &str)] = &[("retry-after", "600")];
    let none: &[(&str, &str)] = &[];
    for c in 0..CONNECTIONS {
        for m in 0..MODELS {
            let Ok(a) = w.engine.begin(w.target(c, m)) else { continue };
            let outcome = match (c, m) {
                // a model lockout on 20 (connection, model) slots (a cooldown without lockouts)
                (c, m) if c % 5 == 0 && (c + m) % 10 == 0 => Some((429, headers)),
                // an expired-token cooldown on 6 connections
                (c, 0) if c % 9 == 0 => Some((401, none)),
                // two counted provider failures per provider (Closed, failures > 0)
                (c, 1) if c < 10 => Some((503, none)),
                _ => None,
            };
            match outcome {
                Some((status, headers)) => {
                    w.engine.judge(a, &AttemptOutcome::Http { status, headers: &headers, body: "" });
                }
                None => {
                    w.engine.record_success(a);
                }
            }
        }
    }
    w
}

fn bench(c: &mut Criterion) {
    let w = world(true);
    let one_model: Vec<Target<'_>> = (0..CONNECTIONS).map(|i| w.target(i, 7)).collect();
    let everything: Vec<Target<'_>> = (0..CONNECTIONS)
        .flat_map(|i| (0..MODELS).map(move |m| (i, m)))
        .map(|(i, m)| w.target(i, m))
        .collect();
    let eligible = one_model.iter().filter(|t| w.engine.begin(**t).is_ok()).count();
    eprintln!("state: 50 connections x 20 models, {eligible}/50 eligible for model-07");

    c.bench_function("filter/50 candidates", |b| {
        b.iter(|| black_box(w.engine.filter(black_box(&one_model))))
    });
    c.bench_function("filter/1000 candidates", |b| {
        b.iter(|| black_box(w.engine.filter(black_box(&everything))))
    });

    let ok_target = w.target(3, 4);
    c.bench_function("record/begin + success", |b| {
        b.iter(|| {
            if let Ok(a) = w.engine.begin(black_box(ok_target)) {
                black_box(w.engine.record_success(a));
            }
        })
    });
    c.bench_function("request/filter 50 + begin + success", |b| {
        b.iter(|| {
            let s = w.engine.filter(black_box(&one_model));
            if let Some(i) = s.eligible.first()
                && let Ok(a) = w.engine.begin(one_model[*i])
            {
                black_box(w.engine.record_success(a));
            }
        })
    });

    let f = world(false);
    let headers: &[(&str, &str)] = &[("retry-after", "7")];
    let failing = f.target(12, 3);
    c.bench_function("record/begin + 429 failure (classify, cooldown)", |b| {
        b.iter(|| {
            f.clock.advance_ms(10_000);
            if let Ok(a) = f.engine.begin(black_box(failing)) {
                let outcome = AttemptOutcome::Http { status: 429, headers: &headers, body: "{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited. Please retry in 7s\"}}" };
                black_box(f.engine.judge(a, &outcome));
            }
        })
    });
    let timeout_target = f.target(4, 1);
    c.bench_function("record/begin + timeout failure (breaker)", |b| {
        b.iter(|| {
            f.clock.advance_ms(120_000);
            if let Ok(a) = f.engine.begin(black_box(timeout_target)) {
                black_box(f.engine.judge(a, &AttemptOutcome::Transport(TransportFailure::Timeout)));
            }
        })
    });
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! { name = engine; config = config(); targets = bench }
criterion_main!(engine);
