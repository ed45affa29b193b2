//! Output files and text: one file per format.

pub mod args;
