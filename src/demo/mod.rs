//! The built-in demo: a real capture → convert → encode → packetize → send pipeline, paced at
//! a target fps and instrumented with `framelab-probe`. `framelab demo` runs it under
//! `framelab run`; without a session the probe calls are no-ops and it simply runs.
//!
//! - depth 1: every stage of a frame runs serially on the calling thread;
//! - depth 2: a producer thread captures and converts frame n+1 while the calling thread
//!   encodes, packetizes and sends frame n. They share two picture buffers and a channel of
//!   capacity one, so at most one converted frame waits between them.

pub mod capture;
pub mod convert;
pub mod encode;
pub mod pace;
pub mod packetize;
pub mod send;
mod signals;

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use framelab_probe::{Counter, Laps, Stage};

use capture::SyntheticCamera;
use convert::{rgba_to_i420, I420Frame};
use encode::H264Encoder;
use pace::Pacer;
pub use pace::PacerKind;
use packetize::{rtp_timestamp, Packetizer};
use send::UdpSender;

/// Default picture size: a quarter of 1080p. Chosen by measurement on the 2-core EPYC VM
/// this was developed on, release build, 120 fps, depth 1, with other jobs sharing the cores:
/// total p50 ≈ 2.3–3.0 ms (28–36% of the 8.33 ms budget), 0–3% late frames; 640x360 took
/// 3.5–5.0 ms (42–60%) with 10–27% late frames under the same load.
pub const DEFAULT_WIDTH: u32 = 480;
pub const DEFAULT_HEIGHT: u32 = 270;
pub const DEFAULT_FPS: f64 = 120.0;
/// Depths the demo supports.
pub const DEPTHS: [u32; 2] = [1, 2];
/// An IDR frame this often, as streaming hosts do so a client can join.
const KEYFRAME_INTERVAL: Duration = Duration::from_secs(2);
/// Encoded bits per pixel per frame: what a low-latency game or desktop stream spends.
const BITS_PER_PIXEL: f64 = 0.1;
/// Lowest fps accepted: slower than one frame a minute is not a real-time pipeline.
const MIN_FPS: f64 = 1.0 / 60.0;
/// OpenH264's limits: its largest picture, and the fps its rate control clamps to.
const MAX_LONG_SIDE: u32 = 3840;
const MAX_SHORT_SIDE: u32 = 2160;
const MIN_SIDE: u32 = 16;
const ENCODER_MAX_FPS: f64 = 60.0;

#[derive(Clone, Debug, PartialEq)]
pub struct DemoOptions {
    pub fps: f64,
    /// 1: serial on one thread; 2: capture+convert overlapping encode+packetize+send.
    pub depth: u32,
    pub width: u32,
    pub height: u32,
    /// Stop after this long (measured from the first frame's start).
    pub duration: Option<Duration>,
    /// Stop after this many frames (tests use it: a count does not depend on machine speed).
    pub frames: Option<u64>,
    /// How each frame's slot is waited for.
    pub pacer: PacerKind,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            fps: DEFAULT_FPS,
            depth: 1,
            width: DEFAULT_WIDTH,
            height: DEFAULT_HEIGHT,
            duration: None,
            frames: None,
            pacer: PacerKind::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineSummary {
    /// Frames that went through every stage.
    pub frames: u64,
    /// Encoded bytes (the H.264 bitstream, headers of packets not included).
    pub bytes: u64,
    /// IDR frames, as reported by the encoder.
    pub keyframes: u64,
    /// Packets handed to the socket.
    pub packets: u64,
    /// Packets dropped because the socket would have blocked.
    pub dropped_packets: u64,
}

impl DemoOptions {
    /// Checks the options; the error is one line naming the option and what is accepted.
    pub fn validate(&self) -> Result<()> {
        let fps = self.fps;
        if !fps.is_finite() || fps <= 0.0 {
            bail!("--fps must be a positive number of frames per second, got {fps}");
        }
        if fps < MIN_FPS {
            bail!("--fps {fps} is too low: the demo needs at least one frame a minute ({MIN_FPS:.4} fps)");
        }
        if fps > framelab_probe::pacer::MAX_FPS {
            bail!(
                "--fps {fps} is too high: the pacer keeps at most {} fps",
                framelab_probe::pacer::MAX_FPS
            );
        }
        if !DEPTHS.contains(&self.depth) {
            bail!(
                "--depth {} is not supported: use 1 (stages in series) or 2 (capture+convert overlapping encode+send)",
                self.depth
            );
        }
        let (w, h) = (self.width, self.height);
        if w < MIN_SIDE || h < MIN_SIDE || !w.is_multiple_of(2) || !h.is_multiple_of(2) {
            bail!("resolution {w}x{h} is not supported: width and height must be even and at least {MIN_SIDE}");
        }
        if w.max(h) > MAX_LONG_SIDE || w.min(h) > MAX_SHORT_SIDE {
            bail!("resolution {w}x{h} is too large for the H.264 encoder: the most is {MAX_LONG_SIDE}x{MAX_SHORT_SIDE}");
        }
        if self.frames == Some(0) {
            bail!("a frame limit of 0 runs nothing: give at least 1 frame");
        }
        Ok(())
    }

