//! `init`.

use super::{Ctx, ExitCode, Out};
use crate::error::Result;
use crate::workspace::{ProjectName, Workspace};

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Project name: letters, digits, `.`, `_`, `-`
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: String,
}

pub fn run(ctx: &Ctx, args: InitArgs, out: &mut Out) -> Result<ExitCode> {
    let name = ProjectName::new(&args.project)?;
    let ws = match &ctx.global.workspace {
        Some(dir) => Workspace::at(dir)?,
        // A new workspace starts where git's does, else in the current directory.
        None => Workspace::discover(&std::env::current_dir()?)
            .or_else(|_| Workspace::at(&std::env::current_dir()?))?,
    };
    let report = crate::project::init(&ws, &name, &ctx.now())?;
    if out.json {
        let mut v = serde_json::to_value(&report).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("success".into(), true.into());
        }
        out.json(&v);
    } else if report.created {
        out.line(format!(
            "initialized {} at {}",
            report.project,
            report.path.display()
        ));
    } else {
        out.line(format!(
            "{} is already initialized at {}",
            report.project,
            report.path.display()
        ));
    }
    Ok(ExitCode::Ok)
}
