//! Combo strategies (SPEC §4.6): each orders a combo's *eligible* candidates for
//! one request. Ruling targets out is the engine's job (breakers, cooldowns,
//! lockouts) and happens first; taking the first free gate in this order is the
//! request path's. The state a strategy keeps across requests (the round-robin
//! counter, the fill-first cursor) lives here, per combo, not in the HTTP layer.
//!
//! Randomness comes from one seeded generator, so tests can fix the draw.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use switchyard_types::UnixMillis;
use switchyard_types::api::ComboStrategy;

/// What a strategy knows of one candidate.
#[derive(Debug, Clone, Copy)]
pub struct StrategyInput<'a> {
    /// Identity across requests (the connection id and model).
    pub key: &'a str,
    /// Weight for `weighted`.
    pub weight: u32,
    /// Requests in flight on its connection.
    pub in_flight: u32,
    /// Requests its connection has been sent.
    pub dispatched: u64,
    /// Its connection's next announced quota reset.
    pub reset_at: Option<UnixMillis>,
}

#[derive(Debug, Default)]
struct ComboState {
    turn: u64,
    cursor: Option<String>,
}

/// The strategies' state for every combo, and the random source.
#[derive(Debug)]
pub struct Strategies {
    combos: Mutex<HashMap<String, ComboState>>,
    rng: Mutex<SmallRng>,
}

impl Default for Strategies {
    fn default() -> Self {
        Strategies::with_rng(SmallRng::from_os_rng())
    }
}

impl Strategies {
    /// Strategies drawing from a fixed seed (tests).
    pub fn seeded(seed: u64) -> Strategies {
        Strategies::with_rng(SmallRng::seed_from_u64(seed))
    }

    fn with_rng(rng: SmallRng) -> Strategies {
        Strategies { combos: Mutex::new(HashMap::new()), rng: Mutex::new(rng) }
    }

    /// Orders `eligible` (indices into `items`, in the combo's listed order) for one
    /// request of `combo`. `items` lists every candidate of the combo, ruled out or
    /// not, so that fill-first can walk past the ruled-out ones.
    pub fn order(
        &self,
        combo: &str,
        strategy: ComboStrategy,
        items: &[StrategyInput<'_>],
        eligible: &[usize],
    ) -> Vec<usize> {
        let mut out = eligible.to_vec();
        if out.len() < 2 && strategy != ComboStrategy::FillFirst {
            return out;
        }
        match strategy {
            ComboStrategy::Priority => {}
            ComboStrategy::RoundRobin => {
                let turn = self.with_combo(combo, |s| {
                    let t = s.turn;
                    s.turn = s.turn.wrapping_add(1);
                    t
                });
                let start = usize::try_from(turn % out.len() as u64).unwrap_or(0);
                out.rotate_left(start);
            }
            ComboStrategy::Weighted => self.weighted(items, &mut out),
            ComboStrategy::FillFirst => {
                out = self.with_combo(combo, |s| fill_first(&mut s.cursor, items, eligible));
            }
            ComboStrategy::LeastUsed => {
                out.sort_by_key(|&i| (items[i].in_flight, items[i].dispatched));
            }
            ComboStrategy::Random => {
                let mut rng = self.rng();
                for i in (1..out.len()).rev() {
                    out.swap(i, rng.random_range(0..=i));
                }
            }
            ComboStrategy::P2c => {
                let (a, b) = {
                    let mut rng = self.rng();
                    let a = rng.random_range(0..out.len());
                    let b = (a + rng.random_range(1..out.len())) % out.len();
                    (a, b)
                };
                let load = |k: usize| (items[out[k]].in_flight, items[out[k]].dispatched);
                let first = if load(b) < load(a) { b } else { a };
                let chosen = out.remove(first);
                out.insert(0, chosen);
            }
            ComboStrategy::ResetAware => {
                out.sort_by_key(|&i| items[i].reset_at.map_or((1, 0), |at| (0, at.0)));
            }
        }
        out
    }

    fn rng(&self) -> std::sync::MutexGuard<'_, SmallRng> {
        self.rng.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with_combo<T>(&self, combo: &str, f: impl FnOnce(&mut ComboState) -> T) -> T {
        let mut combos = self.combos.lock().unwrap_or_else(PoisonError::into_inner);
        if !combos.contains_key(combo) {
            combos.insert(combo.to_owned(), ComboState::default());
        }
        f(combos.get_mut(combo).unwrap_or_else(|| unreachable!("inserted above")))
    }

    /// Forgets the state of combos not in `keep` (deleted or renamed).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.combos.lock().unwrap_or_else(PoisonError::into_inner).retain(|name, _| keep(name));
    }

