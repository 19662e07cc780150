//! `deprecate`, `pin` and `unpin`: changes that carry only a reason.

use super::write_ops::print_written;
use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::log::writer::{Change, write};
use crate::policy::validate::check_reason;

#[derive(Debug, clap::Args)]
pub struct ReasonArgs {
    /// The entry (any unique prefix)
    pub id: String,
    /// Why
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy)]
pub enum Op {
    Deprecate,
    Pin,
    Unpin,
}

pub fn run(ctx: &Ctx, op: Op, args: ReasonArgs, out: &mut Out) -> Result<ExitCode> {
    let operation = match op {
        Op::Deprecate => "deprecate",
        Op::Pin => "pin",
        Op::Unpin => "unpin",
    };
    check_reason(args.reason.as_deref()).map_err(|e| ctx.refused(None, operation, e))?;
    let project = ctx.project(None)?;
    let wctx = ctx.write_context_for(&project, operation)?;
    let make = |target: String, reason: Option<String>| match op {
        Op::Deprecate => Change::Deprecate { target, reason },
        Op::Pin => Change::Pin { target, reason },
        Op::Unpin => Change::Unpin { target, reason },
    };
    let template = make(args.id.clone(), args.reason.clone());
    let w = write(&project, &wctx, template, |_, state| {
        let id = state.map(|s| s.id.clone()).unwrap_or_default();
        Ok(make(id, args.reason.clone()))
    })?;
    print_written(ctx, &w, "changed", out);
    Ok(ExitCode::Ok)
}
