//! Tombstone lines (see [`projections::tombstone`]): what `gc` leaves of an event whose content
//! a purge removed. A tombstone's id cannot be recomputed from its content, so the purge it names
//! vouches for it, and every reader checks that: a line that merely claims to be a tombstone
//! could otherwise say anything under the id of a real event.

use projections::{Event, EventData};

/// The key only a tombstone line holds, as it is written.
const MARK: &[u8] = b"\"purged_by\":";

/// Whether `line` may be a tombstone (it holds the `purged_by` key). Cheap enough for every
/// line of a rebuild; [`problem`] says whether it really is one, vouched for.
pub fn marked(line: &str) -> bool {
    memchr::memmem::find(line.as_bytes(), MARK).is_some()
}

/// Why the tombstone `line` of event `id` is not vouched for, or `None` when it is (or is no
/// tombstone). `purge_of` finds the event the line names, if the log holds it.
///
/// # Errors
/// Those of `purge_of`.
pub fn problem(
    id: &str,
    line: &str,
    purge_of: impl FnOnce(&str) -> crate::error::Result<Option<Event>>,
) -> crate::error::Result<Option<String>> {
    let Some((purge, rest)) = projections::tombstone::split(line) else {
        return Ok(None);
    };
    Ok(match purge_of(&purge)?.map(|e| e.data) {
        None => Some(format!(
            "tombstone of event {id} names purge {purge}, which is not in the log"
        )),
        Some(EventData::Purge { redacted, .. }) => match redacted.get(id) {
            Some(d) if *d == projections::tombstone::digest_of_line(&rest) => None,
            Some(_) => Some(format!(
                "tombstone of event {id} does not match the digest purge {purge} recorded: the \
                 line was altered"
            )),
            None => Some(format!(
                "tombstone of event {id}: purge {purge} does not list this event"
            )),
        },
        Some(_) => Some(format!(
            "tombstone of event {id} names event {purge}, which is not a purge"
        )),
    })
}

/// The tombstones among `events` (each with its line) that nothing vouches for, with why: a
/// purge among `events`, or one `stored` finds, must. For an import, which copies a tombstone
/// line as it is (its id cannot be recomputed) only when the purge it names comes with it.
///
/// # Errors
/// Those of `stored`.
pub fn unvouched<'a>(
    events: &[(&'a Event, &'a str)],
    stored: impl Fn(&str) -> crate::error::Result<Option<Event>>,
) -> crate::error::Result<std::collections::HashMap<String, String>> {
    let mut out = std::collections::HashMap::new();
    if !events.iter().any(|(_, line)| marked(line)) {
        return Ok(out);
    }
    let purges: std::collections::HashMap<&str, &Event> = events
        .iter()
        .filter(|(e, _)| matches!(e.data, EventData::Purge { .. }))
        .map(|(e, _)| (e.id.as_str(), *e))
        .collect();
    for (event, line) in events.iter().filter(|(_, line)| marked(line)) {
        let purge_of = |p: &str| match purges.get(p) {
            Some(e) => Ok(Some((*e).clone())),
            None => stored(p),
        };
        if let Some(why) = problem(&event.id, line, purge_of)? {
            out.insert(event.id.clone(), why);
        }
    }
    Ok(out)
}

/// The first of `events` (each with its line, and the line's number and byte offset in the
/// log at `path`) that [`unvouched`] names, as the [`crate::error::Error::CorruptLog`] a reader
/// stops with.
///
/// # Errors
/// That error, and those of `stored`.
pub fn check(
    path: &std::path::Path,
    events: &[(&Event, &str, usize, u64)],
    stored: impl Fn(&str) -> crate::error::Result<Option<Event>>,
) -> crate::error::Result<()> {
    let pairs: Vec<(&Event, &str)> = events.iter().map(|(e, l, _, _)| (*e, *l)).collect();
    let unvouched = unvouched(&pairs, stored)?;
    match events.iter().find(|(e, ..)| unvouched.contains_key(&e.id)) {
        None => Ok(()),
        Some((event, _, line, offset)) => Err(crate::error::Error::CorruptLog {
            path: path.to_path_buf(),
            line: *line,
            offset: *offset,
            problem: unvouched[&event.id].clone(),
        }),
    }
}
