//! The lifecycle state machine of the requirements: which transitions may happen.
//!
//! ```text
//! active   -> decaying   decay score below the threshold
//! decaying -> archived   effective TTL passed without access
//! active   -> archived   effective TTL passed without access
//! archived -> active     read (restored)
//! decaying -> active     read: an access resets decay (requirement 1.3)
//! archived -> expired    archive retention passed
//! expired  -> (purged)   expired retention passed, or `memlog purge` (a `purge` event)
//! any      -> pinned     `memlog pin` (a flag beside the state; `unpin` returns to it)
//! ```

use projections::Lifecycle;

/// Every allowed `(from, to)` pair of lifecycle states.
pub const VALID: [(Lifecycle, Lifecycle); 6] = [
    (Lifecycle::Active, Lifecycle::Decaying),
    (Lifecycle::Decaying, Lifecycle::Archived),
    (Lifecycle::Active, Lifecycle::Archived),
    (Lifecycle::Archived, Lifecycle::Active),
    (Lifecycle::Decaying, Lifecycle::Active),
    (Lifecycle::Archived, Lifecycle::Expired),
];

/// True when the state machine allows `from -> to`.
pub fn is_valid(from: Lifecycle, to: Lifecycle) -> bool {
    VALID.contains(&(from, to))
}

/// Refuses a transition the state machine does not allow, naming both states.
///
/// # Errors
/// A message naming `from`, `to` and the transitions allowed from `from`.
pub fn check(from: Lifecycle, to: Lifecycle) -> Result<(), String> {
    if is_valid(from, to) {
        return Ok(());
    }
    let allowed: Vec<&str> = VALID
        .iter()
        .filter(|(f, _)| *f == from)
        .map(|(_, t)| t.as_str())
        .collect();
    Err(format!(
        "lifecycle transition from `{from}` to `{to}` is not allowed; from `{from}` an entry can go to {}",
        if allowed.is_empty() {
            "no other state (only a purge removes it)".to_owned()
        } else {
            allowed.join(", ")
        }
    ))
}
