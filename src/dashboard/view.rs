//! Draws a [`Screen`] with ratatui: a header (sweep, run, aim, in flight, rates), the run's progress
//! gauge, the latency table beside the charts over time, errors, the client's own figures and the
//! server's gauges, and a footer with the latest log line. Fits 80×24 and grows with the terminal.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;

use super::model::{RunView, Screen};

/// Draws `screen` on `frame`.
pub fn draw(frame: &mut Frame<'_>, screen: &Screen) {
    let [header, gauge, middle, bottom, footer] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(3),
        Constraint::Min(7),
        Constraint::Length(5),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, screen);
    match &screen.run {
        Some(run) => {
            draw_gauge(frame, gauge, run);
            let [table, charts] =
                Layout::horizontal([Constraint::Length(44), Constraint::Min(20)]).areas(middle);
            draw_latency(frame, table, run);
            draw_charts(frame, charts, screen);
            let [errors, client, server] = Layout::horizontal([
                Constraint::Percentage(40),
                Constraint::Percentage(30),
                Constraint::Percentage(30),
            ])
            .areas(bottom);
            draw_errors(frame, errors, run);
            draw_client(frame, client, run, screen.cpu_pct);
            draw_server(frame, server, run);
        }
        None => {
            let waiting = Paragraph::new("Preparing the first run (dataset, connection test)…")
                .block(Block::bordered().title(" Progress "));
            frame.render_widget(waiting, gauge);
        }
    }
    let last = screen.log.last().map(String::as_str).unwrap_or("");
    let footer_line = Line::from(vec![
        Span::styled(" Ctrl-C ", Style::new().add_modifier(Modifier::REVERSED)),
        Span::raw(" stops the run (results kept) │ "),
        Span::styled(last.to_string(), Style::new().fg(Color::DarkGray)),
    ]);
    frame.render_widget(Paragraph::new(footer_line), footer);
}

