//! The HTTP/1.1 response decoder (`engine::http1`) on untrusted bytes: response heads (status line,
//! headers, how the body is framed), chunked framing, `Content-Length` and close-delimited bodies, in
//! arbitrary splits. No input may panic, and each part has an oracle:
//!
//! * heads: `httparse` itself on the same bytes (complete ⇔ complete at the same length, same status,
//!   incomplete ⇔ incomplete), and the framing rules of RFC 9112 §6.3 written plainly over httparse's
//!   header list;
//! * chunked bodies: a reference decoder built on `httparse::parse_chunk_size` over the whole input —
//!   wherever the input uses CRLF line ends, the decoder must give the same body, the same end and the
//!   same verdict (bare-LF line ends are a documented leniency of llmperf's decoder and only checked for
//!   split invariance);
//! * every framing: the same body, bytes used and verdict whether the input arrives in one piece or cut at
//!   arbitrary points.

use llmperf::engine::http1::{parse_head, BodyDecoder, Framing};
use proptest::prelude::*;

use crate::harness::fuzz;

/// Header lines that steer the framing, and arbitrary ones.
fn header_line() -> impl Strategy<Value = Vec<u8>> {
    let name = prop::sample::select(vec![
        "Content-Length",
        "content-length",
        "Transfer-Encoding",
        "transfer-encoding",
        "Connection",
        "Content-Type",
        "Retry-After",
        "X-Other",
        "Bad Name",
        "",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "0",
            "5",
            "12",
            "-1",
            "x",
            "18446744073709551616",
            "chunked",
            "gzip, chunked",
            "chunked, gzip",
            "identity",
            "close",
            "keep-alive",
            "text/event-stream",
            " 7 ",
            "",
        ])
        .prop_map(str::to_string),
        "[ -~]{0,12}",
    ];
    let end = prop::sample::select(vec!["\r\n", "\r\n", "\r\n", "\n", "\r"]);
    (name, value, end).prop_map(|(n, v, e)| format!("{n}: {v}{e}").into_bytes())
}

