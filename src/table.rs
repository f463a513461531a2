//! Tables that fit the terminal: the width comes from the terminal, else
//! `COLUMNS`, else 80 (a pty with no size, a pipe, a CI log). A value that
//! must be read whole — an id, a fingerprint, a time, a number — is never
//! broken; free text is cut short with `…`; and when even that is not enough,
//! columns are dropped: first those whose value is the same in every row
//! (said once above the table: `all rows: model gemini-3.1-flash-lite`),
//! since a column that tells rows apart matters more than one that does
//! not; then the least needed, named under the table.
//!
//! A leaf of the library (only comfy-table below it), so that the binary's
//! lists and the library's renderers (`compare`) share one width rule.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

/// How a column gives way when the table is too wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Always shown, never broken: ids, fingerprints, times, statuses.
    Keep,
    /// Shown whole, or dropped when the row does not fit; lower goes first.
    Drop(u8),
    /// Free text: cut short with `…` (down to a few characters) to fit.
    Free,
}

/// A table ready to print, and the headers of the columns left out.
pub struct Fitted {
    pub table: Table,
    /// Left out, and not said anywhere: the caller names them.
    pub hidden: Vec<String>,
    /// Left out because every row has the same value: (header, value),
    /// said once above the table by `Display`.
    pub common: Vec<(String, String)>,
    /// The width fitted to, which the line above the table keeps to too.
    width: usize,
}

impl std::fmt::Display for Fitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.common.is_empty() {
            let said: Vec<String> = self
                .common
                .iter()
                .map(|(header, value)| format!("{header} {value}"))
                .collect();
            for line in pack_common(&said, self.width) {
                writeln!(f, "{line}")?;
            }
        }
        write!(f, "{}", self.table)
    }
}

/// `all rows: a · b · c` in lines of at most `width` characters: the items
/// packed greedily, a continuation indented under the first item, and an
/// item that alone is too wide cut short.
fn pack_common(items: &[String], width: usize) -> Vec<String> {
    const LEAD: &str = "all rows: ";
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for item in items {
        let joined = format!("{current} · {item}");
        if !current.is_empty() && chars(&joined) <= width {
            current = joined;
            continue;
        }
        if !current.is_empty() {
            lines.push(current);
        }
        let lead = if lines.is_empty() {
            LEAD.to_string()
        } else {
            " ".repeat(LEAD.len())
        };
        current = truncate(&format!("{lead}{item}"), width);
    }
    lines.push(current);
    lines
}

/// The narrowest a free-text column is cut to.
const FREE_MIN: usize = 8;
/// Columns are dropped before free text is cut narrower than this.
const FREE_COMFORT: usize = 16;

/// The width to fit: the terminal's, else `COLUMNS`, else 80. A terminal that
/// reports a width under 20 (a pty with no size says 0) counts as unknown.
pub fn terminal_width() -> usize {
    let usable = |width: usize| (width >= 20).then_some(width);
    Table::new()
        .width()
        .map(usize::from)
        .and_then(usable)
        .or_else(|| {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .and_then(usable)
        })
        .unwrap_or(80)
}

/// The line under a table that left columns out: which, and how to see
/// them (`machine_flag`: the command's JSON output, `--json` or
/// `--format json`); `None` when nothing was left out.
pub fn hidden_note(hidden: &[String], machine_flag: &str) -> Option<String> {
    (!hidden.is_empty()).then(|| {
        format!(
            "({} hidden to fit the terminal; widen it, set COLUMNS, or use {machine_flag})",
            hidden.join(", ")
        )
    })
}

