//! Exponential backoff shared by the three layers: `base × 2^step`, the step capped,
//! the result capped, all in saturating `u64` arithmetic so no input can overflow or
//! panic. Monotone in `step` and never above `cap` (property-tested). Also the
//! thundering-herd rule both escalating layers (cooldowns, lockouts) apply.

use switchyard_types::UnixMillis;

/// Whether an attempt dispatched at `dispatched_at` belongs to the herd that a
/// cooldown or lock begun at `began` already answers, so its failure must not
/// escalate it. The very millisecond the cooldown began counts as before it: a
/// replica cannot dispatch to a connection it already knows is cooling, so an
/// attempt sent in that millisecond did not know of it (another replica's, adopted
/// from team mode, or this one's from a verdict racing it).
pub fn same_herd(dispatched_at: UnixMillis, began: UnixMillis) -> bool {
    dispatched_at <= began
}

/// `base × 2^min(step, max_step)`, never above `cap`.
pub fn exponential(base_ms: u32, step: u32, max_step: u32, cap_ms: u64) -> u64 {
    let step = step.min(max_step).min(63);
    let factor = 1u64 << step;
    u64::from(base_ms).saturating_mul(factor).min(cap_ms)
}

/// The same, saturated into `u32` milliseconds (as stored and shown).
pub fn exponential_u32(base_ms: u32, step: u32, max_step: u32, cap_ms: u64) -> u32 {
    u32::try_from(exponential(base_ms, step, max_step, cap_ms)).unwrap_or(u32::MAX)
}

/// A millisecond count as `i64` for [`switchyard_types::UnixMillis`] arithmetic.
pub fn as_i64(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn doubles_until_the_step_cap() {
        let got: Vec<u64> = (0..8).map(|s| exponential(3_000, s, 5, u64::MAX)).collect();
        assert_eq!(got, vec![3_000, 6_000, 12_000, 24_000, 48_000, 96_000, 96_000, 96_000]);
    }

    #[test]
    fn the_absolute_cap_wins() {
        assert_eq!(exponential(120_000, 10, 10, 1_800_000), 1_800_000);
        assert_eq!(exponential(u32::MAX, 200, 200, u64::MAX), u64::MAX);
    }

    proptest! {
        #[test]
        fn monotone_and_capped(base in any::<u32>(), step in 0u32..100, max_step in any::<u32>(), cap in any::<u64>()) {
            let a = exponential(base, step, max_step, cap);
            let b = exponential(base, step + 1, max_step, cap);
            prop_assert!(a <= b);
            prop_assert!(b <= cap);
            prop_assert!(exponential_u32(base, step, max_step, cap) as u64 <= a.max(u64::from(u32::MAX)));
        }
    }
}
