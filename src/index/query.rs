//! What the index answers about turns, each by one exact SQL query: which
//! logs a listing shows (newest first, with how many match), and which eval
//! runs an id prefix or `last~N` names. Eval runs' numbers: `history.rs`.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use rusqlite::OptionalExtension;
use rusqlite::ToSql;

use super::{IndexError, RunIndex};

/// `runs list`'s filters, each matching a column exactly.
#[derive(Debug, Clone, Default)]
pub struct TurnFilter {
    pub fingerprint: Option<String>,
    pub provider: Option<String>,
    pub claim: Option<String>,
    pub since: Option<DateTime<Utc>>,
    /// `done`, `error`, `cancelled` or `partial`.
    pub status: Option<String>,
    /// `pass`, `fail` or `error` (the standing verdict).
    pub verdict: Option<String>,
    pub suite: Option<String>,
    /// An eval case (chat turns have none).
    pub case: Option<String>,
    pub eval_run: Option<String>,
}

/// One page of a listing, and how many logs match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPage {
    pub paths: Vec<PathBuf>,
    pub total: usize,
}

impl RunIndex {
    /// The logs `filter` keeps, newest first (ties by path), at most `limit`.
    pub fn turns(&self, filter: &TurnFilter, limit: Option<usize>) -> Result<TurnPage, IndexError> {
        let (clause, values) = where_clause(filter);
        let db = self.lock();
        let values: Vec<&dyn ToSql> = values.iter().map(|v| v as &dyn ToSql).collect();
        let total: i64 = db
            .query_row(
                &format!("SELECT count(*) FROM turns{clause}"),
                &values[..],
                |row| row.get(0),
            )
            .map_err(|e| self.error(e))?;
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let sql =
            format!("SELECT path FROM turns{clause} ORDER BY started_ns DESC, path LIMIT {limit}");
        let paths = db
            .prepare(&sql)
            .and_then(|mut statement| {
                statement
                    .query_map(&values[..], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.error(e))?;
        Ok(TurnPage {
            paths: paths.into_iter().map(|path| self.root.join(path)).collect(),
            total: usize::try_from(total).unwrap_or(0),
        })
    }

    /// The log of turn `turn_id`, if one is indexed (the newest, should a
    /// turn have been recorded twice).
    pub fn turn_path(&self, turn_id: &str) -> Result<Option<PathBuf>, IndexError> {
        let db = self.lock();
        let path: Option<String> = db
            .query_row(
                "SELECT path FROM turns WHERE turn_id = ?1 ORDER BY started_ns DESC LIMIT 1",
                [turn_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        Ok(path.map(|path| self.root.join(path)))
    }

    /// The eval run ids that start with `prefix`, in order.
    pub fn eval_run_ids(&self, prefix: &str) -> Result<Vec<String>, IndexError> {
        self.strings(
            "SELECT id FROM eval_runs WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id",
            &[&prefix],
        )
    }

    /// The eval runs of `suite`, newest first: `last` is the first, `last~N`
    /// the one N before it.
    pub fn eval_runs_of(&self, suite: &str) -> Result<Vec<String>, IndexError> {
        self.strings(
            "SELECT id FROM eval_runs WHERE suite = ?1 ORDER BY started_ns DESC, id",
            &[&suite],
        )
    }

    /// The suite of the newest eval run: what `last`, `last~N` and `evals
    /// trend` mean when no `--suite` is given (`None`: no eval run yet).
    pub fn latest_suite(&self) -> Result<Option<String>, IndexError> {
        let db = self.lock();
        db.query_row(
            "SELECT suite FROM eval_runs ORDER BY started_ns DESC, id DESC LIMIT 1",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(|e| self.error(e))
    }

    pub(super) fn strings(
        &self,
        sql: &str,
        values: &[&dyn ToSql],
    ) -> Result<Vec<String>, IndexError> {
        let db = self.lock();
        db.prepare(sql)
            .and_then(|mut statement| statement.query_map(values, |row| row.get(0))?.collect())
            .map_err(|e| self.error(e))
    }
}

/// ` WHERE …` for the filters given, and their values in order.
fn where_clause(filter: &TurnFilter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    let mut equal = |column: &str, value: &Option<String>| {
        if let Some(value) = value {
            clauses.push(format!("{column} = ?"));
            values.push(Value::Text(value.clone()));
        }
    };
    equal("fingerprint", &filter.fingerprint);
    equal("provider", &filter.provider);
    equal("claim", &filter.claim);
    equal("status", &filter.status);
    equal("verdict", &filter.verdict);
    equal("suite", &filter.suite);
    equal("eval_run", &filter.eval_run);
    // Only an eval turn has a case to match (a chat turn's is its message).
    equal(
        "CASE WHEN suite IS NULL THEN NULL ELSE \"case\" END",
        &filter.case,
    );
    if let Some(since) = filter.since {
        clauses.push("started_ns >= ?".into());
        values.push(Value::Integer(super::rows::nanos(since)));
    }
    let clause = if clauses.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", clauses.join(" AND "))
    };
    (clause, values)
}
