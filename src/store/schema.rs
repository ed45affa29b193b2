//! The `result` table's SQL: evalscope's 14 columns in its order, llmperf's extra columns after them
//! (the connection phases last, docs/phases.md), and the statements the writer runs per row.

/// evalscope's columns (`utils/db_util.py`), in its order and with its types.
pub(super) const EVALSCOPE_COLUMNS: &str = "request TEXT, start_time REAL, inter_token_latencies TEXT, success INTEGER, \
     response_messages TEXT, completed_time REAL, latency REAL, first_chunk_latency REAL, prompt_tokens INTEGER, \
     completion_tokens INTEGER, max_gpu_memory_cost REAL, time_per_output_token REAL, request_id TEXT, \
     is_stream INTEGER";

/// llmperf's extra columns, appended after evalscope's.
pub(super) const EXTRA_COLUMNS: &str =
    "status_code INTEGER, error TEXT, scheduled_time REAL, send_time REAL, \
     chunk_times TEXT, cached_tokens INTEGER, failure_kind TEXT, intended_prompt_tokens INTEGER, \
     reasoning_tokens INTEGER, answer_tokens INTEGER, first_reasoning_latency REAL, first_answer_latency REAL, \
     conversation_id INTEGER, turn_index INTEGER, tool_call_count INTEGER, valid_tool_calls INTEGER, \
     invalid_tool_calls INTEGER, first_tool_call_latency REAL, tool_call_tokens INTEGER, tool_calls TEXT, \
     schema_valid INTEGER, truncated INTEGER, validation_error TEXT, endpoint TEXT, phase_dns REAL, \
     phase_connect REAL, phase_tls REAL, phase_write REAL, phase_headers REAL, phase_first_byte REAL";

pub(super) const INSERT_SQL: &str = "INSERT INTO result (request, start_time, inter_token_latencies, success, \
     response_messages, completed_time, latency, first_chunk_latency, prompt_tokens, completion_tokens, \
     max_gpu_memory_cost, time_per_output_token, request_id, is_stream, status_code, error, scheduled_time, \
     send_time, chunk_times, cached_tokens, failure_kind, intended_prompt_tokens, reasoning_tokens, \
     answer_tokens, first_reasoning_latency, first_answer_latency, conversation_id, turn_index, endpoint, \
     phase_dns, phase_connect, phase_tls, phase_write, phase_headers, phase_first_byte) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, \
     ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35)";

/// The tool-call columns of the row just inserted: set only for a request that offered tools or asked for
/// JSON, so any other row costs exactly the insert above (its tool-call columns stay NULL).
pub(super) const TOOLS_SQL: &str = "UPDATE result SET tool_call_count = ?1, valid_tool_calls = ?2, \
     invalid_tool_calls = ?3, first_tool_call_latency = ?4, tool_call_tokens = ?5, tool_calls = ?6, \
     schema_valid = ?7, truncated = ?8, validation_error = ?9 WHERE rowid = ?10";
