//! `add`, `supersede` and `update`.

use super::entry_args::EntryFlags;
use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::log::writer::{Change, Written, write};
use crate::policy::validate::{EntryInput, check_create, check_patch, check_reason};

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    #[command(flatten)]
    pub entry: EntryFlags,
}

#[derive(Debug, clap::Args)]
pub struct SupersedeArgs {
    /// The entry to replace (any unique prefix)
    pub id: String,
    /// Why it is replaced
    #[arg(long)]
    pub reason: Option<String>,
    /// Fields of the replacement; those not given are copied from the replaced entry
    #[command(flatten)]
    pub entry: EntryFlags,
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The entry to change (any unique prefix)
    pub id: String,
    /// Why it changes
    #[arg(long)]
    pub reason: Option<String>,
    /// Remove valid_to (the entry no longer expires)
    #[arg(long, conflicts_with = "valid_to")]
    pub clear_valid_to: bool,
    #[command(flatten)]
    pub entry: EntryFlags,
}

pub fn print_written(ctx: &Ctx, w: &Written, verb: &str, out: &mut Out) {
    if ctx.global.json {
        let mut v = serde_json::to_value(w).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("success".into(), true.into());
            if let Some(e) = &w.entry {
                m.insert(
                    "entry".into(),
                    serde_json::Value::Object(projections::entry_json::to_flat_map(e)),
                );
            }
        }
        out.json(&v);
        return;
    }
    for warning in &w.warnings {
        super::output::warn(&format!("{}: {}", warning.field, warning.message));
    }
    if let Some(q) = &w.quarantined {
        super::output::warn(&super::quarantine_message(q));
    }
    if let Some(old) = &w.superseded {
        out.line(format!("{} (supersedes {old})", w.id));
    } else {
        let _ = verb;
        out.line(&w.id);
    }
}

pub fn add(ctx: &Ctx, args: AddArgs, out: &mut Out) -> Result<ExitCode> {
    let refused = |e| ctx.refused(args.project.as_deref(), "create", e);
    let input = args.entry.to_input().map_err(refused)?;
    let (fields, status) = check_create(&input).map_err(refused)?;
    let (project, missing) = super::apply::write_target(ctx, args.project.as_deref())?;
    let wctx = ctx.write_context_for(&project, "create")?;
    let check = |_: &crate::store::session::Session, _: Option<&projections::EntryState>| {
        Ok(Change::Create {
            fields: check_create(&input)?.0,
            status,
        })
    };
    let project = if missing {
        // Every check that needs no store, before the project is created for the write.
        let dry = crate::log::writer::WriteContext {
            dry_run: true,
            ..wctx.clone()
        };
        write(
            &project,
            &dry,
            Change::Create {
                fields: fields.clone(),
                status,
            },
            check,
        )?;
        super::apply::create_for_write(ctx, &project)?
    } else {
        project
    };
    let w = write(&project, &wctx, Change::Create { fields, status }, check)?;
    print_written(ctx, &w, "added", out);
    Ok(ExitCode::Ok)
}

/// The replacement's input: flags given override the replaced entry's fields.
pub fn inherit(input: &EntryInput, old: &projections::EntryState) -> EntryInput {
    let f = &old.fields;
    EntryInput {
        section: input
            .section
            .clone()
            .or_else(|| Some(f.section.as_str().into())),
        kind: input.kind.clone().or_else(|| Some(f.kind.as_str().into())),
        subject: input.subject.clone().or_else(|| Some(f.subject.clone())),
        scope: input.scope.clone().or_else(|| Some(f.scope.clone())),
        summary: input.summary.clone().or_else(|| Some(f.summary.clone())),
        content: input.content.clone().or_else(|| Some(f.content.clone())),
        tags: input.tags.clone().or_else(|| Some(f.tags.clone())),
        confidence: input.confidence.or(Some(f.confidence)),
        evidence: input.evidence.clone().or_else(|| {
            Some(
                f.evidence
                    .iter()
                    .map(|e| crate::policy::validate::EvidenceInput {
                        kind: Some(e.kind.as_str().into()),
                        uri: Some(e.uri.clone()),
                        note: Some(e.note.clone()),
                    })
                    .collect(),
            )
        }),
        status: input.status.clone(),
        valid_from: input
            .valid_from
            .clone()
            .or_else(|| Some(f.valid_from.clone())),
        valid_to: input.valid_to.clone().or_else(|| Some(f.valid_to.clone())),
        review_interval: input
            .review_interval
            .clone()
            .or_else(|| Some(f.review_interval.clone())),
        related_entries: input
            .related_entries
            .clone()
            .or_else(|| Some(f.related_entries.clone())),
    }
}