/// The widest line of `text`, in characters: what a rendered table needs.
pub fn widest_line(text: &str) -> usize {
    text.lines().map(chars).max().unwrap_or(0)
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// `text` in at most `width` characters, ending in `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if chars(text) <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// The printed width of a table whose columns are `widths` wide: one space
/// of padding each side and a border between and around them.
fn table_width(widths: &[usize]) -> usize {
    widths.iter().sum::<usize>() + 3 * widths.len() + 1
}

/// Lays `rows` out under `header` in at most `width` columns where it can.
pub fn fit_table<const N: usize>(
    header: [&str; N],
    fits: [Fit; N],
    rows: &[[String; N]],
    width: usize,
) -> Fitted {
    let natural = natural_widths(&header, rows);
    let least = |i: usize| match fits[i] {
        Fit::Free => natural[i].min(FREE_MIN),
        _ => natural[i],
    };
    let comfortable = |i: usize| match fits[i] {
        Fit::Free => natural[i].min(FREE_COMFORT),
        _ => natural[i],
    };
    // A column that may give way and is empty in every row says nothing:
    // it is left out without a note (a list of chat turns has no eval case).
    let says_nothing = |i: usize| fits[i] != Fit::Keep && rows.iter().all(|row| row[i].is_empty());
    // A column with one value in every row of two or more can be said once
    // above the table instead: the first to go when the table must narrow.
    let same_everywhere = |i: usize| rows.len() >= 2 && rows.iter().all(|row| row[i] == rows[0][i]);
    let mut shown: Vec<usize> = (0..N).filter(|&i| !says_nothing(i)).collect();
    let mut common = Vec::new();
    let width_of = |shown: &[usize], each: &dyn Fn(usize) -> usize| {
        table_width(&shown.iter().map(|&i| each(i)).collect::<Vec<_>>())
    };
    while width_of(&shown, &comfortable) > width {
        // The widest column that tells no row apart, whatever its fit.
        if let Some(&same) = shown
            .iter()
            .filter(|&&i| same_everywhere(i))
            .max_by_key(|&&i| natural[i])
        {
            shown.retain(|&i| i != same);
            common.push(same);
            continue;
        }
        let droppable = shown
            .iter()
            .filter_map(|&i| match fits[i] {
                Fit::Drop(rank) => Some((rank, i)),
                _ => None,
            })
            .min()
            .map(|(_, i)| i);
        // Last resort: free text from the right, when even cut short it
        // cannot fit; kept columns are never dropped.
        let last_free = || {
            let too_wide = width_of(&shown, &least) > width;
            shown
                .iter()
                .rev()
                .copied()
                .find(|&i| too_wide && fits[i] == Fit::Free)
        };
        match droppable.or_else(last_free) {
            Some(dropped) => shown.retain(|&i| i != dropped),
            None => break,
        }
    }
    let widths = free_widths(&shown, &fits, &natural, &least, width);
    let table = render(&header, rows, &shown, &widths);
    let hidden = (0..N)
        .filter(|&i| !shown.contains(&i) && !says_nothing(i) && !common.contains(&i))
        .map(|i| header[i].to_string())
        .collect();
    common.sort_unstable();
    let common = common
        .into_iter()
        .map(|i| (header[i].to_string(), rows[0][i].clone()))
        .collect();
    Fitted {
        table,
        hidden,
        common,
        width,
    }
}

/// Each column's width uncut: its widest cell or its header.
fn natural_widths<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> Vec<usize> {
    (0..N)
        .map(|i| {
            rows.iter()
                .map(|row| chars(&row[i]))
                .fold(chars(header[i]), usize::max)
        })
        .collect()
}

/// The `shown` columns of `rows` under `header`, each cut to its width.
fn render<const N: usize>(
    header: &[&str; N],
    rows: &[[String; N]],
    shown: &[usize],
    widths: &[usize],
) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(
            shown
                .iter()
                .zip(widths)
                .map(|(&i, &w)| truncate(header[i], w)),
        );
    for row in rows {
        table.add_row(
            shown
                .iter()
                .zip(widths)
                .map(|(&i, &w)| truncate(&row[i], w)),
        );
    }
    table
}

