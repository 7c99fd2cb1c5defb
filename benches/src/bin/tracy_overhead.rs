//! The tracy-client case of `probe_overhead`, in a binary of its own: linking Tracy starts
//! its profiler and worker thread before `main` in every process of a binary, which would
//! disturb the other cases. Run by `probe_overhead` with `TRACY_PORT` set to a port it holds,
//! so Tracy cannot listen and its worker discards the queue every 10 ms (a drained queue)
//! instead of buffering everything for a profiler that never connects.

use framelab_benches::{arg, interleaved, print_result, rss_mib, Plan};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let plan = Plan {
        batches: arg(&args, "--batches", 3000),
        iters: arg(&args, "--iters", 2000),
    };
    let _client = tracy_client::Client::start();
    let rss_before = rss_mib();
    let sample = interleaved(
        plan,
        |n| {
            for _ in 0..n {
                let _zone = tracy_client::span!("stage");
            }
        },
        || {},
    );
    let spans = (plan.batches as f64 * 1.1 + 1.0) * plan.iters as f64;
    let note = format!(
        "rss_growth_mib={:.1} spans={spans:.0}",
        rss_mib() - rss_before
    );
    print_result("tracy", sample, &note);
}
