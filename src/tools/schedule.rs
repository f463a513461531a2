//! `get_schedule`: schedule rows with filters, and exact totals.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde_json::{Map, Value, json};

use super::args::{expect_object, optional_count, optional_str};
use super::{ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::claims::model::ScheduleRow;
use crate::claims::money::Money;

const DEFAULT_ROWS: usize = 50;
const MAX_ROWS: usize = 300;

pub static GET_SCHEDULE: ToolSpec = ToolSpec {
    name: "get_schedule",
    description: "Read the claim's schedule of items (what is claimed, what is agreed, and each item's status), with optional filters. Totals of claimed and agreed amounts always cover every matching row, in exact decimals per currency.",
    parameters: || {
        json!({
            "type": "object",
            "properties": {
                "category": {"type": "string", "description": "Only rows whose category contains this text (case-insensitive)."},
                "status": {"type": "string", "description": "Only rows whose status contains this text (case-insensitive), e.g. \"agreed\"."},
                "search": {"type": "string", "description": "Only rows whose id or description contains this text (case-insensitive)."},
                "offset": {"type": "integer", "description": "Skip this many matching rows (default 0)."},
                "limit": {"type": "integer", "description": "Most rows to list (default 50, at most 300)."}
            }
        })
    },
    label: |_, _| "Checking the schedule".to_string(),
    run: get_schedule,
};

fn get_schedule(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolOutput, ToolError> {
    expect_object(args)?;
    let category = optional_str(args, "category")?.map(str::to_lowercase);
    let status = optional_str(args, "status")?.map(str::to_lowercase);
    let search = optional_str(args, "search")?.map(str::to_lowercase);
    let offset = optional_count(args, "offset", usize::MAX)?.unwrap_or(0);
    let limit = optional_count(args, "limit", MAX_ROWS)?.unwrap_or(DEFAULT_ROWS);
    let contains = |field: Option<&str>, wanted: &Option<String>| match wanted {
        None => true,
        Some(wanted) => field.is_some_and(|field| field.to_lowercase().contains(wanted)),
    };
    let matching: Vec<&ScheduleRow> = ctx
        .claim
        .schedule
        .iter()
        .filter(|row| contains(row.category.as_deref(), &category))
        .filter(|row| contains(row.status.as_deref(), &status))
        .filter(|row| contains(Some(&row.description), &search) || contains(Some(&row.id), &search))
        .collect();
    let currency = ctx.claim.currency();
    let totals = json!({
        "claimed": totals(matching.iter().map(|row| row.claimed.as_ref()), currency),
        "agreed": totals(matching.iter().map(|row| row.agreed.as_ref()), currency),
    });
    let rows: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(limit)
        .map(|row| serde_json::to_value(row).unwrap_or(Value::Null))
        .collect();
    let mut result = Map::new();
    result.insert("currency".into(), json!(currency));
    result.insert("scheduleRows".into(), json!(ctx.claim.schedule.len()));
    result.insert("matchingRows".into(), json!(matching.len()));
    result.insert("totals".into(), totals);
    result.insert("offset".into(), json!(offset));
    result.insert("rows".into(), Value::Array(rows));
    if let Some(more) = more_rows(matching.len(), offset, limit) {
        result.insert("more".into(), json!(more));
    }
    Ok(ToolOutput::text(
        serde_json::to_string_pretty(&Value::Object(result)).unwrap_or_default(),
    ))
}

/// The note telling the model how to read on, when rows remain past this
/// page. The offset comes from the model, so the arithmetic is checked: an
/// offset past the end leaves nothing "more", never a wrapped count.
fn more_rows(matching: usize, offset: usize, limit: usize) -> Option<String> {
    let next = offset.checked_add(limit)?;
    let remaining = matching.checked_sub(next).filter(|n| *n > 0)?;
    let noun = if remaining == 1 { "row" } else { "rows" };
    Some(format!(
        "{remaining} more {noun}: call again with offset {next}"
    ))
}

/// Sums amounts per currency, exactly; `{}` when there are none. A sum past
/// what a decimal holds says so instead of panicking.
fn totals<'a>(amounts: impl Iterator<Item = Option<&'a Money>>, claim_currency: &str) -> Value {
    let mut sums: BTreeMap<String, Option<Decimal>> = BTreeMap::new();
    for money in amounts.flatten() {
        let sum = sums
            .entry(money.currency_or(claim_currency).to_string())
            .or_insert(Some(Decimal::ZERO));
        *sum = sum.and_then(|sum| sum.checked_add(money.amount));
    }
    Value::Object(
        sums.into_iter()
            .map(|(currency, sum)| {
                let text = sum.map_or_else(|| "too large to total".to_string(), |s| s.to_string());
                (currency, json!(text))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_more_note_never_wraps_and_counts_in_words() {
        // Regression: offset u64::MAX wrapped to "1 more rows: call again with offset 9".
        assert_eq!(more_rows(10, usize::MAX, 50), None);
        assert_eq!(more_rows(10, 20, 50), None);
        assert_eq!(more_rows(10, 0, 10), None);
        assert_eq!(
            more_rows(10, 0, 9).as_deref(),
            Some("1 more row: call again with offset 9")
        );
        assert_eq!(
            more_rows(10, 2, 5).as_deref(),
            Some("3 more rows: call again with offset 7")
        );
    }
    use crate::claims::{Claim, parse_claim_bytes};
    use std::path::Path;

    fn claim() -> Claim {
        let rows: Vec<Value> = (1..=300)
            .map(|i| json!({"id": format!("S{i}"), "description": format!("Item {i}"), "category": if i % 2 == 0 {"Contents"} else {"Buildings"}, "claimed": "0.10", "agreed": 0.1, "status": "agreed"}))
            .chain([json!({"id": "E1", "description": "Hotel in Lyon", "category": "Travel", "claimed": {"amount": "99.99", "currency": "EUR"}, "status": "under review"})])
            .collect();
        let json = json!({
            "id": "C1", "lineOfBusiness": "Household", "status": "open", "currency": "GBP",
            "policy": {"number": "P", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
            "incident": {"date": "2024-03-02", "description": "Leak"},
            "schedule": rows
        });
        parse_claim_bytes(json.to_string().as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim
    }

    fn run(args: Value) -> Value {
        let claim = claim();
        let out = get_schedule(&ToolContext { claim: &claim }, &args).unwrap();
        serde_json::from_str(&out.content).unwrap()
    }

    #[test]
    fn totals_are_exact_per_currency_over_every_matching_row() {
        let all = run(json!({}));
        assert_eq!(all["matchingRows"], 301);
        assert_eq!(
            all["totals"]["claimed"],
            json!({"EUR": "99.99", "GBP": "30.00"})
        );
        assert_eq!(all["totals"]["agreed"], json!({"GBP": "30.0"}));
        assert_eq!(all["rows"].as_array().unwrap().len(), 50);
        assert_eq!(all["more"], "251 more rows: call again with offset 50");
    }

    #[test]
    fn filters_combine_case_insensitively() {
        let contents = run(json!({"category": "CONTENTS", "status": "agreed", "limit": 300}));
        assert_eq!(contents["matchingRows"], 150);
        assert_eq!(contents["totals"]["claimed"], json!({"GBP": "15.00"}));
        let lyon = run(json!({"search": "lyon"}));
        assert_eq!(lyon["rows"][0]["id"], "E1");
        assert!(lyon.get("more").is_none());
    }
}
