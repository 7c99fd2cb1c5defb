//! Fixed-sequence gatekeeping: how the metrics of one comparison share the chance α of any
//! false "changed" (docs/metrics.md, "Which metrics are tested, and how strictly").
//!
//! The hypotheses are tested in two steps, in this order:
//! 1. the primary metric's, alone, at the full α (its own p-value);
//! 2. only if step 1 rejected (primary p < α): the other hypotheses, with Holm's step-down
//!    correction among themselves at α.
//!
//! So the adjusted p of a later hypothesis is max(primary p, its Holm-adjusted p among the
//! later ones), below α exactly when both steps reject. This is serial gatekeeping
//! (Dmitrienko & Tamhane, 2007) whose first family is one hypothesis, the fixed-sequence
//! procedure (Maurer, Hothorn & Lehmacher, 1995) followed by Holm; it keeps the chance of any
//! false rejection at most α whichever hypotheses are true: when the primary's null is
//! true, only its own test (at α) can open the gate, and when it is false, Holm's
//! correction holds the later family to α on its own.
//!
//! Metrics identical by construction (one stage's p50 and the total p50 of a single-stage
//! run; fps and wall at a fixed frame count) are one hypothesis: `hypothesis[i]` names the
//! one metric `i` belongs to, and all its metrics share its adjusted p.

use super::holm;

/// The adjusted p-values of one comparison, per metric in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Gated {
    /// Per metric: its hypothesis' adjusted p (NaN where no test was possible).
    pub adjusted: Vec<f64>,
    /// The primary hypothesis' own p (NaN where it had no test: the gate stays shut).
    pub primary_p: f64,
    /// Hypotheses with a p-value tested after the primary: Holm's family in step 2.
    pub later: usize,
}

/// `p_values` per metric (NaN: no test possible); `hypothesis[i]`: the index of the first
/// metric of metric `i`'s hypothesis (`i` itself when it stands alone); `primary`: the index
/// of the primary metric. A hypothesis' p is the largest of its metrics' (they are equal by
/// construction; the largest is the cautious choice if rounding ever parts them).
pub fn gatekeep(p_values: &[f64], hypothesis: &[usize], primary: usize) -> Gated {
    let n = p_values.len();
    let of = |i: usize| hypothesis.get(i).copied().unwrap_or(i);
    let mut hypothesis_p = vec![f64::NAN; n];
    for (i, &p) in p_values.iter().enumerate() {
        let h = of(i);
        if !p.is_nan() {
            hypothesis_p[h] = if hypothesis_p[h].is_nan() {
                p
            } else {
                hypothesis_p[h].max(p)
            };
        }
    }
    let leaders: Vec<usize> = (0..n).filter(|&i| of(i) == i).collect();
    let primary_h = if primary < n { of(primary) } else { usize::MAX };
    let primary_p = hypothesis_p.get(primary_h).copied().unwrap_or(f64::NAN);
    let later: Vec<usize> = leaders
        .iter()
        .copied()
        .filter(|&h| h != primary_h)
        .collect();
    let holm_later = holm(&later.iter().map(|&h| hypothesis_p[h]).collect::<Vec<_>>());
    let mut adjusted_h = vec![f64::NAN; n];
    if primary_h < n {
        adjusted_h[primary_h] = primary_p;
    }
    for (&h, &p) in later.iter().zip(&holm_later) {
        // A gate that cannot open (no primary p) leaves the later ones untested: NaN.
        adjusted_h[h] = if p.is_nan() || primary_p.is_nan() {
            f64::NAN
        } else {
            p.max(primary_p)
        };
    }
    Gated {
        adjusted: (0..n).map(|i| adjusted_h[of(i)]).collect(),
        primary_p,
        later: holm_later.iter().filter(|p| !p.is_nan()).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_primary_keeps_its_own_p_and_the_others_are_holm_corrected_after_it() {
        // Primary 0.029 (4 vs 4, all apart); the others 0.01, 0.02, 0.5 → Holm ×3, ×2, ×1 =
        // 0.03, 0.04, 0.5; none below the primary's 0.029 needs raising.
        let g = gatekeep(&[0.029, 0.01, 0.02, 0.5], &[0, 1, 2, 3], 0);
        let expected = [0.029, 0.03, 0.04, 0.5];
        for (a, e) in g.adjusted.iter().zip(expected) {
            assert!(close(*a, e), "{g:?}");
        }
        assert_eq!(g.later, 3);
        assert!(close(g.primary_p, 0.029));
    }

    #[test]
    fn a_shut_gate_holds_every_later_metric_to_the_primarys_p() {
        // The primary (index 2) did not change: p 0.4. The others' tiny p are raised to it.
        let g = gatekeep(&[0.001, 0.002, 0.4], &[0, 1, 2], 2);
        assert!(g.adjusted.iter().all(|&p| close(p, 0.4)), "{g:?}");
        // No primary p at all: nothing after it is tested.
        let g = gatekeep(&[0.001, f64::NAN], &[0, 1], 1);
        assert!(g.adjusted.iter().all(|p| p.is_nan()), "{g:?}");
    }

    #[test]
    fn metrics_identical_by_construction_count_once() {
        // fps (primary), then frame p50 and total p50 of a one-stage run (one hypothesis),
        // then CPU: two later hypotheses, not three. 0.029 × 2 = 0.058 for the smaller.
        let g = gatekeep(&[0.02, 0.029, 0.029, 0.3], &[0, 1, 1, 3], 0);
        assert_eq!(g.later, 2);
        assert!(
            close(g.adjusted[1], 0.058) && close(g.adjusted[2], 0.058),
            "{g:?}"
        );
        assert!(close(g.adjusted[3], 0.3));
        // A metric identical to the primary is the primary: tested at the full α with it.
        let g = gatekeep(&[0.029, 0.029, 0.01], &[0, 0, 2], 1);
        assert!(close(g.adjusted[0], 0.029) && close(g.adjusted[1], 0.029));
        assert_eq!(g.later, 1);
        assert!(
            close(g.adjusted[2], 0.029),
            "raised to the primary's: {g:?}"
        );
    }
}
