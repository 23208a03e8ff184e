//! The terminal UI of `perfkit top` (ratatui): a status line, the rows of the live view
//! with a selection, perf top's keys, and the annotation of the selected symbol in place.
//!
//! Dependency: `ratatui` (with its crossterm backend), the maintained Rust TUI library:
//! layout, diffed redraws and terminal restore on panic, none of which is this project's
//! subject.

use anyhow::Result;
use perfkit_report::annotate::{self, StdioOptions};
use perfkit_report::report::SortKey;
use perfkit_report::top::{self, View, Zoom};
use perfkit_symbols::{Options, Symbolizer};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{List, ListItem, ListState, Paragraph};
use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::top::{SORT_PRESETS, Session, TopArgs};

/// What an entry of the Enter menu does.
#[derive(Clone, Debug)]
enum Action {
    Annotate,
    ZoomDso(String),
    ZoomThread(i32, String),
    ZoomOut,
    FilterSymbol(String),
    ToggleChains,
    NextEvent,
    Save,
}

enum Mode {
    Rows,
    /// perf top's popup on Enter: what can be done with the selected row.
    Menu {
        items: Vec<(String, Action)>,
        selected: usize,
    },
    Annotate {
        title: String,
        lines: Vec<String>,
        scroll: usize,
    },
    Filter(String),
}

struct Ui {
    mode: Mode,
    list: ListState,
    /// Every row's call-graph tree shown (E) or hidden (C).
    expanded: bool,
    /// Rows (by their keys) whose tree Enter or `+` turned the other way.
    toggled: HashSet<Vec<String>>,
    preset: usize,
    message: Option<(String, Instant)>,
    view: View,
    symbolizer: Symbolizer,
    page: usize,
}

/// Run the UI until `q`, Ctrl-C or a signal.
pub fn run(s: &mut Session, args: &TopArgs) -> Result<u8> {
    let mut term = ratatui::try_init()?;
    let result = run_in(&mut term, s, args);
    ratatui::restore();
    result
}

fn run_in(term: &mut ratatui::DefaultTerminal, s: &mut Session, args: &TopArgs) -> Result<u8> {
    let delay = Duration::from_secs_f64(args.delay);
    let mut ui = Ui {
        mode: Mode::Rows,
        list: ListState::default().with_selected(Some(0)),
        expanded: false,
        toggled: HashSet::new(),
        preset: 0,
        message: None,
        view: s.snapshot(),
        symbolizer: Symbolizer::new(Options {
            buildid_dir: Some(perfkit_symbols::buildid_cache::default_dir()),
            ..Options::default()
        }),
        page: 10,
    };
    // The first screen comes quickly; later ones every `delay`.
    let mut next = Instant::now() + delay.min(Duration::from_millis(500));
    let mut dirty = true;
    loop {
        if dirty {
            term.draw(|f| draw(f, s, &mut ui))?;
            dirty = false;
        }
        if s.pump(Duration::from_millis(50))? == perfkit_engine::Poll::Stopped {
            return Ok(0);
        }
        while event::poll(Duration::ZERO)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if !key(k, s, &mut ui)? {
                        return Ok(0);
                    }
                    dirty = true;
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
        if Instant::now() >= next {
            ui.view = s.snapshot();
            next = Instant::now() + delay;
            dirty = true;
        }
    }
}

fn selected_symbol(s: &Session, ui: &Ui) -> Option<(String, Option<String>)> {
    let r = ui.view.rows.get(ui.list.selected()?)?;
    let sym = r.symbol(&s.view.sort)?.to_string();
    let dso = r.key(&s.view.sort, SortKey::Dso).map(str::to_string);
    Some((sym, dso))
}

fn say(ui: &mut Ui, m: impl Into<String>) {
    ui.message = Some((m.into(), Instant::now()));
}

