//! The requests of one run as the dispatchers take them: in order, each with its index, from a bounded
//! look-ahead that a producer thread keeps filled while the run goes on.
//!
//! The producer hands over chunks (at most [`CHUNK`] requests or [`CHUNK_BYTES`] of bodies each) through a
//! channel of [`AHEAD_CHUNKS`] chunks; the feed also holds the chunk being taken from and, after
//! [`RequestFeed::prime`], up to [`AHEAD_CHUNKS`] more. So memory holds about `2 × AHEAD_CHUNKS` chunks of
//! requests whatever `--number` is, and the producer is woken once per chunk, not once per request.
//! Bodies are serialised by the producer: taking a request is a pop, never a tokenizer or a serialiser.
//!
//! A producer that fails (or a feed dropped before its end) ends the stream early; the producer's own
//! result says why ([`Producer::finish`]).

use std::collections::VecDeque;
use std::ops::ControlFlow;

use tokio::sync::mpsc;

use super::PreparedRequest;

/// Most requests in one chunk.
pub const CHUNK: usize = 256;

/// A chunk is handed over once its bodies reach this many bytes (long prompts: fewer requests ahead).
pub const CHUNK_BYTES: usize = 1 << 20;

/// Chunks the channel holds (and [`RequestFeed::prime`] takes ahead).
pub const AHEAD_CHUNKS: usize = 16;

/// The dispatchers' side: the run's requests in order.
pub struct RequestFeed {
    /// Requests the run sends, warmup included.
    len: usize,
    /// The first `warmup` requests are warmup requests.
    warmup: usize,
    /// Requests received and not yet taken, in order.
    ready: VecDeque<PreparedRequest>,
    /// Chunks still to come (`None`: every request is in `ready`).
    rx: Option<mpsc::Receiver<Vec<PreparedRequest>>>,
    /// Requests taken so far (the next one's index).
    taken: usize,
}

impl RequestFeed {
    /// A feed of requests already in memory (`warmup` of them first).
    pub fn from_vec(requests: Vec<PreparedRequest>) -> RequestFeed {
        let warmup = requests.iter().take_while(|r| r.is_warmup).count();
        RequestFeed {
            len: requests.len(),
            warmup,
            ready: requests.into(),
            rx: None,
            taken: 0,
        }
    }

    /// A feed of `len` requests (the first `warmup` of them warmup) that `produce` makes on its own
    /// thread, handing each to the sink it is given; the sink breaks when the feed is gone. Fails when the
    /// thread cannot start.
    pub fn spawn<F>(
        len: usize,
        warmup: usize,
        produce: F,
    ) -> anyhow::Result<(RequestFeed, Producer)>
    where
        F: FnOnce(&mut dyn FnMut(PreparedRequest) -> ControlFlow<()>) -> anyhow::Result<()>
            + Send
            + 'static,
    {
        let (tx, rx) = mpsc::channel(AHEAD_CHUNKS);
        let thread = std::thread::Builder::new()
            .name("llmperf-requests".into())
            .spawn(move || {
                let mut chunk = Chunker::new(tx);
                produce(&mut |r| chunk.push(r))?;
                // A feed gone by now needs nothing more.
                let _ = chunk.flush();
                Ok(())
            })
            .map_err(|e| anyhow::anyhow!("cannot start the request producer thread: {e}"))?;
        let feed = RequestFeed {
            len,
            warmup: warmup.min(len),
            ready: VecDeque::new(),
            rx: Some(rx),
            taken: 0,
        };
        Ok((
            feed,
            Producer {
                thread: Some(thread),
            },
        ))
    }

    /// An empty feed (a run stopped before it sent anything).
    pub fn empty() -> RequestFeed {
        RequestFeed::from_vec(Vec::new())
    }

    /// Requests the run sends, warmup included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the run sends nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the producer may still hand over requests (`false` once it has ended, or for a feed from
    /// memory).
    pub fn producing(&self) -> bool {
        self.rx.is_some()
    }

    /// Warmup requests (they come first).
    pub fn warmup(&self) -> usize {
        self.warmup
    }

    /// Waits until [`AHEAD_CHUNKS`] chunks are taken ahead, or the producer has ended: a run that fits in
    /// the look-ahead is then wholly prepared before its first request (and a producer's early failure
    /// comes before it, too). Returns the requests ready.
    pub async fn prime(&mut self) -> usize {
        for _ in 0..AHEAD_CHUNKS {
            let Some(rx) = &mut self.rx else { break };
            match rx.recv().await {
                Some(chunk) => self.ready.extend(chunk),
                None => self.rx = None,
            }
        }
        self.ready.len()
    }

    /// The next request and its index, or `None` when the run's requests are done (or the producer
    /// stopped).
    pub async fn next(&mut self) -> Option<(usize, PreparedRequest)> {
        if self.ready.is_empty() {
            let chunk = self.rx.as_mut()?.recv().await;
            self.refill(chunk);
        }
        self.pop()
    }

