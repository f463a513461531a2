//! Two eval runs' turns as `compare` streams them (SPEC §9): each side's
//! member rows are selected once into a temporary table, each marked with
//! where it stands — compared, superseded, not selected, a replay — by the
//! rules `compare::set` applies to logs it reads; then read back in
//! pairing-key order `(claim, case, sample, variant)`, counted, and asked
//! for exact nearest-rank percentiles (the rank by `stats::nearest_rank`,
//! the value by SQL). Nothing here holds more than one row of a side: the
//! tables live in SQLite's temporary store, which spills to disk.

use rusqlite::{Connection, Row, ToSql, params_from_iter};

use super::{IndexError, RunIndex};
use crate::event::Usage;

/// Which turns of an eval run a side takes.
#[derive(Debug, Clone, Copy)]
pub struct SideSelect<'a> {
    pub eval_run: &'a str,
    /// Only turns of this suite (`--suite`); the others are left out unsaid.
    pub suite: Option<&'a str>,
    /// Only these variants; all when empty (the others: not selected).
    pub variants: &'a [String],
    /// Only turns that asked for this model (the others: not selected).
    pub model: Option<&'a str>,
    /// Only turns of this provider (the others: not selected).
    pub provider: Option<&'a str>,
}

/// A side of a comparison: its temporary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl Side {
    fn table(self) -> &'static str {
        match self {
            Side::A => "compare_a",
            Side::B => "compare_b",
        }
    }
}

/// Where a member row stands, as `compare::set` sorts the runs it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// Compared.
    Run,
    /// Its variant was recorded again under a newer prompt version.
    SupersededVersion,
    /// The same turn was recorded again later.
    SupersededAgain,
    /// Left out by `--variant`, `--model` or `--provider`.
    NotSelected,
    /// A replay of a recorded turn: not a run of its own.
    Replay,
}

impl Standing {
    const ALL: [Standing; 5] = [
        Standing::Run,
        Standing::SupersededVersion,
        Standing::SupersededAgain,
        Standing::NotSelected,
        Standing::Replay,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Standing::Run => "run",
            Standing::SupersededVersion => "superseded_version",
            Standing::SupersededAgain => "superseded_again",
            Standing::NotSelected => "not_selected",
            Standing::Replay => "replay",
        }
    }

    fn of(text: &str) -> Standing {
        Standing::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .unwrap_or(Standing::Run)
    }
}

/// One member turn of a side, as its row stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct SideRow {
    /// Relative to the runs folder.
    pub path: String,
    pub turn_id: String,
    pub started_ns: i64,
    pub suite: Option<String>,
    pub variant: String,
    pub claim: String,
    pub case: String,
    pub sample: u32,
    pub fingerprint: String,
    pub model: String,
    pub model_setting: String,
    pub provider: String,
    pub status: String,
    pub verdict: Option<String>,
    pub failures: Option<String>,
    pub usage: Usage,
    pub unqueued_ms: Option<u64>,
    pub cost_usd: Option<f64>,
    pub cached: bool,
    pub answer_sha256: Option<String>,
    pub tools: Option<String>,
    /// `[calls, usage]` of its rubric judge, as JSON.
    pub judge: Option<String>,
    pub standing: Standing,
}

/// The rows of eval run `?1`'s members, by the rule of `history::MEMBERS`
/// (the turns its summary files list, each its lowest path's row; else the
/// turns labelled with it), as row ids: so that the rows are then read in
/// the table's order, not one random page a member.
const MEMBER_ROWIDS: &str =
    "WITH listed AS (SELECT turn_id FROM eval_run_turns WHERE eval_run = ?1),
member (id) AS (
    SELECT rowid FROM turns WHERE eval_run = ?1 AND NOT EXISTS (SELECT 1 FROM listed)
    UNION ALL
    SELECT (SELECT u.rowid FROM turns u WHERE u.turn_id = e.turn_id ORDER BY u.path LIMIT 1)
    FROM listed e
)";

/// The columns of `turns` a side's table keeps: what `SideRow` reads, and
/// what its standing is decided by.
const KEPT: &str = "path, turn_id, started_ns, suite, variant, claim, \"case\", sample, fingerprint, \
    model, model_setting, provider, status, verdict, failures, input_tokens, output_tokens, \
    cache_read_tokens, usage_unreported, unqueued_ms, cost_usd, cached, answer_sha256, tools, judge";

