//! Services started fresh for each run beside the measured command (`--service`): a
//! server, a database, a load generator's target. Each runs in its own process group,
//! is waited for until ready, is accounted under its own role, and is stopped after the
//! command — also when framelab is killed (the guardian, `session::guard`).

pub mod spec;

pub use spec::{
    for_variant, parse_services, refuse_variant_prefix, split_pin, split_variant, Ready,
    ServiceSpec, DEFAULT_READY_TIMEOUT,
};