/// A response head: a status line, header lines, the blank line, sometimes corrupted.
fn head_bytes() -> impl Strategy<Value = Vec<u8>> {
    let status = prop_oneof![
        prop::sample::select(vec![
            "HTTP/1.1 200 OK\r\n",
            "HTTP/1.0 200 OK\r\n",
            "HTTP/1.1 204 No Content\r\n",
            "HTTP/1.1 304 Not Modified\r\n",
            "HTTP/1.1 100 Continue\r\n",
            "HTTP/1.1 503 Service Unavailable\r\n",
            "HTTP/1.1 200\r\n",
            "HTTP/2 200 OK\r\n",
            "HTTP/1.1 99 X\r\n",
            "garbage\r\n",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        "HTTP/1\\.[01] [0-9]{1,4} [ -~]{0,8}\r\n".prop_map(String::into_bytes),
    ];
    let tail = prop_oneof![
        3 => Just(b"\r\n".to_vec()),
        1 => Just(b"\n".to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..6),
    ];
    (status, prop::collection::vec(header_line(), 0..6), tail).prop_map(|(s, h, t)| {
        let mut out = s;
        out.extend(h.concat());
        out.extend(t);
        out
    })
}

/// Framing by RFC 9112 §6.3 from httparse's parse of the same head (`Err` for a bad Content-Length).
fn reference_framing(
    status: u16,
    version: u8,
    headers: &[httparse::Header<'_>],
) -> Result<Framing, ()> {
    let value = |h: &httparse::Header<'_>| String::from_utf8_lossy(h.value).trim().to_string();
    let mut lengths = Vec::new();
    let mut chunked = false;
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            lengths.push(value(h).parse::<u64>().map_err(|_| ())?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let v = value(h).to_ascii_lowercase();
            chunked = v.split(',').next_back().map(str::trim) == Some("chunked");
        }
    }
    if lengths.windows(2).any(|w| w[0] != w[1]) {
        return Err(());
    }
    let _ = version;
    Ok(
        if (100..200).contains(&status) || status == 204 || status == 304 {
            Framing::Empty
        } else if chunked {
            Framing::Chunked
        } else if let Some(&n) = lengths.first() {
            Framing::Length(n)
        } else {
            Framing::Close
        },
    )
}

#[test]
fn http1_head_matches_httparse_and_the_framing_rules() {
    let input = || (head_bytes(), prop::collection::vec(any::<u8>(), 0..8));
    fuzz("http1_head", input, |(head, after)| {
        let mut buf = head.clone();
        buf.extend_from_slice(&after);
        let ours = parse_head(&buf);
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf) {
            Ok(httparse::Status::Partial) => prop_assert!(matches!(ours, Ok(None))),
            Err(_) => prop_assert!(ours.is_err()),
            Ok(httparse::Status::Complete(len)) => {
                let status = resp.code.unwrap_or(0);
                let want = reference_framing(status, resp.version.unwrap_or(1), resp.headers);
                match (ours, want) {
                    (Ok(Some((h, n))), Ok(framing)) => {
                        prop_assert_eq!(n, len);
                        prop_assert_eq!(h.status, status);
                        prop_assert_eq!(h.framing, framing);
                        if framing == Framing::Close {
                            prop_assert!(
                                !h.keep_alive,
                                "a close-delimited body ends the connection"
                            );
                        }
                    }
                    (Err(_), Err(())) => {}
                    (ours, want) => {
                        prop_assert!(false, "ours {ours:?}, reference {want:?}");
                    }
                }
                // Every strict prefix of a complete head is incomplete, never an error or a head.
                for cut in 0..len {
                    prop_assert!(
                        matches!(parse_head(&buf[..cut]), Ok(None)),
                        "prefix of {cut} bytes"
                    );
                }
            }
        }
        Ok(())
    });
}

/// A chunked body: chunks with optional extensions, the last chunk, optional trailers; CRLF or (rarely)
/// bare LF line ends; sometimes a corrupted byte; then bytes of the next response.
fn chunked_bytes() -> impl Strategy<Value = (Vec<u8>, bool)> {
    let chunk = (
        prop::collection::vec(any::<u8>(), 1..40),
        prop::option::weighted(0.2, "[a-z=;\" \t]{0,8}"),
        any::<bool>(),
        prop::sample::select(vec!["", "", "", "", " ", "\t", "00", "\r", "split"]),
        any::<bool>(),
    );
    let trailers = prop::collection::vec("[A-Za-z-]{1,6}: [ -~]{0,6}", 0..3);
    (
        prop::collection::vec(chunk, 0..6),
        trailers,
        prop::bool::weighted(0.1),
        prop::option::weighted(0.3, (any::<prop::sample::Index>(), any::<u8>())),
        prop::collection::vec(any::<u8>(), 0..6),
    )
        .prop_map(|(chunks, trailers, bare_lf, corrupt, next)| {
            let eol: &[u8] = if bare_lf { b"\n" } else { b"\r\n" };
            let mut out = Vec::new();
            for (data, ext, upper, odd, before) in chunks {
                let mut size = if upper {
                    format!("{:X}", data.len())
                } else {
                    format!("{:x}", data.len())
                };
                // Odd size lines: whitespace or a CR before or after the digits, leading zeros, digits
                // split by a space.
                match (odd, before) {
                    ("split", _) if size.len() > 1 => size.insert(1, ' '),
                    ("split", _) => {}
                    (odd, true) => size.insert_str(0, odd),
                    (odd, false) => size.push_str(odd),
                }
                out.extend_from_slice(size.as_bytes());
                if let Some(ext) = ext {
                    out.push(b';');
                    out.extend_from_slice(ext.as_bytes());
                }
                out.extend_from_slice(eol);
                out.extend_from_slice(&data);
                out.extend_from_slice(eol);
            }
            out.extend_from_slice(b"0");
            out.extend_from_slice(eol);
            for t in trailers {
                out.extend_from_slice(t.as_bytes());
                out.extend_from_slice(eol);
            }
            out.extend_from_slice(eol);
            if let Some((at, byte)) = corrupt {
                let i = at.index(out.len());
                out[i] = byte;
            }
            out.extend_from_slice(&next);
            (out, bare_lf)
        })
}

/// What decoding gave: the body, the input bytes used, complete, or the error.
#[derive(Debug, PartialEq)]
enum Decoded {
    Ok {
        body: Vec<u8>,
        used: usize,
        done: bool,
    },
    Err,
}

fn decode_pieces(framing: Framing, input: &[u8], cuts: &[usize]) -> Decoded {
    let mut d = BodyDecoder::new(framing);
    let mut body = Vec::new();
    let mut used = 0;
    let mut at = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
    ends.sort_unstable();
    ends.push(input.len());
    for end in ends {
        if end < at {
            continue;
        }
        match d.decode(&input[at..end], &mut |b| body.extend_from_slice(b)) {
            Ok(n) => {
                used += n;
                if n < end - at {
                    // The body ended inside this piece; the rest is the next response's.
                    prop_assert_done(&d);
                    return Decoded::Ok {
                        body,
                        used,
                        done: true,
                    };
                }
            }
            Err(_) => return Decoded::Err,
        }
        at = end;
    }
    let done = d.is_done();
    Decoded::Ok { body, used, done }
}

fn prop_assert_done(d: &BodyDecoder) {
    assert!(
        d.is_done(),
        "input was left over before the body was complete"
    );
}

/// Decodes a chunked body with `httparse::parse_chunk_size` for the size lines (strict CRLF): the body,
/// the bytes used and whether it is complete, or an error.
fn reference_chunked(input: &[u8]) -> Decoded {
    let mut body = Vec::new();
    let mut i = 0;
    loop {
        let (n, size) = match httparse::parse_chunk_size(&input[i..]) {
            Ok(httparse::Status::Complete(x)) => x,
            Ok(httparse::Status::Partial) => {
                return Decoded::Ok {
                    body,
                    used: input.len(),
                    done: false,
                }
            }
            Err(_) => return Decoded::Err,
        };
        // httparse reads an empty size line as 0; llmperf (and RFC 9112: 1*HEXDIG) rejects it.
        if !input[i].is_ascii_hexdigit() {
            return Decoded::Err;
        }
        i += n;
        if size == 0 {
            break;
        }
        let take = (size as usize).min(input.len() - i);
        body.extend_from_slice(&input[i..i + take]);
        i += take;
        if take < size as usize {
            return Decoded::Ok {
                body,
                used: i,
                done: false,
            };
        }
        match &input[i..] {
            [b'\r', b'\n', ..] => i += 2,
            [] | [b'\r'] => {
                return Decoded::Ok {
                    body,
                    used: input.len(),
                    done: false,
                }
            }
            _ => return Decoded::Err,
        }
    }
    // Trailer lines up to an empty line.
    loop {
        let Some(end) = input[i..].windows(2).position(|w| w == b"\r\n") else {
            return Decoded::Ok {
                body,
                used: input.len(),
                done: false,
            };
        };
        i += end + 2;
        if end == 0 {
            return Decoded::Ok {
                body,
                used: i,
                done: true,
            };
        }
    }
}

#[test]
fn http1_chunked_matches_httparse_in_any_split() {
    let input = || {
        chunked_bytes().prop_flat_map(|(bytes, bare_lf)| {
            let len = bytes.len();
            (
                Just(bytes),
                Just(bare_lf),
                prop::collection::vec(0..=len, 0..8),
            )
        })
    };
    fuzz("http1_chunked", input, |(bytes, bare_lf, cuts)| {
        let whole = decode_pieces(Framing::Chunked, &bytes, &[]);
        prop_assert_eq!(&decode_pieces(Framing::Chunked, &bytes, &cuts), &whole);
        let bytewise: Vec<usize> = (1..bytes.len()).collect();
        prop_assert_eq!(&decode_pieces(Framing::Chunked, &bytes, &bytewise), &whole);
        if !bare_lf && !has_bare_lf(&bytes) {
            prop_assert_eq!(
                &whole,
                &reference_chunked(&bytes),
                "input {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        Ok(())
    });
}

/// A `\n` not preceded by `\r` somewhere in `bytes`.
fn has_bare_lf(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || bytes[i - 1] != b'\r'))
}

#[test]
fn http1_length_and_close_bodies_in_any_split() {
    let input = || {
        (prop::collection::vec(any::<u8>(), 0..64), 0u64..80).prop_flat_map(|(bytes, n)| {
            let len = bytes.len();
            (Just(bytes), Just(n), prop::collection::vec(0..=len, 0..8))
        })
    };
    fuzz("http1_length_close", input, |(bytes, n, cuts)| {
        let want_len = (n as usize).min(bytes.len());
        let got = decode_pieces(Framing::Length(n), &bytes, &cuts);
        let want = Decoded::Ok {
            body: bytes[..want_len].to_vec(),
            used: want_len,
            done: n as usize <= bytes.len(),
        };
        prop_assert_eq!(got, want);
        // Close-delimited: every byte is body, and the body never ends before the connection does.
        let got = decode_pieces(Framing::Close, &bytes, &cuts);
        prop_assert_eq!(
            got,
            Decoded::Ok {
                body: bytes.clone(),
                used: bytes.len(),
                done: false
            }
        );
        Ok(())
    });
}
