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
use std::time::{Duration, Instant};

use crate::top::{SORT_PRESETS, Session, TopArgs};

enum Mode {
    Rows,
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
    expanded: bool,
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
                    ui.view = top::view(s.loader.profile(), &s.view);
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
        KeyCode::Enter => {
            if s.view.zoom.is_some() {
                s.view.zoom = None;
                say(ui, "zoomed out");
            } else if let Some(dso) = ui
                .view
                .rows
                .get(sel)
                .and_then(|r| r.key(&s.view.sort, SortKey::Dso))
                .map(str::to_string)
            {
                say(ui, format!("zoomed into DSO {dso} (Enter: out)"));
                s.view.zoom = Some(Zoom::Dso(dso));
            } else {
                say(ui, "no DSO in this view's keys: sort by dso (s) to zoom");
            }
            ui.view = top::view(s.loader.profile(), &s.view);
            ui.list.select(Some(0));
        }
        KeyCode::Char('t') => {
            if s.view.zoom.is_some() {
                s.view.zoom = None;
                say(ui, "zoomed out");
            } else if let Some((sym, _)) = selected_symbol(s, ui)
                && let Some((tid, name)) = top::hottest_thread(s.loader.profile(), &sym)
            {
                say(ui, format!("zoomed into thread {name}({tid}) (t: out)"));
                s.view.zoom = Some(Zoom::Thread(tid));
            }
            ui.view = top::view(s.loader.profile(), &s.view);
            ui.list.select(Some(0));
        }
        KeyCode::Char('a') => match selected_symbol(s, ui) {
            Some((sym, dso)) => {
                let opts = annotate::Options {
                    symbol: Some(sym.clone()),
                    dsos: dso.into_iter().collect(),
                    source: true,
                    ..annotate::Options::default()
                };
                let (anns, skipped) =
                    annotate::annotate(s.loader.profile(), &mut ui.symbolizer, &opts);
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
                                annotate::Line::Insn { addr, percent, .. } => {
                                    Some((*addr, *percent))
                                }
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
            }
            None => say(ui, "no symbol in this row to annotate"),
        },
        KeyCode::Char('E') => ui.expanded = true,
        KeyCode::Char('C') => ui.expanded = false,
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
            ui.view = top::view(s.loader.profile(), &s.view);
            ui.list.select(Some(0));
        }
        KeyCode::Char('P') => {
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
        _ => {}
    }
    Ok(true)
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
        Mode::Rows | Mode::Filter(_) => {
            let widths = top::key_widths(&ui.view.rows);
            let mut items = Vec::new();
            let chains: Vec<Vec<(f64, Vec<String>)>> = if ui.expanded {
                let profile = s.loader.profile();
                // Only the rows a screen can hold: each is a pass over the samples.
                ui.view
                    .rows
                    .iter()
                    .take(usize::from(body.height))
                    .map(|r| {
                        r.symbol(&s.view.sort)
                            .map(|sym| top::callers(profile, sym, 4, 3))
                            .unwrap_or_default()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            for (i, r) in ui.view.rows.iter().enumerate() {
                let mut lines = vec![Line::raw(top::row_text(r, &widths))];
                for (pct, chain) in chains.get(i).map(Vec::as_slice).unwrap_or_default() {
                    let text = if chain.is_empty() {
                        "(no callers recorded: -g)".to_string()
                    } else {
                        chain.join(" <- ")
                    };
                    lines.push(Line::raw(format!("           --{pct:.2}%-- {text}")));
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
                        format!(
                            "{zoom}{} samples | q quit, Enter zoom DSO, t thread, a annotate, \
                             / filter, s/S sort, E/C chains, P save",
                            ui.view.samples
                        )
                    }
                },
            };
            f.render_widget(Paragraph::new(foot_text), foot);
        }
    }
}
