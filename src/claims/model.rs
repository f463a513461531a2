//! The claim document (SPEC §3): what a claim file holds, as typed serde structs.
//!
//! Every object keeps the fields we do not know in `extra`, so a claim system
//! can add fields without breaking us and the model can still read them.

use std::fmt;

use chrono::NaiveDate;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::money::Money;

/// Fields nobody declared, kept in document order.
pub type Extra = Map<String, Value>;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub line_of_business: String,
    pub status: String,
    /// `GB` or `US`; decides the default locale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Party>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<Party>,
    pub policy: Policy,
    /// ISO 4217 code for every amount that does not name its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimant: Option<Party>,
    pub incident: Incident,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_estimate: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Position>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liability: Option<Position>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub financials: Option<Financials>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risk_flags: Vec<RiskFlag>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<ScheduleRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file: Vec<Document>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineEntry>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The currency used when a claim names none.
pub const DEFAULT_CURRENCY: &str = "GBP";

impl Claim {
    /// The claim's own currency: as written, else by country, else GBP.
    pub fn currency(&self) -> &str {
        match (&self.currency, self.country.as_deref()) {
            (Some(currency), _) => currency,
            (None, Some("US")) => "USD",
            _ => DEFAULT_CURRENCY,
        }
    }

    /// The currency the claim itself records: `currency` as written, else
    /// the one its `country` implies. `None` when it records neither, so
    /// that the brief never states a currency the claim does not give.
    pub fn recorded_currency(&self) -> Option<&str> {
        match (&self.currency, self.country.as_deref()) {
            (Some(currency), _) => Some(currency),
            (None, Some("US")) => Some("USD"),
            (None, Some("GB")) => Some("GBP"),
            _ => None,
        }
    }

    pub fn document(&self, id: &str) -> Option<&Document> {
        self.file.iter().find(|document| document.id == id)
    }
}

/// A person or organisation: a bare name, or an object with a name and more.
#[derive(Debug, Clone, Serialize)]
pub struct Party {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Party {
    /// The name, or failing that the first text field, for one-line summaries.
    pub fn display_name(&self) -> Option<&str> {
        self.name.as_deref().or_else(|| {
            ["organisation", "organization", "company", "email"]
                .iter()
                .find_map(|key| self.extra.get(*key).and_then(Value::as_str))
        })
    }
}

impl<'de> Deserialize<'de> for Party {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Full {
            #[serde(default)]
            name: Option<String>,
            #[serde(flatten)]
            extra: Extra,
        }
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "a name or an object with a `name`")]
        enum Repr {
            Name(String),
            Full(Full),
        }
        Ok(match Repr::deserialize(deserializer)? {
            Repr::Name(name) => Party {
                name: Some(name),
                extra: Extra::new(),
            },
            Repr::Full(full) => Party {
                name: full.name,
                extra: full.extra,
            },
        })
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub number: String,
    pub period_start: ClaimDate,
    pub period_end: ClaimDate,
    /// Governing state or jurisdiction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excess: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deductible: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Money>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Incident {
    pub date: ClaimDate,
    pub description: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_date: Option<ClaimDate>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The insurer's position on coverage or liability.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Position {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Financials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<Money>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct RiskFlag {
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ScheduleRow {
    pub id: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreed: Option<Money>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One document on the claim file: an email, a report, an invoice, a note.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Document {
    pub id: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<ClaimDate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default)]
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Document {
    pub fn display_title(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.id)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct TimelineEntry {
    pub date: ClaimDate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Text that is not a `YYYY-MM-DD` date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a date as YYYY-MM-DD, got `{}`", crate::text::quote(.0))]
pub struct DateError(pub String);

/// A calendar date written `YYYY-MM-DD`, or a timestamp that starts with one
/// (`2024-03-02T10:15:00Z`). The text is kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimDate {
    pub date: NaiveDate,
    pub written: String,
}

impl ClaimDate {
    pub fn parse(text: &str) -> Result<ClaimDate, DateError> {
        let head = text.get(..10).unwrap_or(text);
        let rest = text.get(10..).unwrap_or("");
        let date = NaiveDate::parse_from_str(head, "%Y-%m-%d")
            .ok()
            .filter(|_| head.len() == 10 && (rest.is_empty() || rest.starts_with('T')))
            .ok_or_else(|| DateError(text.to_string()))?;
        Ok(ClaimDate {
            date,
            written: text.to_string(),
        })
    }
}

impl fmt::Display for ClaimDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.date.format("%Y-%m-%d"))
    }
}

impl Serialize for ClaimDate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.written)
    }
}

impl<'de> Deserialize<'de> for ClaimDate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ClaimDate::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_accept_days_and_timestamps_only() {
        assert_eq!(
            ClaimDate::parse("2024-03-02").unwrap().to_string(),
            "2024-03-02"
        );
        assert_eq!(
            ClaimDate::parse("2024-03-02T10:15:00Z").unwrap().written,
            "2024-03-02T10:15:00Z"
        );
        assert!(ClaimDate::parse("02/03/2024").is_err());
        assert!(ClaimDate::parse("2024-02-30").is_err());
        assert!(ClaimDate::parse("2024-03-02x").is_err());
        assert!(ClaimDate::parse("2024-3-2").is_err());
    }

    #[test]
    fn a_party_is_a_name_or_an_object() {
        let name: Party = serde_json::from_str("\"Ann Lee\"").unwrap();
        assert_eq!(name.display_name(), Some("Ann Lee"));
        let full: Party =
            serde_json::from_str(r#"{"name": "Bo Chen", "phone": "0161 496 0000"}"#).unwrap();
        assert_eq!(full.display_name(), Some("Bo Chen"));
        assert_eq!(full.extra["phone"], "0161 496 0000");
    }
}
