//! The run's database: the SQLite writer, on its own OS thread, off the request path.
//!
//! The table `result` has evalscope 1.14.1's 14 columns in its order and with its types (spec §5.3), then
//! llmperf's extra columns appended (never reordering evalscope's). Rows are inserted in transactions that are
//! committed every `commit_interval_rows` rows, at least once a second while rows are pending, and on
//! [`Store::flush`] / [`Store::finish`]. The journal stays in SQLite's default rollback (`DELETE`) mode, so
//! the file on disk is always a valid database holding every committed row, even if the process is killed
//! (a kill mid-transaction leaves a `-journal` file beside it, which the next opener rolls back).
//!
//! Row values follow evalscope: failed requests store NULL `latency`, `first_chunk_latency`, token counts,
//! `max_gpu_memory_cost` and `time_per_output_token`, and `'[]'` ITLs; successful ones store
//! `max_gpu_memory_cost` = the local server's peak GPU memory in GiB ([`crate::gpu_memory`], 0.0 without
//! one); `request_id` holds the id sent in the request id header (a replayed trace's own; NULL with
//! `--no-request-id` unless the trace gave one); `endpoint` the URL a request went to (`--url-strategy`
//! only); `conversation_id` and `turn_index` (from 0) place a `--multi-turn` request in its conversation
//! (NULL otherwise); `response_messages` is
//! `base64(pickle.dumps(list_of_payloads))` (see `store/pickle.rs`). The tool-call columns
//! (`tool_call_count` … `validation_error`, [`crate::record::StructuredOutcome`]) are NULL except for
//! successful requests that offered tools or asked for JSON. The `phase_*` columns, last, are the
//! request's connection phases in seconds ([`crate::record::phases`]; dns/connect/tls NULL where the
//! connection was reused). Warmup records are never stored.

mod b64;
#[cfg(test)]
mod compat_tests;
mod error;
mod fast_pickle;
mod memo;
mod pickle;
#[cfg(test)]
mod pickle_tests;
#[cfg(test)]
mod pickle_vm;
mod schema;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params, Connection};

use crate::pyjson;
use crate::record::RequestRecord;
pub use error::StoreError;
use schema::{EVALSCOPE_COLUMNS, EXTRA_COLUMNS, INSERT_SQL, TOOLS_SQL};

/// Pending rows are committed at least this often, so a crash loses at most this much.
const MAX_COMMIT_DELAY: Duration = Duration::from_secs(1);

/// SQLite page size for the run's database.
const PAGE_SIZE_BYTES: i64 = 65_536;

/// SQLite page cache of the writer, KiB.
const PAGE_CACHE_KIB: i64 = 8_192;

/// How long a commit waits for another process's lock before it is postponed.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// What the caller sends to the writer thread.
enum Msg {
    /// One finished, non-warmup record to insert.
    Row(Box<RequestRecord>),
    /// Several, in order (one wake-up of the writer for many rows).
    Rows(Vec<RequestRecord>),
    /// Commit what is pending and answer once it is on disk.
    Flush(mpsc::SyncSender<Result<(), StoreError>>),
}

/// The the run's database writer, owned by the run's aggregator. [`Store::insert`] never waits;
/// [`Store::flush`], [`Store::finish`] and dropping (which also commits pending rows) wait for the writer
/// thread, so async code should call them from `spawn_blocking` when the backlog may be large.
pub struct Store {
    path: PathBuf,
    /// Rows queued but not yet inserted.
    backlog: Arc<AtomicUsize>,
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<Result<u64, StoreError>>>,
    /// The commit a second signal runs before the process exits, registered for as long as the writer
    /// runs ([`Store::commit_on_exit`]).
    exit_hook: Option<(crate::shutdown::Shutdown, u64)>,
}

