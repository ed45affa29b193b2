//! `--junit FILE`: JUnit XML as CI systems read it (GitLab, Jenkins, GitHub test reporters) — one
//! `<testsuite>` per matched point, one `<testcase>` per gate there: a `<failure>` when the gate fails,
//! `<skipped>` when it is inconclusive (a `<failure>` under `--strict`). Valid against the schema in
//! tests/fixtures/junit.xsd.

use super::super::gate::Outcome;
use super::super::Report;
use super::{gate_change, threshold};

/// XML-escapes attribute and text content.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 does not allow.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// The JUnit XML of `report`; `timestamp` is when the comparison ran (ISO 8601, local time without zone).
pub fn render(report: &Report, timestamp: &str, hostname: &str) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut skipped) = (0, 0, 0);
    for (id, p) in report.points.iter().enumerate() {
        let mut cases = String::new();
        let (mut f, mut s) = (0, 0);
        for g in &p.gates {
            let gate = &report.gates[g.gate];
            let message = format!(
                "{} at {}: {} vs {}",
                gate.metric,
                p.key,
                gate_change(gate, &g.result),
                threshold(gate)
            );
            let body = match (g.outcome, g.fails) {
                (_, true) => {
                    f += 1;
                    let kind = if g.outcome == Outcome::Fail {
                        "regression"
                    } else {
                        "inconclusive"
                    };
                    format!(
                        "\n      <failure message=\"{}\" type=\"{kind}\">{}</failure>\n    ",
                        esc(&message),
                        esc(&format!("{message} ({})", g.result.verdict))
                    )
                }
                (Outcome::Inconclusive, false) => {
                    s += 1;
                    format!("\n      <skipped message=\"{}\"/>\n    ", esc(&message))
                }
                _ => String::new(),
            };
            cases.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"llmperf.compare.{}\" time=\"0\">{body}</testcase>\n",
                esc(&gate.spec),
                esc(&p.key.to_string().replace([',', ' '], "_").replace("__", "_"))
            ));
        }
        tests += p.gates.len();
        failures += f;
        skipped += s;
        suites.push_str(&format!(
            "  <testsuite name=\"{}\" id=\"{id}\" tests=\"{}\" failures=\"{f}\" errors=\"0\" skipped=\"{s}\" time=\"0\" timestamp=\"{}\" hostname=\"{}\">\n{cases}  </testsuite>\n",
            esc(&p.key.to_string()),
            p.gates.len(),
            esc(timestamp),
            esc(hostname)
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"llmperf compare\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"0\">\n{suites}</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }
}
