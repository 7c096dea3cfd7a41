//! The order in which the targets of an open-loop measurement take their slices.
//!
//! A slice can leave work behind that runs into the next one: a gateway flushes its
//! request log up to 100 ms after its last request, and its threads park or stay
//! warm. A fixed rotation puts each target behind the same neighbour round after
//! round (direct → gateway → baseline → relay would make the baseline absorb the
//! candidate gateway's spill-over three rounds in four, and look slower for it). So
//! the rounds follow a Williams design, a Latin square balanced for first-order
//! carry-over: over one cycle of rounds every target goes first equally often and,
//! within the rounds, directly follows every other target equally often. What one
//! target leaves behind then lands on all the others alike.

/// Rounds in one balanced cycle for `n` targets: `n` when `n` is even, `2n` when
/// odd (an odd-order square needs its mirror image to balance).
pub fn cycle(n: usize) -> usize {
    if n.is_multiple_of(2) { n } else { 2 * n }
}

/// The order of round `round` for `n` targets: a permutation of `0..n`.
///
/// Row 0 is `0, 1, n-1, 2, n-2, …`; row `r < n` adds `r` to every entry (mod `n`);
/// for odd `n`, rows `n..2n` are rows `0..n` reversed.
pub fn order(round: usize, n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let r = round % cycle(n);
    let shift = r % n;
    let mut row: Vec<usize> = (0..n)
        .map(|j| if j % 2 == 1 { j.div_ceil(2) } else { (n - j / 2) % n })
        .map(|t| (t + shift) % n)
        .collect();
    if r >= n {
        row.reverse();
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_is_a_permutation() {
        for n in 0..8 {
            for round in 0..3 * cycle(n).max(1) {
                let mut row = order(round, n);
                row.sort_unstable();
                assert_eq!(row, (0..n).collect::<Vec<_>>(), "n {n} round {round}");
            }
        }
    }

    #[test]
    fn one_cycle_balances_first_place_and_predecessors() {
        for n in 2..8 {
            let mut first = vec![0usize; n];
            let mut follows = vec![vec![0usize; n]; n];
            for round in 0..cycle(n) {
                let row = order(round, n);
                first[row[0]] += 1;
                for pair in row.windows(2) {
                    follows[pair[0]][pair[1]] += 1;
                }
            }
            let per_pair = cycle(n) / n;
            assert!(first.iter().all(|&c| c == per_pair), "n {n}: first {first:?}");
            for (a, row) in follows.iter().enumerate() {
                for (b, &c) in row.iter().enumerate() {
                    let want = if a == b { 0 } else { per_pair };
                    assert_eq!(c, want, "n {n}: {b} after {a}");
                }
            }
        }
    }

    #[test]
    fn four_targets_read_as_expected() {
        assert_eq!(order(0, 4), [0, 1, 3, 2]);
        assert_eq!(order(1, 4), [1, 2, 0, 3]);
        assert_eq!(order(4, 4), [0, 1, 3, 2]);
        assert_eq!(order(3, 3), [2, 1, 0]);
    }
}
