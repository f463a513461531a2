//! The named sections of a claim that `get_claim_section` reads and the
//! claim brief lists.
//!
//! Fixed sections come first in a stable order, then one section per unknown
//! top-level field, so that fields a claim system adds are readable too.

use serde_json::{Map, Value, json};

use super::model::Claim;
use super::money::Money;

/// Fixed section names, in the order the brief lists them.
pub const FIXED_SECTIONS: [&str; 10] = [
    "overview",
    "policy",
    "incident",
    "claimant",
    "coverage",
    "liability",
    "financials",
    "risk_flags",
    "documents",
    "timeline",
];

/// The sections this claim has, in brief order.
pub fn section_names(claim: &Claim) -> Vec<String> {
    let fixed = FIXED_SECTIONS
        .iter()
        .filter(|name| fixed_section(claim, name).is_some())
        .map(|name| name.to_string());
    let extra = claim.extra.keys().map(|key| extra_section_name(key));
    fixed.chain(extra).collect()
}

/// An unknown field keeps its own name unless that clashes with a fixed one.
fn extra_section_name(key: &str) -> String {
    if FIXED_SECTIONS.contains(&key) {
        format!("extra.{key}")
    } else {
        key.to_string()
    }
}

/// The content of one section as JSON, or `None` if the claim lacks it.
pub fn section(claim: &Claim, name: &str) -> Option<Value> {
    if let Some(value) = fixed_section(claim, name) {
        return Some(value);
    }
    let key = name
        .strip_prefix("extra.")
        .filter(|key| FIXED_SECTIONS.contains(key))
        .unwrap_or(name);
    claim.extra.get(key).cloned()
}

fn fixed_section(claim: &Claim, name: &str) -> Option<Value> {
    match name {
        "overview" => Some(overview(claim)),
        "policy" => Some(to_json(&claim.policy)),
        "incident" => Some(to_json(&claim.incident)),
        "claimant" => claim.claimant.as_ref().map(to_json),
        "coverage" => claim.coverage.as_ref().map(to_json),
        "liability" => claim.liability.as_ref().map(to_json),
        "financials" => claim.financials.as_ref().map(|_| financials(claim)),
        "risk_flags" => (!claim.risk_flags.is_empty()).then(|| to_json(&claim.risk_flags)),
        "documents" => (!claim.file.is_empty()).then(|| documents(claim)),
        "timeline" => (!claim.timeline.is_empty()).then(|| to_json(&claim.timeline)),
        _ => None,
    }
}

fn overview(claim: &Claim) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), json!(claim.id));
    if let Some(reference) = &claim.reference {
        map.insert("reference".into(), json!(reference));
    }
    map.insert("lineOfBusiness".into(), json!(claim.line_of_business));
    map.insert("status".into(), json!(claim.status));
    if let Some(country) = &claim.country {
        map.insert("country".into(), json!(country));
    }
    map.insert("currency".into(), json!(claim.currency()));
    for (key, party) in [("client", &claim.client), ("handler", &claim.handler)] {
        if let Some(party) = party {
            map.insert(key.into(), to_json(party));
        }
    }
    if let Some(estimate) = &claim.loss_estimate {
        map.insert("lossEstimate".into(), to_json(estimate));
    }
    map.insert("scheduleRows".into(), json!(claim.schedule.len()));
    map.insert("documents".into(), json!(claim.file.len()));
    map.insert("timelineEntries".into(), json!(claim.timeline.len()));
    Value::Object(map)
}

/// The financials with the derived outstanding amount (reserve − paid),
/// when both are in the same currency.
fn financials(claim: &Claim) -> Value {
    let Some(financials) = &claim.financials else {
        return Value::Null;
    };
    let mut value = to_json(financials);
    if let (Some(outstanding), Value::Object(map)) = (outstanding(claim), &mut value) {
        map.insert("outstanding".into(), to_json(&outstanding));
    }
    value
}

/// Outstanding = reserve − paid, if both are recorded in one currency.
pub fn outstanding(claim: &Claim) -> Option<Money> {
    let financials = claim.financials.as_ref()?;
    let reserve = financials.reserve.as_ref()?;
    let paid = financials.paid.as_ref();
    let currency = claim.currency();
    let paid_amount = match paid {
        Some(paid) if paid.currency_or(currency) != reserve.currency_or(currency) => return None,
        Some(paid) => paid.amount,
        None => rust_decimal::Decimal::ZERO,
    };
    // Checked: both amounts come from the claim, and a decimal can overflow.
    Some(Money {
        amount: reserve.amount.checked_sub(paid_amount)?,
        currency: reserve.currency.clone(),
        extra: serde_json::Map::new(),
    })
}

/// The document index: everything but the text, plus its length.
fn documents(claim: &Claim) -> Value {
    let index: Vec<Value> = claim
        .file
        .iter()
        .map(|document| {
            let mut entry = to_json(document);
            if let Value::Object(map) = &mut entry {
                map.remove("text");
                map.insert("characters".into(), json!(document.text.chars().count()));
            }
            entry
        })
        .collect();
    Value::Array(index)
}

/// Claim parts as JSON. Their Serialize impls cannot fail (string keys,
/// no non-finite floats), so `Null` is never seen in practice.
fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::parse_claim_bytes;
    use std::path::Path;

    fn claim(extra: &str) -> Claim {
        let text = format!(
            r#"{{"id": "C1", "lineOfBusiness": "Household", "status": "open", {extra}
            "policy": {{"number": "P", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"}},
            "incident": {{"date": "2024-03-02", "description": "Leak"}}}}"#
        );
        parse_claim_bytes(text.as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim
    }

    #[test]
    fn a_minimal_claim_has_only_the_core_sections() {
        assert_eq!(
            section_names(&claim("")),
            ["overview", "policy", "incident"]
        );
    }

    #[test]
    fn unknown_fields_become_sections_without_clashing() {
        let claim = claim(r#""vehicle": {"reg": "AB12"}, "overview": "custom","#);
        let names = section_names(&claim);
        assert_eq!(names[names.len() - 2..], ["vehicle", "extra.overview"]);
        assert_eq!(section(&claim, "vehicle").unwrap()["reg"], "AB12");
        assert_eq!(section(&claim, "extra.overview").unwrap(), "custom");
        assert_eq!(section(&claim, "overview").unwrap()["id"], "C1");
    }

    #[test]
    fn outstanding_is_reserve_minus_paid_in_one_currency() {
        let same = claim(r#""financials": {"reserve": "1000.10", "paid": 250.05},"#);
        assert_eq!(outstanding(&same).unwrap().amount.to_string(), "750.05");
        assert_eq!(
            section(&same, "financials").unwrap()["outstanding"],
            "750.05"
        );
        let mixed =
            claim(r#""financials": {"reserve": 1000, "paid": {"amount": 5, "currency": "EUR"}},"#);
        assert!(outstanding(&mixed).is_none());
    }
}
