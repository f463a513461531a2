//! The index's tables (`docs/run-logs.md` documents them for `sqlite3` and
//! Datasette) and its schema version, kept in SQLite's `user_version`: an
//! index of another version, or with other tables, is a cache to rebuild,
//! never an answer (`file.rs` decides which file is one).

use rusqlite::Connection;

use super::file::APPLICATION_ID;

/// Bumped once whenever a table or view changes; an index of another
/// version is rebuilt. Version 1 kept it in a `schema_version` table, and
/// had no application id; version 3 added `turns.tags`, the foreign keys and
/// the views; version 4 what `compare` pairs on (`model_setting`,
/// `answer_sha256`, `tools`, `unqueued_ms`, `judge`), the pairing key's
/// index, and each eval run's numbers per variant (`eval_run_variants`).
pub const SCHEMA_VERSION: i64 = 4;

/// The tables of an index of schema 1, sorted: how one is known without
/// an application id.
pub const SCHEMA_1_TABLES: [&str; 7] = [
    "eval_run_turns",
    "eval_runs",
    "eval_summaries",
    "folders",
    "schema_version",
    "turns",
    "unreadable",
];

/// One row per run log, one per eval run, their summaries and members, and
/// the folders' stamps that say which ones have been read since they changed.
const TABLES: &str = "
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
    input_tokens INTEGER,
    output_tokens INTEGER,
    cache_read_tokens INTEGER,
    usage_unreported INTEGER NOT NULL,
    thinking_tokens INTEGER NOT NULL,
    cost_usd REAL,
    latency_ms INTEGER,
    cached INTEGER NOT NULL,
    eval_run TEXT REFERENCES eval_runs (id),
    rescored INTEGER NOT NULL,
    replay_of TEXT,
    tags TEXT,
    model_setting TEXT NOT NULL,
    answer_sha256 TEXT,
    tools TEXT,
    unqueued_ms INTEGER,
    judge TEXT
);
CREATE INDEX turns_by_start ON turns (started_ns DESC, path);
CREATE INDEX turns_by_verdict ON turns (verdict, started_ns DESC);
CREATE INDEX turns_by_suite ON turns (suite, started_ns DESC);
CREATE INDEX turns_by_eval_run ON turns (eval_run, verdict, variant);
CREATE INDEX turns_by_turn_id ON turns (turn_id, path);
CREATE INDEX turns_by_folder ON turns (folder);
CREATE INDEX turns_by_pairing ON turns (eval_run, claim, \"case\", sample, variant);
CREATE TABLE unreadable (
    path TEXT PRIMARY KEY,
    folder TEXT NOT NULL,
    error TEXT NOT NULL
);
CREATE TABLE eval_runs (
    id TEXT PRIMARY KEY,
    suite TEXT NOT NULL,
    started_ns INTEGER NOT NULL,
    ended_ns INTEGER NOT NULL,
    numbers_stale INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE eval_run_variants (
    eval_run TEXT NOT NULL REFERENCES eval_runs (id),
    variant TEXT NOT NULL,
    turns INTEGER NOT NULL,
    judged INTEGER NOT NULL,
    passed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    pass_rate REAL,
    latency_p50_ms INTEGER,
    latency_p95_ms INTEGER,
    usage_unreported INTEGER NOT NULL,
    cost_usd REAL,
    PRIMARY KEY (eval_run, variant)
) WITHOUT ROWID;
CREATE INDEX eval_runs_by_start ON eval_runs (suite, started_ns DESC);
CREATE TABLE eval_summaries (
    file TEXT PRIMARY KEY,
    eval_run TEXT NOT NULL REFERENCES eval_runs (id),
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
    eval_run TEXT NOT NULL REFERENCES eval_runs (id),
    turn_id TEXT NOT NULL,
    borrowed INTEGER NOT NULL,
    PRIMARY KEY (eval_run, turn_id)
) WITHOUT ROWID;
CREATE INDEX eval_run_turns_by_turn ON eval_run_turns (turn_id);
CREATE INDEX eval_run_turns_borrowed ON eval_run_turns (eval_run) WHERE borrowed;
CREATE TABLE folders (
    name TEXT PRIMARY KEY,
    stamp TEXT NOT NULL
);
CREATE VIEW eval_run_members AS
SELECT t.eval_run AS eval_run, t.path AS path FROM turns t
    WHERE t.eval_run IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM eval_run_turns e WHERE e.eval_run = t.eval_run)
UNION ALL
SELECT e.eval_run, t.path FROM eval_run_turns e JOIN turns t ON t.turn_id = e.turn_id
    WHERE t.path = (SELECT min(path) FROM turns u WHERE u.turn_id = e.turn_id);
CREATE VIEW eval_run_overview AS
SELECT r.id AS eval_run,
    r.suite AS suite,
    strftime('%Y-%m-%dT%H:%M:%S', r.started_ns / 1000000000, 'unixepoch')
        || printf('.%03dZ', r.started_ns % 1000000000 / 1000000) AS started_at,
    strftime('%Y-%m-%dT%H:%M:%S', r.ended_ns / 1000000000, 'unixepoch')
        || printf('.%03dZ', r.ended_ns % 1000000000 / 1000000) AS ended_at,
    count(t.path) AS turns,
    count(CASE WHEN t.verdict = 'pass' THEN 1 END) AS passed,
    count(CASE WHEN t.verdict = 'fail' THEN 1 END) AS failed,
    count(CASE WHEN t.verdict = 'error' THEN 1 END) AS errored,
    round(1.0 * count(CASE WHEN t.verdict = 'pass' THEN 1 END)
        / nullif(count(CASE WHEN t.verdict IN ('pass', 'fail') THEN 1 END), 0), 4) AS pass_rate,
    sum(t.cost_usd) AS known_cost_usd,
    count(t.path) - count(t.cost_usd) AS turns_cost_unknown
FROM eval_runs r
LEFT JOIN eval_run_members m ON m.eval_run = r.id
LEFT JOIN turns t ON t.path = m.path
GROUP BY r.id;
CREATE VIEW turn_overview AS
SELECT t.turn_id AS turn_id,
    strftime('%Y-%m-%dT%H:%M:%S', t.started_ns / 1000000000, 'unixepoch')
        || printf('.%03dZ', t.started_ns % 1000000000 / 1000000) AS started_at,
    t.eval_run AS eval_run,
    t.suite AS suite,
    t.\"case\" AS \"case\",
    t.claim AS claim,
    t.variant AS variant,
    t.sample AS sample,
    t.model AS model,
    t.provider AS provider,
    t.fingerprint AS fingerprint,
    t.status AS status,
    t.verdict AS verdict,
    t.failures AS failures,
    t.tags AS tags,
    t.cost_usd AS cost_usd,
    t.latency_ms AS latency_ms,
    t.input_tokens AS input_tokens,
    t.output_tokens AS output_tokens,
    t.path AS path
FROM turns t;
";

/// Turns off the enforcing of foreign keys on a connection (the bundled
/// SQLite enforces them by default). The tables declare their keys for
/// readers (Datasette links them, sqlite-utils lists them), but the index is
/// caught up in any order — a summary's members may be listed before their
/// logs are read, and rows of removed logs go — so a key may dangle for a
/// while, and a cache must never refuse a row for it.
pub fn leave_keys_unenforced(db: &Connection) -> rusqlite::Result<()> {
    db.execute_batch("PRAGMA foreign_keys = OFF")
}

/// Makes the tables in an empty database, and marks it as promptlab's
/// index of this version; its connection leaves the keys unenforced.
pub fn create(db: &Connection) -> rusqlite::Result<()> {
    leave_keys_unenforced(db)?;
    db.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
    ))?;
    db.execute_batch(TABLES)
}

