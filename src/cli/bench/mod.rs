//! `bench`: builds workspaces the way users do and times memlog as users run it, one whole
//! process per operation, so start-up, locks, opening the store and catching up are all counted.
//!
//! Workspaces are built by `apply` of a JSON Lines file followed by single-process writes
//! (create, supersede, pin), and separately grown by one `add` process per entry. Everything is
//! written inside one directory the bench creates for the run (`memlog-bench-<pid>`, in `--dir`
//! or the system temp dir), and only that directory is ever removed.

mod catch_up;
mod child;
mod concurrency;
mod eval_data;
mod locomo;
mod query_bench;
mod report;
mod retrieval_eval;
mod workload;

use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::project::{self, Project};
use crate::workspace::{ProjectName, Workspace};
use child::{Memlog, Outcome, PROJECT};
use report::{Check, Errors, Footprint, Row};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub use child::{PEAK_RSS_ENV, report_peak_rss};

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Sizes of the workspaces built by `apply` of a JSON Lines file, in entries (comma-separated)
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000", allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    entries: Vec<usize>,
    /// Sizes of the workspaces grown by one `add` process per entry (comma-separated)
    #[arg(long, value_delimiter = ',', default_value = "1000,10000", allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    grown: Vec<usize>,
    /// Single-process writes after the bulk apply: create, supersede and pin in turn
    #[arg(long, default_value_t = 200, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    writes: usize,
    /// Runs of each fast operation (show, list, stats, add); the median is reported
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    runs: usize,
    /// Runs of each slow operation (apply, rebuild, verify, catch-up)
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    slow_runs: usize,
    /// Events a simulated `git pull` brings into the largest applied workspace
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    pull_events: usize,
    /// Concurrency run: processes creating entries
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    writers: usize,
    /// Concurrency run: processes superseding, deprecating and pinning entries
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    mutators: usize,
    /// Concurrency run: processes reading (show, list, stats) until the writers finish
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    readers: usize,
    /// Concurrency run: operations of each writer and each mutator
    #[arg(long, default_value_t = 25, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<usize>)]
    ops: usize,
    /// Phases to leave out (comma-separated)
    #[arg(long, value_delimiter = ',', value_enum)]
    skip: Vec<Phase>,
    /// Directory in which to create the bench's own directory [default: the system temp dir]
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Keep the bench's directory afterwards, with the workspaces it built
    #[arg(long)]
    keep: bool,
    /// Run the retrieval evaluation instead: recall@5 and MRR of `query` on a generated data
    /// set, beside SQLite FTS5 BM25 (needs the sqlite3 command for the reference)
    #[arg(long)]
    retrieval: bool,
    /// Seed of the retrieval evaluation's data set
    #[arg(long, default_value_t = 7, allow_negative_numbers = true, value_parser = crate::cli::numbers::whole::<u64>)]
    seed: u64,
    /// Run the retrieval evaluation on the LoCoMo conversations instead of the generated set:
    /// `locomo10.json`, or the directory of its conversations
    #[arg(long, value_name = "PATH")]
    locomo: Option<PathBuf>,
    /// With the retrieval evaluation: write the questions `query` missed (not in its first
    /// five) to FILE as JSON Lines, each with the expected and the returned summaries
    #[arg(long, value_name = "FILE")]
    misses: Option<PathBuf>,
}

/// Phases that `--skip` can leave out; the applied workspaces and their reads always run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Phase {
    /// The workspaces grown by one process per entry
    Grown,
    /// `rebuild` of each applied workspace
    Rebuild,
    /// `verify` of each applied workspace
    Verify,
    /// `import` of each applied workspace's events export into a new project
    Import,
    /// Catch-up after a pull and after a rewritten log, on the largest applied workspace
    CatchUp,
    /// The concurrent processes, on the largest applied workspace
    Concurrency,
}