/// Handle a key; false to quit.
fn key(k: KeyEvent, s: &mut Session, ui: &mut Ui) -> Result<bool> {
    if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
        return Ok(false);
    }
    match &mut ui.mode {
        Mode::Filter(text) => {
            match k.code {
                KeyCode::Enter => {
                    s.view.filter = (!text.is_empty()).then(|| text.clone());
                    ui.mode = Mode::Rows;
                    ui.view = s.view_now();
                    ui.list.select(Some(0));
                }
                KeyCode::Esc => ui.mode = Mode::Rows,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            return Ok(true);
        }
        Mode::Annotate { scroll, lines, .. } => {
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc | KeyCode::Left => ui.mode = Mode::Rows,
                KeyCode::Down => *scroll = (*scroll + 1).min(lines.len().saturating_sub(1)),
                KeyCode::Up => *scroll = scroll.saturating_sub(1),
                KeyCode::PageDown => {
                    *scroll = (*scroll + ui.page).min(lines.len().saturating_sub(1))
                }
                KeyCode::PageUp => *scroll = scroll.saturating_sub(ui.page),
                _ => {}
            }
            return Ok(true);
        }
        Mode::Menu { items, selected } => {
            match k.code {
                KeyCode::Esc | KeyCode::Left | KeyCode::Char('q') => ui.mode = Mode::Rows,
                KeyCode::Down => *selected = (*selected + 1).min(items.len().saturating_sub(1)),
                KeyCode::Up => *selected = selected.saturating_sub(1),
                KeyCode::Enter | KeyCode::Right => {
                    let a = items.get(*selected).map(|i| i.1.clone());
                    ui.mode = Mode::Rows;
                    if let Some(a) = a {
                        act(a, s, ui)?;
                    }
                }
                _ => {}
            }
            return Ok(true);
        }
        Mode::Rows => {}
    }
    let n = ui.view.rows.len();
    let sel = ui.list.selected().unwrap_or(0);
    match k.code {
        KeyCode::Char('q') => return Ok(false),
        KeyCode::Down => ui.list.select(Some((sel + 1).min(n.saturating_sub(1)))),
        KeyCode::Up => ui.list.select(Some(sel.saturating_sub(1))),
        KeyCode::PageDown => ui
            .list
            .select(Some((sel + ui.page).min(n.saturating_sub(1)))),
        KeyCode::PageUp => ui.list.select(Some(sel.saturating_sub(ui.page))),
        KeyCode::Home => ui.list.select(Some(0)),
        KeyCode::End => ui.list.select(Some(n.saturating_sub(1))),
        // As perf top: Enter folds or unfolds the row's call-graph tree when it has one
        // (-g), else (and Right always) opens the row's menu.
        KeyCode::Enter if !toggle_row(ui) => {
            let items = menu_items(s, ui);
            ui.mode = Mode::Menu { items, selected: 0 };
        }
        KeyCode::Enter => {}
        KeyCode::Right => {
            let items = menu_items(s, ui);
            ui.mode = Mode::Menu { items, selected: 0 };
        }
        KeyCode::Char('+') | KeyCode::Char('e') if !toggle_row(ui) => {
            say(ui, "no call-graph tree in this row: run top with -g");
        }
        KeyCode::Char('+') | KeyCode::Char('e') => {}
        KeyCode::Char('d') => match selected_dso(s, ui) {
            _ if s.view.zoom.is_some() => act(Action::ZoomOut, s, ui)?,
            Some(dso) => act(Action::ZoomDso(dso), s, ui)?,
            None => say(ui, "no DSO in this view's keys: sort by dso (s) to zoom"),
        },
        KeyCode::Char('t') => {
            if s.view.zoom.is_some() {
                act(Action::ZoomOut, s, ui)?;
            } else if let Some((sym, _)) = selected_symbol(s, ui)
                && let Some((tid, name)) = top::hottest_thread(s.loader.profile(), &sym)
            {
                act(Action::ZoomThread(tid, name), s, ui)?;
            }
        }
        KeyCode::Char('a') => act(Action::Annotate, s, ui)?,
        KeyCode::Tab => act(Action::NextEvent, s, ui)?,
        KeyCode::BackTab => {
            let n = ui.view.events.len().max(1);
            s.view.event = (s.view.event + n - 1) % n;
            say(
                ui,
                format!(
                    "event {}",
                    ui.view
                        .events
                        .get(s.view.event)
                        .map_or("", |e| e.0.as_str())
                ),
            );
            ui.view = s.view_now();
            ui.list.select(Some(0));
        }
        KeyCode::Char('E') => {
            ui.expanded = true;
            ui.toggled.clear();
        }
        KeyCode::Char('C') => {
            ui.expanded = false;
            ui.toggled.clear();
        }
        KeyCode::Char('/') => ui.mode = Mode::Filter(s.view.filter.clone().unwrap_or_default()),
        KeyCode::Char('s') | KeyCode::Char('S') => {
            let len = SORT_PRESETS.len();
            ui.preset = if k.code == KeyCode::Char('s') {
                (ui.preset + 1) % len
            } else {
                (ui.preset + len - 1) % len
            };
            s.view.sort = SORT_PRESETS[ui.preset].to_vec();
            let names: Vec<String> = s
                .view
                .sort
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect();
            say(ui, format!("sorted by {}", names.join(",")));
            ui.view = s.view_now();
            ui.list.select(Some(0));
        }
        KeyCode::Char('P') => act(Action::Save, s, ui)?,
        _ => {}
    }
    Ok(true)
}

