//! memlog: a durable, auditable memory for AI agents, kept as a content-addressed event log.
//!
//! The library never prints: it returns values and typed errors. The `cli` module is the only
//! place that talks to the user.

pub mod analytics;
pub mod cli;
pub mod clock;
pub mod error;
pub mod lifecycle;
pub mod log;
pub mod mcp;
pub mod parallel;
pub mod policy;
pub mod project;
pub mod retrieval;
pub mod safe_text;
pub mod store;

pub mod git;
pub mod workspace;

pub use error::{Error, Result};
