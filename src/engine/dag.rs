//! The session-graph driver (`--scenario agentx`): `parallel` workers each take the next recorded session
//! (in trace order, cycled) and replay its graph of calls ([`crate::scenario::Graph`]): a call is sent once
//! every call it depends on has finished and its recorded pause has passed (after the session start for a
//! call without dependencies), so sub-agents run side by side and a parent waits for the sub-agents it
//! spawned. One request is one record, sent by the same client as every other request; its `request_id`
//! is `<session number>/<agent>:<turn>`.
//!
//! A session's bodies are built when a worker takes it (on a blocking thread: prompts of a long trace
//! would not fit in memory all at once). A failed call does not stop its session (the next prompts come
//! from the trace, not from the answers). The run sends for `duration`: no session is taken and no call
//! sent after it; calls in flight then finish, or are abandoned once the grace period has passed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::{DispatchOutcome, HttpClient};
use crate::record::RequestRecord;
use crate::scenario::Graph;
use crate::shutdown::Shutdown;

/// Builds the bodies of session `i` (one per call, in call order).
pub type BodiesFn = Arc<dyn Fn(usize) -> anyhow::Result<Vec<Arc<str>>> + Send + Sync>;

/// One graph-replay run.
pub struct DagRun {
    /// The sessions, in trace order.
    pub graphs: Arc<Vec<Graph>>,
    /// Their bodies.
    pub bodies: BodiesFn,
    /// Sessions in flight at once.
    pub parallel: usize,
    /// How long to send for.
    pub duration: Duration,
    /// How long calls in flight at the end of `duration` may still finish (`None`: until they end).
    pub grace: Option<Duration>,
    /// `--session-header` name: one stable id per session replayed.
    pub session_header: Option<String>,
}

struct Shared {
    run: DagRun,
    client: HttpClient,
    records: mpsc::Sender<RequestRecord>,
    shutdown: Shutdown,
    deadline: Instant,
    next_session: AtomicUsize,
    next_index: AtomicUsize,
    dispatched: AtomicUsize,
    abandoned: AtomicUsize,
    hit_duration: AtomicBool,
    cut_short: AtomicBool,
}

