//! A/B statistics over runs: pure functions, no I/O (DESIGN.md, "A/B statistics";
//! docs/metrics.md states them for users).
//!
//! - `mann_whitney`: the rank test on per-run values, exact or normal approximation;
//! - `gatekeeping`: the primary metric at the full α, then the others Holm-corrected among
//!   themselves (fixed-sequence gatekeeping), identical metrics counted once;
//! - `holm`: the step-down correction, used by `gatekeeping`;
//! - `bootstrap`: the 95% interval of the ratio of per-variant medians, resampling runs
//!   and, for frame-based metrics, frames within runs;
//! - `verdict`: improved / regressed / equivalent / inconclusive, and how many more runs;
//! - `quantile`: type-7 percentiles and medians of floating-point values;
//! - `seed`: reproducible seeds derived per metric;
//! - `sorted`: a run's sorted values reduced to the ranks its percentiles read.

pub mod bootstrap;
pub mod gatekeeping;
pub mod holm;
pub mod mann_whitney;
pub mod quantile;
pub mod seed;
pub mod sorted;
pub mod verdict;

pub use bootstrap::{bootstrap_ratio, BootstrapOptions, RatioInterval, RunValue};
pub use gatekeeping::{gatekeep, Gated};
pub use holm::holm;
pub use mann_whitney::{mann_whitney, MannWhitney, PMethod};
pub use sorted::SortedValues;
pub use verdict::{
    decide, runs_for_significance, significance_reachable, Direction, Gate, Verdict, VerdictInput,
};
