//! The convert stage: RGBA → YUV 4:2:0 planar (I420), BT.709 limited range ("studio swing"),
//! chroma averaged over each 2×2 block. Plain Rust, integer arithmetic in 16-bit fixed point.

use anyhow::{bail, Result};
use openh264::formats::YUVSource;

/// Fixed-point coefficients (× 65536) of BT.709 with limited range: Y in 16..=235, U and V in
/// 16..=240. Derived from Kr = 0.2126, Kb = 0.0722: Y = 219/255 (Kr R + Kg G + Kb B),
/// U = 224/255 (B − Y′) / (2 (1 − Kb)), V = 224/255 (R − Y′) / (2 (1 − Kr)). The chroma rows
/// are adjusted by one unit so that each sums to exactly zero: grey stays at exactly 128.
const Y_R: i32 = 11966;
const Y_G: i32 = 40254;
const Y_B: i32 = 4064;
const U_R: i32 = -6596;
const U_G: i32 = -22188;
const U_B: i32 = 28784;
const V_R: i32 = 28784;
const V_G: i32 = -26145;
const V_B: i32 = -2639;

/// Bytes per RGBA pixel.
pub const RGBA_BYTES: usize = 4;

/// One I420 picture: a full-resolution Y plane and quarter-resolution U and V planes, tightly
/// packed (stride = width).
pub struct I420Frame {
    width: usize,
    height: usize,
    pub y: Vec<u8>,
    pub u: Vec<u8>,
    pub v: Vec<u8>,
}

impl I420Frame {
    /// A black picture; `width` and `height` must be even and non-zero.
    pub fn new(width: usize, height: usize) -> Result<I420Frame> {
        if width == 0 || height == 0 || !width.is_multiple_of(2) || !height.is_multiple_of(2) {
            bail!("I420 needs an even, non-zero width and height, got {width}x{height}");
        }
        let chroma = (width / 2) * (height / 2);
        Ok(I420Frame {
            width,
            height,
            y: vec![16; width * height],
            u: vec![128; chroma],
            v: vec![128; chroma],
        })
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }
}

