//! Online accumulation of finished records into a summary and percentiles.
