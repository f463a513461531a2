//! `ClaimRow`: one claim as `claims list` shows it — the same row for the
//! table and for `--json`, so the two never disagree.

use serde::Serialize;

use super::model::Claim;

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRow {
    pub id: String,
    pub line_of_business: String,
    pub status: String,
    pub country: Option<String>,
    pub claimant: Option<String>,
    /// `YYYY-MM-DD`.
    pub incident_date: String,
    pub schedule_rows: usize,
    pub documents: usize,
    pub risk_flags: Vec<String>,
}

impl ClaimRow {
    pub fn of(claim: &Claim) -> ClaimRow {
        ClaimRow {
            id: claim.id.clone(),
            line_of_business: claim.line_of_business.clone(),
            status: claim.status.clone(),
            country: claim.country.clone(),
            claimant: claim
                .claimant
                .as_ref()
                .and_then(|p| p.display_name())
                .map(str::to_string),
            incident_date: claim.incident.date.to_string(),
            schedule_rows: claim.schedule.len(),
            documents: claim.file.len(),
            risk_flags: claim.risk_flags.iter().map(|f| f.code.clone()).collect(),
        }
    }

    /// The table's cells, in the order of `TABLE_HEADER`.
    pub fn cells(&self) -> [String; 9] {
        [
            self.id.clone(),
            self.line_of_business.clone(),
            self.status.clone(),
            self.country.clone().unwrap_or_default(),
            self.claimant.clone().unwrap_or_default(),
            self.incident_date.clone(),
            self.schedule_rows.to_string(),
            self.documents.to_string(),
            self.risk_flags.join(", "),
        ]
    }
}

pub const TABLE_HEADER: [&str; 9] = [
    "id",
    "line of business",
    "status",
    "country",
    "claimant",
    "incident",
    "schedule",
    "docs",
    "risk flags",
];
