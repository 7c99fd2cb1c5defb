//! The statistics on simulated experiments with known truth: run-level noise (each run of
//! a program lands a little faster or slower) and within-run noise (frames vary), both
//! drawn from a seeded generator, so every number here is deterministic.
//!
//! Model: frame time = 10 ms × true ratio (variant only) × e^(run effect) × e^(frame noise),
//! run effect ~ N(0, 1%), frame noise ~ N(0, 10%), 1,000 frames a run. The metric is each
//! run's p50 frame time (a frame-based metric: the bootstrap resamples runs, then frames).
//! The true ratio of the variant's to the baseline's median is exactly the ratio applied.
//!
//! The bootstrap inside the simulation uses 2,000 resamples instead of 10,000 (stated in
//! docs/metrics.md): the interval's ends move by well under 0.1% with more, and 10,000
//! would make this test five times slower on CI's two cores.

use framelab::stats::mann_whitney::mann_whitney;
use framelab::stats::{
    bootstrap_ratio, decide, gatekeep, BootstrapOptions, Direction, Gate, RunValue, Verdict,
    VerdictInput,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

struct Model {
    runs: usize,
    frames: usize,
    run_sd: f64,
    frame_sd: f64,
}

const MODEL: Model = Model {
    runs: 6,
    frames: 1000,
    run_sd: 0.01,
    frame_sd: 0.10,
};

/// One run's frame times, sorted (ns).
fn simulate_run(model: &Model, ratio: f64, rng: &mut ChaCha8Rng) -> Vec<i64> {
    let run_effect = Normal::new(0.0, model.run_sd).unwrap().sample(rng);
    let noise = Normal::new(0.0, model.frame_sd).unwrap();
    let scale = 10e6 * ratio * f64::exp(run_effect);
    let mut frames: Vec<i64> = (0..model.frames)
        .map(|_| (scale * f64::exp(noise.sample(rng))).round() as i64)
        .collect();
    frames.sort_unstable();
    frames
}

struct Outcome {
    verdict: Verdict,
    low: f64,
    high: f64,
}

fn experiment(model: &Model, true_ratio: f64, seed: u64, resamples: usize) -> Outcome {
    experiment_with(model, true_ratio, seed, resamples, true)
}

fn experiment_with(
    model: &Model,
    true_ratio: f64,
    seed: u64,
    resamples: usize,
    within_runs: bool,
) -> Outcome {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let baseline: Vec<Vec<i64>> = (0..model.runs)
        .map(|_| simulate_run(model, 1.0, &mut rng))
        .collect();
    let variant: Vec<Vec<i64>> = (0..model.runs)
        .map(|_| simulate_run(model, true_ratio, &mut rng))
        .collect();
    let (b, v) = (p50s(&baseline), p50s(&variant));
    let options = BootstrapOptions {
        resamples,
        seed: seed ^ 0xb007,
        within_runs,
        ..Default::default()
    };
    let interval = bootstrap_ratio(&b, &v, &options).unwrap();
    let numbers = |runs: &[RunValue]| -> Vec<f64> { runs.iter().map(RunValue::value).collect() };
    let test = mann_whitney(&numbers(&v), &numbers(&b)).unwrap();
    let verdict = decide(&VerdictInput {
        ratio: interval.ratio,
        low: interval.low,
        high: interval.high,
        p_adjusted: test.p_value,
        runs_baseline: model.runs,
        runs_variant: model.runs,
        family: 1,
        gate: Gate::Primary,
        direction: Direction::LowerIsBetter,
        alpha: 0.05,
        noise: 0.02,
    });
    Outcome {
        verdict,
        low: interval.low,
        high: interval.high,
    }
}

fn p50s(runs: &[Vec<i64>]) -> Vec<RunValue<'_>> {
    runs.iter()
        .map(|s| RunValue::Percentile { sorted: s, p: 0.5 })
        .collect()
}

fn outcomes(true_ratio: f64, experiments: u64, first_seed: u64) -> Vec<Outcome> {
    (0..experiments)
        .map(|i| experiment(&MODEL, true_ratio, first_seed + i, 2_000))
        .collect()
}

fn share(outcomes: &[Outcome], keep: impl Fn(&Outcome) -> bool) -> f64 {
    outcomes.iter().filter(|o| keep(o)).count() as f64 / outcomes.len() as f64
}

