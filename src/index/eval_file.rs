//! An eval run's summary file (`evals/<ev-id>.json`) written as it goes:
//! its two lists of turn ids come from a walk of the run's turns (its
//! spill), so that a run of a million turns is written without them in
//! memory; the bytes are those serde writes for the whole `EvalRunFile`.

use std::io::Write;

use super::evals::EvalRunFile;

/// The turns of an eval run, walked as often as the writing needs: each
/// call gives its argument every turn id and whether it was taken from a
/// log (resumed, merged, re-scored), in matrix order — so that an eval run
/// of a million turns is written without a list of them in memory.
pub type TurnWalk<'a> =
    dyn FnMut(&mut dyn FnMut(&str, bool) -> std::io::Result<()>) -> std::io::Result<()> + 'a;

/// The file `EvalRunFile` serialises to, its two lists written from `turns`.
pub(super) fn write_file(
    out: &mut dyn Write,
    run: &EvalRunFile,
    turns: &mut TurnWalk,
) -> std::io::Result<()> {
    let serde_json::Value::Object(fields) = serde_json::to_value(run)? else {
        return Err(std::io::Error::other("an eval run is an object"));
    };
    out.write_all(b"{")?;
    let mut borrowed = 0usize;
    for (place, (key, value)) in fields.iter().enumerate() {
        if place > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b":")?;
        if key != "turnIds" {
            serde_json::to_writer(&mut *out, value)?;
            continue;
        }
        list(out, turns, |from_log| {
            borrowed += usize::from(from_log);
            true
        })?;
        if borrowed > 0 {
            out.write_all(b",\"fromLogs\":")?;
            list(out, turns, |from_log| from_log)?;
        }
    }
    out.write_all(b"}\n")
}

/// A JSON list of the turn ids `keep` takes.
fn list(
    out: &mut dyn Write,
    turns: &mut TurnWalk,
    mut keep: impl FnMut(bool) -> bool,
) -> std::io::Result<()> {
    out.write_all(b"[")?;
    let mut first = true;
    turns(&mut |id, from_log| {
        if !keep(from_log) {
            return Ok(());
        }
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, id).map_err(std::io::Error::from)
    })?;
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::evals::upsert;
    use rusqlite::Connection;

    fn run_file(turn_ids: Vec<String>, from_logs: Vec<String>) -> EvalRunFile {
        EvalRunFile {
            eval_run: "ev-00000000aa".into(),
            run_kind: "run".into(),
            suite: "s".into(),
            shard: Some("1/2".into()),
            started_at: "2026-12-01T10:00:00Z".parse().unwrap(),
            ended_at: "2026-12-01T10:01:00Z".parse().unwrap(),
            planned: 4,
            cancelled: false,
            exit: 1,
            turn_ids,
            from_logs,
            summary: serde_json::json!({"kind": "summary", "turns": 3}),
        }
    }

    /// The streamed file is byte for byte the whole one serde writes, with
    /// and without turns taken from logs; the rows read from it mark the
    /// borrowed ones.
    #[test]
    fn a_summary_file_written_from_a_walk_of_its_turns_is_the_whole_one() {
        let turns = [("t-1", false), ("t-\"2\"", true), ("t-3", false)];
        for borrowed in [true, false] {
            let turns: Vec<(&str, bool)> = turns
                .iter()
                .map(|(id, from)| (*id, *from && borrowed))
                .collect();
            let ids = turns.iter().map(|(id, _)| id.to_string()).collect();
            let from = (turns.iter().filter(|(_, f)| *f)).map(|(id, _)| id.to_string());
            let whole = run_file(ids, from.collect());
            let mut walk = |each: &mut dyn FnMut(&str, bool) -> std::io::Result<()>| {
                turns.iter().try_for_each(|(id, from)| each(id, *from))
            };
            let head = run_file(Vec::new(), Vec::new());
            let mut streamed = Vec::new();
            write_file(&mut streamed, &head, &mut walk).unwrap();
            let mut expected = serde_json::to_vec(&whole).unwrap();
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8(streamed.clone()).unwrap(),
                String::from_utf8(expected).unwrap()
            );
            // Read back as the index reads a summary file.
            let read: EvalRunFile = serde_json::from_slice(&streamed).unwrap();
            let db = Connection::open_in_memory().unwrap();
            crate::index::schema::create(&db).unwrap();
            assert!(upsert(&db, "f.json", &read).is_ok());
            let rows: Vec<(String, bool)> = db
                .prepare("SELECT turn_id, borrowed FROM eval_run_turns ORDER BY turn_id")
                .unwrap()
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            let mut expected: Vec<(String, bool)> = turns
                .iter()
                .map(|(id, from)| (id.to_string(), *from))
                .collect();
            expected.sort();
            assert_eq!(rows, expected);
            let counted: i64 = db
                .query_row("SELECT turns FROM eval_summaries", [], |row| row.get(0))
                .unwrap();
            assert_eq!(counted, 3);
        }
    }
}
