//! Drawing one dashboard frame: a pure function of the statistics and the view state, so that
//! frames can be tested with ratatui's `TestBackend`.

use crate::analytics::health::Health;
use crate::analytics::statistics::MemoryStatistics;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Cell, Chart, Clear, Dataset, GraphType, Paragraph, Row, Table,
};
use std::collections::BTreeMap;

/// The smallest terminal the dashboard draws in.
pub const MIN_WIDTH: u16 = 80;
/// The smallest terminal the dashboard draws in.
pub const MIN_HEIGHT: u16 = 24;

/// The tables the arrow keys scroll; left and right move between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Panel {
    #[default]
    Operations,
    Expiry,
    Queries,
    Agents,
}

impl Panel {
    const ORDER: [Self; 4] = [Self::Operations, Self::Expiry, Self::Queries, Self::Agents];

    fn index(self) -> usize {
        Self::ORDER.iter().position(|p| *p == self).unwrap_or(0)
    }

    /// The next table (`→`).
    pub fn next(self) -> Self {
        Self::ORDER[(self.index() + 1) % Self::ORDER.len()]
    }

    /// The previous table (`←`).
    pub fn previous(self) -> Self {
        Self::ORDER[(self.index() + Self::ORDER.len() - 1) % Self::ORDER.len()]
    }
}

/// Everything a frame shows besides the statistics.
#[derive(Debug, Clone, Default)]
pub struct Screen<'a> {
    /// `None` until the first read succeeded.
    pub stats: Option<&'a MemoryStatistics>,
    /// The project shown, or `all projects`.
    pub project: &'a str,
    /// When the statistics were read (event timestamp layout).
    pub updated_at: &'a str,
    pub refresh_secs: u64,
    /// The date range: `7d`, `30d`, `all` or `FROM..TO`.
    pub range: &'a str,
    pub focus: Panel,
    /// First row shown of each table, by [`Panel`] order.
    pub scroll: [usize; 4],
    pub help: bool,
    /// False under `NO_COLOR`: no colour at all, the labels still say it.
    pub color: bool,
    /// A message for the header: the last read's error, or what a key did.
    pub status: Option<&'a str>,
    /// True with `--all`: `p` switches projects.
    pub can_switch_project: bool,
}

impl Screen<'_> {
    fn paint(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    fn health(&self, h: Health) -> Style {
        self.paint(match h {
            Health::Ok => Color::Green,
            Health::Warn => Color::Yellow,
            Health::Bad => Color::Red,
        })
    }

    fn block<'b>(&self, title: String, panel: Option<Panel>) -> Block<'b> {
        let focused = panel.is_some_and(|p| p == self.focus);
        let title = if focused {
            format!(" ▶ {title} ")
        } else {
            format!(" {title} ")
        };
        let mut b = Block::default().borders(Borders::ALL).title(title);
        if focused && self.color {
            b = b.border_style(Style::default().fg(Color::Cyan));
        }
        b
    }
}