#[test]
fn a_a_experiments_rarely_claim_a_change() {
    let runs = outcomes(1.0, 200, 1_000);
    let false_positives = share(&runs, |o| {
        matches!(o.verdict, Verdict::Improved | Verdict::Regressed)
    });
    println!(
        "A/A: improved or regressed in {:.1}% of 200",
        false_positives * 100.0
    );
    assert!(false_positives <= 0.05, "{false_positives}");
}

#[test]
fn a_true_five_percent_slowdown_is_found_with_six_runs_a_side() {
    let runs = outcomes(1.05, 200, 2_000);
    let power = share(&runs, |o| o.verdict == Verdict::Regressed);
    let wrong_way = share(&runs, |o| o.verdict == Verdict::Improved);
    println!("5% slowdown: regressed in {:.1}% of 200", power * 100.0);
    assert!(power >= 0.90, "{power}");
    assert_eq!(wrong_way, 0.0);
}

#[test]
fn the_95_percent_interval_covers_the_true_ratio_about_95_percent_of_the_time() {
    // 1,000 experiments: with 200 the coverage itself would be uncertain by ±3%.
    let true_ratio = 1.05;
    let runs = outcomes(true_ratio, 1_000, 3_000);
    let coverage = share(&runs, |o| o.low <= true_ratio && true_ratio <= o.high);
    println!("coverage of 1000: {:.1}%", coverage * 100.0);
    assert!((0.93..=0.97).contains(&coverage), "{coverage}");
}

/// One comparison as `framelab compare` judges it: several metrics per run, the first
/// primary, through `gatekeep` and `decide`. The metrics: a per-run throughput (the primary,
/// fps-like: its own run-level noise of 2%, moved by `primary_ratio`), then the p50, p95 and
/// p99 of the frames (the model above, no change) and a CPU figure (independent run-level
/// noise of 2%, no change).
struct Gated {
    /// A metric whose truth is "no change" was called improved or regressed.
    false_verdict: bool,
    /// The primary was called improved or regressed.
    primary_called: bool,
    /// A metric whose truth is "no change" had its adjusted p below α (the test alone,
    /// before the noise band has its say).
    null_rejected: bool,
}

fn gated_experiment(runs: usize, primary_ratio: f64, seed: u64) -> Gated {
    let model = Model { runs, ..MODEL };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let side = |ratio: f64, rng: &mut ChaCha8Rng| {
        let frames: Vec<Vec<i64>> = (0..runs).map(|_| simulate_run(&model, 1.0, rng)).collect();
        let noise = Normal::new(0.0, 0.02).unwrap();
        let throughput: Vec<f64> = (0..runs)
            .map(|_| 500.0 * ratio * f64::exp(noise.sample(rng)))
            .collect();
        let cpu: Vec<f64> = (0..runs)
            .map(|_| 2.0 * f64::exp(noise.sample(rng)))
            .collect();
        (frames, throughput, cpu)
    };
    let (bf, bt, bc) = side(1.0, &mut rng);
    let (vf, vt, vc) = side(primary_ratio, &mut rng);
    let whole =
        |v: &[f64]| -> Vec<RunValue<'static>> { v.iter().map(|&x| RunValue::Whole(x)).collect() };
    fn pct(runs: &[Vec<i64>], p: f64) -> Vec<RunValue<'_>> {
        runs.iter()
            .map(|s| RunValue::Percentile { sorted: s, p })
            .collect()
    }
    let metrics: Vec<(Vec<RunValue>, Vec<RunValue>, Direction)> = vec![
        (whole(&bt), whole(&vt), Direction::HigherIsBetter),
        (pct(&bf, 0.5), pct(&vf, 0.5), Direction::LowerIsBetter),
        (pct(&bf, 0.95), pct(&vf, 0.95), Direction::LowerIsBetter),
        (pct(&bf, 0.99), pct(&vf, 0.99), Direction::LowerIsBetter),
        (whole(&bc), whole(&vc), Direction::LowerIsBetter),
    ];
    let numbers = |runs: &[RunValue]| -> Vec<f64> { runs.iter().map(RunValue::value).collect() };
    let p_values: Vec<f64> = (metrics.iter())
        .map(|(b, v, _)| mann_whitney(&numbers(v), &numbers(b)).unwrap().p_value)
        .collect();
    let hypotheses: Vec<usize> = (0..metrics.len()).collect();
    let gated = gatekeep(&p_values, &hypotheses, 0);
    // Improved or regressed needs the adjusted p below α: only then does the interval
    // decide, so only then is it resampled (the test runs in CI's debug build).
    let verdicts: Vec<Verdict> = (metrics.iter().enumerate())
        .map(|(i, (b, v, direction))| {
            #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is meant to take this branch
            if !(gated.adjusted[i] < 0.05) {
                return Verdict::Equivalent; // stands for "not improved or regressed"
            }
            let options = BootstrapOptions {
                resamples: 2_000,
                seed: seed ^ (0xb007 + i as u64),
                ..Default::default()
            };
            let interval = bootstrap_ratio(b, v, &options).unwrap();
            let (gate, family) = if i == 0 {
                (Gate::Primary, 1)
            } else {
                let gate = Gate::After {
                    primary: "throughput",
                    primary_p: gated.primary_p,
                };
                (gate, gated.later)
            };
            decide(&VerdictInput {
                ratio: interval.ratio,
                low: interval.low,
                high: interval.high,
                p_adjusted: gated.adjusted[i],
                runs_baseline: runs,
                runs_variant: runs,
                family,
                gate,
                direction: *direction,
                alpha: 0.05,
                noise: 0.02,
            })
        })
        .collect();
    let called = |v: &Verdict| matches!(v, Verdict::Improved | Verdict::Regressed);
    let first_null = if primary_ratio == 1.0 { 0 } else { 1 };
    Gated {
        false_verdict: verdicts[first_null..].iter().any(called),
        primary_called: called(&verdicts[0]),
        null_rejected: gated.adjusted[first_null..].iter().any(|&p| p < 0.05),
    }
}