/// Every table's and index's definition in `db`, as SQLite keeps it: the
/// `CREATE` statement, so a column's name, type or constraint, a table or
/// an index that differs from what this version makes is seen.
pub fn definitions(db: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    db.prepare(
        "SELECT name, coalesce(sql, '') FROM sqlite_master \
         WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
    )?
    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

/// The definitions this version makes, read from a database made in memory.
pub fn expected_definitions() -> rusqlite::Result<Vec<(String, String)>> {
    let db = Connection::open_in_memory()?;
    create(&db)?;
    definitions(&db)
}

/// Drops every view, trigger and table (with its indexes), whatever made
/// them, so that `create` starts from nothing.
pub fn drop_all(db: &Connection) -> rusqlite::Result<()> {
    let objects: Vec<(String, String)> = db
        .prepare(
            "SELECT type, name FROM sqlite_master \
             WHERE type IN ('view', 'trigger', 'table') AND name NOT LIKE 'sqlite_%' \
             ORDER BY CASE type WHEN 'table' THEN 1 ELSE 0 END",
        )?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (kind, name) in objects {
        let kind = match kind.as_str() {
            "view" => "VIEW",
            "trigger" => "TRIGGER",
            _ => "TABLE",
        };
        db.execute_batch(&format!(
            "DROP {kind} IF EXISTS \"{}\"",
            name.replace('"', "\"\"")
        ))?;
    }
    Ok(())
}