impl Store {
    /// Creates `path` (never overwriting: an existing file is an error, as in evalscope), creates the table
    /// and starts the writer thread.
    pub fn create(path: &Path, commit_interval_rows: usize) -> anyhow::Result<Store> {
        // The table is created in a private file first, which then appears under its final name in one
        // step (a hard link, which never replaces an existing file): whenever the process dies, the run
        // folder holds either no database or one with its table.
        let staging = staging_path(path);
        let _ = std::fs::remove_file(&staging);
        drop(
            open(&staging)
                .with_context(|| format!("cannot initialise the database {}", staging.display()))?,
        );
        let linked = std::fs::hard_link(&staging, path);
        let _ = std::fs::remove_file(&staging);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                bail!("The database file already exists: {}", path.display())
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create the database file {}", path.display()))
            }
        }
        let conn = open(path)
            .with_context(|| format!("cannot initialise the database {}", path.display()))?;
        let (tx, rx) = mpsc::channel();
        let interval = commit_interval_rows.max(1);
        let backlog = Arc::new(AtomicUsize::new(0));
        let writer_backlog = backlog.clone();
        let thread = std::thread::Builder::new()
            .name("llmperf-store".into())
            .spawn(move || Writer::new(conn, interval, writer_backlog).run(rx))
            .context("cannot start the database writer thread")?;
        Ok(Store {
            path: path.to_path_buf(),
            backlog,
            tx: Some(tx),
            thread: Some(thread),
            exit_hook: None,
        })
    }

    /// Makes a second signal (which exits at once) commit every row queued so far first. The hook holds
    /// its own handle to the writer and is removed when the store finishes or is dropped.
    pub fn commit_on_exit(&mut self, shutdown: &crate::shutdown::Shutdown) {
        let Some(tx) = self.tx.clone() else {
            return;
        };
        let id = shutdown.on_exit(Box::new(move || {
            let (reply_tx, reply_rx) = mpsc::sync_channel(1);
            if tx.send(Msg::Flush(reply_tx)).is_ok() {
                let _ = reply_rx.recv();
            }
        }));
        self.exit_hook = Some((shutdown.clone(), id));
    }

    /// The database file this store writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues one finished record for insertion; never blocks on the disk. Warmup records are ignored.
    /// A write error is reported by the next [`Store::flush`] or [`Store::finish`].
    pub fn insert(&self, record: RequestRecord) {
        if record.is_warmup {
            return;
        }
        if let Some(tx) = &self.tx {
            self.backlog.fetch_add(1, Ordering::Relaxed);
            // A send fails only if the writer thread has died; `flush`/`finish` report why.
            let _ = tx.send(Msg::Row(Box::new(record)));
        }
    }

    /// Rows queued and not yet inserted (the caller may wait while this is large, so memory stays bounded
    /// when the disk is slower than the requests).
    pub fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    /// Queues finished records for insertion, in order, with one hand-over to the writer thread; never
    /// blocks on the disk. Warmup records are ignored.
    pub fn insert_batch(&self, mut records: Vec<RequestRecord>) {
        records.retain(|r| !r.is_warmup);
        if records.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            self.backlog.fetch_add(records.len(), Ordering::Relaxed);
            let _ = tx.send(Msg::Rows(records));
        }
    }

    /// Commits everything queued so far and returns once it is on disk.
    pub fn flush(&self) -> anyhow::Result<()> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(Msg::Flush(reply_tx)).is_ok());
        if !sent {
            bail!(
                "the database writer for {} has stopped",
                self.path.display()
            );
        }
        match reply_rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(anyhow!("writing {} failed: {e}", self.path.display())),
            Err(_) => bail!(
                "the database writer for {} has stopped",
                self.path.display()
            ),
        }
    }

    /// Commits everything queued, stops the writer thread and returns the number of rows written.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        self.stop()
    }

    fn stop(&mut self) -> anyhow::Result<u64> {
        // The hook holds a sender: remove it first, or the writer would never see the channel close.
        if let Some((shutdown, id)) = self.exit_hook.take() {
            shutdown.remove_exit_hook(id);
        }
        drop(self.tx.take());
        let Some(thread) = self.thread.take() else {
            return Ok(0);
        };
        match thread.join() {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(anyhow!("writing {} failed: {e}", self.path.display())),
            Err(_) => bail!("the database writer for {} panicked", self.path.display()),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.thread.is_some() {
            if let Err(e) = self.stop() {
                tracing::error!("{e:#}");
            }
        }
    }
}

