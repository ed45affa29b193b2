//! API plugins: how a request body is built and how one response event is read.

pub mod embedding;
mod event_scan;
pub mod openai;
pub mod openai_event;
pub mod reply_text;
pub mod usage_fallback;