pub fn supersede(ctx: &Ctx, args: SupersedeArgs, out: &mut Out) -> Result<ExitCode> {
    let refused = |e| ctx.refused(None, "supersede", e);
    let input = args.entry.to_input().map_err(refused)?;
    check_reason(args.reason.as_deref()).map_err(refused)?;
    let project = ctx.project(None)?;
    let wctx = ctx.write_context_for(&project, "supersede")?;
    let template = Change::Deprecate {
        target: args.id.clone(),
        reason: None,
    };
    let reason = args.reason.clone();
    let w = write(&project, &wctx, template, |_, state| {
        let old = state.ok_or_else(|| crate::Error::Usage("supersede needs a target".into()))?;
        let (fields, status) = check_create(&inherit(&input, old))
            .map_err(|e| crate::log::writer::refused(&project, &wctx, "supersede", e))?;
        Ok(Change::Supersede {
            target: old.id.clone(),
            fields,
            status,
            reason,
        })
    })?;
    print_written(ctx, &w, "superseded", out);
    Ok(ExitCode::Ok)
}

pub fn update(ctx: &Ctx, args: UpdateArgs, out: &mut Out) -> Result<ExitCode> {
    let refused = |e| ctx.refused(None, "update", e);
    let mut input = args.entry.to_input().map_err(refused)?;
    if args.clear_valid_to {
        input.valid_to = Some(None);
    }
    check_reason(args.reason.as_deref()).map_err(refused)?;
    let project = ctx.project(None)?;
    let wctx = ctx.write_context_for(&project, "update")?;
    let template = Change::Deprecate {
        target: args.id.clone(),
        reason: None,
    };
    let reason = args.reason.clone();
    let mut archived = false;
    let w = write(&project, &wctx, template, |_, state| {
        let old = state.ok_or_else(|| crate::Error::Usage("update needs a target".into()))?;
        let set = check_patch(&input, &old.fields)
            .map_err(|e| crate::log::writer::refused(&project, &wctx, "update", e))?;
        refuse_no_op(old, &set, reason.as_deref())?;
        archived = crate::lifecycle::archive::restored_by_update(old);
        Ok(Change::Update {
            target: old.id.clone(),
            set,
            reason,
        })
    })?;
    if archived {
        // As `show` says it: the write restored the entry beside the update.
        super::output::note(&format!("{} was archived; updating it restored it", w.id));
    }
    print_written(ctx, &w, "updated", out);
    Ok(ExitCode::Ok)
}

/// Refuses an update that would write a version identical to the current one, as a repeated
/// pin or deprecate is refused: nothing would change but the log's length. With a reason it is
/// a review that found nothing to change, and is recorded (it renews `review_interval`).
fn refuse_no_op(
    old: &projections::EntryState,
    set: &serde_json::Map<String, serde_json::Value>,
    reason: Option<&str>,
) -> Result<()> {
    if reason.is_some() {
        return Ok(());
    }
    let (fields, status) = projections::fold::apply_set_to(&old.fields, set).map_err(|m| {
        crate::Error::Invalid(crate::policy::validate::Invalid::one("set", "type", m))
    })?;
    if fields != old.fields || status.is_some_and(|s| s != old.status) {
        return Ok(());
    }
    Err(crate::Error::Rejected {
        message: format!(
            "{} already has these values: the update would change nothing, and nothing was \
             written; give a value that differs, or --reason TEXT to record a review that \
             found nothing to change",
            old.id
        ),
    })
}