const COLUMNS: &str = "path, turn_id, started_ns, suite, coalesce(variant, ''), claim, \"case\", \
    sample, fingerprint, model, model_setting, provider, status, verdict, failures, input_tokens, \
    output_tokens, cache_read_tokens, usage_unreported, unqueued_ms, cost_usd, cached, \
    answer_sha256, tools, judge, standing";

fn side_row(row: &Row<'_>) -> rusqlite::Result<SideRow> {
    let count = |at| {
        row.get::<_, Option<i64>>(at)
            .map(|n| n.and_then(|n| u64::try_from(n).ok()))
    };
    Ok(SideRow {
        path: row.get(0)?,
        turn_id: row.get(1)?,
        started_ns: row.get(2)?,
        suite: row.get(3)?,
        variant: row.get(4)?,
        claim: row.get(5)?,
        case: row.get(6)?,
        sample: row.get(7)?,
        fingerprint: row.get(8)?,
        model: row.get(9)?,
        model_setting: row.get(10)?,
        provider: row.get(11)?,
        status: row.get(12)?,
        verdict: row.get(13)?,
        failures: row.get(14)?,
        usage: Usage {
            input_tokens: count(15)?,
            output_tokens: count(16)?,
            cache_read_tokens: count(17)?,
            usage_unreported: row.get(18)?,
        },
        unqueued_ms: count(19)?,
        cost_usd: row.get(20)?,
        cached: row.get(21)?,
        answer_sha256: row.get(22)?,
        tools: row.get(23)?,
        judge: row.get(24)?,
        standing: Standing::of(&row.get::<_, String>(25)?),
    })
}

/// The figures a side's percentiles are taken of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    InputTokens,
    OutputTokens,
    /// Latency less the time queued, of turns answered by a model (none
    /// from the cache).
    Latency,
}

/// A finished run, as `compare` counts one: it ended `done` and its
/// verdict is no error. (`compare::errored` is its negation for a run in
/// memory.)
const FINISHED: &str = "status = 'done' AND verdict IS NOT 'error'";

impl RunIndex {
    /// Selects `select`'s turns into `side`'s temporary table, each marked
    /// with where it stands; the rows' count by standing.
    pub fn select_side(
        &self,
        side: Side,
        select: &SideSelect<'_>,
    ) -> Result<Vec<(Standing, usize)>, IndexError> {
        let db = self.lock();
        fill_side(&db, side.table(), select).map_err(|e| self.error(e))?;
        let sql = format!(
            "SELECT standing, count(*) FROM temp.{} GROUP BY standing",
            side.table()
        );
        let mut counted = db
            .prepare(&sql)
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| {
                        let standing: String = row.get(0)?;
                        let count: i64 = row.get(1)?;
                        Ok((Standing::of(&standing), usize::try_from(count).unwrap_or(0)))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| self.error(e))?;
        counted.sort();
        Ok(counted)
    }

    /// A side's compared rows whose log's body could not be read when they
    /// were indexed: without their answers' digests they cannot be paired
    /// from the index.
    pub fn side_body_unknown(&self, side: Side) -> Result<usize, IndexError> {
        let db = self.lock();
        let sql = format!(
            "SELECT count(*) FROM temp.{} WHERE standing = 'run' AND answer_sha256 IS NULL",
            side.table()
        );
        db.query_row(&sql, [], |row| row.get::<_, i64>(0))
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(|e| self.error(e))
    }

