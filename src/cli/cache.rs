//! `promptlab cache stats|clear|prune`: the model-call and judge caches in
//! --cache-dir. Only files shaped like cache entries (`<kind>/<2 hex>/<64
//! hex>.json`, and temporary files a killed writer left) are ever removed,
//! so a --cache-dir pointed at the wrong folder loses nothing else.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};

use super::error::{CliError, Exit};

const KINDS: [(&str, &str); 2] = [("model", "model calls"), ("judge", "judge verdicts")];

const AFTER_HELP: &str = "\
The cache folder is --cache-dir (env PROMPTLAB_CACHE_DIR, default .promptlab-cache): model calls
cached by --cache under model/, judge verdicts under judge/ (docs/cache.md).

Examples:
  promptlab cache stats
  promptlab cache prune --older-than 30d
  promptlab cache clear --judge";

#[derive(Debug, Subcommand)]
#[command(after_help = AFTER_HELP)]
pub enum CacheCommand {
    /// How many entries each cache holds, their size, and their age.
    #[command(
        after_help = "Examples:\n  promptlab cache stats\n  promptlab --cache-dir /tmp/ci-cache cache stats"
    )]
    Stats,
    /// Remove every entry (of one cache with --model or --judge).
    #[command(after_help = "Examples:\n  promptlab cache clear\n  promptlab cache clear --judge")]
    Clear(Which),
    /// Remove the entries older than a duration.
    #[command(
        after_help = "Examples:\n  promptlab cache prune --older-than 30d\n  promptlab cache prune --older-than 12h --model"
    )]
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub struct Which {
    /// Only the model-call cache.
    #[arg(long, conflicts_with = "judge")]
    pub model: bool,
    /// Only the judge cache.
    #[arg(long)]
    pub judge: bool,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Entries written longer ago than this are removed: `30d`, `12h`, `1w 2d` or seconds.
    #[arg(long, value_name = "DURATION", value_parser = parse_age)]
    pub older_than: Duration,
    #[command(flatten)]
    pub which: Which,
}

fn parse_age(text: &str) -> Result<Duration, String> {
    promptlab::text::parse_duration(text).ok_or_else(|| {
        format!(
            "`{}` is not a duration like 30d, 12h, 1w 2d or a number of seconds",
            promptlab::text::quote(text)
        )
    })
}

/// A cache entry or a temporary file, with its size and age.
struct Entry {
    path: PathBuf,
    bytes: u64,
    modified: SystemTime,
    temporary: bool,
}

pub fn run(command: CacheCommand, cache_dir: &Path) -> Result<Exit, CliError> {
    match command {
        CacheCommand::Stats => stats(cache_dir),
        CacheCommand::Clear(which) => remove(cache_dir, &which, |_| true, "removed"),
        CacheCommand::Prune(args) => {
            let cutoff = SystemTime::now()
                .checked_sub(args.older_than)
                .unwrap_or(SystemTime::UNIX_EPOCH);
            remove(cache_dir, &args.which, |e| e.modified < cutoff, "pruned")
        }
    }
}

fn stats(cache_dir: &Path) -> Result<Exit, CliError> {
    writeln!(std::io::stdout(), "cache folder: {}", cache_dir.display())?;
    for (kind, what) in KINDS {
        let entries = entries(&cache_dir.join(kind))?;
        let kept: Vec<&Entry> = entries.iter().filter(|e| !e.temporary).collect();
        let bytes: u64 = kept.iter().map(|e| e.bytes).sum();
        let age = |time: Option<SystemTime>| {
            time.and_then(|t| SystemTime::now().duration_since(t).ok())
                .map(|d| humantime::format_duration(Duration::from_secs(d.as_secs())).to_string())
                .unwrap_or_else(|| "–".into())
        };
        if kept.is_empty() {
            writeln!(std::io::stdout(), "{kind}: empty")?;
            continue;
        }
        let oldest = age(kept.iter().map(|e| e.modified).min());
        let newest = age(kept.iter().map(|e| e.modified).max());
        writeln!(
            std::io::stdout(),
            "{kind}: {} {what}, {}, oldest {oldest} ago, newest {newest} ago",
            kept.len(),
            size(bytes)
        )?;
    }
    Ok(Exit::Success)
}

fn remove(
    cache_dir: &Path,
    which: &Which,
    chosen: impl Fn(&Entry) -> bool,
    verb: &str,
) -> Result<Exit, CliError> {
    for (kind, what) in KINDS {
        if (which.model && kind != "model") || (which.judge && kind != "judge") {
            continue;
        }
        let (mut count, mut bytes) = (0usize, 0u64);
        for entry in entries(&cache_dir.join(kind))?
            .iter()
            .filter(|e| e.temporary || chosen(e))
        {
            match std::fs::remove_file(&entry.path) {
                Ok(()) => {
                    count += usize::from(!entry.temporary);
                    bytes += entry.bytes;
                }
                // Another process removed or replaced it first: nothing lost.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(CliError::Io(std::io::Error::new(
                        error.kind(),
                        format!("cannot remove `{}`: {error}", entry.path.display()),
                    )));
                }
            }
        }
        writeln!(
            std::io::stdout(),
            "{kind}: {verb} {count} {what} ({})",
            size(bytes)
        )?;
    }
    Ok(Exit::Success)
}

/// The entry-shaped files under one cache's folder.
fn entries(dir: &Path) -> Result<Vec<Entry>, CliError> {
    let mut found = Vec::new();
    let shards = match std::fs::read_dir(dir) {
        Ok(shards) => shards,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(error) => return Err(error.into()),
    };
    for shard in shards.flatten() {
        let name = shard.file_name();
        let Some(prefix) = name.to_str().filter(|n| n.len() == 2 && is_hex(n)) else {
            continue;
        };
        let Ok(files) = std::fs::read_dir(shard.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().to_string();
            let entry = name
                .strip_suffix(".json")
                .filter(|key| key.len() == 64 && is_hex(key) && key.starts_with(prefix));
            let temporary = name.starts_with('.') && name.ends_with(".tmp");
            let Ok(meta) = file.metadata() else { continue };
            if (entry.is_some() || temporary) && meta.is_file() {
                found.push(Entry {
                    path: file.path(),
                    bytes: meta.len(),
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    temporary,
                });
            }
        }
    }
    Ok(found)
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 * 1024 => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
        b if b >= 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}
