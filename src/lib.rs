//! memlog: a durable, auditable memory for AI agents, kept as a content-addressed event log.

pub mod evidence_uri;
pub mod secret_scan;
