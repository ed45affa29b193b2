//! Random PNG images for `random_vl`: a random background colour with 1–5 random rectangles, ellipses or
//! lines, encoded as `data:image/png;base64,…` URLs.

use base64::Engine as _;
use rand::Rng;

use crate::plan::ImageSettings;

/// One random image as a PNG data URL.
pub fn random_png_data_url(s: &ImageSettings, rng: &mut impl Rng) -> String {
    let png = random_png(s, rng);
    let mut url = String::with_capacity(22 + png.len() * 4 / 3 + 4);
    url.push_str("data:image/png;base64,");
    base64::engine::general_purpose::STANDARD.encode_string(&png, &mut url);
    url
}

fn colour(channels: usize, rng: &mut impl Rng) -> [u8; 4] {
    let mut c = [255u8; 4];
    for v in c.iter_mut().take(channels.min(3)) {
        *v = rng.random();
    }
    if channels == 4 {
        c[3] = rng.random_range(128..=255);
    }
    c
}

/// The PNG bytes of one random image.
pub fn random_png(s: &ImageSettings, rng: &mut impl Rng) -> Vec<u8> {
    let (w, h, ch) = (s.width as usize, s.height as usize, usize::from(s.channels));
    let mut pixels = vec![0u8; w * h * ch];
    let bg = colour(ch, rng);
    for px in pixels.chunks_exact_mut(ch) {
        px.copy_from_slice(&bg[..ch]);
    }
    let shapes = rng.random_range(1..=5);
    for _ in 0..shapes {
        let c = colour(ch, rng);
        let (x0, x1) = sorted(rng.random_range(0..w), rng.random_range(0..w));
        let (y0, y1) = sorted(rng.random_range(0..h), rng.random_range(0..h));
        let kind = rng.random_range(0..3);
        let mut put = |x: usize, y: usize| {
            let i = (y * w + x) * ch;
            pixels[i..i + ch].copy_from_slice(&c[..ch]);
        };
        match kind {
            0 => {
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        put(x, y);
                    }
                }
            }
            1 => {
                let (cx, cy) = ((x0 + x1) as f64 / 2.0, (y0 + y1) as f64 / 2.0);
                let (rx, ry) = (
                    ((x1 - x0) as f64 / 2.0).max(0.5),
                    ((y1 - y0) as f64 / 2.0).max(0.5),
                );
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        let (dx, dy) = ((x as f64 - cx) / rx, (y as f64 - cy) / ry);
                        if dx * dx + dy * dy <= 1.0 {
                            put(x, y);
                        }
                    }
                }
            }
            _ => {
                let steps = (x1 - x0).max(y1 - y0).max(1);
                for k in 0..=steps {
                    let x = x0 + (x1 - x0) * k / steps;
                    let y = y0 + (y1 - y0) * k / steps;
                    put(x, y);
                }
            }
        }
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, s.width, s.height);
        enc.set_color(match s.channels {
            1 => png::ColorType::Grayscale,
            4 => png::ColorType::Rgba,
            _ => png::ColorType::Rgb,
        });
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        // Writing to a Vec cannot fail for valid dimensions (checked by the plan).
        if let Ok(mut writer) = enc.write_header() {
            let _ = writer.write_image_data(&pixels);
        }
    }
    out
}

fn sorted(a: usize, b: usize) -> (usize, usize) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn png_decodes_to_the_requested_size() {
        let s = ImageSettings {
            width: 37,
            height: 21,
            channels: 3,
            num: 1,
            patch_size: 28,
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let bytes = random_png(&s, &mut rng);
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let reader = dec.read_info().unwrap();
        let info = reader.info();
        assert_eq!((info.width, info.height), (37, 21));
        assert_eq!(info.color_type, png::ColorType::Rgb);
    }
}
