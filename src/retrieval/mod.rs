//! Retrieval: what an agent gets when it asks memory a question.
//!
//! - [`tokenize`]: words to stemmed index terms; [`typo`]: one-letter corrections
//! - [`features`], [`text_index`]: the text index, a projection kept by the store
//! - [`filters`], [`scope`]: which entries a query may return, smart defaults, scope hierarchy
//! - [`bm25`], [`rank`]: text relevance, the composite score and how they combine
//! - [`search`]: gathering candidates, scoring and the final order over the project and
//!   `global`; [`candidates`]: the compact candidate lists it merges; `postings`: reading a
//!   term's postings from a store
//! - [`budget`], [`context`]: an AgentTask's `memory_context` and the prompt within a budget
//! - [`query_log`]: the local log of queries, for statistics and slow-query warnings

pub mod bm25;
pub mod budget;
pub mod candidates;
pub mod context;
pub mod features;
pub mod filters;
mod postings;
pub mod query_log;
pub mod rank;
pub mod scope;
pub mod search;
pub mod text_index;
pub mod tokenize;
pub mod typo;
