//! The terminal dashboard: state and keys ([`App`]), the event loop ([`run`]) and the frame
//! ([`render`]).
//!
//! Each refresh calls the loader, which opens a store session, reads the statistics and closes
//! it: between refreshes the dashboard holds no lock, so writers and other readers never wait
//! for it. The terminal is restored on exit, on panic (ratatui's panic hook) and on SIGTERM,
//! SIGHUP or SIGINT (checked between key polls).

pub mod render;

use crate::analytics::range::RangeSpec;
use crate::analytics::statistics::MemoryStatistics;
use crate::error::{Error, Result};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use render::{Panel, Screen};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One read of the statistics.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub stats: MemoryStatistics,
    /// When it was read (event timestamp layout).
    pub at: String,
    /// The range as shown: `7d (2026-11-16..2026-11-22)`.
    pub range: String,
}

/// What a key asks the loop to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Nothing,
    Quit,
    Reload,
}

/// The dashboard's state between frames.
#[derive(Debug, Clone)]
pub struct App {
    /// The projects `p` cycles through; the first is what was asked for.
    pub targets: Vec<String>,
    pub target: usize,
    pub range: RangeSpec,
    pub refresh: Duration,
    pub color: bool,
    pub data: Option<Loaded>,
    /// The last read's error, or a note about a key.
    pub status: Option<String>,
    pub focus: Panel,
    pub scroll: [usize; 4],
    pub help: bool,
}

impl App {
    pub fn new(targets: Vec<String>, range: RangeSpec, refresh: Duration, color: bool) -> Self {
        Self {
            targets,
            target: 0,
            range,
            refresh,
            color,
            data: None,
            status: None,
            focus: Panel::default(),
            scroll: [0; 4],
            help: false,
        }
    }

    /// The project being shown.
    pub fn target_name(&self) -> &str {
        self.targets.get(self.target).map_or("", String::as_str)
    }

    /// Takes a read's result: new statistics, or an error shown while the old ones stay.
    pub fn take(&mut self, loaded: Result<Loaded>) {
        match loaded {
            Ok(l) => {
                self.data = Some(l);
                self.status = None;
            }
            Err(e) => self.status = Some(format!("refresh failed: {e}")),
        }
    }

    /// Applies a key.
    pub fn key(&mut self, key: KeyEvent) -> Action {
        let slot = match self.focus {
            Panel::Operations => 0,
            Panel::Expiry => 1,
            Panel::Queries => 2,
            Panel::Agents => 3,
        };
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Action::Quit;
            }
            KeyCode::Char('r') => return Action::Reload,
            KeyCode::Char('f') => {
                self.range = self.range.cycle();
                self.scroll = [0; 4];
                return Action::Reload;
            }
            KeyCode::Char('p') => {
                if self.targets.len() > 1 {
                    self.target = (self.target + 1) % self.targets.len();
                    self.scroll = [0; 4];
                    return Action::Reload;
                }
                self.status = Some("one project: start with --all to switch".into());
            }
            KeyCode::Char('h' | '?') => self.help = !self.help,
            KeyCode::Left => self.focus = self.focus.previous(),
            KeyCode::Right | KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::Up => self.scroll[slot] = self.scroll[slot].saturating_sub(1),
            KeyCode::Down => self.scroll[slot] = (self.scroll[slot] + 1).min(self.rows(self.focus)),
            KeyCode::PageUp => self.scroll[slot] = self.scroll[slot].saturating_sub(10),
            KeyCode::PageDown => {
                self.scroll[slot] = (self.scroll[slot] + 10).min(self.rows(self.focus));
            }
            KeyCode::Home => self.scroll[slot] = 0,
            _ => {}
        }
        Action::Nothing
    }

    /// Rows of a table, to keep scrolling within it.
    fn rows(&self, panel: Panel) -> usize {
        let Some(d) = &self.data else { return 0 };
        let s = &d.stats;
        match panel {
            Panel::Operations => s.recent_operations.len(),
            Panel::Expiry => s.entries_approaching_expiry.len(),
            Panel::Queries => s.most_queried_subjects.len() + s.most_queried_scopes.len(),
            Panel::Agents => s.most_active_agents.len(),
        }
        .saturating_sub(1)
    }

    /// The frame's inputs.
    pub fn screen(&self) -> Screen<'_> {
        Screen {
            stats: self.data.as_ref().map(|d| &d.stats),
            project: self.target_name(),
            updated_at: self.data.as_ref().map_or("-", |d| d.at.as_str()),
            refresh_secs: self.refresh.as_secs(),
            range: self.data.as_ref().map_or("-", |d| d.range.as_str()),
            focus: self.focus,
            scroll: self.scroll,
            help: self.help,
            color: self.color,
            status: self.status.as_deref(),
            can_switch_project: self.targets.len() > 1,
        }
    }
}

/// How long the loop waits for a key before checking signals and the refresh timer.
const POLL: Duration = Duration::from_millis(200);

/// Runs the dashboard in the terminal until `q` or a termination signal. `load` reads the
/// statistics of `app.targets[app.target]` for `app.range`, holding any lock only while it runs.
///
/// # Errors
/// When the terminal cannot be set up or read.
pub fn run(mut app: App, mut load: impl FnMut(&App) -> Result<Loaded>) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::Usage(
            "the dashboard needs an interactive terminal; for scripts use `memlog dashboard --once`"
                .into(),
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let done = Arc::new(AtomicBool::new(false));
    watchdog(Arc::clone(&stop), Arc::clone(&done));
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut app, &mut load, &stop);
    done.store(true, Ordering::Relaxed);
    ratatui::try_restore()?;
    result
}

/// How long the event loop has to end after a signal before the watchdog ends the process.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Ends the process once a signal asked the dashboard to stop and the event loop did not
/// within [`STOP_GRACE`]: when the terminal goes away (a closed window, a killed tmux
/// session), reading its events can block or spin forever, and the loop never sees the flag.
/// A dashboard left behind that way kept one core busy until killed with SIGKILL.
fn watchdog(stop: Arc<AtomicBool>, done: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if done.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let asked = Instant::now();
        while asked.elapsed() < STOP_GRACE {
            if done.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Best effort: the terminal may already be gone.
        let _ = ratatui::try_restore();
        std::process::exit(0);
    });
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    load: &mut impl FnMut(&App) -> Result<Loaded>,
    stop: &AtomicBool,
) -> Result<()> {
    let first = load(app);
    app.take(first);
    let mut last = Instant::now();
    loop {
        terminal.draw(|f| render::draw(f, &app.screen()))?;
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut action = Action::Nothing;
        if event::poll(POLL)? {
            match event::read()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => action = app.key(k),
                _ => {}
            }
        }
        match action {
            Action::Quit => return Ok(()),
            Action::Reload => {}
            Action::Nothing if last.elapsed() >= app.refresh => {}
            Action::Nothing => continue,
        }
        let loaded = load(app);
        app.take(loaded);
        last = Instant::now();
    }
}
