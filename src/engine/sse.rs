//! Server-sent-events framing, on bytes: lines split on `\n` (a trailing `\r` dropped), events end at a
//! blank line, only `data:` lines are kept (leading spaces after the colon stripped) and an event's data
//! lines are joined without a separator, as evalscope does. Comments and other fields are ignored.
//!
//! Pure and allocation-light: the buffer grows to hold the longest line (no cap: a 10 MB line parses), and
//! scanning resumes where it stopped, so a long line arriving in many reads costs linear time.

/// Incremental SSE framer.
#[derive(Debug, Default)]
pub struct SseFramer {
    buf: Vec<u8>,
    scanned: usize,
    data: Vec<u8>,
    has_data: bool,
}

impl SseFramer {
    /// A new framer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `on_event` with each complete event's data.
    pub fn push(&mut self, bytes: &[u8], mut on_event: impl FnMut(&[u8])) {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(pos) = memchr(b'\n', &self.buf[self.scanned..]) {
            let end = self.scanned + pos;
            let mut line_end = end;
            if line_end > start && self.buf[line_end - 1] == b'\r' {
                line_end -= 1;
            }
            let line = &self.buf[start..line_end];
            if line.is_empty() {
                if self.has_data {
                    on_event(&self.data);
                }
                self.data.clear();
                self.has_data = false;
            } else if let Some(rest) = line.strip_prefix(b"data:") {
                let skip = rest.iter().take_while(|b| **b == b' ').count();
                self.data.extend_from_slice(&rest[skip..]);
                self.has_data = true;
            }
            start = end + 1;
            self.scanned = start;
        }
        if start > 0 {
            self.buf.drain(..start);
            self.scanned -= start;
        }
        self.scanned = self.buf.len();
    }

    /// Ends the stream: an unterminated last event (or line) is delivered too; the caller skips it if it is
    /// not JSON, as evalscope flushes a leftover only when it parses.
    pub fn finish(&mut self, mut on_event: impl FnMut(&[u8])) {
        if !self.buf.is_empty() {
            let mut line: &[u8] = &self.buf;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if let Some(rest) = line.strip_prefix(b"data:") {
                let skip = rest.iter().take_while(|b| **b == b' ').count();
                self.data.extend_from_slice(&rest[skip..]);
                self.has_data = true;
            }
            self.buf.clear();
            self.scanned = 0;
        }
        if self.has_data {
            on_event(&self.data);
        }
        self.data.clear();
        self.has_data = false;
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|b| *b == needle)
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
