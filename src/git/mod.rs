//! Working with git: conflicts between concurrent writers, the merge driver and hooks,
//! generated ai-context files, the log as it was (`--as-of`), export and import, namespaces.

pub mod as_of;
pub mod conflicts;
pub mod export;
pub mod import;
pub mod install;
pub mod merge_driver;
pub mod namespace;
pub mod parents_first;
pub mod repo;
pub mod staged;
pub mod sync_context;