/// Where a database is prepared before it appears under `path`: a hidden sibling unique to this process.
fn staging_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.creating", std::process::id()))
}

/// Opens the (new) database and creates the table.
fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Rows are a few KiB each (`response_messages`): 64 KiB pages take a fraction of the write calls and
    // overflow chains of 4 KiB ones, and an 8 MiB page cache holds a default 1,000-row transaction without
    // spilling pages to the file mid-transaction (measured: 33 → 21 µs of CPU per 16-token row). Any
    // SQLite reader handles any page size.
    conn.pragma_update(None, "page_size", PAGE_SIZE_BYTES)?;
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
    // Readers (a user's `sqlite3`, a dashboard) hold their lock for milliseconds; a commit that still finds
    // one after this long is postponed, not lost.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS result({EVALSCOPE_COLUMNS}, {EXTRA_COLUMNS});"
    ))?;
    Ok(conn)
}

/// The writer thread's state.
struct Writer {
    conn: Connection,
    commit_interval_rows: usize,
    /// Rows inserted in the open transaction.
    pending_rows: usize,
    /// When the open transaction began (`None`: no transaction open).
    txn_since: Option<Instant>,
    committed_rows: u64,
    /// The first error met; later rows are still attempted, and the error is reported at flush/finish.
    first_error: Option<StoreError>,
    encoder: pickle::Encoder,
    /// Shared with [`Store::backlog`].
    backlog: Arc<AtomicUsize>,
    /// Reused text buffers for the `inter_token_latencies` and `chunk_times` lists.
    itl_text: String,
    chunk_text: String,
}