    /// The bitrate the stream should have, and what to ask OpenH264 for: its rate control
    /// assumes at most 60 fps, so above that it would spend `fps / 60` times the target.
    fn encoder_bitrate_bps(&self) -> u32 {
        let target = self.width as f64 * self.height as f64 * self.fps * BITS_PER_PIXEL;
        let rate_control_fps = self.fps.clamp(1.0, ENCODER_MAX_FPS);
        let asked = target * rate_control_fps / self.fps;
        asked.clamp(50_000.0, 200_000_000.0) as u32
    }

    fn keyframe_interval_frames(&self) -> u32 {
        (KEYFRAME_INTERVAL.as_secs_f64() * self.fps)
            .round()
            .clamp(1.0, u32::MAX as f64) as u32
    }
}

/// Runs the pipeline in this process until `duration` elapses, `frames` frames are done, or
/// the process gets SIGINT or SIGTERM (then it returns normally: the records are already in
/// shared memory).
pub fn run_pipeline(opts: &DemoOptions) -> Result<PipelineSummary> {
    opts.validate()?;
    let _signals = signals::StopOnSignal::install();
    let probes = Probes::new();
    let front = FrontEnd::new(opts);
    let back = BackEnd::new(opts)?;
    let limits = Limits {
        duration: opts.duration,
        frames: opts.frames,
        stop: signals::stop_flag(),
    };
    match opts.depth {
        1 => run_serial(opts, &probes, front, back, &limits),
        _ => run_overlapped(opts, &probes, front, back, &limits),
    }
}

/// Interned names, created once per run (interning takes a lock).
struct Probes {
    capture: Stage,
    convert: Stage,
    encode: Stage,
    packetize: Stage,
    send: Stage,
    bytes: Counter,
    keyframe: Counter,
    packets: Counter,
    send_drops: Counter,
}

impl Probes {
    fn new() -> Probes {
        Probes {
            capture: Stage::new("capture"),
            convert: Stage::new("convert"),
            encode: Stage::new("encode"),
            packetize: Stage::new("packetize"),
            send: Stage::new("send"),
            bytes: Counter::new("bytes"),
            keyframe: Counter::new("keyframe"),
            packets: Counter::new("packets"),
            send_drops: Counter::new("send_drops"),
        }
    }
}

/// When to stop starting frames.
struct Limits {
    duration: Option<Duration>,
    frames: Option<u64>,
    stop: &'static AtomicBool,
}

impl Limits {
    /// Waits for frame `frame`'s slot; false when the run is over instead.
    fn next_slot(&self, frame: u64, pacer: &mut Pacer, started: Instant) -> bool {
        if self.frames.is_some_and(|limit| frame >= limit) {
            return false;
        }
        if !pacer.wait(frame, self.stop) {
            return false;
        }
        // The first frame always runs; later ones only inside the duration.
        frame == 0 || self.duration.is_none_or(|d| started.elapsed() < d)
    }
}

/// Capture and convert: the half of the pipeline that makes a picture.
struct FrontEnd {
    camera: SyntheticCamera,
}

impl FrontEnd {
    fn new(opts: &DemoOptions) -> FrontEnd {
        FrontEnd {
            camera: SyntheticCamera::new(opts.width as usize, opts.height as usize),
        }
    }

