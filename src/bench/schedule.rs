//! The order runs happen in. Interleaving spreads slow drift of the machine (heat, other
//! load, frequency) over every variant instead of loading it onto whichever ran last.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::spec::{ExperimentSpec, Order};

/// One run to do: which variant, which combination of parameter values, which repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub variant: usize,
    pub combo: usize,
    pub repetition: u32,
}

/// Round by round: each round holds every (combination, variant) once, in order
/// (interleaved) or shuffled with a seed derived from `--seed` (0 without one).
pub fn schedule(spec: &ExperimentSpec) -> Vec<Slot> {
    rounds(spec, spec.runs, "order")
}

/// The `--warmup-runs` rounds, laid out like the measured ones (shuffled with a seed of
/// their own, so the measured order does not depend on them).
pub fn warmup_schedule(spec: &ExperimentSpec) -> Vec<Slot> {
    rounds(spec, spec.warmup_runs, "warmup order")
}

fn rounds(spec: &ExperimentSpec, count: u32, seed_label: &str) -> Vec<Slot> {
    let combos = spec.combinations().len();
    let mut rng = ChaCha8Rng::seed_from_u64(crate::stats::seed::derive_seed(
        spec.seed.unwrap_or(0),
        seed_label,
    ));
    let mut slots = Vec::new();
    for repetition in 0..count {
        let mut round: Vec<Slot> = (0..combos)
            .flat_map(|combo| {
                (0..spec.variants.len()).map(move |variant| Slot {
                    variant,
                    combo,
                    repetition,
                })
            })
            .collect();
        if spec.order == Order::Shuffled {
            round.shuffle(&mut rng);
        }
        slots.extend(round);
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::super::spec::{parse_param, parse_variant, RunSettings};
    use super::*;

    fn spec(order: Order) -> ExperimentSpec {
        ExperimentSpec {
            variants: vec![parse_variant("a=x").unwrap(), parse_variant("b=y").unwrap()],
            params: vec![parse_param("k=1,2").unwrap()],
            runs: 3,
            order,
            seed: Some(4),
            pin: None,
            prepare: None,
            run: RunSettings::default(),
            warmup_runs: 0,
            setup: None,
            cleanup: None,
        }
    }

    #[test]
    fn interleaved_alternates_variants() {
        let s = schedule(&spec(Order::Interleaved));
        assert_eq!(s.len(), 12);
        let variants: Vec<usize> = s.iter().map(|s| s.variant).collect();
        assert_eq!(variants, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
        assert_eq!(
            s[4],
            Slot {
                variant: 0,
                combo: 0,
                repetition: 1
            }
        );
    }

    #[test]
    fn shuffled_rounds_hold_each_once_and_repeat_with_the_seed() {
        let s = schedule(&spec(Order::Shuffled));
        assert_eq!(s, schedule(&spec(Order::Shuffled)));
        for round in s.chunks(4) {
            let mut pairs: Vec<(usize, usize)> =
                round.iter().map(|s| (s.combo, s.variant)).collect();
            pairs.sort();
            assert_eq!(pairs, [(0, 0), (0, 1), (1, 0), (1, 1)]);
        }
        assert_ne!(s, schedule(&spec(Order::Interleaved)));
    }

    #[test]
    fn warmup_rounds_hold_every_variant_at_every_value_and_leave_the_measured_order_alone() {
        let mut s = spec(Order::Shuffled);
        let measured = schedule(&s);
        s.warmup_runs = 2;
        let warmups = warmup_schedule(&s);
        assert_eq!(warmups.len(), 2 * 4, "2 rounds × 2 values × 2 variants");
        for round in warmups.chunks(4) {
            let mut pairs: Vec<(usize, usize)> =
                round.iter().map(|s| (s.combo, s.variant)).collect();
            pairs.sort();
            assert_eq!(pairs, [(0, 0), (0, 1), (1, 0), (1, 1)]);
        }
        assert_eq!(
            schedule(&s),
            measured,
            "warmups do not move the measured runs"
        );
        s.warmup_runs = 0;
        assert!(warmup_schedule(&s).is_empty());
    }
}