/// Fold or unfold the selected row's call-graph tree; false when it has none.
fn toggle_row(ui: &mut Ui) -> bool {
    let Some(r) = ui.list.selected().and_then(|i| ui.view.rows.get(i)) else {
        return false;
    };
    if r.graph.is_empty() {
        return false;
    }
    if !ui.toggled.remove(&r.keys) {
        ui.toggled.insert(r.keys.clone());
    }
    true
}

/// Whether row `r`'s tree is shown.
fn unfolded(ui: &Ui, r: &top::ViewRow) -> bool {
    ui.expanded != ui.toggled.contains(&r.keys)
}

fn selected_dso(s: &Session, ui: &Ui) -> Option<String> {
    ui.view
        .rows
        .get(ui.list.selected()?)?
        .key(&s.view.sort, SortKey::Dso)
        .map(str::to_string)
}

/// The Enter menu of the selected row, as perf top's: annotate, zoom into its DSO or its
/// hottest thread (or out), filter to its symbol, call chains, next event, save.
fn menu_items(s: &mut Session, ui: &Ui) -> Vec<(String, Action)> {
    let mut items = Vec::new();
    let sym = selected_symbol(s, ui);
    if let Some((name, _)) = &sym {
        items.push((format!("Annotate {name}"), Action::Annotate));
    }
    if s.view.zoom.is_some() {
        items.push(("Zoom out".to_string(), Action::ZoomOut));
    } else {
        if let Some(dso) = selected_dso(s, ui) {
            items.push((format!("Zoom into {dso} DSO"), Action::ZoomDso(dso)));
        }
        if let Some((name, _)) = &sym
            && let Some((tid, comm)) = top::hottest_thread(s.loader.profile(), name)
        {
            items.push((
                format!("Zoom into {comm}({tid}) thread"),
                Action::ZoomThread(tid, comm),
            ));
        }
    }
    if let Some((name, _)) = &sym {
        items.push((
            format!("Filter to {name}"),
            Action::FilterSymbol(name.clone()),
        ));
    }
    items.push((
        if ui.expanded {
            "Collapse call chains"
        } else {
            "Expand call chains"
        }
        .to_string(),
        Action::ToggleChains,
    ));
    if ui.view.events.len() > 1 {
        let next = (s.view.event + 1) % ui.view.events.len();
        items.push((
            format!("Switch to event {}", ui.view.events[next].0),
            Action::NextEvent,
        ));
    }
    items.push(("Save the view to perf.hist.N".to_string(), Action::Save));
    items
}