    fn produce(
        &mut self,
        frame: u64,
        picture: &mut I420Frame,
        laps: &mut Laps,
        probes: &Probes,
    ) -> Result<()> {
        let rgba = self.camera.capture(frame);
        laps.lap(probes.capture);
        rgba_to_i420(rgba, picture)?;
        laps.lap(probes.convert);
        Ok(())
    }
}

/// Encode, packetize and send: the half that turns a picture into packets on the wire.
struct BackEnd {
    fps: f64,
    encoder: H264Encoder,
    bitstream: Vec<u8>,
    packetizer: Packetizer,
    sender: UdpSender,
    summary: PipelineSummary,
}

impl BackEnd {
    fn new(opts: &DemoOptions) -> Result<BackEnd> {
        let encoder = H264Encoder::new(
            opts.encoder_bitrate_bps(),
            opts.fps,
            opts.keyframe_interval_frames(),
        )?;
        Ok(BackEnd {
            fps: opts.fps,
            encoder,
            bitstream: Vec::new(),
            packetizer: Packetizer::new(0x6672_6d6c), // "frml"
            sender: UdpSender::new()?,
            summary: PipelineSummary::default(),
        })
    }

    fn consume(
        &mut self,
        frame: u64,
        picture: &I420Frame,
        laps: &mut Laps,
        probes: &Probes,
    ) -> Result<()> {
        // Clamped: the encoder panics on a timestamp beyond i64 milliseconds.
        let timestamp_ms = ((frame as f64 * 1000.0 / self.fps) as u64).min(i64::MAX as u64);
        let encoded = self
            .encoder
            .encode(picture, timestamp_ms, &mut self.bitstream)?;
        laps.lap(probes.encode);
        let packets = self
            .packetizer
            .packetize(&self.bitstream, rtp_timestamp(frame, self.fps));
        laps.lap(probes.packetize);
        let outcome = self.sender.send(self.packetizer.packets())?;
        laps.lap(probes.send);

        probes.bytes.add(frame, encoded.bytes as i64);
        probes.keyframe.add(frame, encoded.keyframe as i64);
        probes.packets.add(frame, packets as i64);
        if outcome.dropped > 0 {
            probes.send_drops.add(frame, outcome.dropped as i64);
        }
        let s = &mut self.summary;
        s.frames += 1;
        s.bytes += encoded.bytes as u64;
        s.keyframes += encoded.keyframe as u64;
        s.packets += outcome.sent;
        s.dropped_packets += outcome.dropped;
        Ok(())
    }
}

/// Depth 1: all five stages of a frame in a row on this thread, laps at each boundary.
fn run_serial(
    opts: &DemoOptions,
    probes: &Probes,
    mut front: FrontEnd,
    mut back: BackEnd,
    limits: &Limits,
) -> Result<PipelineSummary> {
    let mut picture = I420Frame::new(opts.width as usize, opts.height as usize)?;
    let mut pacer = Pacer::new(opts.fps, opts.pacer)?;
    let started = Instant::now();
    let mut frame = 0u64;
    while limits.next_slot(frame, &mut pacer, started) {
        let mut laps = Laps::start(frame);
        front.produce(frame, &mut picture, &mut laps, probes)?;
        back.consume(frame, &picture, &mut laps, probes)?;
        frame += 1;
    }
    Ok(back.summary)
}

/// A converted picture on its way from the producer thread to the consumer.
struct Converted {
    frame: u64,
    picture: I420Frame,
}

/// Depth 2: a producer thread paces, captures and converts; this thread encodes, packetizes
/// and sends. Pictures circulate through two buffers, so when encoding falls behind the
/// producer waits for a free buffer instead of queueing frames without bound.
fn run_overlapped(
    opts: &DemoOptions,
    probes: &Probes,
    front: FrontEnd,
    mut back: BackEnd,
    limits: &Limits,
) -> Result<PipelineSummary> {
    const BUFFERS: usize = 2;
    let (to_back, from_front) = sync_channel::<Converted>(1);
    let (to_front, free_pictures) = sync_channel::<I420Frame>(BUFFERS);
    for _ in 0..BUFFERS {
        let picture = I420Frame::new(opts.width as usize, opts.height as usize)?;
        // Cannot fail: the channel has room for every buffer and its receiver is alive.
        let _ = to_front.send(picture);
    }
    let pacer = Pacer::new(opts.fps, opts.pacer)?;
    std::thread::scope(|scope| {
        let producer = std::thread::Builder::new()
            .name("demo-capture".into())
            .spawn_scoped(scope, move || {
                produce_frames(front, pacer, limits, probes, free_pictures, to_back)
            })
            .map_err(|e| anyhow!("cannot start the demo's capture thread: {e}"))?;
        let consumed = consume_frames(&mut back, probes, from_front, to_front);
        let produced = producer
            .join()
            .map_err(|_| anyhow!("the demo's capture thread panicked"))?;
        // Report the consumer's error first: a producer failing to hand over a frame is usually
        // its consequence.
        consumed.and(produced)?;
        Ok(back.summary)
    })
}

fn produce_frames(
    mut front: FrontEnd,
    mut pacer: Pacer,
    limits: &Limits,
    probes: &Probes,
    free_pictures: Receiver<I420Frame>,
    to_back: SyncSender<Converted>,
) -> Result<()> {
    let started = Instant::now();
    let mut frame = 0u64;
    while limits.next_slot(frame, &mut pacer, started) {
        // The consumer has stopped (it failed) when the channel is closed: stop quietly, it
        // reports why.
        let Ok(mut picture) = free_pictures.recv() else {
            return Ok(());
        };
        let mut laps = Laps::start(frame);
        front.produce(frame, &mut picture, &mut laps, probes)?;
        if to_back.send(Converted { frame, picture }).is_err() {
            return Ok(());
        }
        frame += 1;
    }
    Ok(())
}

fn consume_frames(
    back: &mut BackEnd,
    probes: &Probes,
    from_front: Receiver<Converted>,
    to_front: SyncSender<I420Frame>,
) -> Result<()> {
    // Ends when the producer is done and has dropped its sender.
    for Converted { frame, picture } in from_front {
        let mut laps = Laps::start(frame);
        back.consume(frame, &picture, &mut laps, probes)?;
        // The producer may have finished already; then nobody needs the buffer back.
        let _ = to_front.send(picture);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoder_is_asked_for_the_bits_per_frame_it_will_spend() {
        // 480x270 at 0.1 bit per pixel: 12 960 bits a frame whatever the fps. OpenH264 assumes
        // at most 60 fps, so above that it is asked for 60 frames' worth a second.
        let at = |fps: f64| DemoOptions {
            fps,
            width: 480,
            height: 270,
            ..DemoOptions::default()
        };
        assert_eq!(at(30.0).encoder_bitrate_bps(), 388_800);
        assert_eq!(at(60.0).encoder_bitrate_bps(), 777_600);
        assert_eq!(at(120.0).encoder_bitrate_bps(), 777_600);
        assert_eq!(at(1e300).encoder_bitrate_bps(), 777_600);
        assert_eq!(at(f64::MAX).encoder_bitrate_bps(), 200_000_000);
    }

    #[test]
    fn keyframes_come_every_two_seconds() {
        let at = |fps: f64| {
            DemoOptions {
                fps,
                ..DemoOptions::default()
            }
            .keyframe_interval_frames()
        };
        assert_eq!(at(120.0), 240);
        assert_eq!(at(29.97), 60);
        assert_eq!(at(0.1), 1);
        assert_eq!(at(1e300), u32::MAX);
    }
}