    /// Of a side's rows (of every standing), each variant, model, each variant, model
    /// setting, provider and standing with how many rows have them: what
    /// names its versions and warns of model changes.
    pub fn side_facts(&self, side: Side) -> Result<Vec<SideFact>, IndexError> {
        let sql = format!(
            "SELECT coalesce(variant, ''), model_setting, provider, standing, count(*)
             FROM temp.{} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
            side.table()
        );
        let db = self.lock();
        db.prepare(&sql)
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| {
                        Ok(SideFact {
                            variant: row.get(0)?,
                            model_setting: row.get(1)?,
                            provider: row.get(2)?,
                            standing: Standing::of(&row.get::<_, String>(3)?),
                            rows: usize::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
                        })
                    })?
                    .collect()
            })
            .map_err(|e| self.error(e))
    }

    /// The first `limit` rows of a side standing as `standing`, by path.
    pub fn side_rows(
        &self,
        side: Side,
        standing: Standing,
        limit: usize,
    ) -> Result<Vec<SideRow>, IndexError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM temp.{} WHERE standing = ?1 ORDER BY path LIMIT ?2",
            side.table()
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let db = self.lock();
        db.prepare(&sql)
            .and_then(|mut statement| {
                statement
                    .query_map(rusqlite::params![standing.as_str(), limit], side_row)?
                    .collect()
            })
            .map_err(|e| self.error(e))
    }

    /// The `percentiles` of `figure` over a side's compared runs that
    /// finished: none of no values, and none at all when a token count is
    /// unknown for any of them (a figure of the runs whose server reported
    /// would pass for the side's).
    pub fn side_percentiles(
        &self,
        side: Side,
        figure: Figure,
        percentiles: &[u32],
    ) -> Result<Vec<Option<u64>>, IndexError> {
        // The side's finished runs' figures, kept apart when its table was
        // filled (`fill_side`): a few integers a row, sorted cheaply.
        let (column, only) = match figure {
            Figure::InputTokens => ("input_tokens", ""),
            Figure::OutputTokens => ("output_tokens", ""),
            Figure::Latency => ("latency_ms", " WHERE latency_ms IS NOT NULL"),
        };
        let table = side.table();
        let rows = format!("FROM temp.{table}_figures{only}");
        let db = self.lock();
        let (all, known): (i64, i64) = db
            .query_row(
                &format!("SELECT count(*), count({column}) {rows}"),
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|e| self.error(e))?;
        if all != known {
            return Ok(vec![None; percentiles.len()]);
        }
        let nth = format!("SELECT {column} {rows} ORDER BY {column} LIMIT 1 OFFSET ?1");
        percentiles
            .iter()
            .map(|&p| {
                let Some(rank) = crate::stats::nearest_rank(u64::try_from(known).unwrap_or(0), p)
                else {
                    return Ok(None);
                };
                let offset = i64::try_from(rank - 1).unwrap_or(i64::MAX);
                db.query_row(&nth, [offset], |row| row.get::<_, i64>(0))
                    .map(|value| u64::try_from(value).ok())
                    .map_err(|e| self.error(e))
            })
            .collect()
    }

    /// Reads both sides' compared runs in pairing-key order (claim, case,
    /// sample, variant, model setting), one row at a time, into `read`.
    pub fn read_sides<T>(
        &self,
        read: impl FnOnce(&mut SideRows<'_>, &mut SideRows<'_>) -> T,
    ) -> Result<T, IndexError> {
        let db = self.lock();
        let sql = |side: Side| {
            format!(
                "SELECT {COLUMNS} FROM temp.{} WHERE standing = 'run'
                 ORDER BY claim, \"case\", sample, coalesce(variant, ''), model_setting",
                side.table()
            )
        };
        let mut a = db.prepare(&sql(Side::A)).map_err(|e| self.error(e))?;
        let mut b = db.prepare(&sql(Side::B)).map_err(|e| self.error(e))?;
        let a_rows = a.query([]).map_err(|e| self.error(e))?;
        let b_rows = b.query([]).map_err(|e| self.error(e))?;
        let (mut a_rows, mut b_rows) = (SideRows::new(a_rows, self), SideRows::new(b_rows, self));
        Ok(read(&mut a_rows, &mut b_rows))
    }

    /// Drops both sides' temporary tables.
    pub fn forget_sides(&self) -> Result<(), IndexError> {
        let db = self.lock();
        db.execute_batch(
            "DROP TABLE IF EXISTS temp.compare_a; DROP TABLE IF EXISTS temp.compare_b;",
        )
        .map_err(|e| self.error(e))
    }
}

/// A side's compared rows, read one at a time.
pub struct SideRows<'a> {
    rows: rusqlite::Rows<'a>,
    index: &'a RunIndex,
}

impl<'a> SideRows<'a> {
    fn new(rows: rusqlite::Rows<'a>, index: &'a RunIndex) -> SideRows<'a> {
        SideRows { rows, index }
    }
}

