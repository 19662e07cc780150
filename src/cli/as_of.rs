//! `--as-of`: which commands take it. Reads answer from a private store of the events held
//! then (see `Ctx::open_session`); anything that writes refuses it.

use super::{Command, Ctx};
use crate::error::{Error, Result};

/// Refuses `--as-of` for anything but the read commands.
pub fn check_command(ctx: &Ctx, command: &Command) -> Result<()> {
    let reads = matches!(
        command,
        Command::Show(_)
            | Command::List(_)
            | Command::Query(_)
            | Command::Context(_)
            | Command::History(_)
            | Command::Audit(_)
            | Command::Stats(_)
            | Command::Dump(_)
            | Command::Conflicts(_)
            | Command::SyncContext(_)
            | Command::Export(_)
    );
    if reads {
        Ok(())
    } else {
        // Not only writes: `verify`, `health` and the like check the log and the store as
        // they are now.
        refused(
            ctx,
            "this is no read command: it works on the log and the store as they are now",
            "drop --as-of",
        )
    }
}

/// Errors when `--as-of` was given: `why` says what the command does instead of reading.
pub fn refuse(ctx: &Ctx, why: &str) -> Result<()> {
    refused(ctx, why, "drop --as-of to write")
}

fn refused(ctx: &Ctx, why: &str, fix: &str) -> Result<()> {
    match &ctx.global.as_of {
        Some(t) => Err(Error::Usage(format!(
            "--as-of {t}: {why}; --as-of is for the read commands (show, list, query, context, \
             history, audit, stats, dump, conflicts, sync-context --check/--dry-run, export): \
             {fix}"
        ))),
        None => Ok(()),
    }
}