#[derive(Debug, clap::Args)]
pub struct ResolveArgs {
    /// The entry in conflict (any unique prefix)
    pub id: String,
    /// How the conflict was settled
    #[arg(long)]
    pub reason: Option<String>,
    /// For concurrent supersedes: the replacement to keep; the others are superseded by it
    #[arg(long, value_name = "ID")]
    pub winner: Option<String>,
    /// Field values to keep; fields not given keep the deterministic merge result
    #[command(flatten)]
    pub entry: EntryFlags,
}

/// The change that settles concurrent supersedes: the winner stays, the other replacements are
/// superseded by it.
fn winner_change(
    session: &crate::store::session::Session,
    old: &projections::EntryState,
    competing: &[String],
    winner: Option<&str>,
    input: &EntryInput,
    reason: Option<String>,
) -> Result<Change> {
    let list = competing.join(", ");
    let Some(winner) = winner else {
        return Err(crate::Error::Rejected {
            message: format!(
                "{} was superseded concurrently by {list}; choose the replacement to keep with \
                 --winner ID (the others are superseded by it)",
                old.id
            ),
        });
    };
    if *input != EntryInput::default() {
        return Err(crate::Error::Usage(
            "--winner settles concurrent supersedes; field values belong to the replacement: \
             change it with `memlog update` afterwards"
                .into(),
        ));
    }
    let winner = session.resolve(winner)?;
    // Each side's outcome now: its replacement, or the newer entry its branch superseded that
    // one by (a side may have gone on after the fork).
    let mut ends = Vec::new();
    for c in competing {
        ends.push(crate::log::writer::line_end(session.store(), c, competing)?);
    }
    let line_of_winner = competing
        .iter()
        .zip(&ends)
        .position(|(c, end)| *c == winner || end.as_ref().is_some_and(|e| e.id == winner));
    let Some(line_of_winner) = line_of_winner else {
        let later: Vec<&str> = competing
            .iter()
            .zip(&ends)
            .filter_map(|(c, end)| end.as_ref().filter(|e| e.id != *c).map(|e| e.id.as_str()))
            .collect();
        return Err(crate::Error::Rejected {
            message: format!(
                "{winner} is not one of the replacements of {} ({list}){}",
                old.id,
                if later.is_empty() {
                    String::new()
                } else {
                    format!(
                        " nor what a replacement was superseded by since ({})",
                        later.join(", ")
                    )
                }
            ),
        });
    };
    // The other sides' outcomes give way to the winner: the replacement of each, or what its
    // branch replaced it with since (superseding only the replacement, itself superseded
    // already, left that newer entry active beside the winner, and no conflict to show it).
    let mut losers = Vec::new();
    for (i, end) in ends.into_iter().enumerate() {
        if i == line_of_winner {
            continue;
        }
        if let Some(state) = end
            && state.status == projections::Status::Active
            && state.id != winner
        {
            losers.push((state.id.clone(), state.heads.clone()));
        }
    }
    // Resolves merged from several branches, each with its own winner, leave the entries of
    // the sides' lines superseded concurrently by two of them: each in conflict. They give way
    // to this winner too, with all their heads as parents, which settles them.
    for c in competing {
        let mut at = c.clone();
        let mut seen = std::collections::HashSet::new();
        while seen.insert(at.clone()) {
            let Some(state) = session.store().entry(&at)? else {
                break;
            };
            let superseded = state.status == projections::Status::Superseded;
            if state.id != winner
                && superseded
                && state.in_conflict()
                && !losers.iter().any(|(id, _)| *id == state.id)
            {
                losers.push((state.id.clone(), state.heads.clone()));
            }
            match state.superseded_by {
                Some(by) if superseded => at = by,
                _ => break,
            }
        }
    }
    // Two resolves that chose different winners on two branches leave, once merged, each
    // replacement superseded by another: none active. The winner chosen now is made active
    // again (a replacement superseded by an entry of its own line is left as it is).
    let restore = session
        .store()
        .entry(&winner)?
        .filter(|w| {
            w.status == projections::Status::Superseded
                && w.superseded_by
                    .as_ref()
                    .is_some_and(|by| competing.contains(by))
        })
        .map(|w| w.heads);
    Ok(Change::ResolveWinner {
        target: old.id.clone(),
        winner,
        losers,
        restore,
        reason,
    })
}

