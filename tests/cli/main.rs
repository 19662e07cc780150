//! Integration tests: the real binary on temporary workspaces, with a fixed clock and actor.

mod agents;
mod analytics;
mod apply_input;
mod common;
mod compaction;
mod contract;
mod dashboard;
mod docs_examples;
mod end_to_end;
mod failures;
mod foundation;
mod lifecycle;
mod lifecycle_decay;
mod lifecycle_stats;
mod links;
mod mcp;
mod mcp_tools;
mod merge;
mod policy;
mod replay;
mod retrieval;
mod retrieval_laws;
mod store_laws;

mod git_as_of;
mod git_conflicts;
mod git_install;
mod git_merge_matrix;
mod git_namespace;
mod git_sync_context;
mod git_transfer;