/// Targets, from the issue that defined the bench.
const ADD_MS: f64 = 10.0;
const READ_MS: f64 = 15.0;
const READ_RSS_MIB: f64 = 50.0;
/// `query` with default filters and a two-word text, whole process (the retrieval issue).
const QUERY_MS: f64 = 10.0;
const APPLY_PER_SEC: f64 = 20_000.0;
/// Bulk throughput is judged from this size on; below it the fixed cost of a process dominates.
const APPLY_JUDGED_FROM: usize = 10_000;
/// "In seconds": a catch-up must finish within a few seconds, not minutes.
const CATCH_UP_MS: f64 = 10_000.0;

#[derive(Debug, Serialize)]
struct Report {
    machine: report::Machine,
    command: Vec<String>,
    results: Vec<Row>,
    workspaces: Vec<Footprint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<concurrency::Report>,
    targets: Targets,
    /// Failed processes by error code, over every phase.
    errors: Errors,
}

#[derive(Debug, Serialize)]
struct Targets {
    met: usize,
    missed: usize,
    checks: Vec<Check>,
}

/// The bench's own directory: removed at the end (also on failure) unless `--keep`.
struct OwnedDir {
    path: PathBuf,
    keep: bool,
}

impl OwnedDir {
    /// Creates `parent/memlog-bench-<pid>`; refuses one that exists, which the bench did not
    /// create.
    fn create(parent: &Path, keep: bool) -> Result<Self> {
        fs_err::create_dir_all(parent)?;
        let path = parent.join(format!("memlog-bench-{}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => Ok(Self { path, keep }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::Usage(format!(
                "bench: {} already exists; the bench writes only into a directory it creates: \
                 move it away or choose another --dir",
                path.display()
            ))),
            Err(e) => Err(Error::Io(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", path.display()),
            ))),
        }
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        if !self.keep {
            // Best effort: what cannot be removed is left in the temp dir, named by the report.
            let _ = fs_err::remove_dir_all(&self.path);
        }
    }
}

/// Progress on standard error, so that standard output stays a table or one JSON document.
#[expect(
    clippy::print_stderr,
    reason = "bench runs for minutes; progress must not mix with its JSON on stdout"
)]
fn progress(message: &str) {
    eprintln!("bench: {message}");
}

/// Lines of a log (its events).
fn log_lines(path: &Path) -> Result<usize> {
    let bytes = fs_err::read(path)?;
    Ok(bytes.iter().filter(|b| **b == b'\n').count())
}

/// One workspace the bench built.
struct Built {
    root: PathBuf,
    project: Project,
    entries: usize,
    /// Entry ids in creation order.
    ids: Vec<String>,
    /// Ids that the setup writes changed (superseded or pinned); the rest are untouched.
    touched: usize,
}

impl Built {
    fn events(&self) -> Result<usize> {
        log_lines(&self.project.log_path())
    }
}

struct Bench<'o> {
    args: BenchArgs,
    memlog: Memlog,
    dir: PathBuf,
    out: &'o mut Out,
    rows: Vec<Row>,
    workspaces: Vec<Footprint>,
    now: String,
}

