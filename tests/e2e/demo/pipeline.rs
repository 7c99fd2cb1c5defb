//! The demo pipeline end to end, without a session (the probe is a no-op): frame counts come
//! from a frame limit, never from how fast this machine is.

use std::time::Duration;

use framelab::demo::capture::SyntheticCamera;
use framelab::demo::convert::{rgba_to_i420, I420Frame};
use framelab::demo::encode::H264Encoder;
use framelab::demo::packetize::{
    parse_packet, rtp_timestamp, Packetizer, HEADER_BYTES, MAX_PAYLOAD_BYTES,
};
use framelab::demo::{run_pipeline, DemoOptions};

/// Small and fast: the tests check what the pipeline does, not how fast.
fn small(depth: u32, frames: u64) -> DemoOptions {
    DemoOptions {
        fps: 1000.0,
        depth,
        width: 64,
        height: 48,
        duration: None,
        frames: Some(frames),
        pacer: Default::default(),
    }
}

#[test]
fn depth_1_runs_the_requested_frames() {
    let summary = run_pipeline(&small(1, 30)).unwrap();
    assert_eq!(summary.frames, 30);
    assert!(summary.bytes > 0);
    assert!(summary.keyframes >= 1, "the first frame is an IDR frame");
    assert!(
        summary.packets + summary.dropped_packets >= 30,
        "every frame makes at least one packet"
    );
}

#[test]
fn depth_2_runs_the_requested_frames() {
    let summary = run_pipeline(&small(2, 30)).unwrap();
    assert_eq!(summary.frames, 30);
    assert!(summary.bytes > 0);
    assert!(summary.keyframes >= 1);
    assert!(summary.packets + summary.dropped_packets >= 30);
}

#[test]
fn a_duration_bounds_the_run() {
    // At 100 fps for 100 ms the schedule has room for 10 frames; a slow machine runs fewer,
    // never more (the pacer does not burst), and the first frame always runs.
    for depth in [1, 2] {
        let opts = DemoOptions {
            fps: 100.0,
            duration: Some(Duration::from_millis(100)),
            frames: None,
            ..small(depth, 1)
        };
        let summary = run_pipeline(&opts).unwrap();
        assert!(
            (1..=11).contains(&summary.frames),
            "depth {depth}: {} frames",
            summary.frames
        );
        assert!(summary.keyframes >= 1);
    }
}

#[test]
fn the_default_options_are_valid_and_run() {
    let defaults = DemoOptions::default();
    assert_eq!(defaults.fps, 120.0);
    assert_eq!(defaults.depth, 1);
    assert_eq!(defaults.duration, None);
    defaults.validate().unwrap();
    let summary = run_pipeline(&DemoOptions {
        frames: Some(3),
        ..defaults
    })
    .unwrap();
    assert_eq!(summary.frames, 3);
    assert_eq!(summary.keyframes, 1);
}

#[test]
fn bad_options_are_one_line_errors() {
    let good = small(1, 1);
    let cases = [
        (
            DemoOptions {
                fps: 0.0,
                ..good.clone()
            },
            "--fps",
        ),
        (
            DemoOptions {
                fps: -30.0,
                ..good.clone()
            },
            "--fps",
        ),
        (
            DemoOptions {
                fps: f64::NAN,
                ..good.clone()
            },
            "--fps",
        ),
        (
            DemoOptions {
                fps: f64::INFINITY,
                ..good.clone()
            },
            "--fps",
        ),
        (
            DemoOptions {
                fps: 1e-9,
                ..good.clone()
            },
            "--fps",
        ),
        (
            DemoOptions {
                depth: 0,
                ..good.clone()
            },
            "--depth 0",
        ),
        (
            DemoOptions {
                depth: 3,
                ..good.clone()
            },
            "--depth 3",
        ),
        (
            DemoOptions {
                width: 65,
                ..good.clone()
            },
            "65x48",
        ),
        (
            DemoOptions {
                height: 8,
                ..good.clone()
            },
            "64x8",
        ),
        (
            DemoOptions {
                width: 0,
                height: 0,
                ..good.clone()
            },
            "0x0",
        ),
        (
            DemoOptions {
                width: 4096,
                height: 2160,
                ..good.clone()
            },
            "too large",
        ),
        (
            DemoOptions {
                frames: Some(0),
                ..good.clone()
            },
            "frame limit",
        ),
    ];
    for (opts, expected) in cases {
        let message = run_pipeline(&opts).unwrap_err().to_string();
        assert!(message.contains(expected), "{opts:?}: {message}");
        assert!(!message.contains('\n'), "{message}");
    }
}

#[test]
fn packets_reassemble_into_the_bitstream() {
    let (w, h) = (320, 240);
    let mut camera = SyntheticCamera::new(w, h);
    let mut picture = I420Frame::new(w, h).unwrap();
    let mut encoder = H264Encoder::new(2_000_000, 30.0, 60).unwrap();
    let mut packetizer = Packetizer::new(42);
    let mut bitstream = Vec::new();
    let mut expected_sequence: Option<u16> = None;
    let mut saw_multi_packet_frame = false;
    for frame in 0..10u64 {
        rgba_to_i420(camera.capture(frame), &mut picture).unwrap();
        encoder
            .encode(&picture, frame * 33, &mut bitstream)
            .unwrap();
        let timestamp = rtp_timestamp(frame, 30.0);
        let count = packetizer.packetize(&bitstream, timestamp);
        let packets: Vec<&[u8]> = packetizer.packets().collect();
        assert_eq!(packets.len(), count);
        assert_eq!(count, bitstream.len().div_ceil(MAX_PAYLOAD_BYTES));
        saw_multi_packet_frame |= count > 1;

        let mut reassembled = Vec::new();
        for (index, packet) in packets.iter().enumerate() {
            assert!(packet.len() <= HEADER_BYTES + MAX_PAYLOAD_BYTES);
            let (header, payload) = parse_packet(packet).unwrap();
            if let Some(expected) = expected_sequence {
                assert_eq!(header.sequence, expected, "frame {frame} packet {index}");
            }
            expected_sequence = Some(header.sequence.wrapping_add(1));
            assert_eq!(header.timestamp, timestamp);
            assert_eq!(header.ssrc, 42);
            assert_eq!(
                header.marker,
                index + 1 == count,
                "marker only on the frame's last packet"
            );
            reassembled.extend_from_slice(payload);
        }
        assert_eq!(reassembled, bitstream, "frame {frame}");
    }
    assert!(
        saw_multi_packet_frame,
        "the IDR frame should need several packets"
    );
}

#[test]
fn sequence_numbers_wrap() {
    let mut packetizer = Packetizer::new(1);
    let bitstream = vec![0xAB; MAX_PAYLOAD_BYTES * 3];
    let mut last = None;
    for _ in 0..(u16::MAX as usize / 3 + 10) {
        packetizer.packetize(&bitstream, 0);
        for packet in packetizer.packets() {
            let (header, _) = parse_packet(packet).unwrap();
            if let Some(previous) = last {
                assert_eq!(header.sequence, u16::wrapping_add(previous, 1));
            }
            last = Some(header.sequence);
        }
    }
}
