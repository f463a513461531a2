//! `promptlab runs show RUN`: one recorded turn as `chat` showed it — its
//! header lines (claim, provider, prompt version, state, an eval turn's
//! place and standing verdict), the conversation, the events, the votes —
//! or its events as NDJSON.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Local;

use promptlab::runs::record::{LogState, Outcome};
use promptlab::runs::{RunLog, find_run, read_run_log};
use promptlab::sink::{EventWriter, OutputFormat, PrettyWriter, Style, printable};

use super::error::{CliError, Exit};
use super::runs::{ShowArgs, ShowFormat};

pub fn show(args: ShowArgs, runs_dir: &PathBuf) -> Result<Exit, CliError> {
    let path = find_run(std::slice::from_ref(runs_dir), &args.run)?;
    let log = read_run_log(&path)?;
    let stdout = std::io::stdout();
    if args.format == ShowFormat::Ndjson {
        let mut writer = EventWriter::new(
            OutputFormat::Ndjson,
            stdout.lock(),
            Style::plain(),
            Instant::now(),
        );
        for event in log.events() {
            writer.write(event)?;
        }
        return Ok(Exit::Success);
    }
    let style = Style::for_stdout();
    write_header(&log, style, &mut stdout.lock())?;
    if let Some(turn) = log.view().replay_of() {
        let line = replayed_line(turn, runs_dir);
        writeln!(stdout.lock(), "{}", style.dim(&printable(&line)))?;
    }
    let timing = log.footer.as_ref().map(|f| {
        (
            f.time_to_first_token_ms.map(Duration::from_millis),
            Duration::from_millis(f.total_ms),
        )
    });
    let mut writer = PrettyWriter::new(stdout.lock(), style, Instant::now());
    if let Some((first, total)) = timing {
        writer = writer.with_recorded_timing(first, total);
    }
    for event in log.events() {
        writer.write(event)?;
    }
    if log
        .footer
        .as_ref()
        .is_some_and(|f| f.status == promptlab::runs::RunStatus::Cancelled)
    {
        writer.cancelled()?;
    }
    drop(writer);
    write_votes(&path, style, &mut stdout.lock())?;
    Ok(Exit::Success)
}

/// What a replay replayed: the recorded turn's id, and — when its log is
/// still in the runs folder — where an eval put it and the log's path.
fn replayed_line(turn: &str, runs_dir: &Path) -> String {
    let original = find_run(&[runs_dir.to_path_buf()], turn)
        .ok()
        .and_then(|path| promptlab::runs::store::summarize(&path).ok());
    let Some(original) = original else {
        return format!(
            "replay of turn {turn} (its log is not in {})",
            runs_dir.display()
        );
    };
    let place = match &original.header.labels {
        Some(labels) => format!(
            " · eval suite {} · case {} · variant {} · sample {}{}",
            labels.suite,
            labels.case,
            labels.variant,
            labels.sample,
            labels
                .eval_run
                .as_deref()
                .map(|id| format!(" · eval run {id}"))
                .unwrap_or_default()
        ),
        None => String::new(),
    };
    format!(
        "replay of turn {turn}{place} · {} (a replay is not a run of that turn)",
        original.path.display()
    )
}

/// The thumbs votes recorded beside the log (`promptlab serve`), one line each.
fn write_votes(path: &Path, style: Style, out: &mut impl Write) -> Result<(), CliError> {
    for vote in promptlab::runs::feedback::read_feedback(path)? {
        let which = match vote.vote {
            promptlab::runs::feedback::Vote::Up => "up",
            promptlab::runs::feedback::Vote::Down => "down",
        };
        let comment = vote
            .comment
            .map(|c| format!(" · {}", promptlab::sink::printable(&c)))
            .unwrap_or_default();
        let when = vote.at.format("%Y-%m-%d %H:%M:%S UTC");
        writeln!(
            out,
            "{}",
            style.dim(&format!("vote: {which} · {when}{comment}"))
        )?;
    }
    Ok(())
}

/// What the turn was: when, which claim, which prompts, how it ended, and
/// the conversation it was given.
fn write_header(log: &RunLog, style: Style, out: &mut impl Write) -> Result<(), CliError> {
    let header = &log.header;
    let claim = match &header.claim {
        Some(claim) => format!(
            "{} (sha256 {})",
            claim.id,
            promptlab::digest::short_sha(&claim.sha256)
        ),
        None => header.request.claim_label().to_string(),
    };
    let overridden = if header.overridden.is_empty() {
        "none".to_string()
    } else {
        header.overridden.join(", ")
    };
    let status = match log.view().state() {
        LogState::Partial => "partial (the turn never finished)".to_string(),
        ended => ended.as_str().to_string(),
    };
    let when = header.started_at.with_timezone(&Local);
    for line in [
        format!(
            "turn {} · {}",
            header.turn_id,
            when.format("%Y-%m-%d %H:%M:%S")
        ),
        format!(
            "claim {claim} · {}{} · {}",
            header.provider,
            header
                .remote
                .as_ref()
                .map(|remote| format!(" at {}", remote.endpoint))
                .unwrap_or_default(),
            header.model
        ),
        format!(
            "prompts {} · overridden: {overridden}{}",
            header.fingerprint,
            log.footer
                .as_ref()
                .and_then(|footer| footer.server_fingerprint.as_deref())
                .filter(|reported| *reported != header.fingerprint)
                .map(|reported| format!(" · the deployment reported {reported}"))
                .unwrap_or_default()
        ),
        format!("status {status} · {}", log.path.display()),
    ] {
        writeln!(out, "{}", style.dim(&printable(&line)))?;
    }
    write_eval_place(log, style, out)?;
    for ignored in &header.ignored_overrides {
        writeln!(out, "{}", style.yellow(&format!("{ignored}")))?;
    }
    if let Some(missing) = &log.prompt_missing {
        writeln!(out, "{}", style.yellow(&printable(missing)))?;
    }
    for message in &header.request.messages {
        let role = format!("{:?}:", message.role).to_lowercase();
        writeln!(out, "{} {}", style.bold(&role), printable(&message.text))?;
    }
    writeln!(out)?;
    Ok(())
}

/// An eval turn's place (suite, case, variant, sample, eval run) and its
/// standing verdict with the failures; nothing for a chat turn.
fn write_eval_place(log: &RunLog, style: Style, out: &mut impl Write) -> Result<(), CliError> {
    let Some(labels) = &log.header.labels else {
        return Ok(());
    };
    let run = labels
        .eval_run
        .as_deref()
        .map(|id| format!(" · eval run {id}"))
        .unwrap_or_default();
    let place = format!(
        "eval suite {} · case {} · variant {} · sample {}{run}",
        labels.suite, labels.case, labels.variant, labels.sample
    );
    writeln!(out, "{}", style.dim(&printable(&place)))?;
    let Some(verdict) = log.view().verdict() else {
        return Ok(());
    };
    let outcome = verdict.outcome.as_str();
    let shown = match verdict.outcome {
        Outcome::Pass => style.green(&format!("verdict {outcome}")),
        _ => style.red(&format!("verdict {outcome}")),
    };
    writeln!(out, "{shown}")?;
    for failure in &verdict.failures {
        writeln!(out, "  - {}", printable(failure))?;
    }
    Ok(())
}
