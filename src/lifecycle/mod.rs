//! Lifecycle management: decay, importance, the access log, the state machine, evaluation in
//! batches (`lifecycle run` and its daemon), archive and restore, purge and `gc`, freshness and
//! evidence checks, and the lifecycle metrics. Every automatic change is written to the log as
//! an event with its reason; replay never recomputes decay. See docs/LIFECYCLE.md.

pub mod access_log;
pub mod access_summary;
pub mod archive;
pub mod daemon;
pub mod decay;
pub mod engine;
pub mod evidence;
pub mod freshness;
pub mod importance;
pub mod machine;
pub mod metrics;
pub mod policy;
pub mod purge;
pub mod run;