    fn weighted(&self, items: &[StrategyInput<'_>], out: &mut Vec<usize>) {
        let all_zero = out.iter().all(|&i| items[i].weight == 0);
        let weight = |i: usize| if all_zero { 1 } else { u64::from(items[i].weight) };
        let total: u64 = out.iter().map(|&i| weight(i)).sum();
        let mut draw = self.rng().random_range(0..total.max(1));
        let mut first = 0;
        for (k, &i) in out.iter().enumerate() {
            if draw < weight(i) {
                first = k;
                break;
            }
            draw -= weight(i);
        }
        let chosen = out.remove(first);
        out.sort_by_key(|&i| std::cmp::Reverse(weight(i)));
        out.insert(0, chosen);
    }
}

/// Fill-first: the cursor names the target being filled. It stays while that
/// target is eligible; when it is ruled out, the cursor moves on to the next
/// eligible target in listed order (wrapping) and stays there.
fn fill_first(cursor: &mut Option<String>, items: &[StrategyInput<'_>], eligible: &[usize]) -> Vec<usize> {
    let n = items.len();
    if eligible.is_empty() || n == 0 {
        return eligible.to_vec();
    }
    let at = cursor.as_deref().and_then(|key| items.iter().position(|it| it.key == key)).unwrap_or(0);
    let distance = |i: usize| (i + n - at) % n;
    let mut out = eligible.to_vec();
    out.sort_by_key(|&i| distance(i));
    *cursor = Some(items[out[0]].key.to_owned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(keys: &[&'static str]) -> Vec<StrategyInput<'static>> {
        keys.iter()
            .map(|k| StrategyInput { key: k, weight: 1, in_flight: 0, dispatched: 0, reset_at: None })
            .collect()
    }

    fn firsts(s: &Strategies, strategy: ComboStrategy, items: &[StrategyInput<'_>], n: usize) -> [usize; 3] {
        let mut counts = [0; 3];
        let all: Vec<usize> = (0..items.len()).collect();
        for _ in 0..n {
            counts[s.order("c", strategy, items, &all)[0]] += 1;
        }
        counts
    }

    #[test]
    fn round_robin_is_even_and_random_uses_all() {
        let s = Strategies::seeded(7);
        let it = items(&["a", "b", "c"]);
        assert_eq!(firsts(&s, ComboStrategy::RoundRobin, &it, 30), [10, 10, 10]);
        let random = firsts(&s, ComboStrategy::Random, &it, 300);
        assert!(random.iter().all(|&n| n > 60), "{random:?}");
        assert_eq!(firsts(&s, ComboStrategy::Priority, &it, 5), [5, 0, 0]);
    }

    #[test]
    fn weighted_draws_in_proportion_and_never_draws_weight_zero() {
        let s = Strategies::seeded(11);
        let mut it = items(&["a", "b", "c"]);
        (it[0].weight, it[1].weight, it[2].weight) = (6, 3, 0);
        let counts = firsts(&s, ComboStrategy::Weighted, &it, 900);
        assert_eq!(counts[2], 0);
        assert!((520..680).contains(&counts[0]) && (220..380).contains(&counts[1]), "{counts:?}");
        // The fallback chain after the draw is by descending weight.
        let all = [0, 1, 2];
        let order = s.order("c", ComboStrategy::Weighted, &it, &all);
        assert_eq!(order.last(), Some(&2));
    }

    #[test]
    fn least_used_and_p2c_prefer_the_idle_connection() {
        let s = Strategies::seeded(3);
        let mut it = items(&["a", "b", "c"]);
        it[0].in_flight = 4;
        it[2].in_flight = 2;
        assert_eq!(s.order("c", ComboStrategy::LeastUsed, &it, &[0, 1, 2]), [1, 2, 0]);
        let p2c = firsts(&s, ComboStrategy::P2c, &it, 300);
        // The busiest one only wins a draw it is not part of... never: it loses both pairs.
        assert_eq!(p2c[0], 0, "{p2c:?}");
        assert!(p2c[1] > p2c[2], "{p2c:?}");
    }

    #[test]
    fn reset_aware_prefers_the_soonest_reset_and_unknown_last() {
        let s = Strategies::seeded(1);
        let mut it = items(&["a", "b", "c"]);
        it[0].reset_at = Some(UnixMillis(9_000));
        it[2].reset_at = Some(UnixMillis(2_000));
        assert_eq!(s.order("c", ComboStrategy::ResetAware, &it, &[0, 1, 2]), [2, 0, 1]);
    }

    #[test]
    fn fill_first_stays_on_a_target_until_it_is_ruled_out_and_does_not_go_back() {
        let s = Strategies::seeded(1);
        let it = items(&["a", "b", "c"]);
        assert_eq!(s.order("c", ComboStrategy::FillFirst, &it, &[0, 1, 2])[0], 0);
        // `a` is ruled out: the cursor moves to `b` ...
        assert_eq!(s.order("c", ComboStrategy::FillFirst, &it, &[1, 2]), [1, 2]);
        // ... and stays there when `a` is back.
        assert_eq!(s.order("c", ComboStrategy::FillFirst, &it, &[0, 1, 2]), [1, 2, 0]);
        // `b` and `c` ruled out: wraps to `a`.
        assert_eq!(s.order("c", ComboStrategy::FillFirst, &it, &[0]), [0]);
        assert_eq!(s.order("c", ComboStrategy::FillFirst, &it, &[0, 1, 2])[0], 0);
        // Combos keep their own state.
        assert_eq!(s.order("other", ComboStrategy::FillFirst, &it, &[1, 2])[0], 1);
        assert_eq!(s.order("c", ComboStrategy::FillFirst, &it, &[0, 1, 2])[0], 0);
    }
}
