//! `eval --by tag`: the pass rate of each case tag, per variant, after the
//! summary table (the NDJSON summary always carries it as `tags`).

use std::io::Write;

use promptlab::eval::tags::TagSummary;
use promptlab::sink::printable;

/// `--by GROUP`: how to break the pass rates down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ByGroup {
    /// Each case tag (e.g. an injection suite's technique and placement).
    Tag,
}

/// The lines of the section: `tag  variant  passed/judged  rate (interval)`.
pub fn tag_lines(tags: &[TagSummary]) -> Vec<String> {
    if tags.is_empty() {
        return vec!["By tag: no case has tags".to_string()];
    }
    let width = |f: fn(&TagSummary) -> usize| tags.iter().map(f).max().unwrap_or(0);
    let (tag_w, variant_w) = (
        width(|t| t.tag.chars().count()),
        width(|t| t.variant.chars().count()),
    );
    let mut lines = vec!["By tag:".to_string()];
    for tag in tags {
        let judged = tag.passed + tag.failed;
        let rate = match (tag.pass_rate, tag.pass_rate_interval) {
            (Some(rate), Some((low, high))) => format!(
                "{:5.1}% ({:.1}–{:.1}%)",
                rate * 100.0,
                low * 100.0,
                high * 100.0
            ),
            (Some(rate), None) => format!("{:5.1}%", rate * 100.0),
            _ => "    –".to_string(),
        };
        let errors = match tag.errors {
            0 => String::new(),
            n => format!(", {n} errored"),
        };
        let count = format!("{}/{judged}", tag.passed);
        lines.push(format!(
            "  {:tag_w$}  {:variant_w$}  {count:>7} passed  {rate}{errors}",
            tag.tag, tag.variant
        ));
    }
    lines
}

/// The Markdown summary's table of tags (`--markdown-summary`), when any
/// case has one: a safety review's headline in the CI job summary.
pub fn tag_markdown(tags: &[TagSummary]) -> String {
    use promptlab::markdown::{CELL_CHARS, code_in_table, inline};
    if tags.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "\n| tag | variant | passed | errors | pass rate (95% CI) |\n|---|---|---|---|---|\n",
    );
    for tag in tags {
        let rate = match (tag.pass_rate, tag.pass_rate_interval) {
            (Some(rate), Some((low, high))) => format!(
                "{:.1}% ({:.0}–{:.0}%)",
                rate * 100.0,
                low * 100.0,
                high * 100.0
            ),
            (Some(rate), None) => format!("{:.1}%", rate * 100.0),
            _ => "–".to_string(),
        };
        // Errored turns are judged neither way: without their count, a tag
        // whose every turn errored would read `0/0` and look untested.
        md.push_str(&format!(
            "| {} | {} | {}/{} | {} | {rate} |\n",
            code_in_table(&tag.tag, CELL_CHARS),
            inline(&tag.variant, CELL_CHARS),
            tag.passed,
            tag.passed + tag.failed,
            tag.errors
        ));
    }
    md
}

/// Writes the section when `--by tag` asked for it.
pub fn write_by_tag(out: &mut impl Write, tags: &[TagSummary]) -> std::io::Result<()> {
    writeln!(out)?;
    for line in tag_lines(tags) {
        writeln!(out, "{}", printable(&line))?;
    }
    Ok(())
}