/// Draws the whole frame.
pub fn draw(frame: &mut Frame<'_>, s: &Screen<'_>) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area);
        return;
    }
    let [header, summary, body, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, header, s);
    draw_footer(frame, footer, s);
    let Some(stats) = s.stats else {
        let msg = s.status.unwrap_or("reading statistics…");
        frame.render_widget(
            Paragraph::new(msg).block(Block::default().borders(Borders::ALL)),
            body,
        );
        return;
    };
    draw_summary(frame, summary, s, stats);
    let rows = if body.height < 30 {
        [
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Fill(1),
        ]
    } else {
        [
            Constraint::Percentage(36),
            Constraint::Percentage(30),
            Constraint::Fill(1),
        ]
    };
    let [top, middle, bottom] = Layout::vertical(rows).areas(body);
    let [growth, sections, lifecycle] = Layout::horizontal([
        Constraint::Percentage(40),
        Constraint::Percentage(30),
        Constraint::Fill(1),
    ])
    .areas(top);
    let [confidence, evidence, agents] = Layout::horizontal([
        Constraint::Ratio(1, 3),
        Constraint::Ratio(1, 3),
        Constraint::Fill(1),
    ])
    .areas(middle);
    let bottom_columns = if bottom.width < 100 {
        [
            Constraint::Fill(1),
            Constraint::Length(21),
            Constraint::Length(20),
        ]
    } else {
        [
            Constraint::Percentage(52),
            Constraint::Percentage(26),
            Constraint::Fill(1),
        ]
    };
    let [operations, expiry, queries] = Layout::horizontal(bottom_columns).areas(bottom);
    draw_growth(frame, growth, s, stats);
    draw_sections(frame, sections, s, stats);
    draw_lifecycle(frame, lifecycle, s, stats);
    draw_confidence(frame, confidence, s, stats);
    draw_evidence(frame, evidence, s, stats);
    draw_agents(frame, agents, s, stats);
    draw_operations(frame, operations, s, stats);
    draw_expiry(frame, expiry, s, stats);
    draw_queries(frame, queries, s, stats);
    if s.help {
        draw_help(frame, area, s);
    }
}

fn too_small(frame: &mut Frame<'_>, area: Rect) {
    let text = format!(
        "Terminal too small: {}x{}. The dashboard needs at least {MIN_WIDTH}x{MIN_HEIGHT}: enlarge the window, or press q to quit.",
        area.width, area.height
    );
    frame.render_widget(
        Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }),
        area,
    );
}

/// `2026-11-22T10:31:12.123Z` as `2026-11-22 10:31:12`.
fn clock(ts: &str) -> String {
    match (ts.get(..10), ts.get(11..19)) {
        (Some(d), Some(t)) => format!("{d} {t}"),
        _ => ts.to_owned(),
    }
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut first = vec![
        Span::styled("Memory Analytics Dashboard", bold),
        Span::raw(format!(" - Project: {}", s.project)),
    ];
    if let Some(h) = s.stats.and_then(|st| st.health.overall) {
        first.push(Span::raw("  Health: "));
        first.push(Span::styled(
            h.label(),
            s.health(h).add_modifier(Modifier::BOLD),
        ));
    }
    let second = vec![Span::raw(format!(
        "Updated {} | Refresh {}s | Filter {}",
        clock(s.updated_at),
        s.refresh_secs,
        s.range
    ))];
    frame.render_widget(
        Paragraph::new(vec![Line::from(first), Line::from(second)]),
        area,
    );
}

