//! A request's connection phases (docs/phases.md): the moments the client reached while it sent the
//! request and got the start of the answer, and their arithmetic into consecutive durations laid end to
//! end from the send.
//!
//! The hot path only stores [`Instant`]s ([`PhaseMarks`], `Copy`, no allocation); [`PhaseMarks::durations`]
//! turns them into [`Phases`] (seconds) when the row is stored. The six phases, in order:
//! `dns` (send → name resolved), `connect` (→ TCP connected; through a proxy: to the proxy plus its
//! `CONNECT` tunnel), `tls` (→ TLS handshake done), `write` (→ request written), `headers` (→ response head
//! arrived), `first_byte` (→ first body byte arrived). `dns`, `connect` and `tls` exist only for a request
//! that opened its connection (`tls` only over TLS); the others for every request that got that far.
//!
//! The arrival marks (head, first body byte) are the kernel's receive stamps, the same stamps the chunk
//! times carry; the client's own marks (resolved … written) are taken after the call returned, so a
//! descheduled client can take one after the answer's bytes had already arrived. The arithmetic therefore
//! caps every client mark at the head's arrival and keeps the marks in order, so the phases never go
//! negative and their sum ends at the first body byte: never after the first chunk (TTFT).

use std::time::Instant;

/// When a new connection got past each of its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnMarks {
    /// Name resolution ended (the proxy's name, through a proxy).
    pub resolved: Instant,
    /// The TCP handshake ended (through a proxy: the `CONNECT` tunnel is open too).
    pub connected: Instant,
    /// The TLS handshake ended (`None` for plain `http://`).
    pub tls_done: Option<Instant>,
}

/// The moments one request reached; `None` where it did not get there (or, for `conn`, reused a
/// connection).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseMarks {
    /// The connection's steps, when this request opened it.
    pub conn: Option<ConnMarks>,
    /// The last request byte was handed to the socket.
    pub written: Option<Instant>,
    /// The read that completed the response head arrived.
    pub head: Option<Instant>,
    /// The first body byte arrived.
    pub first_byte: Option<Instant>,
}

/// A request's phases in seconds, each from the end of the one before (the first from the send).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    /// Name resolution (new connections only).
    pub dns: Option<f64>,
    /// TCP handshake, or to the proxy plus the tunnel (new connections only).
    pub connect: Option<f64>,
    /// TLS handshake (new `https://` connections only).
    pub tls: Option<f64>,
    /// Writing the request.
    pub write: Option<f64>,
    /// Request written → response head arrived (the server's time to answer).
    pub headers: Option<f64>,
    /// Response head → first body byte (0 when both came in one read).
    pub first_byte: Option<f64>,
}

/// The phase names, in order, as the DB columns (`phase_<name>`) and the summary keys spell them.
pub const PHASE_NAMES: [(&str, &str); 6] = [
    ("dns", "DNS"),
    ("connect", "Connect"),
    ("tls", "TLS"),
    ("write", "Write"),
    ("headers", "Headers"),
    ("first_byte", "First Byte"),
];

impl Phases {
    /// The six values in [`PHASE_NAMES`] order.
    pub fn values(&self) -> [Option<f64>; 6] {
        [
            self.dns,
            self.connect,
            self.tls,
            self.write,
            self.headers,
            self.first_byte,
        ]
    }

    /// The phases from the six values in [`PHASE_NAMES`] order (a stored row).
    pub fn from_values(v: [Option<f64>; 6]) -> Phases {
        Phases {
            dns: v[0],
            connect: v[1],
            tls: v[2],
            write: v[3],
            headers: v[4],
            first_byte: v[5],
        }
    }

    /// Whether the request opened its connection.
    pub fn new_connection(&self) -> bool {
        self.connect.is_some()
    }

    /// The phases laid end to end: seconds from the send to the end of the last one measured.
    pub fn total_s(&self) -> f64 {
        self.values().iter().flatten().sum()
    }
}

impl PhaseMarks {
    /// Forgets everything (a reused connection's failed attempt, resent on a new one).
    pub fn clear(&mut self) {
        *self = PhaseMarks::default();
    }

