//! Ring records kept raw during a run and decoded after it (issue 29).
//!
//! Once the measured window has opened, and when nothing during the run needs converted
//! records, the drain copies each ring's new records verbatim into a spill file beside the
//! run file (`RUN.framelab-spill`, `file`; by `sendfile`, no record passing through
//! framelab: `session::spilling`); the run's end folds it
//! through the same converter (`convert`) a converting drain uses, then removes it. A spill
//! left by a framelab that was killed is folded by the next open of the run file
//! (`store::spill_fold`). This room sits below `session` and `store`, which both use it.

pub mod clock;
pub mod convert;
pub mod direct;
pub mod file;
pub mod names;

#[cfg(test)]
mod tests;
