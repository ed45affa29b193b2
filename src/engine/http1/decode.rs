//! Pure HTTP/1.1 response parsing: the head (status, the headers that matter, how the body is framed) and an
//! incremental body decoder for `Content-Length`, `chunked` and read-until-close bodies. No I/O, no
//! allocation per body chunk: the decoder hands out slices of the bytes it is given.

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (204, 304).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// What the client needs from a response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// Reason phrase as sent.
    pub reason: String,
    /// `Content-Type`, lowercased (empty when absent).
    pub content_type: String,
    /// `Retry-After`, as sent (absent when not sent).
    pub retry_after: Option<String>,
    /// Body framing.
    pub framing: Framing,
    /// The connection may carry another request after this response.
    pub keep_alive: bool,
}

/// Most headers a response may carry.
const MAX_HEADERS: usize = 128;

/// Why a response is not valid HTTP/1.1 (each message is what `invalid HTTP response: …` shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The head does not parse (httparse's reason).
    #[error("malformed response head: {0}")]
    MalformedHead(String),
    /// A `Content-Length` that is not a number.
    #[error("bad Content-Length {0:?}")]
    BadContentLength(String),
    /// Two `Content-Length` headers that disagree.
    #[error("conflicting Content-Length headers")]
    ConflictingContentLength,
    /// A chunk-size line with a byte that is not a hex digit, `;`, CR or LF.
    #[error("bad chunk size byte {0:#04x}")]
    BadChunkSizeByte(u8),
    /// Another violation of the chunked framing (what is wrong).
    #[error("{0}")]
    Chunked(&'static str),
    /// A head past the largest accepted.
    #[error("response head too large")]
    HeadTooLarge,
    /// A body past the largest accepted, in bytes.
    #[error("response body larger than {0} bytes")]
    BodyTooLarge(usize),
}

/// Parses a response head at the start of `buf`: `Ok(None)` while incomplete, else the head and its
/// length in bytes. Informational (1xx) heads are returned like any other; the caller skips them.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, ProtocolError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ProtocolError::MalformedHead(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    let http10 = resp.version == Some(0);
    let mut content_type = String::new();
    let mut retry_after = None;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut close = http10;
    for h in resp.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-type") {
            content_type = value.to_ascii_lowercase();
        } else if h.name.eq_ignore_ascii_case("retry-after") {
            retry_after = Some(String::from_utf8_lossy(h.value).trim().to_string());
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse::<u64>()
                .map_err(|_| ProtocolError::BadContentLength(value.to_string()))?;
            if length.is_some_and(|l| l != n) {
                return Err(ProtocolError::ConflictingContentLength);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && http10 {
                    close = false;
                }
            }
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    Ok(Some((
        Head {
            status,
            reason: resp.reason.unwrap_or("").to_string(),
            content_type,
            retry_after,
            framing,
            keep_alive: !close && framing != Framing::Close,
        },
        len,
    )))
}

/// Longest chunk-size line or trailer line accepted.
const MAX_LINE: usize = 4096;

/// Where a chunk-size line is: `1*HEXDIG [BWS] [";" extension] CRLF` (RFC 9112 §7.1, as `httparse`
/// reads it; a bare LF also ends the line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SizeLine {
    /// In the hex digits.
    Digits,
    /// In the whitespace after them.
    Space,
    /// In an extension (ignored up to the line end).
    Extension,
    /// A CR was seen; only LF may follow.
    Cr,
}

/// A fresh chunk-size line.
const SIZE_LINE: State = State::Size {
    value: 0,
    digits: 0,
    at: SizeLine::Digits,
    line: 0,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// `Length`: bytes left.
    Fixed(u64),
    /// Chunked: reading the size line (value so far, digits seen, where in the line, its length).
    Size {
        value: u64,
        digits: u32,
        at: SizeLine,
        line: usize,
    },
    /// Chunked: data bytes left in this chunk.
    Data(u64),
    /// Chunked: the CRLF after a chunk's data (`true` once the CR was seen).
    DataEnd(bool),
    /// Chunked: trailer lines after the last chunk (length of the current line, a CR was just seen).
    Trailer(usize, bool),
    /// Until EOF.
    UntilClose,
    /// The body is complete.
    Done,
}

