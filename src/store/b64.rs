//! Standard base64 (RFC 4648 alphabet, `=` padding) for `response_messages`, written into a reused buffer.
//!
//! The store encodes about 5 KB per 16-token row; the `base64` crate's general engine spent ~11 % of the
//! store thread on it. This encoder looks up 12 bits at a time (a 4,096-entry table of output pairs), six
//! input bytes → eight output bytes per step, with no per-row allocation once the buffer has grown. Its
//! output is checked against the `base64` crate's on generated inputs of every length (the tests).

/// The alphabet of `base64.b64encode`.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Every 12-bit value as its two output characters.
static PAIRS: [[u8; 2]; 4096] = pairs();

const fn pairs() -> [[u8; 2]; 4096] {
    let mut t = [[0u8; 2]; 4096];
    let mut i = 0;
    while i < 4096 {
        t[i] = [ALPHABET[i >> 6], ALPHABET[i & 63]];
        i += 1;
    }
    t
}

/// Writes `base64(input)` into `out` (replacing what it held) and returns it as text.
pub fn encode_into<'o>(input: &[u8], out: &'o mut Vec<u8>) -> &'o str {
    let out_len = input.len().div_ceil(3) * 4;
    out.clear();
    out.resize(out_len, 0);
    let mut src = input.chunks_exact(6);
    let mut dst = out.chunks_exact_mut(8);
    for (s, d) in (&mut src).zip(&mut dst) {
        let n = u64::from_be_bytes([s[0], s[1], s[2], s[3], s[4], s[5], 0, 0]) >> 16;
        let [a, b] = PAIRS[(n >> 36) as usize & 0xfff];
        let [c, e] = PAIRS[(n >> 24) as usize & 0xfff];
        let [f, g] = PAIRS[(n >> 12) as usize & 0xfff];
        let [h, k] = PAIRS[n as usize & 0xfff];
        d.copy_from_slice(&[a, b, c, e, f, g, h, k]);
    }
    let done = input.len() - src.remainder().len();
    let mut o = done / 3 * 4;
    for group in src.remainder().chunks(3) {
        let b0 = u32::from(group[0]);
        let b1 = group.get(1).copied().map_or(0, u32::from);
        let b2 = group.get(2).copied().map_or(0, u32::from);
        let n = (b0 << 16) | (b1 << 8) | b2;
        let [a, b] = PAIRS[(n >> 12) as usize];
        let [c, d] = PAIRS[n as usize & 0xfff];
        out[o..o + 4].copy_from_slice(&[a, b, c, d]);
        if group.len() < 3 {
            out[o + 3] = b'=';
        }
        if group.len() < 2 {
            out[o + 2] = b'=';
        }
        o += 4;
    }
    std::str::from_utf8(out).expect("base64 is ASCII")
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use rand::{Rng as _, SeedableRng as _};

    use super::encode_into;

    /// The oracle: the `base64` crate's standard engine.
    fn reference(input: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(input)
    }

    #[test]
    fn matches_the_base64_crate_on_every_length_and_byte() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let mut out = Vec::new();
        for len in 0..300 {
            for _ in 0..8 {
                let input: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                assert_eq!(
                    encode_into(&input, &mut out),
                    reference(&input),
                    "len {len}"
                );
            }
        }
        let all: Vec<u8> = (0..=255u8).cycle().take(70_001).collect();
        assert_eq!(encode_into(&all, &mut out), reference(&all));
        assert_eq!(encode_into(b"", &mut out), "");
        assert_eq!(encode_into(b"f", &mut out), "Zg==");
        assert_eq!(encode_into(b"fo", &mut out), "Zm8=");
        assert_eq!(encode_into(b"foobar", &mut out), "Zm9vYmFy");
    }
}
