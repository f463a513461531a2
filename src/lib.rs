//! promptlab: run a claims assistant's chat turns locally.
//!
//! The pipeline, in the order a turn runs through it:
//! request → claim → prompt assembly → tools → model call → loop → events →
//! sinks (terminal, NDJSON/SSE, run log) → eval and compare.
//! See `ARCHITECTURE.md` for the picture.

pub mod cases;
pub mod chat;
pub mod claims;
pub mod compare;
pub mod cost;
pub mod digest;
pub mod document;
pub mod eval;
pub mod event;
pub mod exit;
pub mod index;
pub mod input;
pub mod judge;
pub mod keyed_files;
pub mod markdown;
pub mod models;
pub mod prompts;
pub mod provider;
pub mod report;
pub mod runs;
pub mod serve;
pub mod sink;
pub mod stats;
pub mod table;
pub mod telemetry;
pub mod text;
pub mod tools;
pub mod whole_file;
pub mod worker;