/// Do what a key or a menu entry asks.
fn act(a: Action, s: &mut Session, ui: &mut Ui) -> Result<()> {
    let mut rebuild = true;
    match a {
        Action::ZoomOut => {
            s.view.zoom = None;
            say(ui, "zoomed out");
        }
        Action::ZoomDso(dso) => {
            say(ui, format!("zoomed into DSO {dso} (Enter: out)"));
            s.view.zoom = Some(Zoom::Dso(dso));
        }
        Action::ZoomThread(tid, name) => {
            say(ui, format!("zoomed into thread {name}({tid}) (t: out)"));
            s.view.zoom = Some(Zoom::Thread(tid));
        }
        Action::FilterSymbol(name) => {
            say(ui, format!("filtered to {name} (/ Enter: clear)"));
            s.view.filter = Some(name);
        }
        Action::ToggleChains => {
            ui.expanded = !ui.expanded;
            ui.toggled.clear();
            rebuild = false;
        }
        Action::NextEvent => {
            let n = ui.view.events.len().max(1);
            s.view.event = (s.view.event + 1) % n;
            say(
                ui,
                format!(
                    "event {} ({} of {n}; Tab: next)",
                    ui.view
                        .events
                        .get(s.view.event)
                        .map_or("", |e| e.0.as_str()),
                    s.view.event + 1
                ),
            );
        }
        Action::Save => {
            rebuild = false;
            let path = (0..)
                .map(|i| std::path::PathBuf::from(format!("perf.hist.{i}")))
                .find(|p| !p.exists())
                .unwrap_or_default();
            let text = top::render_stdio(&ui.view, &s.status, 100);
            match std::fs::write(&path, text) {
                Ok(()) => say(ui, format!("view written to {}", path.display())),
                Err(e) => say(ui, format!("cannot write {}: {e}", path.display())),
            }
        }
        Action::Annotate => {
            rebuild = false;
            annotate_selected(s, ui)?;
        }
    }
    if rebuild {
        ui.view = s.view_now();
        ui.list.select(Some(0));
    }
    Ok(())
}

fn annotate_selected(s: &mut Session, ui: &mut Ui) -> Result<()> {
    let Some((sym, dso)) = selected_symbol(s, ui) else {
        say(ui, "no symbol in this row to annotate");
        return Ok(());
    };
    let opts = annotate::Options {
        symbol: Some(sym.clone()),
        dsos: dso.into_iter().collect(),
        source: true,
        bpf: s.bpf_code(),
        ..annotate::Options::default()
    };
    let (anns, skipped) = annotate::annotate(s.loader.profile(), &mut ui.symbolizer, &opts);
    let mut text = Vec::new();
    annotate::write_stdio(&mut text, &anns, StdioOptions::default())?;
    let mut lines: Vec<String> = String::from_utf8_lossy(&text)
        .lines()
        .map(str::to_string)
        .collect();
    for sk in skipped {
        lines.push(format!(
            "cannot annotate {} ({}): {}",
            sk.symbol, sk.dso, sk.reason
        ));
    }
    // Start at the hottest instruction.
    let hottest = anns
        .first()
        .and_then(|a| {
            a.lines
                .iter()
                .filter_map(|l| match l {
                    annotate::Line::Insn { addr, percent, .. } => Some((*addr, *percent)),
                    _ => None,
                })
                .max_by(|a, b| a.1.total_cmp(&b.1))
        })
        .and_then(|(addr, _)| {
            let needle = format!("{addr:x}:");
            lines.iter().position(|l| l.contains(&needle))
        })
        .unwrap_or(0);
    ui.mode = Mode::Annotate {
        title: format!("Annotate {sym} (q/Esc/Left: back)"),
        lines,
        scroll: hottest.saturating_sub(ui.page / 2),
    };
    Ok(())
}