/// The chance of any false improved or regressed across a comparison's metrics stays at
/// most α with gatekeeping: in A/A experiments (nothing changed), and where the primary
/// truly changed by 20% (the gate opens) while the other metrics did not. 4 and 6 runs a
/// side, 1,000 experiments each. The adjusted p alone (before the noise band) must keep the
/// chance of rejecting any true "no change" near α too: within 3 standard errors of a share
/// of 1,000 (0.069), since its exact value is itself close to α.
#[test]
fn gatekeeping_keeps_false_verdicts_across_metrics_at_most_five_percent() {
    let n = 1_000;
    for runs in [4, 6] {
        for (primary_ratio, first_seed) in [(1.0, 40_000u64), (1.2, 50_000)] {
            let outcomes: Vec<Gated> = (0..n)
                .map(|i| gated_experiment(runs, primary_ratio, first_seed + i))
                .collect();
            let share =
                |f: fn(&Gated) -> bool| outcomes.iter().filter(|o| f(o)).count() as f64 / n as f64;
            let false_verdicts = share(|o| o.false_verdict);
            let primary_found = share(|o| o.primary_called);
            let rejected = share(|o| o.null_rejected);
            println!(
                "{runs} runs a side, primary ×{primary_ratio}: a false verdict in {:.1}% of \
                 {n}, a true no-change rejected by its adjusted p in {:.1}%, the primary \
                 called in {:.1}%",
                false_verdicts * 100.0,
                rejected * 100.0,
                primary_found * 100.0
            );
            assert!(
                false_verdicts <= 0.05,
                "{runs} runs, ×{primary_ratio}: {false_verdicts}"
            );
            assert!(
                rejected <= 0.069,
                "{runs} runs, ×{primary_ratio}: {rejected}"
            );
            if primary_ratio > 1.0 {
                // The point of testing it first: 4 a side find a 20% change.
                assert!(primary_found >= 0.9, "{runs} runs: {primary_found}");
            }
        }
    }
}

#[test]
#[ignore]
fn explore() {
    for (run_sd, frame_sd) in [(0.01, 0.10), (0.01, 0.3), (0.02, 0.05), (0.005, 0.1)] {
        let model = Model {
            runs: 6,
            frames: 1000,
            run_sd,
            frame_sd,
        };
        for (base, within) in [
            (10_000u64, true),
            (20_000, true),
            (10_000u64, false),
            (20_000, false),
        ] {
            let o: Vec<Outcome> = (0..1000)
                .map(|i| experiment_with(&model, 1.05, base + i, 2000, within))
                .collect();
            let cov = share(&o, |o| o.low <= 1.05 && 1.05 <= o.high);
            let pow = share(&o, |o| o.verdict == Verdict::Regressed);
            let a: Vec<Outcome> = (0..400)
                .map(|i| experiment_with(&model, 1.0, base + 5000 + i, 2000, within))
                .collect();
            let fp = share(&a, |o| {
                matches!(o.verdict, Verdict::Improved | Verdict::Regressed)
            });
            println!("run_sd {run_sd} frame_sd {frame_sd} seeds {base} within {within}: coverage {:.1}% power {:.1}% A/A fp {:.1}%", cov*100.0, pow*100.0, fp*100.0);
        }
    }
}
