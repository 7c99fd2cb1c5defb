//! The encode stage: H.264 with OpenH264 (Cisco's encoder, compiled from source by the
//! `openh264` crate), configured like a low-latency streaming host: constant bitrate, no
//! frame skipping, one encoder thread, an IDR frame every `keyframe_interval` frames.

use std::os::raw::{c_int, c_void};

use anyhow::{anyhow, Result};
use openh264::encoder::{Encoder, EncoderConfig, FrameType, RateControlMode, UsageType};
use openh264::{OpenH264API, Timestamp};

use super::convert::I420Frame;

// Option ids and levels from OpenH264's `codec_app_def.h`. The `openh264` crate exposes
// neither the intra period nor the trace level before initialisation, and naming these
// constants through `openh264-sys2` would need a direct dependency for two integers.
/// `ENCODER_OPTION_IDR_INTERVAL`: the intra period, in frames.
const ENCODER_OPTION_IDR_INTERVAL: c_int = 1;
/// `ENCODER_OPTION_TRACE_LEVEL`: what OpenH264 prints on stderr.
const ENCODER_OPTION_TRACE_LEVEL: c_int = 25;
/// `WELS_LOG_ERROR`: errors only. Initialisation otherwise warns that a bitrate "can't be
/// controlled" without frame skipping, which the demo disables on purpose (every frame is coded).
const WELS_LOG_ERROR: c_int = 1;

/// What the encoder made of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedFrame {
    pub bytes: usize,
    /// An IDR frame, as the encoder reported it.
    pub keyframe: bool,
}

pub struct H264Encoder {
    encoder: Encoder,
    keyframe_interval: u32,
    intra_period_set: bool,
}

impl H264Encoder {
    /// `bitrate_bps` is the rate-control target; `fps` paces rate control.
    pub fn new(bitrate_bps: u32, fps: f64, keyframe_interval: u32) -> Result<H264Encoder> {
        let config = EncoderConfig::new()
            .set_bitrate_bps(bitrate_bps)
            .max_frame_rate(fps as f32)
            .rate_control_mode(RateControlMode::Bitrate)
            .enable_skip_frame(false)
            .usage_type(UsageType::CameraVideoRealTime)
            // One thread: the stage's time is then the encoder's time, and depth 2 overlaps
            // pipeline stages rather than encoder slices.
            .set_multiple_thread_idc(1);
        let encoder = Encoder::with_api_config(OpenH264API::from_source(), config)
            .map_err(|e| anyhow!("cannot create the H.264 encoder: {e}"))?;
        let mut encoder = H264Encoder {
            encoder,
            keyframe_interval,
            intra_period_set: false,
        };
        // The only option the encoder takes before its first frame initialises it.
        encoder.set_option(ENCODER_OPTION_TRACE_LEVEL, WELS_LOG_ERROR, "trace level")?;
        Ok(encoder)
    }

    /// Encodes `picture` and writes its Annex B bitstream (start codes and NAL units) into
    /// `bitstream`, replacing what was there.
    pub fn encode(
        &mut self,
        picture: &I420Frame,
        timestamp_ms: u64,
        bitstream: &mut Vec<u8>,
    ) -> Result<EncodedFrame> {
        bitstream.clear();
        let keyframe = {
            let encoded = self
                .encoder
                .encode_at(picture, Timestamp::from_millis(timestamp_ms))
                .map_err(|e| anyhow!("H.264 encoder failed at {timestamp_ms} ms: {e}"))?;
            encoded.write_vec(bitstream);
            encoded.frame_type() == FrameType::IDR
        };
        // The encoder initialises on its first frame; only then does it accept the period.
        if !self.intra_period_set {
            let period = c_int::try_from(self.keyframe_interval).unwrap_or(c_int::MAX);
            self.set_option(ENCODER_OPTION_IDR_INTERVAL, period, "intra period (frames)")?;
            self.intra_period_set = true;
        }
        Ok(EncodedFrame {
            bytes: bitstream.len(),
            keyframe,
        })
    }

    fn set_option(&mut self, option: c_int, value: c_int, what: &str) -> Result<()> {
        let mut value = value;
        // SAFETY: both options read one int through the pointer during the call.
        let status = unsafe {
            self.encoder
                .raw_api()
                .set_option(option, (&mut value as *mut c_int).cast::<c_void>())
        };
        if status != 0 {
            return Err(anyhow!(
                "the H.264 encoder refused {what} {value} (status {status})"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::capture::SyntheticCamera;
    use crate::demo::convert::rgba_to_i420;

    #[test]
    fn keyframes_follow_the_intra_period() {
        let (w, h) = (64, 48);
        let mut camera = SyntheticCamera::new(w, h);
        let mut picture = I420Frame::new(w, h).unwrap();
        let mut encoder = H264Encoder::new(500_000, 30.0, 10).unwrap();
        let mut bitstream = Vec::new();
        let mut keyframes = Vec::new();
        for frame in 0..25u64 {
            rgba_to_i420(camera.capture(frame), &mut picture).unwrap();
            let out = encoder
                .encode(&picture, frame * 33, &mut bitstream)
                .unwrap();
            assert_eq!(out.bytes, bitstream.len());
            assert!(out.bytes > 0, "frame {frame} produced no bytes");
            // Annex B: every access unit starts with a start code.
            assert!(bitstream.starts_with(&[0, 0, 0, 1]) || bitstream.starts_with(&[0, 0, 1]));
            if out.keyframe {
                keyframes.push(frame);
            }
        }
        assert_eq!(keyframes, [0, 10, 20]);
    }
}
