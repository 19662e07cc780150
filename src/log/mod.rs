//! The event log on disk: reading complete lines, appending durably, locks, torn-tail recovery,
//! and the writer, which checks each change and appends its events.

pub mod by_offset;
pub mod durable;
pub mod line_id;
pub mod lock;
pub mod read;
pub mod stamp;
pub mod tombstones;
pub mod verify;
pub mod writer;