/// Sends call `node` of a session after `delay`, unless the duration or a signal ends the run first.
async fn call(
    shared: Arc<Shared>,
    node: usize,
    ready_at: Instant,
    body: Arc<str>,
    (request_id, endpoint): (Arc<str>, u16),
    session: Option<Arc<str>>,
) -> (usize, bool) {
    if ready_at >= shared.deadline {
        shared.hit_duration.store(true, Ordering::Relaxed);
        return (node, false);
    }
    tokio::select! {
        _ = tokio::time::sleep_until(ready_at.into()) => {}
        _ = shared.shutdown.stopped() => {
            shared.cut_short.store(true, Ordering::Relaxed);
            return (node, false);
        }
    }
    let index = shared.next_index.fetch_add(1, Ordering::Relaxed);
    let mut record = RequestRecord::new(index, false, body, ready_at);
    record.request_id = Some(request_id);
    record.endpoint = Some(endpoint);
    record.extra_headers = session;
    shared.dispatched.fetch_add(1, Ordering::Relaxed);
    let hard_stop = shared.run.grace.map(|g| shared.deadline + g);
    let record = tokio::select! {
        biased;
        r = shared.client.send(record) => r,
        _ = shared.shutdown.abandoned() => {
            shared.abandoned.fetch_add(1, Ordering::Relaxed);
            return (node, false);
        }
        _ = async {
            match hard_stop {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        } => {
            shared.abandoned.fetch_add(1, Ordering::Relaxed);
            return (node, false);
        }
    };
    let _ = shared.records.send(record).await;
    (node, true)
}

/// Replays session `claim` (graph `claim % len`) to its end.
async fn replay(shared: &Arc<Shared>, claim: usize) -> anyhow::Result<()> {
    let graph_index = claim % shared.run.graphs.len();
    let bodies = {
        let build = shared.run.bodies.clone();
        tokio::task::spawn_blocking(move || build(graph_index)).await??
    };
    let graph = &shared.run.graphs[graph_index];
    let session: Option<Arc<str>> = shared
        .run
        .session_header
        .as_ref()
        .map(|name| Arc::from(format!("{name}: llmperf-agentx-{claim}-{}\r\n", graph.id)));
    // --url-strategy: the session keeps one endpoint.
    let endpoint = shared.client.pick_endpoint();
    let n = graph.nodes.len();
    let mut waiting: Vec<usize> = graph.nodes.iter().map(|c| c.deps.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, c) in graph.nodes.iter().enumerate() {
        for &d in &c.deps {
            dependents[d as usize].push(i);
        }
    }
    let start = Instant::now();
    let mut last_end = vec![start; n];
    let mut set = JoinSet::new();
    let launch = |set: &mut JoinSet<(usize, bool)>, i: usize, after: Instant| {
        let c = &graph.nodes[i];
        set.spawn(call(
            shared.clone(),
            i,
            after + Duration::from_secs_f64(c.delay_s),
            bodies[i].clone(),
            (Arc::from(format!("{claim}/{}", c.name)), endpoint),
            session.clone(),
        ));
    };
    for i in (0..n).filter(|&i| waiting[i] == 0) {
        launch(&mut set, i, start);
    }
    while let Some(joined) = set.join_next().await {
        let (done, sent) = match joined {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => return Err(e.into()),
        };
        if !sent {
            continue;
        }
        let now = Instant::now();
        for &d in &dependents[done] {
            last_end[d] = last_end[d].max(now);
            waiting[d] -= 1;
            if waiting[d] == 0 {
                launch(&mut set, d, last_end[d]);
            }
        }
    }
    Ok(())
}

async fn worker(shared: Arc<Shared>) -> anyhow::Result<()> {
    loop {
        if shared.shutdown.stopping() {
            shared.cut_short.store(true, Ordering::Relaxed);
            return Ok(());
        }
        if Instant::now() >= shared.deadline {
            shared.hit_duration.store(true, Ordering::Relaxed);
            return Ok(());
        }
        let claim = shared.next_session.fetch_add(1, Ordering::Relaxed);
        replay(&shared, claim).await?;
    }
}

/// Replays sessions until `run.duration` has passed, delivering one record per call to `records`.
pub async fn run(
    client: &HttpClient,
    run: DagRun,
    records: mpsc::Sender<RequestRecord>,
    shutdown: &Shutdown,
) -> anyhow::Result<DispatchOutcome> {
    let workers = run.parallel.max(1);
    let began = Instant::now();
    if run.graphs.is_empty() {
        return Ok(DispatchOutcome::default());
    }
    let shared = Arc::new(Shared {
        deadline: began + run.duration,
        run,
        client: client.clone(),
        records,
        shutdown: shutdown.clone(),
        next_session: AtomicUsize::new(0),
        next_index: AtomicUsize::new(0),
        dispatched: AtomicUsize::new(0),
        abandoned: AtomicUsize::new(0),
        hit_duration: AtomicBool::new(false),
        cut_short: AtomicBool::new(false),
    });
    let mut set = JoinSet::new();
    for _ in 0..workers {
        set.spawn(worker(shared.clone()));
    }
    let mut failure = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => failure = failure.or(Some(e.into())),
        }
    }
    if let Some(e) = failure {
        return Err(e.context("replaying the AgentX sessions"));
    }
    Ok(DispatchOutcome {
        dispatched: shared.dispatched.load(Ordering::Relaxed),
        abandoned: shared.abandoned.load(Ordering::Relaxed),
        hit_duration: shared.hit_duration.load(Ordering::Relaxed),
        interrupted: shared.cut_short.load(Ordering::Relaxed),
        began: Some(began),
        held_at_gate: false,
    })
}