fn draw_footer(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>) {
    let project = if s.can_switch_project {
        " p project |"
    } else {
        ""
    };
    if let Some(msg) = s.status {
        // A note or the last refresh's error takes the footer until the next refresh.
        let line = Line::from(vec![
            Span::styled(format!("! {msg}"), s.paint(Color::Yellow)),
            Span::raw(" | q quit | h help"),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let text = format!("q quit | r refresh | f filter |{project} ←/→ table | ↑/↓ scroll | h help");
    frame.render_widget(
        Paragraph::new(text).style(Style::default().add_modifier(Modifier::DIM)),
        area,
    );
}

fn draw_summary(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut spans = vec![
        Span::raw("Total "),
        Span::styled(st.total_entries.to_string(), bold),
        Span::raw(" | Active "),
        Span::styled(st.active_entries.to_string(), bold),
        Span::raw(" | Avg confidence "),
    ];
    match st.health.avg_confidence {
        Some(h) => {
            spans.push(Span::styled(
                format!("{:.2} [{}]", st.avg_confidence, h.label()),
                s.health(h).add_modifier(Modifier::BOLD),
            ));
        }
        None => spans.push(Span::raw("-")),
    }
    spans.push(Span::raw(" | Stale "));
    let h = st.health.stale_evidence;
    spans.push(Span::styled(
        format!("{} [{}]", st.stale_evidence_count, h.label()),
        s.health(h).add_modifier(Modifier::BOLD),
    ));
    // More figures while they fit whole.
    let mut used: usize = spans.iter().map(Span::width).sum();
    for extra in [
        format!(" | Low confidence {}", st.low_confidence_count),
        format!(" | Superseded {:.1}%", st.superseded_percentage),
        format!(" | Conflicts {}", st.conflict_count),
        format!(" | Pinned {}", st.pinned_count),
    ] {
        used += extra.chars().count();
        if used > usize::from(area.width) {
            break;
        }
        spans.push(Span::raw(extra));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_growth(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let series = &st.entries_created_over_time;
    // Every entry of the range, also when the series is clipped to its last MAX_DAYS days.
    let total = st.growth.created;
    let title = if area.width < 50 {
        format!("Growth: {total} created")
    } else {
        format!("Memory Growth ({total} created, per day)")
    };
    let block = s.block(title, None);
    if series.is_empty() {
        frame.render_widget(
            Paragraph::new("no entries in this range").block(block),
            area,
        );
        return;
    }
    #[expect(clippy::cast_precision_loss, reason = "small day counts")]
    let points: Vec<(f64, f64)> = series
        .iter()
        .enumerate()
        .map(|(i, d)| (i as f64, d.count as f64))
        .collect();
    let max = series.iter().map(|d| d.count).max().unwrap_or(0).max(1);
    let first = series.first().map(|d| d.date.as_str()).unwrap_or_default();
    let last = series.last().map(|d| d.date.as_str()).unwrap_or_default();
    // Month and day while the series stays within one year; whole dates when it spans years
    // (a ten-year series labelled `11-20 … 11-27` reads like a week).
    let one_year = first.get(..4) == last.get(..4);
    let label = |d: &str| {
        if one_year {
            d.get(5..).unwrap_or(d).to_owned()
        } else {
            d.to_owned()
        }
    };
    let (first, last) = (label(first), label(last));
    let dataset = Dataset::default()
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(s.paint(Color::Cyan))
        .data(&points);
    #[expect(clippy::cast_precision_loss, reason = "small day counts")]
    let (x_max, y_max) = ((points.len().max(2) - 1) as f64, max as f64);
    let chart = Chart::new(vec![dataset])
        .block(block)
        .x_axis(
            Axis::default()
                .bounds([0.0, x_max])
                .labels([Line::from(first), Line::from(last)]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, y_max])
                .labels([Line::from("0"), Line::from(max.to_string())]),
        );
    frame.render_widget(chart, area);
}

/// `label  count  pct%  ████` rows, bars scaled to the largest count.
fn bar_lines<'b>(
    rows: &[(String, i64, Style)],
    width: u16,
    label_width: usize,
    with_percent: bool,
) -> Vec<Line<'b>> {
    let total: i64 = rows.iter().map(|r| r.1).sum();
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let digits = max.to_string().len();
    let pct_width = if with_percent { 5 } else { 0 };
    let room = usize::from(width).saturating_sub(label_width + 1 + digits + pct_width + 1);
    rows.iter()
        .map(|(label, count, style)| {
            let bar = usize::try_from(*count * i64::try_from(room).unwrap_or(0) / max).unwrap_or(0);
            let bar = if *count > 0 { bar.max(1) } else { 0 };
            let mut spans = vec![Span::raw(format!("{label:<label_width$} {count:>digits$}"))];
            if with_percent {
                // Rounded to the nearest percent (26.7% reads 27%, not 26%).
                let pct = if total == 0 {
                    0
                } else {
                    (count * 200 + total) / (total * 2)
                };
                spans.push(Span::raw(format!(" {pct:>3}%")));
            }
            spans.push(Span::raw(" "));
            spans.push(Span::styled("█".repeat(bar), *style));
            Line::from(spans)
        })
        .collect()
}

fn draw_sections(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let rows: Vec<(String, i64, Style)> = st
        .entries_by_section
        .iter()
        .map(|(k, v)| (k.clone(), *v, s.paint(Color::Blue)))
        .collect();
    let inner = area.width.saturating_sub(2);
    frame.render_widget(
        Paragraph::new(bar_lines(&rows, inner, 12, true)).block(s.block("Sections".into(), None)),
        area,
    );
}

fn draw_lifecycle(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let l = &st.lifecycle;
    let mut lines: Vec<Line<'_>> = projections::Lifecycle::ALL
        .iter()
        .map(|state| {
            let state = state.as_str();
            let n = &l.entries_by_lifecycle.get(state).copied().unwrap_or(0);
            let style = match state {
                "expired" if *n > 0 => s.paint(Color::Red),
                "decaying" | "archived" if *n > 0 => s.paint(Color::Yellow),
                _ => Style::default(),
            };
            Line::styled(format!("{state:<10} {n:>6}"), style)
        })
        .collect();
    lines.push(Line::raw(format!("{:<10} {:>6}", "pinned", l.pinned_count)));
    lines.push(Line::raw(format!(
        "superseded {:>5.1}%",
        st.superseded_percentage
    )));
    lines.push(Line::raw(format!(
        "compaction {:>6}",
        st.compaction_candidates
    )));
    // Integration point: filled by the lifecycle engine's report; never a made-up value.
    lines.push(Line::raw(match &l.last_run {
        Some(run) => format!("last run {}", clock(&run.at)),
        None => "last run: not available".to_owned(),
    }));
    lines.push(Line::raw(match &l.access_frequency_distribution {
        Some(d) => format!(
            "accessed: {}",
            ["0", "1-4", "5-19", "20+"]
                .iter()
                .map(|k| format!("{k}:{}", d.get(*k).copied().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        None => "access counts: not available".to_owned(),
    }));
    frame.render_widget(
        Paragraph::new(lines).block(s.block("Lifecycle States".into(), None)),
        area,
    );
}

fn draw_confidence(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let rows: Vec<(String, i64, Style)> = st
        .confidence_distribution
        .iter()
        .rev()
        .map(|(bucket, n)| {
            let c = match bucket.as_str() {
                "0.8-1.0" | "0.6-0.8" => Color::Green,
                "0.4-0.6" => Color::Yellow,
                _ => Color::Red,
            };
            (bucket.clone(), *n, s.paint(c))
        })
        .collect();
    let title = format!("Confidence ({} low)", st.low_confidence_count);
    frame.render_widget(
        Paragraph::new(bar_lines(&rows, area.width.saturating_sub(2), 7, false))
            .block(s.block(title, None)),
        area,
    );
}

fn draw_evidence(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let mut rows: Vec<(String, i64, Style)> = st
        .evidence_type_distribution
        .iter()
        .map(|(k, v)| (k.clone(), *v, s.paint(Color::Magenta)))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let body = if rows.is_empty() {
        vec![Line::raw("none in this range")]
    } else {
        bar_lines(&rows, area.width.saturating_sub(2), 10, false)
    };
    frame.render_widget(
        Paragraph::new(body).block(s.block("Evidence Types".into(), None)),
        area,
    );
}

/// A table with a header, scrolled to `offset` (clamped so the last page stays full).
fn scrolled_table<'b>(
    frame: &mut Frame<'_>,
    area: Rect,
    block: Block<'b>,
    header: Vec<&'b str>,
    rows: Vec<Vec<Cell<'b>>>,
    widths: Vec<Constraint>,
    (selected, focused, empty): (usize, bool, &'b str),
) {
    if rows.is_empty() {
        frame.render_widget(Paragraph::new(empty).block(block), area);
        return;
    }
    let visible = visible_rows(area);
    let selected = selected.min(rows.len() - 1);
    // The selected row is kept in view: the first page until it moves past it.
    let offset = selected.saturating_sub(visible - 1);
    let shown: Vec<Row<'b>> = rows
        .into_iter()
        .enumerate()
        .skip(offset)
        .map(|(i, cells)| {
            let row = Row::new(cells);
            if focused && i == selected {
                row.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        })
        .collect();
    let table = Table::new(shown, widths)
        .header(Row::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .column_spacing(1)
        .block(block);
    frame.render_widget(table, area);
}

/// ` row/rows` when the table has more rows than it shows.
fn position(selected: usize, len: usize, visible: usize) -> String {
    if len <= visible {
        String::new()
    } else {
        format!(" {}/{len}", selected.min(len - 1) + 1)
    }
}

fn visible_rows(area: Rect) -> usize {
    usize::from(area.height.saturating_sub(3)).max(1)
}

fn draw_agents(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let offset = s.scroll[Panel::Agents.index()];
    let n = st.most_active_agents.len();
    let rows: Vec<Vec<Cell<'_>>> = st
        .most_active_agents
        .iter()
        .map(|a| {
            vec![
                Cell::from(crate::safe_text::safe(&a.agent)),
                Cell::from(format!("{:>6}", a.count)),
            ]
        })
        .collect();
    let title = format!(
        "Most Active Agents{}",
        position(offset, n, visible_rows(area))
    );
    scrolled_table(
        frame,
        area,
        s.block(title, Some(Panel::Agents)),
        vec!["agent", "entries"],
        rows,
        vec![Constraint::Fill(1), Constraint::Length(7)],
        (offset, s.focus == Panel::Agents, "none in this range"),
    );
}

/// An entry id cut to 10 characters: any unique prefix names an entry in every command.
fn short_id(id: &str) -> String {
    id.chars().take(10).collect()
}

/// `HH:MM` for an operation of the day the statistics were read, `MM-DD` for an older one (as
/// `ls -l` does).
fn short_time(ts: &str, today: &str) -> String {
    let same_day = ts.get(..10).is_some_and(|d| Some(d) == today.get(..10));
    let part = if same_day {
        ts.get(11..16)
    } else {
        ts.get(5..10)
    };
    part.unwrap_or(ts).to_owned()
}

fn draw_operations(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let offset = s.scroll[Panel::Operations.index()];
    let wide = area.width >= 70;
    let (many_projects, entry_width) =
        entry_column(st.recent_operations.iter().map(|o| o.project.as_str()));
    let rows: Vec<Vec<Cell<'_>>> = st
        .recent_operations
        .iter()
        .map(|o| {
            let style = match o.operation.as_str() {
                "create" => s.paint(Color::Green),
                "supersede" => s.paint(Color::Yellow),
                _ => s.paint(Color::Red),
            };
            let entry = if many_projects {
                format!("{}/{}", o.project, short_id(&o.entry_id))
            } else {
                short_id(&o.entry_id)
            };
            let mut cells = vec![
                Cell::from(short_time(&o.timestamp, s.updated_at)),
                Cell::from(o.operation.clone()).style(style),
                Cell::from(entry),
            ];
            if wide {
                cells.push(Cell::from(crate::safe_text::safe(&o.agent)));
            }
            cells.push(Cell::from(crate::safe_text::safe(&o.summary)));
            cells
        })
        .collect();
    let mut header = vec!["time", "operation", "entry"];
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(entry_width),
    ];
    if wide {
        header.push("agent");
        widths.push(Constraint::Length(10));
    }
    header.push("summary");
    widths.push(Constraint::Fill(1));
    let position = position(offset, st.recent_operations.len(), visible_rows(area));
    let title = if area.width < 60 {
        format!("Recent Operations{position}")
    } else {
        format!(
            "Recent Operations (last {}){position}",
            projections::stats::RECENT_OPERATIONS
        )
    };
    scrolled_table(
        frame,
        area,
        s.block(title, Some(Panel::Operations)),
        header,
        rows,
        widths,
        (
            offset,
            s.focus == Panel::Operations,
            "no operations in this range",
        ),
    );
}

/// Whether the rows of a table come from several projects (`--all`), each then naming its
/// project before the entry (`demo/m-…`), and the width of that entry column.
fn entry_column<'p>(projects: impl Iterator<Item = &'p str> + Clone) -> (bool, u16) {
    let mut all = projects.clone();
    let first = all.next();
    let many = all.any(|p| Some(p) != first);
    if !many {
        return (false, 10);
    }
    let longest = projects.map(|p| p.chars().count() + 11).max().unwrap_or(10);
    (true, u16::try_from(longest.min(24)).unwrap_or(24))
}

fn draw_expiry(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let offset = s.scroll[Panel::Expiry.index()];
    let expiring = &st.entries_approaching_expiry;
    let (many_projects, entry_width) = entry_column(expiring.iter().map(|e| e.project.as_str()));
    let rows: Vec<Vec<Cell<'_>>> = expiring
        .iter()
        .map(|e| {
            let entry = if many_projects {
                format!("{}/{}", e.project, short_id(&e.entry_id))
            } else {
                short_id(&e.entry_id)
            };
            vec![
                Cell::from(format!("{}d", e.days_remaining)).style(s.paint(Color::Yellow)),
                Cell::from(entry),
                Cell::from(crate::safe_text::safe(&e.summary)),
            ]
        })
        .collect();
    let past = st.lifecycle.entries_past_valid_to;
    let h = st.health.expiry;
    let title = format!(
        "Expiry {} [{}]{}{}",
        st.entries_approaching_expiry.len(),
        h.label(),
        if past > 0 {
            format!(", {past} past")
        } else {
            String::new()
        },
        position(
            offset,
            st.entries_approaching_expiry.len(),
            visible_rows(area)
        )
    );
    let mut block = s.block(title, Some(Panel::Expiry));
    if s.color && s.focus != Panel::Expiry {
        block = block.title_style(s.health(h));
    }
    scrolled_table(
        frame,
        area,
        block,
        vec!["in", "entry", "summary"],
        rows,
        vec![
            Constraint::Length(3),
            Constraint::Length(entry_width),
            Constraint::Fill(1),
        ],
        (offset, s.focus == Panel::Expiry, "none within 7 days"),
    );
}

fn draw_queries(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>, st: &MemoryStatistics) {
    let offset = s.scroll[Panel::Queries.index()];
    let mut ranked: Vec<(&str, &str, i64)> = st
        .most_queried_subjects
        .iter()
        .map(|r| ("subj", r.subject.as_str(), r.count))
        .chain(
            st.most_queried_scopes
                .iter()
                .map(|r| ("scope", r.scope.as_str(), r.count)),
        )
        .collect();
    ranked.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)).then(a.1.cmp(b.1)));
    let n = ranked.len();
    let rows: Vec<Vec<Cell<'_>>> = ranked
        .into_iter()
        .map(|(kind, name, count)| {
            vec![
                Cell::from(kind),
                Cell::from(crate::safe_text::safe(name)),
                Cell::from(format!("{count:>4}")),
            ]
        })
        .collect();
    // The table ranks subjects and scopes that queries filtered by: queries without those
    // filters are counted in the title only.
    let empty = if st.query_count == 0 {
        "no queries logged"
    } else {
        "no subject/scope"
    };
    let title = format!(
        "Queries: {}{}",
        st.query_count,
        position(offset, n, visible_rows(area))
    );
    scrolled_table(
        frame,
        area,
        s.block(title, Some(Panel::Queries)),
        vec!["by", "name", "n"],
        rows,
        vec![
            Constraint::Length(5),
            Constraint::Fill(1),
            Constraint::Length(4),
        ],
        (offset, s.focus == Panel::Queries, empty),
    );
}

fn draw_help(frame: &mut Frame<'_>, area: Rect, s: &Screen<'_>) {
    let popup = area.centered(Constraint::Length(62), Constraint::Length(17));
    let g = |h: Health| s.health(h);
    let lines = vec![
        Line::raw("q        quit (also Esc, Ctrl-C)"),
        Line::raw("r        refresh now"),
        Line::raw("f        next date range: 7d, 30d, all"),
        Line::raw(if s.can_switch_project {
            "p        next project (all projects, then each one)"
        } else {
            "p        switch project (start with --all for that)"
        }),
        Line::raw("←/→, Tab choose the table the arrows scroll"),
        Line::raw("↑/↓      scroll it (PgUp/PgDn: a page, Home: the top)"),
        Line::raw("h, ?     show or hide this help"),
        Line::raw(""),
        Line::from(vec![
            Span::styled("ok", g(Health::Ok)),
            Span::raw("   avg confidence > 0.7 and no stale evidence"),
        ]),
        Line::from(vec![
            Span::styled("warn", g(Health::Warn)),
            Span::raw(" avg 0.5-0.7, 1-5 stale, or entries expiring"),
        ]),
        Line::from(vec![
            Span::styled("bad", g(Health::Bad)),
            Span::raw("  avg < 0.5, more than 5 stale, or past valid_to"),
        ]),
        Line::raw(""),
        Line::raw(format!("Statistics are re-read every {}s;", s.refresh_secs)),
        Line::raw("nothing is locked meanwhile."),
    ];
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Help ")),
        popup,
    );
}

/// Renders one frame into a buffer of `width` x `height` with ratatui's test backend.
pub fn render_buffer(s: &Screen<'_>, width: u16, height: u16) -> Buffer {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let Ok(mut terminal) = ratatui::Terminal::new(backend);
    let Ok(_) = terminal.draw(|f| draw(f, s));
    terminal.backend().buffer().clone()
}

/// The frame as text, one line per row, trailing spaces removed.
pub fn buffer_text(buffer: &Buffer) -> String {
    let width = usize::from(buffer.area.width);
    let mut out = String::new();
    for row in buffer.content().chunks(width.max(1)) {
        // A wide character (CJK, most emoji) takes two cells; the second holds a blank that
        // is part of it, not a column of its own, as a terminal draws it.
        let mut line = String::new();
        let mut covered = 0;
        for c in row {
            if covered > 0 {
                covered -= 1;
                continue;
            }
            line.push_str(c.symbol());
            covered = unicode_width::UnicodeWidthStr::width(c.symbol()).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The colours of the frame, one letter per cell: `g` green, `y` yellow, `r` red, `c` cyan,
/// `b` blue, `m` magenta, `.` none; for tests of the colour thresholds.
pub fn buffer_colours(buffer: &Buffer) -> String {
    let letters: BTreeMap<&str, char> = [
        ("Green", 'g'),
        ("Yellow", 'y'),
        ("Red", 'r'),
        ("Cyan", 'c'),
        ("Blue", 'b'),
        ("Magenta", 'm'),
    ]
    .into_iter()
    .collect();
    let width = usize::from(buffer.area.width);
    let mut out = String::new();
    for row in buffer.content().chunks(width.max(1)) {
        let line: String = row
            .iter()
            .map(|c| {
                letters
                    .get(format!("{:?}", c.fg).as_str())
                    .copied()
                    .unwrap_or('.')
            })
            .collect();
        out.push_str(line.trim_end_matches('.'));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live terminal smaller than the layout gets a message saying what to do.
    #[test]
    fn a_terminal_too_small_gets_a_message() {
        let screen = Screen {
            stats: None,
            project: "demo",
            updated_at: "",
            refresh_secs: 5,
            range: "7d",
            focus: Panel::default(),
            scroll: [0; 4],
            help: false,
            color: false,
            status: None,
            can_switch_project: false,
        };
        let frame = buffer_text(&render_buffer(&screen, 60, 20)).replace('\n', " ");
        assert!(frame.contains("Terminal too small: 60x20"), "{frame}");
        assert!(frame.contains("needs at least 80x24"), "{frame}");
    }
}
