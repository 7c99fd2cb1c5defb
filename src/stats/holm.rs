//! Holm's step-down correction: controls the chance of any false "changed" across the
//! metrics tested after the primary one (`gatekeeping`), without assuming they are
//! independent (they are not: a stage's p95 and p99 move together).

/// Adjusted p-values, in the order given: sort ascending, multiply the k-th smallest
/// (from 0) by m − k, carry the running maximum so order is kept, cap at 1.
/// NaN p-values (no test possible) stay NaN and do not count in m.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = order.len();
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        // Sorted 0.01, 0.02, 0.03, 0.5 → ×4, ×3, ×2, ×1 = 0.04, 0.06, 0.06, 0.5.
        let adjusted = holm(&[0.03, 0.5, 0.01, 0.02]);
        let expected = [0.06, 0.5, 0.04, 0.06];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
    }

    #[test]
    fn monotone_capped_and_nan_ignored() {
        // 0.019·3 = 0.057; 0.02·2 = 0.04 is raised to 0.057 by the running maximum.
        let adjusted = holm(&[0.02, 0.019, f64::NAN, 0.9]);
        assert!((adjusted[1] - 0.057).abs() < 1e-12);
        assert!((adjusted[0] - 0.057).abs() < 1e-12);
        assert!(adjusted[2].is_nan());
        assert_eq!(adjusted[3], 0.9);
        assert_eq!(holm(&[0.6, 0.7]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }
}