/// Each shown column's width: whole for kept ones, and what is left shared
/// out among the free-text ones, the narrowest satisfied first.
fn free_widths(
    shown: &[usize],
    fits: &[Fit],
    natural: &[usize],
    least: &dyn Fn(usize) -> usize,
    width: usize,
) -> Vec<usize> {
    let fixed: usize = shown
        .iter()
        .filter(|&&i| fits[i] != Fit::Free)
        .map(|&i| natural[i])
        .sum();
    let mut budget = width.saturating_sub(fixed + 3 * shown.len() + 1);
    let mut free: Vec<usize> = shown
        .iter()
        .copied()
        .filter(|&i| fits[i] == Fit::Free)
        .collect();
    free.sort_by_key(|&i| natural[i]);
    let mut given = vec![0; natural.len()];
    for (done, &i) in free.iter().enumerate() {
        let share = budget / (free.len() - done);
        given[i] = natural[i].min(share).max(least(i));
        budget = budget.saturating_sub(given[i]);
    }
    shown
        .iter()
        .map(|&i| {
            if fits[i] == Fit::Free {
                given[i]
            } else {
                natural[i]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: [&str; 4] = ["id", "note", "model", "when"];
    const FITS: [Fit; 4] = [Fit::Keep, Fit::Free, Fit::Drop(1), Fit::Keep];

    fn rows() -> Vec<[String; 4]> {
        vec![[
            "CLM-AUT-0012".into(),
            "a long free-text note about the claim that goes on and on".into(),
            "gemini-3.1-flash-lite · low".into(),
            "2026-11-30 02:27:58".into(),
        ]]
    }

    fn lines(fitted: &Fitted) -> Vec<String> {
        fitted
            .table
            .to_string()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Rows told apart by id and model, alike in fingerprint and status.
    fn variant_rows() -> Vec<[String; 5]> {
        ["flash", "pro", "flash-lite"]
            .iter()
            .enumerate()
            .map(|(n, model)| {
                [
                    format!("variant-{n}"),
                    "default".to_string(),
                    format!("gemini-3.1-{model}-preview · thinking low"),
                    format!("{} passed of 42, 0 errors", 40 + n),
                    "done".to_string(),
                ]
            })
            .collect()
    }

    #[test]
    fn columns_alike_in_every_row_go_first_and_are_said_once_above() {
        const HEADER: [&str; 5] = ["variant", "fingerprint", "model", "tally", "status"];
        const FITS: [Fit; 5] = [Fit::Keep, Fit::Keep, Fit::Drop(2), Fit::Drop(1), Fit::Keep];
        let rows = variant_rows();
        let wide = fit_table(HEADER, FITS, &rows, 200);
        assert!(wide.common.is_empty(), "nothing needs to go at 200");
        for width in [80, 60] {
            let fitted = fit_table(HEADER, FITS, &rows, width);
            let text = fitted.to_string();
            assert_eq!(
                text.lines().next().unwrap(),
                "all rows: fingerprint default · status done",
                "{text}"
            );
            assert!(
                text.contains("gemini-3.1-pro-preview · thinking low"),
                "the model tells rows apart: {text}"
            );
            assert!(text.lines().all(|line| chars(line) <= width), "{text}");
        }
        // Narrower still: the differing columns give way by their rank.
        let narrow = fit_table(HEADER, FITS, &rows, 50);
        assert_eq!(narrow.hidden, ["model", "tally"]);
        assert_eq!(narrow.common.len(), 2);
    }

    #[test]
    fn a_wide_terminal_shows_everything_whole() {
        let fitted = fit_table(HEADER, FITS, &rows(), 200);
        assert!(fitted.hidden.is_empty());
        assert!(fitted.table.to_string().contains("goes on and on"));
    }

    #[test]
    fn free_text_is_cut_before_anything_is_dropped_and_ids_stay_whole() {
        let fitted = fit_table(HEADER, FITS, &rows(), 100);
        assert!(fitted.hidden.is_empty());
        let text = fitted.table.to_string();
        assert!(text.contains('…'), "{text}");
        for whole in [
            "CLM-AUT-0012",
            "2026-11-30 02:27:58",
            "gemini-3.1-flash-lite · low",
        ] {
            assert!(text.contains(whole), "{whole} broken in\n{text}");
        }
        assert!(
            lines(&fitted).iter().all(|line| chars(line) <= 100),
            "{text}"
        );
    }

    #[test]
    fn a_narrow_terminal_drops_a_droppable_column_and_names_it() {
        let fitted = fit_table(HEADER, FITS, &rows(), 60);
        assert_eq!(fitted.hidden, ["model"]);
        let text = fitted.table.to_string();
        assert!(text.contains("CLM-AUT-0012") && text.contains("2026-11-30 02:27:58"));
        assert!(
            lines(&fitted).iter().all(|line| chars(line) <= 60),
            "{text}"
        );
    }

    #[test]
    fn free_text_goes_last_when_even_cut_short_it_cannot_fit() {
        let fitted = fit_table(HEADER, FITS, &rows(), 45);
        assert_eq!(fitted.hidden, ["note", "model"]);
        assert!(lines(&fitted).iter().all(|line| chars(line) <= 45));
    }

    #[test]
    fn kept_columns_stay_whole_even_when_they_cannot_fit() {
        let fitted = fit_table(HEADER, FITS, &rows(), 20);
        let text = fitted.table.to_string();
        assert!(text.contains("CLM-AUT-0012") && text.contains("2026-11-30 02:27:58"));
    }

    #[test]
    fn a_column_empty_in_every_row_is_left_out_without_a_note() {
        let mut rows = rows();
        rows[0][2] = String::new();
        let fitted = fit_table(HEADER, FITS, &rows, 200);
        assert!(fitted.hidden.is_empty());
        assert!(!fitted.table.to_string().contains("model"));
        // A kept column stays, empty or not.
        rows[0][0] = String::new();
        let fitted = fit_table(HEADER, FITS, &rows, 200);
        assert!(fitted.table.to_string().contains("id"));
    }

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(truncate("£350 excess", 5), "£350…");
        assert_eq!(truncate("short", 5), "short");
    }
}