impl Iterator for SideRows<'_> {
    type Item = Result<SideRow, IndexError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.rows.next() {
            Ok(Some(row)) => Some(side_row(row).map_err(|e| self.index.error(e))),
            Ok(None) => None,
            Err(e) => Some(Err(self.index.error(e))),
        }
    }
}

/// How many rows of a side have one variant, model setting, provider and
/// standing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideFact {
    pub variant: String,
    pub model_setting: String,
    pub provider: String,
    pub standing: Standing,
    pub rows: usize,
}

/// The members of eval run `?1` (`MEMBER_ROWIDS`), of suite `?2` when
/// given, into `table`, marked: replays, then turns a filter leaves out,
/// then — among the rest — those of a variant's older prompt version, then
/// older recordings of the same turn; the rest are compared.
fn fill_side(db: &Connection, table: &str, select: &SideSelect<'_>) -> rusqlite::Result<()> {
    db.execute_batch(&format!("DROP TABLE IF EXISTS temp.{table}"))?;
    let mut values: Vec<Box<dyn ToSql>> = vec![
        Box::new(select.eval_run.to_string()),
        Box::new(select.suite.map(str::to_string)),
        Box::new(select.model.map(str::to_string)),
        Box::new(select.provider.map(str::to_string)),
    ];
    let variants = if select.variants.is_empty() {
        "0".to_string()
    } else {
        let at = values.len();
        values.extend(
            select
                .variants
                .iter()
                .map(|v| Box::new(v.clone()) as Box<dyn ToSql>),
        );
        let marks: Vec<String> = (0..select.variants.len())
            .map(|n| format!("?{}", at + n + 1))
            .collect();
        format!("coalesce(variant, '') NOT IN ({})", marks.join(", "))
    };
    let sql = format!(
        "CREATE TEMP TABLE {table} AS {MEMBER_ROWIDS} SELECT {KEPT}, CASE
            WHEN replay_of IS NOT NULL THEN 'replay'
            WHEN (?3 IS NOT NULL AND model IS NOT ?3) OR (?4 IS NOT NULL AND provider IS NOT ?4)
                OR {variants} THEN 'not_selected'
            ELSE 'run' END AS standing
         FROM turns WHERE rowid IN (SELECT id FROM member) AND (?2 IS NULL OR suite = ?2)"
    );
    db.execute(&sql, params_from_iter(values.iter().map(|v| v.as_ref())))?;
    db.execute_batch(&format!(
        "CREATE INDEX temp.{table}_turn ON {table}
             (variant, model_setting, claim, \"case\", sample, started_ns, path);
         DROP TABLE IF EXISTS temp.{table}_newest;
         CREATE TEMP TABLE {table}_newest AS SELECT variant, model_setting, fingerprint FROM
             (SELECT variant, model_setting, fingerprint, row_number() OVER
                 (PARTITION BY variant, model_setting ORDER BY started_ns DESC, path) AS r
              FROM {table} WHERE standing = 'run') WHERE r = 1;
         UPDATE {table} SET standing = 'superseded_version' WHERE standing = 'run'
             AND NOT EXISTS (SELECT 1 FROM {table}_newest n WHERE n.variant IS {table}.variant
                 AND n.model_setting = {table}.model_setting
                 AND n.fingerprint = {table}.fingerprint);
         DROP TABLE temp.{table}_newest;
         UPDATE {table} SET standing = 'superseded_again' WHERE rowid IN (
             SELECT rowid FROM (SELECT rowid, row_number() OVER (
                 PARTITION BY variant, model_setting, claim, \"case\", sample
                 ORDER BY started_ns DESC, path DESC) AS newest
             FROM {table} WHERE standing = 'run') WHERE newest > 1);
         CREATE INDEX temp.{table}_key ON {table}
             (standing, claim, \"case\", sample, variant, model_setting);
         DROP TABLE IF EXISTS temp.{table}_figures;
         CREATE TEMP TABLE {table}_figures AS SELECT input_tokens, output_tokens,
             CASE WHEN NOT cached THEN unqueued_ms END AS latency_ms
             FROM {table} WHERE standing = 'run' AND {FINISHED};"
    ))
}
