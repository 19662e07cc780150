//! Secret detection (in progress).