pub fn run(ctx: &Ctx, args: BenchArgs, out: &mut Out) -> Result<ExitCode> {
    if args.entries.contains(&0) || args.grown.contains(&0) {
        return Err(Error::Usage(
            "bench: sizes in --entries and --grown must be positive".into(),
        ));
    }
    if args.runs == 0 || args.slow_runs == 0 {
        return Err(Error::Usage(
            "bench: --runs and --slow-runs must be positive".into(),
        ));
    }
    let exe = std::env::current_exe()?;
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let owned = OwnedDir::create(&parent, args.keep)?;
    let scratch = owned.path.join("scratch");
    fs_err::create_dir(&scratch)?;
    if args.retrieval || args.locomo.is_some() {
        let data = match &args.locomo {
            Some(path) => locomo::load(path)?,
            None => eval_data::generate(args.seed),
        };
        let memlog = Memlog::new(exe, scratch);
        let report = retrieval_eval::run(&memlog, &owned.path, &data, args.misses.as_deref())?;
        if out.json {
            out.json(&report);
        } else {
            out.line(format!(
                "retrieval evaluation: {}, {} memories, {} questions",
                report.data, report.memories, report.questions
            ));
            out.line(format!(
                "{:<56} {:>9} {:>9}  recall@5 by style",
                "ranker", "recall@5", "MRR@10"
            ));
            for s in &report.scores {
                let styles: Vec<String> = s
                    .recall_at_5_by_style
                    .iter()
                    .map(|(k, v)| format!("{k} {v:.3}"))
                    .collect();
                out.line(format!(
                    "{:<56} {:>9.3} {:>9.3}  {}",
                    s.ranker,
                    s.recall_at_5,
                    s.mrr_at_10,
                    styles.join(", ")
                ));
            }
        }
        return Ok(ExitCode::Ok);
    }
    let machine = report::machine();
    if !out.json {
        out.line(format!(
            "machine: {} cpus ({}), {} GiB, {} {}, load {}, {} build",
            machine.cpus,
            machine.cpu_model.as_deref().unwrap_or("unknown cpu"),
            machine.memory_gib.map_or("?".into(), |m| format!("{m:.1}")),
            machine.os,
            machine.arch,
            machine.load_average.as_deref().unwrap_or("?"),
            machine.build
        ));
        out.line(format!("workspaces in {}", owned.path.display()));
        out.line(report::TABLE_HEADER);
    }
    let mut bench = Bench {
        memlog: Memlog::new(exe, scratch),
        dir: owned.path.clone(),
        out,
        rows: Vec::new(),
        workspaces: Vec::new(),
        now: ctx.now(),
        args,
    };
    let concurrency = bench.run_all()?;
    let mut checks: Vec<Check> = bench.rows.iter().flat_map(|r| r.checks.clone()).collect();
    let mut errors = report::Errors::new();
    for row in &bench.rows {
        for (code, n) in &row.errors {
            *errors.entry(code.clone()).or_default() += n;
        }
    }
    if let Some(c) = &concurrency {
        checks.extend(c.checks.iter().cloned());
        for (code, n) in &c.errors {
            *errors.entry(code.clone()).or_default() += n;
        }
    }
    let report = Report {
        machine,
        command: std::env::args().collect(),
        results: bench.rows,
        workspaces: bench.workspaces,
        concurrency,
        targets: Targets {
            met: checks.iter().filter(|c| c.met).count(),
            missed: checks.iter().filter(|c| !c.met).count(),
            checks,
        },
        errors,
    };
    let out = bench.out;
    if out.json {
        out.json(&report);
    } else {
        print_summary(out, &report);
    }
    Ok(if report.errors.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

fn print_summary(out: &mut Out, report: &Report) {
    out.line("");
    out.line("workspace   entries   events   log MiB  store MiB  built in s");
    for w in &report.workspaces {
        out.line(format!(
            "{:<9} {:>9} {:>8} {:>9.1} {:>10.1} {:>11.1}",
            w.state,
            w.entries,
            w.events,
            report::mib(w.log_bytes),
            report::mib(w.store_bytes),
            w.build_seconds
        ));
    }
    if let Some(c) = &report.concurrency {
        out.line("");
        out.line(format!(
            "concurrency ({} entries): {} writers, {} mutators, {} readers, {} ops each: \
             {} acknowledged writes in {:.1} s ({:.0}/s), write p50 {:.0} ms, p99 {:.0} ms, \
             max {:.0} ms; {} reads, p50 {:.0} ms, p99 {:.0} ms; {} events appended; peak {} MiB",
            c.entries,
            c.writers,
            c.mutators,
            c.readers,
            c.ops_per_writer,
            c.acknowledged_writes,
            c.wall_ms / 1000.0,
            c.writes_per_sec,
            c.write_p50_ms,
            c.write_p99_ms,
            c.write_max_ms,
            c.reads,
            c.read_p50_ms,
            c.read_p99_ms,
            c.events_appended,
            c.peak_rss_mib.map_or("?".into(), |m| format!("{m:.1}")),
        ));
    }
    out.line("");
    out.line(format!(
        "targets: {} met, {} missed",
        report.targets.met, report.targets.missed
    ));
    for c in report.targets.checks.iter().filter(|c| !c.met) {
        out.line(format!(
            "  MISSED {}: {:.1} against {} ({:.2}×)",
            c.subject, c.measured, c.target, c.ratio
        ));
    }
    if report.errors.is_empty() {
        out.line("errors: none");
    } else {
        let list: Vec<String> = report
            .errors
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        out.line(format!("errors: {}", list.join(", ")));
    }
}

impl Bench<'_> {
    fn run_all(&mut self) -> Result<Option<concurrency::Report>> {
        let config = concurrency::Config {
            writers: self.args.writers,
            mutators: self.args.mutators,
            readers: self.args.readers,
            ops: self.args.ops,
        };
        let mut sizes = self.args.entries.clone();
        sizes.sort_unstable();
        sizes.dedup();
        let largest = sizes.last().copied().unwrap_or(0);
        let mut last = None;
        for &n in &sizes {
            let built = self.applied(n)?;
            self.reads(&built, "applied")?;
            if !self.skips(Phase::Rebuild) {
                self.slow(&built, "rebuild", &["rebuild"])?;
            }
            if !self.skips(Phase::Verify) {
                self.slow(&built, "verify", &["verify"])?;
            }
            if !self.skips(Phase::Import) {
                self.import(&built)?;
            }
            if n == largest {
                last = Some(built);
            } else if !self.args.keep {
                fs_err::remove_dir_all(&built.root)?;
            }
        }
        let mut concurrency = None;
        if let Some(built) = last {
            if !self.skips(Phase::CatchUp) {
                self.catch_up(&built)?;
            }
            if !self.skips(Phase::Concurrency) && config.writers + config.mutators > 0 {
                progress(&format!(
                    "concurrency run on {} entries: {} writers, {} mutators, {} readers",
                    built.entries, config.writers, config.mutators, config.readers
                ));
                let targets = &built.ids[built.touched.min(built.ids.len())..];
                concurrency = Some(concurrency::run(
                    &self.memlog,
                    &built.root,
                    &built.project.log_path(),
                    built.entries,
                    targets,
                    &built.ids,
                    config,
                )?);
            }
            if !self.args.keep {
                fs_err::remove_dir_all(&built.root)?;
            }
        }
        if !self.skips(Phase::Grown) {
            let mut grown = self.args.grown.clone();
            grown.sort_unstable();
            grown.dedup();
            for n in grown {
                let built = self.grown(n)?;
                self.reads(&built, "grown")?;
                if !self.args.keep {
                    fs_err::remove_dir_all(&built.root)?;
                }
            }
        }
        Ok(concurrency)
    }

    fn skips(&self, phase: Phase) -> bool {
        self.args.skip.contains(&phase)
    }

    fn push(&mut self, row: Row) {
        if !self.out.json {
            self.out.line(report::format_row(&row));
        }
        self.rows.push(row);
    }

    /// A new, initialized workspace `name` inside the bench's directory.
    fn new_workspace(&self, name: &str) -> Result<(PathBuf, Project)> {
        let root = self.dir.join(name);
        fs_err::create_dir(&root)?;
        let ws = Workspace::at(&root)?;
        let pname = ProjectName::new(PROJECT)?;
        project::init(&ws, &pname, &self.now)?;
        let project = Project::open(&ws, pname)?;
        Ok((root, project))
    }

    /// Runs `args` on `root` `runs` times.
    fn repeat(
        &self,
        root: &Path,
        runs: usize,
        tag: &str,
        args: impl Fn(usize) -> Vec<String>,
    ) -> Result<Vec<Outcome>> {
        (0..runs)
            .map(|i| self.memlog.run(root, &args(i), tag))
            .collect()
    }

    /// The row of `outcomes`, or an error when every run failed.
    fn row(
        &self,
        operation: &'static str,
        state: &'static str,
        built_entries: usize,
        events: usize,
        outcomes: &[Outcome],
    ) -> Result<Row> {
        Row::of(operation, state, built_entries, events, outcomes).ok_or_else(|| {
            Error::Usage(format!(
                "bench: every `memlog {operation}` failed ({} entries, {state}): {}",
                built_entries,
                outcomes.first().map(Outcome::failure).unwrap_or_default()
            ))
        })
    }

    /// Builds a workspace of `n` entries by `apply` of a JSON Lines file (timed, `--slow-runs`
    /// times on fresh workspaces), then makes `--writes` single-process writes.
    fn applied(&mut self, n: usize) -> Result<Built> {
        progress(&format!("applying {n} entries"));
        let file = self.memlog_scratch().join(format!("creates-{n}.jsonl"));
        workload::write_creates(&file, 0..n)?;
        let file_arg = file.display().to_string();
        let mut outcomes = Vec::new();
        let mut first_reads = Vec::new();
        let mut kept = None;
        for run in 0..self.args.slow_runs {
            let (root, project) = self.new_workspace(&format!("applied-{n}-run{run}"))?;
            let o = self.memlog.run(
                &root,
                &["apply".into(), PROJECT.into(), file_arg.clone()],
                "apply",
            )?;
            if o.error.is_some() {
                return Err(Error::Usage(format!(
                    "bench: `memlog apply` of {n} entries failed: {}",
                    apply_failure(&o)
                )));
            }
            // The first command after a bulk apply pays for whatever the apply left to do.
            first_reads.push(self.memlog.run(&root, &workload::stats(), "stats")?);
            if kept.is_none() {
                let ids = applied_ids(&o);
                if ids.len() != n {
                    return Err(Error::Usage(format!(
                        "bench: `memlog apply` reported {} ids for {n} entries",
                        ids.len()
                    )));
                }
                kept = Some((root, project, ids, o.ms));
            } else {
                fs_err::remove_dir_all(&root)?;
            }
            outcomes.push(o);
        }
        fs_err::remove_file(&file)?;
        let Some((root, project, ids, build_ms)) = kept else {
            return Err(Error::Usage("bench: no apply run".into()));
        };
        let events = log_lines(&project.log_path())?;
        let mut row = self.row("apply", "applied", n, events, &outcomes)?.rate(n);
        if n >= APPLY_JUDGED_FROM
            && let Some(rate) = row.per_sec
        {
            row.checks.push(Check::at_least(
                row.subject("throughput"),
                "updates/s",
                rate,
                APPLY_PER_SEC,
            ));
        }
        self.push(row);
        let mut row = self.row("stats after apply", "applied", n, events, &first_reads)?;
        row.checks.push(Check::below(
            row.subject("median"),
            "ms",
            row.median_ms,
            READ_MS,
        ));
        self.push(row);
        let mut built = Built {
            root,
            project,
            entries: n,
            ids,
            touched: 0,
        };
        self.setup_writes(&mut built)?;
        self.footprint(&built, "applied", build_ms / 1000.0)?;
        Ok(built)
    }

    fn memlog_scratch(&self) -> PathBuf {
        self.dir.join("scratch")
    }

    /// `--writes` single-process writes: create, supersede and pin in turn, each supersede and
    /// pin on an entry of its own from the front of the workspace.
    fn setup_writes(&mut self, built: &mut Built) -> Result<()> {
        let writes = self.args.writes;
        if writes == 0 {
            return Ok(());
        }
        let changes = writes - writes.div_ceil(3);
        if changes > built.ids.len() {
            return Err(Error::Usage(format!(
                "bench: {writes} setup writes change {changes} entries, more than the {} built; \
                 lower --writes",
                built.ids.len()
            )));
        }
        let (mut supersedes, mut pins) = (Vec::new(), Vec::new());
        let mut next = 0;
        for k in 0..writes {
            match k % 3 {
                0 => {
                    let o = self.memlog.run(
                        &built.root,
                        &workload::add(workload::SETUP_ADDS + k),
                        "setup",
                    )?;
                    if o.error.is_some() {
                        return Err(Error::Usage(format!(
                            "bench: setup `memlog add` failed: {}",
                            o.failure()
                        )));
                    }
                }
                1 => {
                    supersedes.push(self.memlog.run(
                        &built.root,
                        &workload::supersede(&built.ids[next], k),
                        "setup",
                    )?);
                    next += 1;
                }
                _ => {
                    pins.push(self.memlog.run(
                        &built.root,
                        &workload::pin(&built.ids[next]),
                        "setup",
                    )?);
                    next += 1;
                }
            }
        }
        built.touched = next;
        let events = built.events()?;
        for (op, outcomes) in [("supersede", supersedes), ("pin", pins)] {
            if !outcomes.is_empty() {
                let row = self.row(op, "applied", built.entries, events, &outcomes)?;
                self.push(row);
            }
        }
        Ok(())
    }

    /// Grows a workspace of `n` entries, one `add` process each.
    fn grown(&mut self, n: usize) -> Result<Built> {
        progress(&format!("growing {n} entries, one process each"));
        let (root, project) = self.new_workspace(&format!("grown-{n}"))?;
        let mut outcomes = Vec::with_capacity(n);
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let o = self.memlog.run(&root, &workload::add(i), "grow")?;
            if o.error.is_some() {
                return Err(Error::Usage(format!(
                    "bench: `memlog add` number {i} failed while growing: {}",
                    o.failure()
                )));
            }
            ids.push(
                o.json()
                    .and_then(|v| v["id"].as_str().map(str::to_owned))
                    .unwrap_or_default(),
            );
            outcomes.push(o);
            if (i + 1) % 1000 == 0 && i + 1 < n {
                progress(&format!("grown to {} entries", i + 1));
            }
        }
        let build_ms: f64 = outcomes.iter().map(|o| o.ms).sum();
        let events = log_lines(&project.log_path())?;
        let row = self.row("add", "growing", n, events, &outcomes)?;
        self.push(row);
        settle_compaction(&project);
        let built = Built {
            root,
            project,
            entries: n,
            ids,
            touched: 0,
        };
        self.footprint(&built, "grown", build_ms / 1000.0)?;
        Ok(built)
    }

    fn footprint(&mut self, built: &Built, state: &'static str, build_seconds: f64) -> Result<()> {
        // Open the store once so its size is that of a caught-up store.
        let o = self
            .memlog
            .run(&built.root, &workload::stats(), "footprint")?;
        if o.error.is_some() {
            return Err(Error::Usage(format!(
                "bench: `memlog stats` failed: {}",
                o.failure()
            )));
        }
        self.workspaces.push(Footprint {
            state,
            entries: built.entries,
            events: built.events()?,
            log_bytes: catch_up::disk_usage(&built.project.log_path())?,
            store_bytes: catch_up::disk_usage(&built.project.store_dir())?,
            build_seconds,
        });
        Ok(())
    }

    /// `show`, `list`, `stats` and `add`, `--runs` times each.
    fn reads(&mut self, built: &Built, state: &'static str) -> Result<()> {
        let runs = self.args.runs;
        let n = built.entries;
        let events = built.events()?;
        let ids = &built.ids;
        let pick = |i: usize| ids[(i * 7919 + 13) % ids.len()].clone();
        let show = self.repeat(&built.root, runs, "show", |i| workload::show(&pick(i)))?;
        let list = self.repeat(&built.root, runs, "list", |_| workload::list())?;
        let stats = self.repeat(&built.root, runs, "stats", |_| workload::stats())?;
        let base = workload::TIMED_ADDS;
        let add = self.repeat(&built.root, runs, "add", |i| workload::add(base + i))?;
        for (op, outcomes) in [
            ("show", &show),
            ("list", &list),
            ("stats", &stats),
            ("add", &add),
        ] {
            let mut row = self.row(op, state, n, events, outcomes)?;
            let limit = if op == "add" { ADD_MS } else { READ_MS };
            row.checks.push(Check::below(
                row.subject("median"),
                "ms",
                row.median_ms,
                limit,
            ));
            if op != "add"
                && let Some(peak) = row.peak_rss_mib
            {
                row.checks.push(Check::below(
                    row.subject("peak memory"),
                    "MiB",
                    peak,
                    READ_RSS_MIB,
                ));
            }
            self.push(row);
        }
        // On grown workspaces too: single writes leave the text index in another layout.
        self.queries(built, state)?;
        Ok(())
    }

    /// `query` with default filters and a two-word text beside `sqlite3` running the same
    /// filtered FTS5 query over the same rows, `--runs` times each, alternating.
    fn queries(&mut self, built: &Built, state: &'static str) -> Result<()> {
        let n = built.entries;
        let events = built.events()?;
        let sqlite = query_bench::sqlite_available();
        let db = self.memlog_scratch().join(format!("fts5-{n}.db"));
        if sqlite {
            query_bench::build_db(&db, n)?;
        } else {
            progress("sqlite3 not found: query rows without the FTS5 reference");
        }
        for (label, text) in query_bench::TEXTS {
            let (mut mine, mut theirs) = (Vec::new(), Vec::new());
            for _ in 0..self.args.runs {
                mine.push(self.memlog.run(
                    &built.root,
                    &query_bench::memlog_args(text),
                    "query",
                )?);
                if sqlite {
                    theirs.push(query_bench::sqlite_query(&db, text, &self.now)?);
                }
            }
            let op = if label == "selective" {
                "query (selective)"
            } else {
                "query (broad)"
            };
            let mut row = self.row(op, state, n, events, &mine)?;
            row.checks.push(Check::below(
                row.subject("median"),
                "ms",
                row.median_ms,
                QUERY_MS,
            ));
            if let Some(peak) = row.peak_rss_mib {
                row.checks.push(Check::below(
                    row.subject("peak memory"),
                    "MiB",
                    peak,
                    READ_RSS_MIB,
                ));
            }
            if sqlite {
                let op = if label == "selective" {
                    "sqlite3 fts5 (selective)"
                } else {
                    "sqlite3 fts5 (broad)"
                };
                let reference = self.row(op, state, n, events, &theirs)?;
                row.checks.push(Check::below(
                    row.subject("median vs sqlite3"),
                    "ms",
                    row.median_ms,
                    reference.median_ms,
                ));
                self.push(row);
                self.push(reference);
            } else {
                self.push(row);
            }
        }
        if sqlite {
            fs_err::remove_file(&db)?;
        }
        Ok(())
    }

    /// `rebuild` or `verify`, `--slow-runs` times, with events per second.
    fn slow(&mut self, built: &Built, operation: &'static str, args: &[&str]) -> Result<()> {
        progress(&format!("{operation} of {} entries", built.entries));
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let outcomes = self.repeat(&built.root, self.args.slow_runs, operation, |_| {
            args.clone()
        })?;
        let events = built.events()?;
        let row = self
            .row(operation, "applied", built.entries, events, &outcomes)?
            .rate(events);
        self.push(row);
        Ok(())
    }

    /// `import` of the workspace's events (its lossless export, as a team moving its memory
    /// to another repository makes it) into a new project of the same workspace, each run its
    /// own; the new projects are removed after.
    fn import(&mut self, built: &Built) -> Result<()> {
        progress(&format!("import of {} entries' events", built.entries));
        let path = built.root.join("bench-export.jsonl");
        let file = path.display().to_string();
        let name = built.project.name.to_string();
        let args = ["export", &name, &file, "--format", "events"].map(str::to_owned);
        let o = self.memlog.run(&built.root, &args, "export")?;
        if o.error.is_some() {
            return Err(Error::Usage(format!(
                "bench: `memlog export` failed: {}",
                o.failure()
            )));
        }
        let events = log_lines(&path)?;
        let outcomes = self.repeat(&built.root, self.args.slow_runs, "import", |run| {
            ["import", &format!("imported-{run}"), &file]
                .map(str::to_owned)
                .to_vec()
        })?;
        for run in 0..self.args.slow_runs {
            let dir = built
                .project
                .workspace
                .memory_dir()
                .join(format!("imported-{run}"));
            if dir.exists() {
                fs_err::remove_dir_all(dir)?;
            }
        }
        fs_err::remove_file(path)?;
        let row = self
            .row("import", "applied", built.entries, events, &outcomes)?
            .rate(events);
        self.push(row);
        Ok(())
    }

    /// Catch-up after a rewritten log and after a pull of `--pull-events` events.
    fn catch_up(&mut self, built: &Built) -> Result<()> {
        progress(&format!(
            "catch-up on {} entries: rewritten log, then a pull of {} events",
            built.entries, self.args.pull_events
        ));
        let log = built.project.log_path();
        let base = fs_err::read(&log)?;
        let scene = catch_up::Scene {
            memlog: &self.memlog,
            workspace: &built.root,
            log: log.clone(),
            store: built.project.store_dir(),
            backup: self.dir.join("store-backup"),
        };
        // Make sure the store is caught up before it is copied.
        let o = self.memlog.run(&built.root, &workload::stats(), "stats")?;
        if o.error.is_some() {
            return Err(Error::Usage(format!(
                "bench: `memlog stats` failed: {}",
                o.failure()
            )));
        }
        scene.back_up_store()?;
        let runs = self.args.slow_runs;
        let events = log_lines(&log)?;
        let rewritten = scene.rewritten(&base, runs)?;
        let mut row = self
            .row(
                "catch-up rewritten",
                "applied",
                built.entries,
                events,
                &rewritten,
            )?
            .rate(events);
        row.checks.push(Check::below(
            row.subject("time"),
            "ms",
            row.median_ms,
            CATCH_UP_MS,
        ));
        let mut rows = vec![row];
        if self.args.pull_events > 0 {
            let pulled = self.branch_events(self.args.pull_events)?;
            let pulled_events = pulled.iter().filter(|b| **b == b'\n').count();
            let outcomes = scene.pulled(&base, &pulled, runs)?;
            let mut row = self
                .row(
                    "catch-up pull",
                    "applied",
                    built.entries,
                    events + pulled_events,
                    &outcomes,
                )?
                .rate(pulled_events);
            row.checks.push(Check::below(
                row.subject("time"),
                "ms",
                row.median_ms,
                CATCH_UP_MS,
            ));
            rows.push(row);
        }
        fs_err::remove_dir_all(&scene.backup)?;
        for row in rows {
            self.push(row);
        }
        Ok(())
    }

    /// The log lines of `count` creates written on another branch: applied to a workspace of
    /// their own, whose log is then read.
    fn branch_events(&self, count: usize) -> Result<Vec<u8>> {
        let (root, project) = self.new_workspace("branch")?;
        let file = self.memlog_scratch().join("branch.jsonl");
        let first = workload::PULLED;
        workload::write_creates(&file, first..first + count)?;
        let o = self.memlog.run(
            &root,
            &["apply".into(), PROJECT.into(), file.display().to_string()],
            "branch",
        )?;
        if o.error.is_some() {
            return Err(Error::Usage(format!(
                "bench: `memlog apply` on the branch failed: {}",
                apply_failure(&o)
            )));
        }
        let lines = fs_err::read(project.log_path())?;
        fs_err::remove_dir_all(&root)?;
        fs_err::remove_file(&file)?;
        Ok(lines)
    }
}

/// Ids of `memlog --json apply`'s output.
fn applied_ids(o: &Outcome) -> Vec<String> {
    o.json()
        .and_then(|v| {
            v["applied"].as_array().map(|a| {
                a.iter()
                    .filter_map(|x| x["id"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Why an apply failed: its first skipped update, else its error.
fn apply_failure(o: &Outcome) -> String {
    o.json()
        .and_then(|v| {
            v["skipped"]
                .as_array()
                .and_then(|s| s.first())
                .and_then(|s| s["message"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| o.failure())
}

/// Waits (at most two minutes) for a compaction the last writes started in the background to
/// end, so that the reads timed next measure the store a user has most of the time.
fn settle_compaction(project: &Project) {
    let started = std::time::Instant::now();
    loop {
        // A compaction started by the last write takes its lock within milliseconds.
        std::thread::sleep(std::time::Duration::from_millis(250));
        if !crate::store::compact::running(project)
            || started.elapsed() > std::time::Duration::from_secs(120)
        {
            return;
        }
    }
}