impl Writer {
    fn new(conn: Connection, commit_interval_rows: usize, backlog: Arc<AtomicUsize>) -> Self {
        Writer {
            conn,
            commit_interval_rows,
            pending_rows: 0,
            txn_since: None,
            committed_rows: 0,
            first_error: None,
            encoder: pickle::Encoder::default(),
            backlog,
            itl_text: String::new(),
            chunk_text: String::new(),
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Msg>) -> Result<u64, StoreError> {
        loop {
            let msg = match self.txn_since {
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                Some(since) => rx.recv_timeout(
                    (since + MAX_COMMIT_DELAY).saturating_duration_since(Instant::now()),
                ),
            };
            match msg {
                Ok(Msg::Row(record)) => self.insert_row(&record),
                Ok(Msg::Rows(records)) => {
                    for record in &records {
                        self.insert_row(record);
                    }
                }
                Ok(Msg::Flush(reply)) => {
                    self.commit_or_retry(false);
                    let answer = if self.txn_since.is_some() {
                        Err(StoreError::CommitPostponed)
                    } else {
                        self.first_error.clone().map_or(Ok(()), Err)
                    };
                    let _ = reply.send(answer);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => self.commit_or_retry(false),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        self.commit_or_retry(true);
        match self.first_error {
            None => Ok(self.committed_rows),
            Some(e) => Err(e),
        }
    }

    fn insert_row(&mut self, record: &RequestRecord) {
        let result = self.insert(record);
        self.backlog.fetch_sub(1, Ordering::Relaxed);
        self.note(result);
        if self.pending_rows >= self.commit_interval_rows {
            self.commit_or_retry(false);
        }
    }

    fn note(&mut self, result: rusqlite::Result<()>) {
        if let Err(e) = result {
            tracing::error!("the run's database: {e}");
            self.first_error
                .get_or_insert_with(|| StoreError::Sqlite(Arc::new(e)));
        }
    }

    /// Commits the open transaction, if any. A commit blocked by another process's lock is retried later,
    /// except on the `final_attempt` before the thread ends.
    fn commit_or_retry(&mut self, final_attempt: bool) {
        if self.txn_since.take().is_none() {
            return;
        }
        let result = self.conn.execute_batch("COMMIT");
        match result {
            Ok(()) => self.committed_rows += self.pending_rows as u64,
            Err(ref e) if !self.conn.is_autocommit() && !final_attempt && is_busy(e) => {
                // Another process holds a read lock past the busy timeout: keep the rows and retry at
                // the next commit point.
                tracing::warn!("the run's database: commit postponed: {e}");
                self.txn_since = Some(Instant::now());
                return;
            }
            Err(_) if !self.conn.is_autocommit() => {
                // A failed COMMIT can leave the transaction open; end it so the next row starts cleanly.
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            Err(_) => {}
        }
        self.pending_rows = 0;
        self.note(result);
    }

    fn insert(&mut self, r: &RequestRecord) -> rusqlite::Result<()> {
        if self.txn_since.is_none() {
            self.conn.execute_batch("BEGIN")?;
            self.txn_since = Some(Instant::now());
        }
        let ok = r.success;
        self.itl_text.clear();
        if ok {
            pyjson::write_float_list(&mut self.itl_text, r.itl_s());
        } else {
            self.itl_text.push_str("[]");
        }
        self.chunk_text.clear();
        pyjson::write_float_list(
            &mut self.chunk_text,
            r.chunk_times.iter().map(|&t| crate::clock::secs(t)),
        );
        // Successful rows always carry token counts (0 when the server reported none, as evalscope's
        // `prompt or 0`); `cached_tokens` stays NULL unless the server reported it.
        let tokens = |v: Option<u64>| {
            if ok {
                v.and_then(|n| i64::try_from(n).ok())
            } else {
                None
            }
        };
        let when_ok = |v: f64| ok.then_some(v);
        // Base64 is ASCII: bound as TEXT without another UTF-8 pass.
        let messages = ToSqlOutput::Borrowed(ValueRef::Text(self.encoder.encode(r.responses())));
        let phases = r.phases().values();
        let mut stmt = self.conn.prepare_cached(INSERT_SQL)?;
        stmt.execute(params![
            &*r.request,
            r.start_time(),
            &self.itl_text,
            ok,
            messages,
            r.completed_time(),
            when_ok(r.latency_s()),
            when_ok(r.ttft_s()),
            tokens(Some(r.prompt_tokens())),
            tokens(Some(r.completion_tokens())),
            when_ok(crate::gpu_memory::peak_gib()),
            when_ok(r.tpot_s()),
            r.request_id.as_deref(),
            r.is_stream,
            r.status_code,
            r.error.as_deref(),
            r.scheduled_time(),
            r.start_time(),
            &self.chunk_text,
            tokens(r.usage.cached_tokens),
            r.failure.map(|k| k.label()),
            r.intended_prompt_tokens.and_then(|n| i64::try_from(n).ok()),
            tokens(r.reasoning.and_then(|s| s.reasoning_tokens)),
            tokens(r.reasoning.and_then(|s| s.answer_tokens)),
            r.reasoning.and_then(|s| s.first_reasoning_s),
            r.reasoning.and_then(|s| s.first_answer_s),
            r.turn.and_then(|t| i64::try_from(t.conversation).ok()),
            r.turn.map(|t| t.turn_index),
            r.endpoint_url.as_deref(),
            phases[0],
            phases[1],
            phases[2],
            phases[3],
            phases[4],
            phases[5],
        ])?;
        if let Some(o) = r.structured.as_deref() {
            // Call counts only where the request had tools (or calls came anyway).
            let calls = (o.has_tools || o.tool_calls > 0).then_some(o);
            self.conn.prepare_cached(TOOLS_SQL)?.execute(params![
                calls.map(|o| o.tool_calls),
                calls.map(|o| o.valid_tool_calls),
                calls.map(|o| o.invalid_tool_calls),
                o.first_tool_call_s,
                o.tool_call_tokens.and_then(|n| i64::try_from(n).ok()),
                o.calls_json.as_deref(),
                o.schema_valid,
                o.truncated,
                o.error.as_deref(),
                self.conn.last_insert_rowid(),
            ])?;
        }
        self.pending_rows += 1;
        Ok(())
    }
}

/// `true` for SQLite's "database is locked" (another connection holds a conflicting lock).
fn is_busy(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
}

/// An empty run database at `path` with the real `result` table, opened for the test to fill.
#[cfg(test)]
pub(crate) fn empty_for_test(path: &Path) -> Connection {
    Store::create(path, 100)
        .and_then(Store::finish)
        .expect("an empty run database");
    Connection::open(path).expect("opening it")
}