/// Refuses to accept the merge of a conflict in which one side superseded the entry and another
/// changed its status otherwise (a deprecation): accepting it would leave the replacement active
/// beside an entry that no longer names it, a fact nobody chose. The user keeps the replacement
/// with `--winner`, or deprecates it and resolves again.
fn refuse_orphaned_replacement(
    session: &crate::store::session::Session,
    old: &projections::EntryState,
    competing: &[String],
) -> Result<()> {
    let [replacement] = competing else {
        return Ok(());
    };
    if old.status == projections::Status::Superseded {
        // The merge keeps the replacement: nothing is left without its predecessor.
        return Ok(());
    }
    let events = session.store().entry_events(&old.id)?;
    let conflict = crate::git::conflicts::describe(old, &events);
    let active = session
        .store()
        .entry(replacement)?
        .is_some_and(|r| r.status == projections::Status::Active);
    if !active || !conflict.disputed.iter().any(|f| f == "status") {
        return Ok(());
    }
    Err(crate::Error::Rejected {
        message: format!(
            "{id} was superseded by {replacement} on one side and made {status} on the other: \
         keep the replacement with `memlog resolve {id} --winner {replacement}`, or deprecate it \
         (`memlog deprecate {replacement} --reason \"...\"`) and run `memlog resolve {id}` again",
            id = old.id,
            status = old.status.as_str(),
        ),
    })
}

pub fn resolve(ctx: &Ctx, args: ResolveArgs, out: &mut Out) -> Result<ExitCode> {
    let refused = |e| ctx.refused(None, "resolve", e);
    let input = args.entry.to_input().map_err(refused)?;
    check_reason(args.reason.as_deref()).map_err(refused)?;
    let project = ctx.project(None)?;
    let wctx = ctx.write_context_for(&project, "resolve")?;
    let template = Change::Resolve {
        target: args.id.clone(),
        set: serde_json::Map::new(),
        reason: None,
    };
    let reason = args.reason.clone();
    let w = write(&project, &wctx, template, |session, state| {
        let old = state.ok_or_else(|| crate::Error::Usage("resolve needs a target".into()))?;
        if !old.in_conflict() {
            // Refused by the write's own checks, as an entry without a conflict: its
            // replacements may still be several, from a conflict that `--winner` settled.
            return Ok(Change::Resolve {
                target: old.id.clone(),
                set: serde_json::Map::new(),
                reason,
            });
        }
        let competing = crate::log::writer::competing_replacements(session.store(), old)?;
        if args.winner.is_none() {
            refuse_orphaned_replacement(session, old, &competing)?;
        }
        if competing.len() > 1 || args.winner.is_some() {
            return winner_change(
                session,
                old,
                &competing,
                args.winner.as_deref(),
                &input,
                reason,
            );
        }
        let set = if input == EntryInput::default() {
            serde_json::Map::new()
        } else {
            check_patch(&input, &old.fields)
                .map_err(|e| crate::log::writer::refused(&project, &wctx, "resolve", e))?
        };
        Ok(Change::Resolve {
            target: old.id.clone(),
            set,
            reason,
        })
    })?;
    print_written(ctx, &w, "resolved", out);
    Ok(ExitCode::Ok)
}