/// An incremental body decoder.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
}

impl BodyDecoder {
    /// A decoder for `framing`.
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Fixed(n),
            Framing::Chunked => SIZE_LINE,
            Framing::Close => State::UntilClose,
        };
        BodyDecoder { state }
    }

    /// The whole body has been decoded.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The body is read until the connection closes.
    pub fn until_close(&self) -> bool {
        self.state == State::UntilClose
    }

    /// Decodes from `input`, handing each run of body bytes to `out`; returns how many input bytes were
    /// used (fewer than given only once the body is complete: the rest belongs to the next response).
    pub fn decode(
        &mut self,
        input: &[u8],
        out: &mut impl FnMut(&[u8]),
    ) -> Result<usize, ProtocolError> {
        let mut i = 0;
        while i < input.len() {
            match &mut self.state {
                State::Done => return Ok(i),
                State::UntilClose => {
                    out(&input[i..]);
                    return Ok(input.len());
                }
                State::Fixed(left) | State::Data(left) => {
                    let take = (*left).min((input.len() - i) as u64) as usize;
                    out(&input[i..i + take]);
                    i += take;
                    *left -= take as u64;
                    if *left == 0 {
                        self.state = match self.state {
                            State::Fixed(_) => State::Done,
                            _ => State::DataEnd(false),
                        };
                    }
                }
                State::Size {
                    value,
                    digits,
                    at,
                    line,
                } => {
                    let b = input[i];
                    i += 1;
                    *line += 1;
                    if *line > MAX_LINE {
                        return Err(ProtocolError::Chunked("chunk size line too long"));
                    }
                    match (b, *at) {
                        (b'\n', _) => {
                            if *digits == 0 {
                                return Err(ProtocolError::Chunked("empty chunk size"));
                            }
                            self.state = if *value == 0 {
                                State::Trailer(0, false)
                            } else {
                                State::Data(*value)
                            };
                        }
                        (_, SizeLine::Cr) => {
                            return Err(ProtocolError::Chunked(
                                "CR without LF in a chunk size line",
                            ))
                        }
                        (b'\r', _) => *at = SizeLine::Cr,
                        (_, SizeLine::Extension) => {}
                        (b';', _) => *at = SizeLine::Extension,
                        (b' ' | b'\t', _) if *digits > 0 => *at = SizeLine::Space,
                        (_, SizeLine::Digits) if b.is_ascii_hexdigit() => {
                            *digits += 1;
                            if *digits > 16 {
                                return Err(ProtocolError::Chunked("chunk size too large"));
                            }
                            let d = (b as char).to_digit(16).expect("a hex digit");
                            *value = *value * 16 + u64::from(d);
                        }
                        _ => return Err(ProtocolError::BadChunkSizeByte(b)),
                    }
                }
                State::DataEnd(seen_cr) => {
                    let b = input[i];
                    i += 1;
                    match (b, *seen_cr) {
                        (b'\r', false) => *seen_cr = true,
                        (b'\n', _) => self.state = SIZE_LINE,
                        _ => return Err(ProtocolError::Chunked("missing CRLF after chunk data")),
                    }
                }
                State::Trailer(line, cr) => {
                    let b = input[i];
                    i += 1;
                    match b {
                        b'\n' if *line == 0 => self.state = State::Done,
                        b'\n' => (*line, *cr) = (0, false),
                        _ => {
                            // A CR counts as a byte of the line unless an LF follows it.
                            *line += usize::from(*cr) + usize::from(b != b'\r');
                            *cr = b == b'\r';
                            if *line > MAX_LINE {
                                return Err(ProtocolError::Chunked("trailer line too long"));
                            }
                        }
                    }
                }
            }
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes()).unwrap().unwrap().0
    }

    #[test]
    fn heads_and_framing() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(h.status, 200);
        assert_eq!(h.content_type, "text/event-stream");
        assert_eq!(h.framing, Framing::Chunked);
        assert!(h.keep_alive);
        let h = head(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 12\r\nconnection: close\r\n\r\n",
        );
        assert_eq!(
            (h.status, h.reason.as_str()),
            (500, "Internal Server Error")
        );
        assert_eq!(h.framing, Framing::Length(12));
        assert!(!h.keep_alive);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n");
        assert!(!h.keep_alive);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n");
        assert!(h.keep_alive);
        let h = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(h.framing, Framing::Close);
        assert!(!h.keep_alive);
        assert_eq!(
            head("HTTP/1.1 204 No Content\r\n\r\n").framing,
            Framing::Empty
        );
        assert_eq!(
            head("HTTP/1.1 100 Continue\r\n\r\n").framing,
            Framing::Empty
        );
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le")
            .unwrap()
            .is_none());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    fn decode_all(framing: Framing, pieces: &[&[u8]]) -> (Vec<u8>, bool, usize) {
        let mut d = BodyDecoder::new(framing);
        let mut body = Vec::new();
        let mut used = 0;
        for p in pieces {
            used += d.decode(p, &mut |b| body.extend_from_slice(b)).unwrap();
        }
        (body, d.is_done(), used)
    }

    #[test]
    fn chunked_bodies_in_any_split() {
        let wire: &[u8] = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: y\r\n\r\nNEXT";
        for split in 0..wire.len() {
            let (a, b) = wire.split_at(split);
            let (body, done, used) = decode_all(Framing::Chunked, &[a, b]);
            assert_eq!(body, b"hello, world", "split at {split}");
            assert!(done);
            assert_eq!(used, wire.len() - 4, "the next response's bytes are left");
        }
        let (body, done, _) = decode_all(Framing::Chunked, &[b"3\nabc\n0\n\n"]);
        assert_eq!((body.as_slice(), done), (&b"abc"[..], true));
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert!(d.decode(b"zz\r\n", &mut |_| {}).is_err());
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert!(d.decode(b"2\r\nabX", &mut |_| {}).is_err());
    }

    /// Size lines the fuzzer (`tests/fuzz/http1.rs`) found read differently from `httparse`: a CR or
    /// whitespace before the digits, digits after whitespace, a CR not followed by LF, and a trailer line
    /// that is only a stray CR taken for the end of the trailers.
    #[test]
    fn size_lines_are_read_as_httparse_reads_them() {
        for bad in [
            &b"\r1\r\na\r\n0\r\n\r\n"[..],
            b" 1\r\na\r\n0\r\n\r\n",
            b"1 2\r\n",
            b"1\r\r\na\r\n",
            b"1;ext\rx\r\n",
        ] {
            let mut d = BodyDecoder::new(Framing::Chunked);
            let got = d.decode(bad, &mut |_| {});
            assert!(got.is_err(), "{:?}: {got:?}", String::from_utf8_lossy(bad));
        }
        for good in [
            &b"1 \r\na\r\n0\r\n\r\n"[..],
            b"1\t; x=\"y\"\r\na\r\n0\r\n\r\n",
            b"01\na\n0\n\n",
        ] {
            let (body, done, used) = decode_all(Framing::Chunked, &[good]);
            assert_eq!((body.as_slice(), done, used), (&b"a"[..], true, good.len()));
        }
        let wire = b"1\r\na\r\n0\r\n\r\r\n\r\n";
        let (_, done, used) = decode_all(Framing::Chunked, &[wire]);
        assert_eq!(
            (done, used),
            (true, wire.len()),
            "a lone CR is a trailer line, not the end"
        );
    }

    #[test]
    fn length_and_close_bodies() {
        let (body, done, used) = decode_all(Framing::Length(5), &[b"he", b"llo+extra"]);
        assert_eq!((body.as_slice(), done, used), (&b"hello"[..], true, 5));
        let (body, done, _) = decode_all(Framing::Close, &[b"a", b"bc"]);
        assert_eq!((body.as_slice(), done), (&b"abc"[..], false));
        assert!(BodyDecoder::new(Framing::Close).until_close());
        assert!(BodyDecoder::new(Framing::Empty).is_done());
    }
}