fn draw(f: &mut ratatui::Frame, s: &mut Session, ui: &mut Ui) {
    let [status, rule, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    ui.page = usize::from(body.height.max(2)) - 1;
    f.render_widget(
        Paragraph::new(top::status_line(&ui.view, &s.status))
            .style(Style::default().add_modifier(Modifier::BOLD)),
        status,
    );
    f.render_widget(Paragraph::new("-".repeat(usize::from(rule.width))), rule);
    match &ui.mode {
        Mode::Annotate {
            title,
            lines,
            scroll,
        } => {
            let visible: Vec<Line> = lines
                .iter()
                .skip(*scroll)
                .take(usize::from(body.height))
                .map(|l| Line::raw(l.clone()))
                .collect();
            f.render_widget(Paragraph::new(visible), body);
            f.render_widget(Paragraph::new(title.clone()), foot);
        }
        Mode::Rows | Mode::Filter(_) | Mode::Menu { .. } => {
            let widths = top::key_widths(&ui.view.rows);
            let mut items = Vec::new();
            for r in &ui.view.rows {
                let mut lines = vec![Line::raw(top::row_text(r, &widths))];
                if unfolded(ui, r) {
                    if r.graph.is_empty() {
                        lines.push(Line::raw(
                            "            (no call chains recorded: run top with -g)",
                        ));
                    } else {
                        lines.extend(r.graph.iter().map(|l| Line::raw(l.clone())));
                    }
                }
                items.push(ListItem::new(lines));
            }
            let list =
                List::new(items).highlight_style(Style::default().add_modifier(Modifier::REVERSED));
            f.render_stateful_widget(list, body, &mut ui.list);
            let foot_text = match &ui.mode {
                Mode::Filter(t) => format!("Filter: {t}_   (Enter: apply, Esc: cancel)"),
                _ => match &ui.message {
                    Some((m, at)) if at.elapsed() < Duration::from_secs(5) => m.clone(),
                    _ => {
                        let zoom = match &s.view.zoom {
                            Some(Zoom::Dso(d)) => format!("DSO {d} | "),
                            Some(Zoom::Thread(t)) => format!("thread {t} | "),
                            None => String::new(),
                        };
                        let events = if ui.view.events.len() > 1 {
                            format!(
                                "event {}/{} (Tab) | ",
                                ui.view.event_index + 1,
                                ui.view.events.len()
                            )
                        } else {
                            String::new()
                        };
                        format!(
                            "{zoom}{events}{} samples | q quit, Enter/Right menu, d/t zoom, \
                             a annotate, / filter, s/S sort, +/E/C trees, P save",
                            ui.view.samples
                        )
                    }
                },
            };
            f.render_widget(Paragraph::new(foot_text), foot);
            if let Mode::Menu { items, selected } = &ui.mode {
                draw_menu(f, body, items, *selected);
            }
        }
    }
}

/// The Enter menu, a bordered popup over the rows.
fn draw_menu(
    f: &mut ratatui::Frame,
    body: ratatui::layout::Rect,
    items: &[(String, Action)],
    selected: usize,
) {
    let width = items
        .iter()
        .map(|i| i.0.len())
        .max()
        .unwrap_or(10)
        .saturating_add(4)
        .min(usize::from(body.width)) as u16;
    let height = (items.len() as u16 + 2).min(body.height);
    let area = ratatui::layout::Rect {
        x: body.x + (body.width.saturating_sub(width)) / 2,
        y: body.y + (body.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let list = List::new(items.iter().map(|i| ListItem::new(i.0.clone())))
        .block(ratatui::widgets::Block::bordered().title(" Enter: do, Esc: back "))
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let mut state = ListState::default().with_selected(Some(selected));
    f.render_widget(ratatui::widgets::Clear, area);
    f.render_stateful_widget(list, area, &mut state);
}
