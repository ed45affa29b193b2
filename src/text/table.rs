//! Small text-table renderers reproducing the two table styles evalscope prints.
//!
//! * [`SimpleOutline`]: tabulate's `simple_outline` format, used for the per-run console tables
//!   (`┌─┬─┐`, one space of padding, every column at least its header width + 2).
//! * [`RichTable`]: the subset of rich's `Table` layout used by the end-of-sweep text report: the
//!   `SQUARE` and `HEAVY_HEAD` boxes, per-column padding of one space with optional edge padding,
//!   auto-sized columns, fixed-width columns squeezed into a fixed table width (rich's `ratio_reduce`),
//!   a centred title line, multi-line header cells aligned to the bottom, and section separators.
//! * [`panel`]: rich's `ROUNDED` `Panel` of a fixed width.
//!
//! All padding uses display width (CJK = 2 columns).

use unicode_width::UnicodeWidthStr;

/// Terminal columns taken by `s`.
pub fn display_width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Horizontal alignment of a cell within its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left.
    Right,
    /// Split the padding, the extra column on the right.
    Center,
}

/// `s` padded with spaces to `width` columns (unchanged when already as wide or wider).
pub fn pad(s: &str, width: usize, align: Align) -> String {
    let gap = width.saturating_sub(display_width(s));
    let (left, right) = match align {
        Align::Left => (0, gap),
        Align::Right => (gap, 0),
        Align::Center => (gap / 2, gap - gap / 2),
    };
    format!("{}{s}{}", " ".repeat(left), " ".repeat(right))
}

/// `s` cut to at most `width` columns, ending in `…` when cut (rich's `overflow="ellipsis"`).
pub fn truncate_ellipsis(s: &str, width: usize) -> String {
    if display_width(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = display_width(c.encode_utf8(&mut [0; 4]));
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push_str(&" ".repeat(width - 1 - used));
    out.push('…');
    out
}

/// tabulate's `simple_outline` table.
#[derive(Debug, Clone)]
pub struct SimpleOutline {
    headers: Vec<String>,
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl SimpleOutline {
    /// A table with these headers; `aligns[i]` aligns column `i` (header included).
    pub fn new(headers: Vec<String>, aligns: Vec<Align>) -> Self {
        assert_eq!(headers.len(), aligns.len(), "one alignment per column");
        SimpleOutline {
            headers,
            aligns,
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells render empty).
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table, lines joined by `\n`, without a trailing newline.
    pub fn render(&self) -> String {
        fn cell(row: &[String], i: usize) -> &str {
            row.get(i).map(String::as_str).unwrap_or("")
        }
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                let cells = self.rows.iter().map(|r| display_width(cell(r, i)));
                cells.fold(display_width(&self.headers[i]) + 2, usize::max)
            })
            .collect();
        let rule = |l: &str, m: &str, r: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            format!("{l}{}{r}", parts.join(m))
        };
        let line = |cells: Vec<&str>| {
            let parts: Vec<String> = cells
                .iter()
                .zip(&widths)
                .zip(&self.aligns)
                .map(|((c, w), a)| pad(c, *w, *a))
                .collect();
            format!("│ {} │", parts.join(" │ "))
        };
        let mut out = vec![rule("┌", "┬", "┐")];
        out.push(line(self.headers.iter().map(String::as_str).collect()));
        out.push(rule("├", "┼", "┤"));
        for row in &self.rows {
            out.push(line((0..widths.len()).map(|i| cell(row, i)).collect()));
        }
        out.push(rule("└", "┴", "┘"));
        out.join("\n")
    }
}

/// The rich box styles used in the end-of-sweep text report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxStyle {
    /// `box.SQUARE`: light lines throughout (`┌─┬─┐`).
    Square,
    /// `box.HEAVY_HEAD` (rich's default): heavy header (`┏━┳━┓`, `┃`, `┡━╇━┩`), light body.
    HeavyHead,
}

impl BoxStyle {
    /// (left, horizontal, cross, right) for: top, header cells, header separator, body cells,
    /// section separator, bottom.
    fn parts(self) -> [[&'static str; 4]; 6] {
        let light_body = [
            ["│", " ", "│", "│"],
            ["├", "─", "┼", "┤"],
            ["└", "─", "┴", "┘"],
        ];
        let head = match self {
            BoxStyle::Square => [
                ["┌", "─", "┬", "┐"],
                ["│", " ", "│", "│"],
                ["├", "─", "┼", "┤"],
            ],
            BoxStyle::HeavyHead => [
                ["┏", "━", "┳", "┓"],
                ["┃", " ", "┃", "┃"],
                ["┡", "━", "╇", "┩"],
            ],
        };
        [
            head[0],
            head[1],
            head[2],
            light_body[0],
            light_body[1],
            light_body[2],
        ]
    }
}

/// One column of a [`RichTable`].
#[derive(Debug, Clone)]
pub struct Column {
    /// Header text; `\n` makes a multi-line header.
    pub header: String,
    /// Alignment of the header and the cells.
    pub justify: Align,
    /// Fixed content width (rich's `width=`), else sized to the content.
    pub width: Option<usize>,
}

impl Column {
    /// An auto-sized column.
    pub fn new(header: &str, justify: Align) -> Self {
        Column {
            header: header.to_string(),
            justify,
            width: None,
        }
    }

