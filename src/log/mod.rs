//! The event log on disk: reading complete lines, appending durably, locks, torn-tail recovery.

pub mod durable;
pub mod line_id;
pub mod lock;
pub mod read;
pub mod stamp;
pub mod tombstones;
pub mod verify;
