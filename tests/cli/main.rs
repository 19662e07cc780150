//! Integration tests: the real binary on temporary workspaces, with a fixed clock and actor.

mod analytics;
mod common;
mod dashboard;
mod end_to_end;
mod failures;
mod foundation;
mod merge;
mod policy;
mod replay;
mod retrieval;
mod retrieval_laws;
mod store_laws;
