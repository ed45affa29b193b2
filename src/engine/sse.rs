//! Server-sent-events framing, on bytes: lines split on `\n` (a trailing `\r` dropped), events end at a
//! blank line, only `data:` lines are kept (leading spaces after the colon stripped) and an event's data
//! lines are joined without a separator, as evalscope does. Comments and other fields are ignored.
//!
//! Pure and allocation-light: complete lines are read straight from each read's bytes, and an event whose
//! data is a single line of that read is handed out without being copied; only a line cut across reads is
//! buffered (the buffer grows to hold the longest line, no cap: a 10 MB line parses, in linear time).

/// Incremental SSE framer.
#[derive(Debug, Default)]
pub struct SseFramer {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The current event's data, when it spans several lines or reads.
    data: Vec<u8>,
    /// `data` holds the current event's data.
    has_data: bool,
}

/// The trimmed payload of a `data:` line (`None` for other lines).
fn data_payload(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"data:")?;
    let skip = rest.iter().take_while(|b| **b == b' ').count();
    Some(&rest[skip..])
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl SseFramer {
    /// A new framer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `on_event` with each complete event's data.
    pub fn push(&mut self, bytes: &[u8], mut on_event: impl FnMut(&[u8])) {
        let mut rest = bytes;
        if !self.partial.is_empty() {
            let Some(pos) = memchr::memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                return;
            };
            self.partial.extend_from_slice(&rest[..pos]);
            rest = &rest[pos + 1..];
            let line = std::mem::take(&mut self.partial);
            self.owned_line(trim_cr(&line), &mut on_event);
            self.partial = line;
            self.partial.clear();
        }
        // The current event's data while it is exactly one line of `bytes` (not copied).
        let mut borrowed: Option<&[u8]> = None;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            let line = trim_cr(&rest[..pos]);
            rest = &rest[pos + 1..];
            if line.is_empty() {
                if let Some(data) = borrowed.take() {
                    on_event(data);
                } else if self.has_data {
                    on_event(&self.data);
                }
                self.data.clear();
                self.has_data = false;
            } else if let Some(payload) = data_payload(line) {
                if !self.has_data && borrowed.is_none() {
                    borrowed = Some(payload);
                } else {
                    if let Some(first) = borrowed.take() {
                        self.data.extend_from_slice(first);
                    }
                    self.data.extend_from_slice(payload);
                    self.has_data = true;
                }
            }
        }
        if let Some(first) = borrowed {
            self.data.extend_from_slice(first);
            self.has_data = true;
        }
        self.partial.extend_from_slice(rest);
    }

    /// A line that was buffered across reads (its data is always copied).
    fn owned_line(&mut self, line: &[u8], on_event: &mut impl FnMut(&[u8])) {
        if line.is_empty() {
            if self.has_data {
                on_event(&self.data);
            }
            self.data.clear();
            self.has_data = false;
        } else if let Some(payload) = data_payload(line) {
            self.data.extend_from_slice(payload);
            self.has_data = true;
        }
    }

    /// Ends the stream: an unterminated last event (or line) is delivered too; the caller skips it if it is
    /// not JSON, as evalscope flushes a leftover only when it parses.
    pub fn finish(&mut self, mut on_event: impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            if let Some(payload) = data_payload(trim_cr(&line)) {
                self.data.extend_from_slice(payload);
                self.has_data = true;
            }
        }
        if self.has_data {
            on_event(&self.data);
        }
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(chunks: &[&[u8]]) -> Vec<String> {
        let mut f = SseFramer::new();
        let mut out = Vec::new();
        for c in chunks {
            f.push(c, |e| out.push(String::from_utf8_lossy(e).into_owned()));
        }
        f.finish(|e| out.push(String::from_utf8_lossy(e).into_owned()));
        out
    }

    #[test]
    fn splits_events_and_keeps_data_lines() {
        let out = frame_all(&[
            b"data: {\"a\":1}\n\n: comment\n\nevent: x\nid: 3\ndata:{\"b\":2}\n\ndata: [DONE]\n\n",
        ]);
        assert_eq!(out, vec!["{\"a\":1}", "{\"b\":2}", "[DONE]"]);
    }

    #[test]
    fn handles_crlf_and_split_reads() {
        let out = frame_all(&[
            b"da",
            b"ta: {\"a\"",
            b":1}\r",
            b"\n\r\n",
            b"data: x\r\n\r\n",
        ]);
        assert_eq!(out, vec!["{\"a\":1}", "x"]);
    }

    #[test]
    fn joins_multi_line_data_without_separator() {
        let out = frame_all(&[b"data: {\"a\":\ndata: 1}\n\n"]);
        assert_eq!(out, vec!["{\"a\":1}"]);
    }

    #[test]
    fn flushes_an_unterminated_last_event() {
        assert_eq!(frame_all(&[b"data: {\"a\":1}"]), vec!["{\"a\":1}"]);
        assert_eq!(frame_all(&[b"data: {\"a\":1}\n"]), vec!["{\"a\":1}"]);
        assert!(frame_all(&[b": only a comment"]).is_empty());
    }

    #[test]
    fn any_split_of_a_stream_gives_the_same_events() {
        let wire: &[u8] = b"data: {\"a\":1}\r\n\r\n: c\n\ndata: x\ndata: y\n\nevent: e\ndata:z\n\ndata: [DONE]\n\n";
        let want = vec!["{\"a\":1}", "xy", "z", "[DONE]"];
        for i in 0..wire.len() {
            for j in i..wire.len() {
                let got = frame_all(&[&wire[..i], &wire[i..j], &wire[j..]]);
                assert_eq!(got, want, "split at {i}, {j}");
            }
        }
    }

    #[test]
    fn a_ten_megabyte_line_parses_in_small_reads() {
        let big = "x".repeat(10 * 1024 * 1024);
        let payload = format!("data: {{\"c\":\"{big}\"}}\n\n");
        let mut f = SseFramer::new();
        let mut got = Vec::new();
        for chunk in payload.as_bytes().chunks(16 * 1024) {
            f.push(chunk, |e| got.push(e.len()));
        }
        assert_eq!(got, vec![big.len() + 8]);
    }
}