    /// A column of fixed content width.
    pub fn fixed(header: &str, justify: Align, width: usize) -> Self {
        Column {
            header: header.to_string(),
            justify,
            width: Some(width),
        }
    }
}

/// A rich-style table (see the module docs for the supported subset).
#[derive(Debug, Clone)]
pub struct RichTable {
    /// Title centred above the table.
    pub title: Option<String>,
    /// Box drawing characters.
    pub box_style: BoxStyle,
    /// Whether the header row is drawn.
    pub show_header: bool,
    /// `false`: no padding left of the first column and right of the last (rich's `pad_edge=False`).
    pub pad_edge: bool,
    /// Fixed total width including borders (rich's `width=`, which implies `expand`).
    pub width: Option<usize>,
    /// The columns.
    pub columns: Vec<Column>,
    rows: Vec<(Vec<String>, bool)>,
}

impl RichTable {
    /// An empty table with a header, edge padding and no title or fixed width.
    pub fn new(box_style: BoxStyle, columns: Vec<Column>) -> Self {
        RichTable {
            title: None,
            box_style,
            show_header: true,
            pad_edge: true,
            width: None,
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells render empty).
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push((row, false));
    }

    /// Ends the current section: a separator line is drawn before the next row (rich's `add_section`).
    pub fn section(&mut self) {
        if let Some(last) = self.rows.last_mut() {
            last.1 = true;
        }
    }

    fn padding(&self, i: usize) -> (usize, usize) {
        let left = usize::from(self.pad_edge || i > 0);
        let right = usize::from(self.pad_edge || i + 1 < self.columns.len());
        (left, right)
    }

    /// Column widths including padding, excluding borders.
    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                let (l, r) = self.padding(i);
                let col = &self.columns[i];
                let content = col.width.unwrap_or_else(|| {
                    let header = if self.show_header {
                        col.header.split('\n').map(display_width).max().unwrap_or(0)
                    } else {
                        0
                    };
                    let cells = self.rows.iter().filter_map(|(r, _)| r.get(i));
                    cells
                        .flat_map(|c| c.split('\n'))
                        .map(display_width)
                        .fold(header, usize::max)
                });
                (content + l + r).max(1)
            })
            .collect();
        if let Some(total) = self.width {
            let available = total.saturating_sub(self.columns.len() + 1);
            let sum: usize = widths.iter().sum();
            if sum > available {
                widths = ratio_reduce(sum - available, &widths);
            } else if sum < available {
                let extra = ratio_distribute(available - sum, &widths);
                widths = widths.iter().zip(extra).map(|(w, e)| w + e).collect();
            }
        }
        widths
    }

    /// Lines of one row (cells split on `\n`), each cell cut and aligned to its column.
    fn row_lines(&self, cells: &[&str], widths: &[usize], bottom: bool, bar: &str) -> Vec<String> {
        let split: Vec<Vec<&str>> = cells.iter().map(|c| c.split('\n').collect()).collect();
        let height = split.iter().map(Vec::len).max().unwrap_or(1).max(1);
        (0..height)
            .map(|line| {
                let parts: Vec<String> = (0..widths.len())
                    .map(|i| {
                        let (l, r) = self.padding(i);
                        let lines = &split[i];
                        let offset = if bottom { height - lines.len() } else { 0 };
                        let text = line
                            .checked_sub(offset)
                            .and_then(|k| lines.get(k))
                            .copied()
                            .unwrap_or("");
                        let content = widths[i].saturating_sub(l + r);
                        let text = truncate_ellipsis(text, content);
                        let cell = pad(&text, content, self.columns[i].justify);
                        format!("{}{cell}{}", " ".repeat(l), " ".repeat(r))
                    })
                    .collect();
                format!("{bar}{}{bar}", parts.join(bar))
            })
            .collect()
    }

    /// The title line (if any) and the table, joined by `\n`, without a trailing newline.
    pub fn render(&self) -> String {
        let widths = self.widths();
        let [top, head, head_sep, body, section, bottom] = self.box_style.parts();
        let rule = |p: [&str; 4]| {
            let parts: Vec<String> = widths.iter().map(|w| p[1].repeat(*w)).collect();
            format!("{}{}{}", p[0], parts.join(p[2]), p[3])
        };
        let table_width = widths.iter().sum::<usize>() + widths.len() + 1;
        let mut out = Vec::new();
        if let Some(title) = &self.title {
            out.push(pad(title, table_width, Align::Center));
        }
        out.push(rule(top));
        if self.show_header {
            let headers: Vec<&str> = self.columns.iter().map(|c| c.header.as_str()).collect();
            out.extend(self.row_lines(&headers, &widths, true, head[0]));
            out.push(rule(head_sep));
        }
        for (k, (row, ends_section)) in self.rows.iter().enumerate() {
            let cells: Vec<&str> = (0..widths.len())
                .map(|i| row.get(i).map(String::as_str).unwrap_or(""))
                .collect();
            out.extend(self.row_lines(&cells, &widths, false, body[0]));
            if *ends_section && k + 1 < self.rows.len() {
                out.push(rule(section));
            }
        }
        out.push(rule(bottom));
        out.join("\n")
    }
}