impl YUVSource for I420Frame {
    fn dimensions(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    fn strides(&self) -> (usize, usize, usize) {
        (self.width, self.width / 2, self.width / 2)
    }

    fn y(&self) -> &[u8] {
        &self.y
    }

    fn u(&self) -> &[u8] {
        &self.u
    }

    fn v(&self) -> &[u8] {
        &self.v
    }
}

#[inline(always)]
fn luma(r: i32, g: i32, b: i32) -> u8 {
    // + 0.5 in fixed point rounds to nearest; the result is in 16..=235 for any input.
    ((Y_R * r + Y_G * g + Y_B * b + (16 << 16) + (1 << 15)) >> 16) as u8
}

/// Chroma from the sums of four pixels' channels: dividing by 4 is two more bits of shift.
#[inline(always)]
fn chroma(cr: i32, cg: i32, cb: i32, r4: i32, g4: i32, b4: i32) -> u8 {
    ((cr * r4 + cg * g4 + cb * b4 + (128 << 18) + (1 << 17)) >> 18) as u8
}

/// Converts a tightly packed RGBA picture of the frame's size into `out` (alpha is ignored).
pub fn rgba_to_i420(rgba: &[u8], out: &mut I420Frame) -> Result<()> {
    let (width, height) = (out.width, out.height);
    if rgba.len() != width * height * RGBA_BYTES {
        bail!(
            "RGBA buffer has {} bytes, a {width}x{height} picture needs {}",
            rgba.len(),
            width * height * RGBA_BYTES
        );
    }
    let row_bytes = width * RGBA_BYTES;
    let chroma_width = width / 2;
    // Two source rows make one chroma row; iterators over exact chunks let the compiler drop
    // the bounds checks from the inner loop.
    let rows = rgba.chunks_exact(2 * row_bytes);
    let lumas = out.y.chunks_exact_mut(2 * width);
    let us = out.u.chunks_exact_mut(chroma_width);
    let vs = out.v.chunks_exact_mut(chroma_width);
    for (((src, y_rows), u_row), v_row) in rows.zip(lumas).zip(us).zip(vs) {
        let (src0, src1) = src.split_at(row_bytes);
        let (y0, y1) = y_rows.split_at_mut(width);
        let pixels = src0.chunks_exact(8).zip(src1.chunks_exact(8));
        let lumas = y0.chunks_exact_mut(2).zip(y1.chunks_exact_mut(2));
        for (((top, bottom), (ya, yb)), (u, v)) in pixels
            .zip(lumas)
            .zip(u_row.iter_mut().zip(v_row.iter_mut()))
        {
            let (r0, g0, b0) = (top[0] as i32, top[1] as i32, top[2] as i32);
            let (r1, g1, b1) = (top[4] as i32, top[5] as i32, top[6] as i32);
            let (r2, g2, b2) = (bottom[0] as i32, bottom[1] as i32, bottom[2] as i32);
            let (r3, g3, b3) = (bottom[4] as i32, bottom[5] as i32, bottom[6] as i32);
            ya[0] = luma(r0, g0, b0);
            ya[1] = luma(r1, g1, b1);
            yb[0] = luma(r2, g2, b2);
            yb[1] = luma(r3, g3, b3);
            let (r4, g4, b4) = (r0 + r1 + r2 + r3, g0 + g1 + g2 + g3, b0 + b1 + b2 + b3);
            *u = chroma(U_R, U_G, U_B, r4, g4, b4);
            *v = chroma(V_R, V_G, V_B, r4, g4, b4);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(width: usize, height: usize, rgb: [u8; 3]) -> Vec<u8> {
        (0..width * height)
            .flat_map(|_| [rgb[0], rgb[1], rgb[2], 255])
            .collect()
    }

    fn convert_solid(rgb: [u8; 3]) -> (u8, u8, u8) {
        let mut out = I420Frame::new(4, 2).unwrap();
        rgba_to_i420(&solid(4, 2, rgb), &mut out).unwrap();
        assert!(out.y.iter().all(|&y| y == out.y[0]));
        assert!(out.u.iter().all(|&u| u == out.u[0]));
        assert!(out.v.iter().all(|&v| v == out.v[0]));
        (out.y[0], out.u[0], out.v[0])
    }

    #[test]
    fn primaries_match_the_bt709_limited_range_table() {
        // Y = 16 + 219 (0.2126 R + 0.7152 G + 0.0722 B) / 255, and so on, rounded by hand.
        assert_eq!(convert_solid([255, 255, 255]), (235, 128, 128));
        assert_eq!(convert_solid([0, 0, 0]), (16, 128, 128));
        assert_eq!(convert_solid([255, 0, 0]), (63, 102, 240));
        assert_eq!(convert_solid([0, 255, 0]), (173, 42, 26));
        assert_eq!(convert_solid([0, 0, 255]), (32, 240, 118));
        assert_eq!(convert_solid([128, 128, 128]), (126, 128, 128));
    }

    #[test]
    fn fixed_point_coefficients_follow_the_formula() {
        let (kr, kb) = (0.2126f64, 0.0722f64);
        let kg = 1.0 - kr - kb;
        let (ys, cs) = (219.0 / 255.0 * 65536.0, 224.0 / 255.0 * 65536.0);
        let close = |fixed: i32, exact: f64| (fixed as f64 - exact).abs() <= 1.0;
        assert!(close(Y_R, kr * ys) && close(Y_G, kg * ys) && close(Y_B, kb * ys));
        let (bu, rv) = (2.0 * (1.0 - kb), 2.0 * (1.0 - kr));
        assert!(close(U_R, -kr / bu * cs) && close(U_G, -kg / bu * cs) && close(U_B, 0.5 * cs));
        assert!(close(V_R, 0.5 * cs) && close(V_G, -kg / rv * cs) && close(V_B, -kb / rv * cs));
        assert_eq!(U_R + U_G + U_B, 0);
        assert_eq!(V_R + V_G + V_B, 0);
    }

    #[test]
    fn chroma_is_the_average_of_a_2x2_block() {
        // Left block: white and black in a checkerboard; right block: pure red.
        let w = [255, 255, 255, 255];
        let k = [0, 0, 0, 255];
        let r = [255, 0, 0, 255];
        let rgba: Vec<u8> = [w, k, r, r, k, w, r, r].concat();
        let mut out = I420Frame::new(4, 2).unwrap();
        rgba_to_i420(&rgba, &mut out).unwrap();
        assert_eq!(out.y, [235, 16, 63, 63, 16, 235, 63, 63]);
        assert_eq!(out.u, [128, 102]);
        assert_eq!(out.v, [128, 240]);
    }

    #[test]
    fn a_wrong_buffer_size_is_an_error() {
        let mut out = I420Frame::new(4, 2).unwrap();
        let err = rgba_to_i420(&[0; 7], &mut out).unwrap_err().to_string();
        assert!(err.contains("7 bytes"), "{err}");
        assert!(I420Frame::new(3, 2).is_err());
        assert!(I420Frame::new(0, 2).is_err());
    }
}
