//! `dashboard`: the terminal dashboard, or one frame of it on stdout with `--once`.

use super::stats::{TargetArgs, read};
use super::{Ctx, ExitCode, Out};
use crate::analytics::RangeSpec;
use crate::analytics::dashboard::{self, App, Loaded, render};
use crate::error::{Error, Result};
use crate::project::Project;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct DashboardArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Seconds between refreshes
    #[arg(long, value_name = "SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=86_400), allow_negative_numbers = true)]
    pub refresh: u64,
    /// Print one frame to stdout and exit (for scripts)
    #[arg(long)]
    pub once: bool,
    /// Frame size for --once, WIDTHxHEIGHT
    #[arg(long, value_name = "WxH", default_value = "80x24", requires = "once")]
    pub size: String,
}

fn parse_size(s: &str) -> Result<(u16, u16)> {
    let parsed = s
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u16>().ok()?, h.parse::<u16>().ok()?)));
    use crate::analytics::dashboard::render::{MIN_HEIGHT, MIN_WIDTH};
    match parsed {
        Some((w, h)) if (MIN_WIDTH..=1000).contains(&w) && (MIN_HEIGHT..=1000).contains(&h) => {
            Ok((w, h))
        }
        _ => Err(Error::Usage(format!(
            "--size: `{}` is not a frame size the dashboard can draw; use WIDTHxHEIGHT from \
             {MIN_WIDTH}x{MIN_HEIGHT} to 1000x1000, e.g. 160x48",
            s.escape_debug()
        ))),
    }
}

/// `NO_COLOR` set to anything but the empty string turns colour off (no-color.org).
fn colour_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub fn run(ctx: &Ctx, args: DashboardArgs, out: &mut Out) -> Result<ExitCode> {
    if out.json {
        return Err(Error::Usage(
            "dashboard prints no JSON; for the statistics as JSON use `memlog stats --json`".into(),
        ));
    }
    let range = args.target.range_spec(RangeSpec::Last(7))?;
    let size = parse_size(&args.size)?;
    let projects = args.target.projects(ctx)?;
    let mut targets: Vec<String> = Vec::new();
    if args.target.all {
        targets.push("all projects".into());
        targets.extend(projects.iter().map(|p| p.name.to_string()));
    } else {
        targets.extend(projects.iter().map(|p| p.name.to_string()));
    }
    let app = App::new(
        targets,
        range,
        Duration::from_secs(args.refresh),
        colour_wanted(),
    );
    let all = args.target.all;
    let load = |app: &App| -> Result<Loaded> {
        let chosen: Vec<Project> = if all && app.target > 0 {
            projects.get(app.target - 1).cloned().into_iter().collect()
        } else {
            projects.clone()
        };
        let (stats, dates, at) = read(ctx, &chosen, &app.range)?;
        let range = match (&dates.from, &dates.to) {
            (None, None) => dates.label.clone(),
            (f, t) => format!(
                "{} ({}..{})",
                dates.label,
                f.as_deref().unwrap_or(""),
                t.as_deref().unwrap_or("")
            ),
        };
        Ok(Loaded { stats, at, range })
    };
    if args.once {
        let mut app = app;
        let loaded = load(&app)?;
        app.take(Ok(loaded));
        app.color = false;
        let buffer = render::render_buffer(&app.screen(), size.0, size.1);
        let text = render::buffer_text(&buffer);
        out.line(text.trim_end_matches('\n'));
        return Ok(ExitCode::Ok);
    }
    dashboard::run(app, load)?;
    Ok(ExitCode::Ok)
}
