//! The README's example: three stages per frame with laps, a byte counter, paced at 60 fps.
//! Run it under framelab: `framelab run --fps 60 -- target/release/examples/pipeline 300`

use framelab_probe::{Counter, Laps, Stage};
use std::time::{Duration, Instant};

fn main() {
    let frames: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let (decode, scale, encode) = (
        Stage::new("decode"),
        Stage::new("scale"),
        Stage::new("encode"),
    );
    let bytes = Counter::new("bytes");
    let period = Duration::from_secs_f64(1.0 / 60.0);
    let start = Instant::now();
    for frame in 0..frames {
        let mut laps = Laps::start(frame);
        work(Duration::from_micros(800));
        laps.lap(decode);
        work(Duration::from_micros(300));
        laps.lap(scale);
        work(Duration::from_micros(2500));
        laps.lap(encode);
        bytes.add(frame, 12_000);
        // Wait for the next frame slot.
        let next = start + period * (frame as u32 + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// Stands in for real work: keeps the CPU busy for `d`.
fn work(d: Duration) {
    let until = Instant::now() + d;
    let mut x = 1u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}
