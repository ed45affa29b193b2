//! Standard base64 (RFC 4648 alphabet, `=` padding) for `response_messages`, written into a reused buffer.
//!
//! The store encodes about 5 KB per 16-token row; the `base64` crate's general engine spent ~11 % of the
//! store thread on it. This encoder looks up 12 bits at a time (a 4,096-entry table of output pairs), six
//! input bytes → eight output bytes per step, appended (no zero-fill first) to a buffer that is reused, so
//! there is no per-row allocation once it has grown. Its
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

/// Writes `base64(input)` into `out` (replacing what it held) and returns it (ASCII).
pub fn encode_into<'o>(input: &[u8], out: &'o mut Vec<u8>) -> &'o [u8] {
    out.clear();
    out.reserve(input.len().div_ceil(3) * 4);
    let mut src = input.chunks_exact(6);
    for s in &mut src {
        let n = u64::from_be_bytes([s[0], s[1], s[2], s[3], s[4], s[5], 0, 0]) >> 16;
        let [a, b] = PAIRS[(n >> 36) as usize & 0xfff];
        let [c, e] = PAIRS[(n >> 24) as usize & 0xfff];
        let [f, g] = PAIRS[(n >> 12) as usize & 0xfff];
        let [h, k] = PAIRS[n as usize & 0xfff];
        out.extend_from_slice(&[a, b, c, e, f, g, h, k]);
    }
    for group in src.remainder().chunks(3) {
        let b0 = u32::from(group[0]);
        let b1 = group.get(1).copied().map_or(0, u32::from);
        let b2 = group.get(2).copied().map_or(0, u32::from);
        let n = (b0 << 16) | (b1 << 8) | b2;
        let [a, b] = PAIRS[(n >> 12) as usize];
        let [c, d] = PAIRS[n as usize & 0xfff];
        let quad = match group.len() {
            1 => [a, b, b'=', b'='],
            2 => [a, b, c, b'='],
            _ => [a, b, c, d],
        };
        out.extend_from_slice(&quad);
    }
    out
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
                    reference(&input).as_bytes(),
                    "len {len}"
                );
            }
        }
        let all: Vec<u8> = (0..=255u8).cycle().take(70_001).collect();
        assert_eq!(encode_into(&all, &mut out), reference(&all).as_bytes());
        assert_eq!(encode_into(b"", &mut out), "".as_bytes());
        assert_eq!(encode_into(b"f", &mut out), "Zg==".as_bytes());
        assert_eq!(encode_into(b"fo", &mut out), "Zm8=".as_bytes());
        assert_eq!(encode_into(b"foobar", &mut out), "Zm9vYmFy".as_bytes());
    }
}