    /// The phases of a request sent at `sent_at`: consecutive durations from `sent_at`, client marks
    /// capped at the head's arrival, every mark kept at or after the one before.
    pub fn durations(&self, sent_at: Instant) -> Phases {
        let cap = |t: Instant| match self.head {
            Some(head) => t.min(head.max(sent_at)),
            None => t,
        };
        let mut prev = sent_at;
        let mut step = |mark: Option<Instant>, capped: bool| {
            mark.map(|t| {
                let t = if capped { cap(t) } else { t }.max(prev);
                let d = t.duration_since(prev).as_secs_f64();
                prev = t;
                d
            })
        };
        let conn = self.conn;
        Phases {
            dns: step(conn.map(|c| c.resolved), true),
            connect: step(conn.map(|c| c.connected), true),
            tls: step(conn.and_then(|c| c.tls_done), true),
            write: step(self.written, true),
            headers: step(self.head, false),
            first_byte: step(self.first_byte, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn a_new_tls_connection_lays_six_phases_end_to_end() {
        let t0 = Instant::now();
        let marks = PhaseMarks {
            conn: Some(ConnMarks {
                resolved: ms(t0, 1),
                connected: ms(t0, 3),
                tls_done: Some(ms(t0, 10)),
            }),
            written: Some(ms(t0, 11)),
            head: Some(ms(t0, 40)),
            first_byte: Some(ms(t0, 45)),
        };
        let p = marks.durations(t0);
        assert!(close(p.dns, 0.001));
        assert!(close(p.connect, 0.002));
        assert!(close(p.tls, 0.007));
        assert!(close(p.write, 0.001));
        assert!(close(p.headers, 0.029));
        assert!(close(p.first_byte, 0.005));
        assert!((p.total_s() - 0.045).abs() < 1e-9);
        assert!(p.new_connection());
        assert_eq!(Phases::from_values(p.values()), p);
    }

    #[test]
    fn a_reused_connection_has_no_connection_phases() {
        let t0 = Instant::now();
        let marks = PhaseMarks {
            conn: None,
            written: Some(ms(t0, 2)),
            head: Some(ms(t0, 30)),
            first_byte: Some(ms(t0, 30)),
        };
        let p = marks.durations(t0);
        assert_eq!((p.dns, p.connect, p.tls), (None, None, None));
        assert!(close(p.write, 0.002));
        assert!(close(p.headers, 0.028));
        assert!(close(p.first_byte, 0.0), "head and body in one read");
        assert!(!p.new_connection());
    }

    #[test]
    fn plain_http_has_no_tls_phase() {
        let t0 = Instant::now();
        let marks = PhaseMarks {
            conn: Some(ConnMarks {
                resolved: ms(t0, 1),
                connected: ms(t0, 2),
                tls_done: None,
            }),
            written: Some(ms(t0, 3)),
            head: Some(ms(t0, 9)),
            first_byte: None,
        };
        let p = marks.durations(t0);
        assert_eq!(p.tls, None);
        assert!(
            close(p.write, 0.001),
            "from the connect, not from a TLS mark"
        );
        assert_eq!(p.first_byte, None, "no body byte came");
    }

    #[test]
    fn a_late_client_mark_is_capped_at_the_arrival_of_the_answer() {
        // The client was descheduled after its write: it stamped `written` after the head had arrived.
        let t0 = Instant::now();
        let marks = PhaseMarks {
            conn: None,
            written: Some(ms(t0, 20)),
            head: Some(ms(t0, 15)),
            first_byte: Some(ms(t0, 16)),
        };
        let p = marks.durations(t0);
        assert!(close(p.write, 0.015));
        assert!(close(p.headers, 0.0));
        assert!(close(p.first_byte, 0.001));
        assert!((p.total_s() - 0.016).abs() < 1e-9, "ends at the first byte");
    }

    #[test]
    fn marks_before_the_send_or_out_of_order_never_go_negative() {
        let t0 = Instant::now() + Duration::from_millis(100);
        let marks = PhaseMarks {
            conn: Some(ConnMarks {
                resolved: ms(t0, 5),
                connected: ms(t0, 4),
                tls_done: Some(ms(t0, 6)),
            }),
            written: Some(ms(t0, 7)),
            // A stamp converted from another clock, a little before the send.
            head: Some(t0 - Duration::from_millis(1)),
            first_byte: Some(ms(t0, 8)),
        };
        let p = marks.durations(t0);
        assert!(p.values().iter().flatten().all(|&d| d >= 0.0), "{p:?}");
        assert!(
            close(p.dns, 0.0),
            "capped at the head, itself no earlier than the send"
        );
        assert!((p.total_s() - 0.008).abs() < 1e-9);
    }

    #[test]
    fn cleared_marks_measure_nothing() {
        let t0 = Instant::now();
        let mut marks = PhaseMarks {
            written: Some(ms(t0, 1)),
            ..PhaseMarks::default()
        };
        marks.clear();
        assert_eq!(marks.durations(t0), Phases::default());
    }
}
