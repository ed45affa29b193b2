//! API plugins: how a request body is built and how one response event is read.

mod event_scan;
pub mod openai;
pub mod openai_event;