/// Python's `round()` on a float: ties to even.
fn py_round(x: f64) -> usize {
    x.round_ties_even().max(0.0) as usize
}

/// rich's `ratio_reduce(excess, [1]*n, widths, widths)`: takes `excess` columns off evenly.
fn ratio_reduce(excess: usize, widths: &[usize]) -> Vec<usize> {
    let mut total_ratio = widths.iter().filter(|w| **w > 0).count();
    let mut remaining = excess;
    widths
        .iter()
        .map(|&w| {
            if w == 0 || total_ratio == 0 {
                return w;
            }
            let share = py_round(remaining as f64 / total_ratio as f64).min(w);
            remaining -= share.min(remaining);
            total_ratio -= 1;
            w - share
        })
        .collect()
}

/// rich's `ratio_distribute(extra, widths)`: shares `extra` columns in proportion to the widths.
fn ratio_distribute(extra: usize, widths: &[usize]) -> Vec<usize> {
    let mut total_ratio: usize = widths.iter().sum();
    let mut remaining = extra;
    widths
        .iter()
        .map(|&w| {
            let share = if total_ratio > 0 {
                (w * remaining).div_ceil(total_ratio)
            } else {
                remaining
            };
            total_ratio -= w;
            remaining = remaining.saturating_sub(share);
            share
        })
        .collect()
}

/// rich's `Panel(Text(text), width=width)` with the `ROUNDED` box and padding (0, 1).
pub fn panel(text: &str, width: usize) -> String {
    let inner = width.saturating_sub(2);
    let content = truncate_ellipsis(text, inner.saturating_sub(2));
    [
        format!("╭{}╮", "─".repeat(inner)),
        format!(
            "│ {} │",
            pad(&content, inner.saturating_sub(2), Align::Left)
        ),
        format!("╰{}╯", "─".repeat(inner)),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_outline_widths() {
        let mut t = SimpleOutline::new(
            vec!["Metric".into(), "Value".into()],
            vec![Align::Left, Align::Right],
        );
        t.push(vec!["Concurrency".into(), "2".into()]);
        let expected = "┌─────────────┬─────────┐\n\
                        │ Metric      │   Value │\n\
                        ├─────────────┼─────────┤\n\
                        │ Concurrency │       2 │\n\
                        └─────────────┴─────────┘";
        assert_eq!(t.render(), expected);
    }

    #[test]
    fn fixed_width_square_table_matches_rich() {
        // Table(show_header=False, width=80) with columns of width 25 and 55 → 23 + 54 with padding.
        let mut t = RichTable::new(
            BoxStyle::Square,
            vec![
                Column::fixed("Name", Align::Left, 25),
                Column::fixed("Value", Align::Left, 55),
            ],
        );
        t.show_header = false;
        t.width = Some(80);
        t.push(vec!["Model".into(), "x".repeat(60)]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0].chars().filter(|c| *c == '─').count(), 77);
        assert!(lines[0].starts_with(&format!("┌{}┬", "─".repeat(23))));
        assert_eq!(
            lines[1],
            format!("│ Model{} │ {}… │", " ".repeat(16), "x".repeat(51))
        );
        assert!(lines.iter().all(|l| display_width(l) == 80));
    }

    #[test]
    fn cjk_cells_use_display_width() {
        let mut t = RichTable::new(BoxStyle::HeavyHead, vec![Column::new("Kind", Align::Left)]);
        t.push(vec!["模型".into()]);
        t.push(vec!["abc".into()]);
        let text = t.render();
        assert!(text.lines().all(|l| display_width(l) == 8), "{text}");
        assert!(text.contains("│ 模型 │"));
    }

    #[test]
    fn ellipsis_and_panel() {
        assert_eq!(truncate_ellipsis("abcdef", 4), "abc…");
        assert_eq!(truncate_ellipsis("模型模型", 4), "模 …");
        assert_eq!(truncate_ellipsis("abc", 4), "abc");
        let p = panel("Title", 12);
        assert_eq!(p, "╭──────────╮\n│ Title    │\n╰──────────╯");
    }
}