fn hms(s: f64) -> String {
    let s = s.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, screen: &Screen) {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    match &screen.run {
        Some(run) => {
            let state = if run.finished { " · finished" } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("{} · {}", screen.sweep, run.name), bold),
                Span::raw(format!(" · {} · {}{state}", run.target, hms(run.elapsed_s))),
            ]));
            lines.push(Line::from(format!(
                "In flight {} │ Rate {:.1} req/s now, {:.1} avg │ Output {:.0} tok/s",
                run.in_flight, run.rate_now, run.rate_avg, run.output_tok_s
            )));
        }
        None => lines.push(Line::styled(screen.sweep.clone(), bold)),
    }
    if !screen.done.is_empty() {
        let done: Vec<String> = screen
            .done
            .iter()
            .map(|(name, ok, n)| format!("{name} {ok}/{n} ok"))
            .collect();
        lines.push(Line::from(format!("Done: {}", done.join(", "))));
    }
    let block = Block::bordered().title(format!(" {} ", screen.title));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_gauge(frame: &mut Frame<'_>, area: Rect, run: &RunView) {
    let ratio = if run.total > 0 {
        (run.completed as f64 / run.total as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let label = format!(
        "{}/{} done ({:.0}%) · {} ok · {} failed · warmup {} done",
        run.completed,
        run.total,
        ratio * 100.0,
        run.succeeded,
        run.failed,
        run.warmup_done
    );
    let gauge = Gauge::default()
        .block(Block::bordered().title(" Progress "))
        .gauge_style(Style::new().fg(Color::Green).bg(Color::Black))
        .ratio(ratio)
        .label(label);
    frame.render_widget(gauge, area);
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "–".to_string(),
    }
}

fn draw_latency(frame: &mut Frame<'_>, area: Rect, run: &RunView) {
    let header = Row::new(["ms", "p50", "p90", "p99", "of"])
        .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = run.latency.iter().map(|r| {
        Row::new([
            r.label.to_string(),
            cell(r.ms[0]),
            cell(r.ms[1]),
            cell(r.ms[2]),
            r.n.to_string(),
        ])
    });
    let widths = [
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(6),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::bordered().title(" Latency, recent requests "));
    frame.render_widget(table, area);
}

fn draw_charts(frame: &mut Frame<'_>, area: Rect, screen: &Screen) {
    let [rate, ttft] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    for (area, series, what, color) in [
        (rate, &screen.rate_series, "req/s", Color::Cyan),
        (ttft, &screen.ttft_series, "TTFT p50 ms", Color::Yellow),
    ] {
        // The newest values that fit, right-aligned like a scrolling chart.
        let width = area.width.saturating_sub(2) as usize;
        let shown = &series[series.len().saturating_sub(width)..];
        let last = shown.last().copied().unwrap_or(0);
        let max = shown.iter().copied().max().unwrap_or(0);
        let chart = Sparkline::default()
            .block(Block::bordered().title(format!(" {what}: {last} (max {max}), per second ")))
            .data(shown)
            .style(Style::new().fg(color));
        frame.render_widget(chart, area);
    }
}

fn draw_errors(frame: &mut Frame<'_>, area: Rect, run: &RunView) {
    let mut lines = Vec::new();
    if run.errors.is_empty() {
        lines.push(Line::from("no failures"));
    } else {
        let kinds: Vec<String> = run.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        lines.push(Line::styled(kinds.join(" · "), Style::new().fg(Color::Red)));
    }
    if let Some(e) = &run.latest_error {
        lines.push(Line::from(format!("latest: {e}")));
    }
    let p = Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(Block::bordered().title(format!(" Errors ({}) ", run.failed)));
    frame.render_widget(p, area);
}

fn draw_client(frame: &mut Frame<'_>, area: Rect, run: &RunView, cpu_pct: f64) {
    let lines = vec![
        Line::from(format!("send lag p99 {} ms", cell(run.send_lag_p99_ms))),
        Line::from(format!("read lag p99 {} ms", cell(run.read_lag_p99_ms))),
        Line::from(format!("CPU {cpu_pct:.0}% of a core")),
    ];
    let p = Paragraph::new(lines).block(Block::bordered().title(" Client "));
    frame.render_widget(p, area);
}

fn draw_server(frame: &mut Frame<'_>, area: Rect, run: &RunView) {
    let lines: Vec<Line> = if run.server.is_empty() {
        vec![Line::from("not scraped (--server-metrics)")]
    } else {
        run.server
            .iter()
            .map(|(name, v)| Line::from(format!("{name} {v:.1}")))
            .collect()
    };
    let p = Paragraph::new(lines).block(Block::bordered().title(" Server "));
    frame.render_widget(p, area);
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::super::model::{LatencyRow, RunView, Screen};
    use super::*;

    fn screen() -> Screen {
        Screen {
            title: "llmperf · demo · m".into(),
            sweep: "run 1 of 2".into(),
            done: vec![],
            run: Some(RunView {
                name: "parallel_4_number_100".into(),
                index: 1,
                total: 100,
                completed: 50,
                succeeded: 48,
                failed: 2,
                warmup_done: 4,
                in_flight: 4,
                target: "closed loop, 4 in flight".into(),
                rate_now: 20.0,
                rate_avg: 19.5,
                output_tok_s: 1250.0,
                elapsed_s: 3.0,
                latency: vec![LatencyRow {
                    label: "TTFT",
                    ms: [Some(50.1), Some(52.0), Some(61.5)],
                    n: 48,
                }],
                errors: vec![("http_status", 2)],
                latest_error: Some("http_status: HTTP 503".into()),
                send_lag_p99_ms: Some(0.05),
                read_lag_p99_ms: None,
                server: vec![],
                finished: false,
            }),
            rate_series: vec![10, 20, 20],
            ttft_series: vec![50, 51, 50],
            cpu_pct: 12.0,
            log: vec!["last log line".into()],
        }
    }

    fn text(t: &Terminal<TestBackend>) -> String {
        let b = t.backend().buffer();
        (0..b.area.height)
            .map(|y| {
                (0..b.area.width)
                    .map(|x| b[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn draws_what_a_person_reads_at_80_by_24() {
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| draw(f, &screen())).unwrap();
        let shown = text(&t);
        for needle in [
            "run 1 of 2 · parallel_4_number_100",
            "In flight 4",
            "50/100 done (50%)",
            "TTFT",
            "50.10",
            "61.50",
            "http_status 2",
            "send lag p99 0.05 ms",
            "not scraped",
            "Ctrl-C",
        ] {
            assert!(shown.contains(needle), "{needle:?} missing from\n{shown}");
        }
    }

    #[test]
    fn a_tiny_terminal_does_not_panic() {
        for (w, h) in [(10, 5), (1, 1), (200, 60)] {
            let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
            t.draw(|f| draw(f, &screen())).unwrap();
        }
    }
}
