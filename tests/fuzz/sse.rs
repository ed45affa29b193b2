//! The SSE framer on arbitrary bytes in arbitrary splits: the same events as one push, the same events as
//! an independent reference, no newline inside an event, no panic.

use llmperf::engine::sse::SseFramer;
use proptest::prelude::*;

use crate::harness::fuzz;

/// Bytes that look like SSE often enough to reach every branch, and arbitrary bytes otherwise.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        4 => prop::sample::select(vec![
            &b"data:"[..], b"data: ", b"data:  ", b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n\r\n", b":",
            b": keep-alive", b"event: x", b"id: 1", b"[DONE]", b"data", b"dat",
            br#"{"choices":[{"delta":{"content":"hi"}}]}"#, br#"{"usage":{"prompt_tokens":1}}"#,
        ])
        .prop_map(<[u8]>::to_vec),
        1 => prop::collection::vec(any::<u8>(), 0..12),
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

/// The input and cut points inside it.
fn split_input() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    sse_bytes().prop_flat_map(|bytes| {
        let len = bytes.len();
        (Just(bytes), prop::collection::vec(0..=len, 0..12))
    })
}

fn frame(pieces: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut f = SseFramer::new();
    let mut out = Vec::new();
    for p in pieces {
        f.push(p, |e| out.push(e.to_vec()));
    }
    f.finish(|e| out.push(e.to_vec()));
    out
}

/// The framing rules written plainly over the whole input (see `engine/sse.rs`).
fn reference(input: &[u8]) -> Vec<Vec<u8>> {
    fn data_of(line: &[u8]) -> Option<&[u8]> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let rest = line.strip_prefix(b"data:")?;
        let skip = rest.iter().take_while(|b| **b == b' ').count();
        Some(&rest[skip..])
    }
    let mut events = Vec::new();
    let (mut data, mut has) = (Vec::new(), false);
    let lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    let (complete, tail) = lines.split_at(lines.len() - 1);
    for line in complete {
        if line.is_empty() || *line == b"\r" {
            if has {
                events.push(std::mem::take(&mut data));
            }
            data.clear();
            has = false;
        } else if let Some(d) = data_of(line) {
            data.extend_from_slice(d);
            has = true;
        }
    }
    if let Some(d) = data_of(tail[0]) {
        data.extend_from_slice(d);
        has = true;
    }
    if has {
        events.push(data);
    }
    events
}

#[test]
fn sse_framer_is_split_invariant_and_matches_the_reference() {
    fuzz("sse_framer", split_input, |(bytes, mut cuts)| {
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut at = 0;
        for c in cuts {
            pieces.push(&bytes[at..c]);
            at = c;
        }
        pieces.push(&bytes[at..]);
        let whole = frame(&[&bytes]);
        prop_assert_eq!(&frame(&pieces), &whole);
        prop_assert_eq!(&reference(&bytes), &whole);
        prop_assert!(whole.iter().all(|e| !e.contains(&b'\n')));
        Ok(())
    });
}

#[test]
fn sse_framer_survives_one_byte_reads_of_arbitrary_bytes() {
    fuzz(
        "sse_framer_bytewise",
        || prop::collection::vec(any::<u8>(), 0..512),
        |bytes| {
            let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
            prop_assert_eq!(frame(&pieces), frame(&[&bytes]));
            Ok(())
        },
    );
}
