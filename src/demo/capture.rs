//! The capture stage: a synthetic camera. Each frame is a scrolling colour gradient with a
//! bouncing box and a film grain that moves every frame, so the encoder has real motion (and
//! some incompressible detail) to code, like a camera or a game would give it.

use super::convert::RGBA_BYTES;

/// Side of the square grain tile; a power of two so wrapping is a mask, small enough to stay
/// in the L1 cache.
const GRAIN_TILE: usize = 64;
/// Grain amplitude: values 0..GRAIN_LEVELS are added to every channel.
const GRAIN_LEVELS: u32 = 6;

pub struct SyntheticCamera {
    width: usize,
    height: usize,
    rgba: Vec<u8>,
    /// The gradient's red ramp over two widths, so a scrolled row is one contiguous slice.
    ramp: Vec<u8>,
    grain: Vec<u8>,
}

/// A small deterministic generator (xorshift32): the demo must not depend on a random crate,
/// and the same frames every run keep runs comparable.
struct XorShift(u32);

impl XorShift {
    fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

impl SyntheticCamera {
    /// `width` and `height` are validated by the caller (even, ≥ 16).
    pub fn new(width: usize, height: usize) -> SyntheticCamera {
        let ramp = (0..2 * width)
            .map(|i| ((i % width) * 256 / width) as u8)
            .collect();
        let mut rng = XorShift(0x9E37_79B9);
        let grain = (0..GRAIN_TILE * GRAIN_TILE)
            .map(|_| (rng.next() % GRAIN_LEVELS) as u8)
            .collect();
        SyntheticCamera {
            width,
            height,
            rgba: vec![0; width * height * RGBA_BYTES],
            ramp,
            grain,
        }
    }

    /// Draws frame `frame` and returns its tightly packed RGBA pixels.
    pub fn capture(&mut self, frame: u64) -> &[u8] {
        let (width, height) = (self.width, self.height);
        let t = frame as usize;
        let scroll = t.wrapping_mul(3) % width;
        // The grain tile moves by a pseudo-random offset each frame: noise that changes with time.
        let mut rng = XorShift((frame as u32).wrapping_mul(2_654_435_761) | 1);
        let (grain_dx, grain_dy) = (rng.next() as usize, rng.next() as usize);
        let ramp = &self.ramp[scroll..scroll + width];
        let mut noise = [0u8; GRAIN_TILE];
        for (y, row) in self.rgba.chunks_exact_mut(width * RGBA_BYTES).enumerate() {
            let green = (y * 256 / height) as u8;
            // This row's grain, rotated so pixel x takes noise[x % GRAIN_TILE]: the inner loop
            // then has no index arithmetic and the compiler vectorises it.
            let grain_row = &self.grain[((y + grain_dy) % GRAIN_TILE) * GRAIN_TILE..][..GRAIN_TILE];
            for (i, n) in noise.iter_mut().enumerate() {
                *n = grain_row[(i + grain_dx) % GRAIN_TILE];
            }
            let pixels = row
                .chunks_mut(GRAIN_TILE * RGBA_BYTES)
                .zip(ramp.chunks(GRAIN_TILE));
            for (pixels, reds) in pixels {
                for ((px, &red), &n) in pixels.chunks_exact_mut(RGBA_BYTES).zip(reds).zip(&noise) {
                    let r = red.saturating_add(n) as u32;
                    let g = green.saturating_add(n) as u32;
                    let b = (red ^ green).saturating_add(n) as u32;
                    px.copy_from_slice(&(r | g << 8 | b << 16 | 0xff << 24).to_le_bytes());
                }
            }
        }
        self.draw_box(t);
        &self.rgba
    }

    /// A box a sixth of the width bouncing diagonally, its colour cycling, with a stripe
    /// pattern inside so its edges and interior both carry detail.
    fn draw_box(&mut self, t: usize) {
        let (width, height) = (self.width, self.height);
        let (box_w, box_h) = ((width / 6).max(2), (height / 4).max(2));
        let x0 = bounce(t.wrapping_mul(5), width - box_w);
        let y0 = bounce(t.wrapping_mul(3), height - box_h);
        let hue = t.wrapping_mul(2) as u8;
        for y in y0..y0 + box_h {
            let row = &mut self.rgba[(y * width + x0) * RGBA_BYTES..][..box_w * RGBA_BYTES];
            for (x, px) in row.chunks_exact_mut(RGBA_BYTES).enumerate() {
                let stripe = if (x + y) / 8 % 2 == 0 { 0 } else { 48 };
                px[0] = 255 - hue;
                px[1] = hue.wrapping_add(stripe);
                px[2] = 96 + stripe;
            }
        }
    }
}

/// A triangle wave over 0..=span: a position moving at one unit per step that bounces at both ends.
fn bounce(step: usize, span: usize) -> usize {
    if span == 0 {
        return 0;
    }
    let phase = step % (2 * span);
    if phase <= span {
        phase
    } else {
        2 * span - phase
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_change_and_are_deterministic() {
        let mut a = SyntheticCamera::new(64, 32);
        let mut b = SyntheticCamera::new(64, 32);
        let first = a.capture(0).to_vec();
        assert_eq!(first.len(), 64 * 32 * 4);
        assert_eq!(first, b.capture(0));
        assert_ne!(first, a.capture(1));
        assert!(first.chunks_exact(4).all(|px| px[3] == 255));
    }

    #[test]
    fn the_box_stays_inside_the_picture() {
        for t in 0..10_000 {
            assert!(bounce(t * 5, 16 - 2) <= 14);
        }
        assert_eq!(bounce(7, 0), 0);
        let mut camera = SyntheticCamera::new(16, 16);
        for frame in 0..500 {
            assert_eq!(camera.capture(frame).len(), 16 * 16 * 4);
        }
    }
}
