//! Each eval run's numbers per variant, kept in `eval_run_variants` so that
//! `evals list` and `evals show` read a few rows rather than fold a run's
//! turns on every call (SPEC §9). They are folded by the one tally
//! (`history::variants`, over `runs::tally`), for one run at a time, when
//! what they rest on changed: a member's row was added or read again (a
//! re-score beside its log), its summary file came or went, or logs were
//! removed (then every run, which is rare). SQL only selects the rows and
//! stores the results; a reader catching the index up refolds what is
//! stale before it answers.

use rusqlite::{Connection, OptionalExtension, params};

use super::history::VariantNumbers;
use super::{IndexError, RunIndex, in_transaction};

/// Marks every eval run's numbers to be folded again.
pub(super) fn all_stale(db: &Connection) -> rusqlite::Result<()> {
    db.execute("UPDATE eval_runs SET numbers_stale = 1", [])?;
    Ok(())
}

impl RunIndex {
    /// Folds again the numbers of every eval run marked stale, one run at a
    /// time, each stored in a transaction of its own.
    pub(super) fn refresh_numbers(&self) -> Result<(), IndexError> {
        let stale = self.strings("SELECT id FROM eval_runs WHERE numbers_stale = 1", &[])?;
        for id in stale {
            let numbers = self.variants(&id)?;
            let db = self.lock();
            in_transaction(&db, |db| store(db, &id, &numbers)).map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    /// An eval run's stored numbers per variant and their cost; folded now
    /// when they are stale (an index another process changed since it was
    /// caught up).
    pub(super) fn stored_variants(
        &self,
        id: &str,
    ) -> Result<Vec<(VariantNumbers, Option<f64>)>, IndexError> {
        let stale: Option<bool> = {
            let db = self.lock();
            db.query_row(
                "SELECT numbers_stale FROM eval_runs WHERE id = ?1",
                [id],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?
        };
        if stale != Some(false) {
            return self.variants(id);
        }
        let db = self.lock();
        db.prepare_cached(
            "SELECT variant, turns, judged, passed, failed, errors, pass_rate, latency_p50_ms,
             latency_p95_ms, usage_unreported, cost_usd FROM eval_run_variants
             WHERE eval_run = ?1 ORDER BY variant",
        )
        .and_then(|mut statement| {
            statement
                .query_map([id], |row| {
                    let count = |at| {
                        row.get::<_, i64>(at)
                            .map(|n| usize::try_from(n).unwrap_or(0))
                    };
                    let millis = |at| {
                        row.get::<_, Option<i64>>(at)
                            .map(|n| n.and_then(|n| u64::try_from(n).ok()))
                    };
                    let numbers = VariantNumbers {
                        variant: row.get(0)?,
                        turns: count(1)?,
                        judged: count(2)?,
                        passed: count(3)?,
                        failed: count(4)?,
                        errors: count(5)?,
                        pass_rate: row.get(6)?,
                        latency_p50_ms: millis(7)?,
                        latency_p95_ms: millis(8)?,
                        usage_unreported: row.get(9)?,
                    };
                    Ok((numbers, row.get(10)?))
                })?
                .collect()
        })
        .map_err(|e| self.error(e))
    }
}

/// Replaces eval run `id`'s stored numbers, and marks them current.
fn store(
    db: &Connection,
    id: &str,
    numbers: &[(VariantNumbers, Option<f64>)],
) -> rusqlite::Result<()> {
    db.execute("DELETE FROM eval_run_variants WHERE eval_run = ?1", [id])?;
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let millis = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let mut insert = db.prepare_cached(
        "INSERT INTO eval_run_variants (eval_run, variant, turns, judged, passed, failed, errors,
         pass_rate, latency_p50_ms, latency_p95_ms, usage_unreported, cost_usd)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    for (v, cost) in numbers {
        insert.execute(params![
            id,
            v.variant,
            count(v.turns),
            count(v.judged),
            count(v.passed),
            count(v.failed),
            count(v.errors),
            v.pass_rate,
            millis(v.latency_p50_ms),
            millis(v.latency_p95_ms),
            v.usage_unreported,
            cost,
        ])?;
    }
    db.execute("UPDATE eval_runs SET numbers_stale = 0 WHERE id = ?1", [id])?;
    Ok(())
}