    /// [`Self::next`] for a thread outside the runtime (the open-loop dispatcher): blocks while the
    /// producer is behind.
    pub fn blocking_next(&mut self) -> Option<(usize, PreparedRequest)> {
        if self.ready.is_empty() {
            let chunk = self.rx.as_mut()?.blocking_recv();
            self.refill(chunk);
        }
        self.pop()
    }

    fn refill(&mut self, chunk: Option<Vec<PreparedRequest>>) {
        match chunk {
            Some(chunk) => self.ready.extend(chunk),
            None => self.rx = None,
        }
    }

    fn pop(&mut self) -> Option<(usize, PreparedRequest)> {
        if self.taken >= self.len {
            return None;
        }
        let request = self.ready.pop_front()?;
        let index = self.taken;
        self.taken += 1;
        Some((index, request))
    }
}

/// Collects requests into chunks and hands each over when it is full.
struct Chunker {
    tx: mpsc::Sender<Vec<PreparedRequest>>,
    chunk: Vec<PreparedRequest>,
    bytes: usize,
}

impl Chunker {
    fn new(tx: mpsc::Sender<Vec<PreparedRequest>>) -> Chunker {
        Chunker {
            tx,
            chunk: Vec::with_capacity(CHUNK),
            bytes: 0,
        }
    }

    /// Adds `r`; `Break` once the feed is gone.
    fn push(&mut self, r: PreparedRequest) -> ControlFlow<()> {
        self.bytes += r.body.len();
        self.chunk.push(r);
        if self.chunk.len() >= CHUNK || self.bytes >= CHUNK_BYTES {
            return self.flush();
        }
        ControlFlow::Continue(())
    }

    fn flush(&mut self) -> ControlFlow<()> {
        if self.chunk.is_empty() {
            return ControlFlow::Continue(());
        }
        self.bytes = 0;
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        match self.tx.blocking_send(chunk) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    }
}

/// The producer thread of a [`RequestFeed`].
pub struct Producer {
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Producer {
    /// Waits for the producer (its feed must be gone or drained, else it waits for room) and returns its
    /// error, if it failed.
    pub async fn finish(mut self) -> anyhow::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        match tokio::task::spawn_blocking(move || thread.join()).await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn request(i: usize, warmup: bool) -> PreparedRequest {
        PreparedRequest::new(Arc::from(format!("body {i}")), warmup)
    }

    #[tokio::test]
    async fn a_produced_feed_yields_every_request_in_order() {
        let n = 3 * CHUNK * AHEAD_CHUNKS + 7;
        let (mut feed, producer) = RequestFeed::spawn(n, 2, move |sink| {
            for i in 0..n {
                if sink(request(i, i < 2)).is_break() {
                    break;
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!((feed.len(), feed.warmup()), (n, 2));
        assert_eq!(
            feed.prime().await,
            CHUNK * AHEAD_CHUNKS,
            "bounded look-ahead"
        );
        let mut seen = 0;
        while let Some((i, r)) = feed.next().await {
            assert_eq!(i, seen);
            assert_eq!(&*r.body, format!("body {i}"));
            assert_eq!(r.is_warmup, i < 2);
            seen += 1;
        }
        assert_eq!(seen, n);
        drop(feed);
        producer.finish().await.unwrap();
    }

    #[tokio::test]
    async fn a_dropped_feed_stops_the_producer_and_its_error_is_kept() {
        let (mut feed, producer) = RequestFeed::spawn(usize::MAX, 0, |sink| {
            let mut i = 0;
            while sink(request(i, false)).is_continue() {
                i += 1;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(feed.next().await.map(|(i, _)| i), Some(0));
        drop(feed);
        producer.finish().await.unwrap();

        let (mut feed, producer) = RequestFeed::spawn(10, 0, |sink| {
            let _ = sink(request(0, false));
            anyhow::bail!("tokenizer failed at request 1")
        })
        .unwrap();
        // The chunk in hand is not handed over when the producer fails: the stream just ends.
        assert!(feed.next().await.is_none());
        let err = producer.finish().await.unwrap_err();
        assert!(err.to_string().contains("request 1"), "{err}");
    }

    #[test]
    fn a_blocking_feed_and_a_feed_from_memory() {
        let (mut feed, producer) = RequestFeed::spawn(5, 0, |sink| {
            for i in 0..5 {
                let _ = sink(request(i, false));
            }
            Ok(())
        })
        .unwrap();
        let got: Vec<usize> = std::iter::from_fn(|| feed.blocking_next().map(|(i, _)| i)).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(producer.finish()).unwrap();
        let mut mem = RequestFeed::from_vec(vec![request(0, true), request(1, false)]);
        assert_eq!((mem.len(), mem.warmup()), (2, 1));
        assert_eq!(mem.blocking_next().map(|(i, _)| i), Some(0));
        assert!(RequestFeed::empty().is_empty());
    }
}
