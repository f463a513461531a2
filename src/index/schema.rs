//! The index's tables (`docs/run-logs.md` documents them for `sqlite3` and
//! Datasette) and its schema version: an index of another version, or one
//! SQLite cannot read, is a cache to rebuild, never an answer.

use rusqlite::{Connection, OptionalExtension};

/// Bumped whenever a table changes; an index of another version is rebuilt.
pub const SCHEMA_VERSION: i64 = 1;

/// One row per run log, one per eval run, their summaries and members, and
/// the folders' stamps that say which ones have been read since they changed.
const TABLES: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE turns (
    path TEXT PRIMARY KEY,
    folder TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    started_at TEXT NOT NULL,
    started_ns INTEGER NOT NULL,
    claim TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    variant TEXT,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    status TEXT NOT NULL,
    suite TEXT,
    \"case\" TEXT NOT NULL,
    sample INTEGER NOT NULL,
    verdict TEXT,
    failures TEXT,
    errored INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    thinking_tokens INTEGER NOT NULL,
    cost_usd REAL,
    latency_ms INTEGER,
    cached INTEGER NOT NULL,
    eval_run TEXT,
    rescored INTEGER NOT NULL
);
CREATE INDEX turns_by_start ON turns (started_ns DESC, path);
CREATE INDEX turns_by_verdict ON turns (verdict, started_ns DESC);
CREATE INDEX turns_by_suite ON turns (suite, started_ns DESC);
CREATE INDEX turns_by_eval_run ON turns (eval_run, variant, verdict);
CREATE INDEX turns_by_turn_id ON turns (turn_id, path);
CREATE INDEX turns_by_folder ON turns (folder);
CREATE TABLE unreadable (
    path TEXT PRIMARY KEY,
    folder TEXT NOT NULL,
    error TEXT NOT NULL
);
CREATE TABLE eval_runs (
    id TEXT PRIMARY KEY,
    suite TEXT NOT NULL,
    started_ns INTEGER NOT NULL,
    ended_ns INTEGER NOT NULL
);
CREATE INDEX eval_runs_by_start ON eval_runs (suite, started_ns DESC);
CREATE TABLE eval_summaries (
    file TEXT PRIMARY KEY,
    eval_run TEXT NOT NULL,
    kind TEXT NOT NULL,
    shard TEXT,
    planned INTEGER NOT NULL,
    turns INTEGER NOT NULL,
    status TEXT NOT NULL,
    exit INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT NOT NULL,
    summary TEXT NOT NULL
);
CREATE INDEX eval_summaries_by_run ON eval_summaries (eval_run);
CREATE TABLE eval_run_turns (
    eval_run TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    borrowed INTEGER NOT NULL,
    PRIMARY KEY (eval_run, turn_id)
) WITHOUT ROWID;
CREATE TABLE folders (
    name TEXT PRIMARY KEY,
    stamp TEXT NOT NULL
);
";

/// Whether the index at `db` has this schema version; `false` for one of
/// another version, or a file that is not an index at all.
pub fn is_current(db: &Connection) -> bool {
    db.query_row("SELECT version FROM schema_version", [], |row| {
        row.get::<_, i64>(0)
    })
    .optional()
    .ok()
    .flatten()
        == Some(SCHEMA_VERSION)
}

/// Creates the tables in an empty database.
pub fn create(db: &Connection) -> rusqlite::Result<()> {
    db.execute_batch(TABLES)?;
    db.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        [SCHEMA_VERSION],
    )?;
    Ok(())
}

/// Drops every table, whatever version made them, so that `create` starts
/// from nothing.
pub fn drop_all(db: &Connection) -> rusqlite::Result<()> {
    let names: Vec<String> = db
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for name in names {
        db.execute_batch(&format!(
            "DROP TABLE IF EXISTS \"{}\"",
            name.replace('"', "\"\"")
        ))?;
    }
    Ok(())
}
