//! Evidence URI checks (in progress).
