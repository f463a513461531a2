//! `promptlab review`: label an eval run's turns in the terminal, one at a
//! time, with single keys, blind to the judge (`eval::review` orders the
//! queue; each decision is written as `promptlab label` writes it).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

use clap::Args;

use promptlab::eval::review::{
    DEFAULT_QUEUE_LENGTH, QueuedTurn, queue, queued_turns, running_agreement,
};
use promptlab::event::ChatEvent;
use promptlab::runs::RunLog;
use promptlab::runs::labels::{LabelRecord, LabelVerdict, write_label};
use promptlab::sink::printable;

use super::error::{CliError, Exit};

const AFTER_HELP: &str = "\
One turn at a time: the question, the claim, the answer, the tools with their results and the
rubric criteria; the judge's verdict stays hidden until you decide (--show-judge shows it first).
Keys: p pass · f fail · 1-9 a criterion's verdict (unset → pass → fail) · n a note · s skip ·
b back · q quit. Each decision is a label, written as `promptlab label` writes it; the order is a
seeded random sample stratified by the judge's verdict, and turns you have labelled are left out,
so quitting and running the same command again resumes.

Exit codes: 0 done or quit · 2 no terminal, no such eval run.

Examples:
  promptlab review                       # the newest eval run, 40 turns
  promptlab review ev-3f2a --variant candidate --limit 20 --reviewer ann";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct ReviewArgs {
    /// The eval run (`ev-…` or a unique prefix; default: the newest of --suite, else the newest).
    #[arg(value_name = "EVAL_RUN")]
    pub eval_run: Option<String>,
    /// The suite whose newest eval run to review.
    #[arg(long, value_name = "NAME", conflicts_with = "eval_run")]
    pub suite: Option<String>,
    /// Only this variant's turns.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Turns in the queue at most.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_QUEUE_LENGTH as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// The sample's seed: the same seed gives the same order.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Show the judge's verdict before deciding (blind by default).
    #[arg(long)]
    pub show_judge: bool,
    /// Who labels (default: $PROMPTLAB_REVIEWER, else git's user.name, else the login name).
    #[arg(long, value_name = "NAME")]
    pub reviewer: Option<String>,
}

pub fn run(args: ReviewArgs, runs_dir: &Path) -> Result<Exit, CliError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "review reads single keys from a terminal; in a script, label with `promptlab label TURN --verdict …`",
        ));
    }
    let reviewer = super::label::reviewer_or_default(args.reviewer.as_deref())?;
    let (eval_run, turns) = eval_run_turns(&args, runs_dir)?;
    let queue = queue(turns, &reviewer, args.seed, args.limit as usize)?;
    if queue.turns.is_empty() {
        writeln!(
            std::io::stdout(),
            "nothing to review in {eval_run}: {reviewer} has labelled every turn (or none matches)"
        )?;
        return Ok(Exit::Success);
    }
    let mut session = Session {
        reviewer,
        show_judge: args.show_judge,
        pairs: queue.earlier,
        decided: BTreeMap::new(),
        labelled: 0,
        last: None,
    };
    let raw = RawKeys::enter()?;
    let result = session.review(&queue.turns, &raw);
    // The terminal as it was, before anything more is written.
    drop(raw);
    let labelled = session.labelled;
    writeln!(
        std::io::stdout(),
        "\r\nlabelled {labelled} turn{} of {eval_run}; `promptlab judge calibrate` measures the judge against them",
        if labelled == 1 { "" } else { "s" }
    )?;
    result
}

/// The eval run's finished turns (of `--variant`), each with the judge's
/// verdict on its rubric.
fn eval_run_turns(
    args: &ReviewArgs,
    runs_dir: &Path,
) -> Result<(String, Vec<QueuedTurn>), CliError> {
    let index = super::evals::open_index(runs_dir)?;
    let eval_run = match &args.eval_run {
        Some(spec) => super::evals::resolve_eval_run(&index, spec)?,
        None => {
            let suite = super::evals::suite_or_latest(&index, args.suite.as_deref())?;
            let runs = match suite {
                Some(suite) => index.eval_runs_of(&suite).map_err(CliError::failed)?,
                None => Vec::new(),
            };
            runs.into_iter().next().ok_or_else(|| {
                CliError::usage("no eval run is recorded here: run `promptlab eval` first")
            })?
        }
    };
    let members = index.member_paths(&eval_run).map_err(CliError::failed)?;
    let turns = queued_turns(members, args.variant.as_deref());
    if let (Some(variant), true) = (&args.variant, turns.is_empty()) {
        return Err(CliError::usage(format!(
            "--variant `{}`: eval run {eval_run} has no finished turn of that variant",
            promptlab::text::one_line(variant, 80)
        )));
    }
    Ok((eval_run, turns))
}

/// What one reviewer has done in this queue.
struct Session {
    reviewer: String,
    show_judge: bool,
    /// (label, judge) on the turns both judged: the running kappa's.
    pairs: Vec<(LabelVerdict, LabelVerdict)>,
    /// This session's decision per queue place: shown again after `b`ack.
    decided: BTreeMap<usize, Decision>,
    labelled: usize,
    /// The last decision beside the judge's verdict, shown once decided.
    last: Option<String>,
}

/// What a key asks for.
enum Step {
    Next,
    Back,
    Quit,
    /// Ctrl-C: quit, and say so in the exit code.
    Interrupted,
}

/// A decision made in this session, kept for `b`ack.
#[derive(Clone)]
struct Decision {
    verdict: LabelVerdict,
    criteria: BTreeMap<String, LabelVerdict>,
    note: Option<String>,
}

impl Session {
    /// Goes through the queue; the exit: cancelled after Ctrl-C.
    fn review(&mut self, turns: &[QueuedTurn], keys: &RawKeys) -> Result<Exit, CliError> {
        let mut at = 0;
        while at < turns.len() {
            let turn = &turns[at];
            let log = promptlab::runs::read_run_log_checked(&turn.path)?;
            match self.one(turns.len(), at, turn, &log, keys)? {
                Step::Next => at += 1,
                Step::Back => at = at.saturating_sub(1),
                Step::Quit => return Ok(Exit::Success),
                Step::Interrupted => return Ok(Exit::Cancelled),
            }
        }
        Ok(Exit::Success)
    }

    /// Shows one turn and takes keys until it is decided, skipped, or left.
    fn one(
        &mut self,
        total: usize,
        at: usize,
        turn: &QueuedTurn,
        log: &RunLog,
        keys: &RawKeys,
    ) -> Result<Step, CliError> {
        let criteria: Vec<String> = promptlab::runs::rescore::current_verdict(log, &turn.path)
            .map(|v| v.rubric.into_iter().map(|r| r.criterion).collect())
            .unwrap_or_default();
        // Back at a turn decided in this session: its decision, to change.
        let earlier = self.decided.get(&at).cloned();
        let mut chosen = earlier
            .as_ref()
            .map(|d| d.criteria.clone())
            .unwrap_or_default();
        let mut note = earlier.and_then(|d| d.note);
        loop {
            let screen = self.screen((total, at), turn, log, (&criteria, &chosen, &note));
            write_raw(&screen)?;
            let verdict = match keys.key()? {
                Key::End | Key::Char(b'q') | Key::Char(4) => return Ok(Step::Quit),
                Key::Char(3) => return Ok(Step::Interrupted),
                Key::Char(b'p') => LabelVerdict::Pass,
                Key::Char(b'f') => LabelVerdict::Fail,
                Key::Char(b's') => return Ok(Step::Next),
                Key::Char(b'b') => return Ok(Step::Back),
                Key::Char(b'n') => {
                    if let Some(typed) =
                        keys.line("note (Enter keeps it, Esc cancels): ", note.as_deref())?
                    {
                        note = Some(typed).filter(|n| !n.trim().is_empty());
                    }
                    continue;
                }
                Key::Char(digit @ b'1'..=b'9') => {
                    if let Some(criterion) = criteria.get(usize::from(digit - b'1')) {
                        cycle(&mut chosen, criterion);
                    }
                    continue;
                }
                Key::Char(_) | Key::Sequence => continue,
            };
            self.decide(turn, verdict, (chosen, note), at)?;
            return Ok(Step::Next);
        }
    }

    /// Writes the label, and says what the judge said.
    fn decide(
        &mut self,
        turn: &QueuedTurn,
        verdict: LabelVerdict,
        (criteria, note): (BTreeMap<String, LabelVerdict>, Option<String>),
        at: usize,
    ) -> Result<(), CliError> {
        let decision = Decision {
            verdict,
            criteria: criteria.clone(),
            note: note.clone(),
        };
        let record = LabelRecord {
            turn_id: turn.turn_id.clone(),
            verdict,
            criteria,
            note,
            correction: None,
            reviewer: self.reviewer.clone(),
            at: chrono::Utc::now(),
        };
        write_label(&turn.path, &record)
            .map_err(|error| CliError::failed(format!("the label was not written: {error}")))?;
        // A decision made again (after `b`) replaces this session's pair.
        match (self.decided.insert(at, decision), turn.judge) {
            (Some(earlier), Some(judge)) => {
                let pair = (earlier.verdict, judge);
                if let Some(place) = self.pairs.iter().position(|p| *p == pair) {
                    self.pairs.remove(place);
                }
            }
            (Some(_), None) => {}
            (None, _) => self.labelled += 1,
        }
        if let Some(judge) = turn.judge {
            self.pairs.push((verdict, judge));
        }
        let judge = turn.judge.map_or("no rubric verdict", LabelVerdict::as_str);
        self.last = Some(format!(
            "previous: you {} · judge {judge}",
            verdict.as_str()
        ));
        Ok(())
    }

    fn screen(
        &self,
        (total, at): (usize, usize),
        turn: &QueuedTurn,
        log: &RunLog,
        (criteria, chosen, note): (&[String], &BTreeMap<String, LabelVerdict>, &Option<String>),
    ) -> String {
        let mut out = format!("── {} of {total} · {} ──\n", at + 1, self.kappa_so_far());
        if let Some(last) = &self.last {
            out.push_str(&format!("{last}\n"));
        }
        let place = log.header.labels.as_ref().map_or(String::new(), |l| {
            format!(" · case {} #{} · variant {}", l.case, l.sample, l.variant)
        });
        let claim = log.header.claim.as_ref().map_or("?", |c| c.id.as_str());
        out.push_str(&format!("claim {claim}{place}\n\n"));
        if let Some(question) = log.header.request.messages.last() {
            out.push_str(&format!("question: {}\n\n", question.text));
        }
        out.push_str(&answer_and_tools(log));
        if !criteria.is_empty() {
            out.push_str("\ncriteria:\n");
            for (n, criterion) in criteria.iter().enumerate() {
                let mark = chosen.get(criterion).map_or(" ", |v| v.as_str());
                out.push_str(&format!("  {} [{mark:>4}] {criterion}\n", n + 1));
            }
        }
        if let Some(note) = note {
            out.push_str(&format!("\nnote: {note}\n"));
        }
        if self.show_judge {
            let judge = turn.judge.map_or("no rubric verdict", LabelVerdict::as_str);
            out.push_str(&format!("\njudge: {judge}\n"));
        }
        out.push_str("\np pass · f fail · 1-9 criterion · n note · s skip · b back · q quit\n");
        // Cleared first; what the log holds is shown without its controls.
        format!("\x1b[2J\x1b[H{}", printable(&out).replace('\n', "\r\n"))
    }

    /// `κ so far 0.71 [0.48, 0.94]`.
    fn kappa_so_far(&self) -> String {
        let agreement = running_agreement(&self.pairs);
        match (agreement.kappa, agreement.kappa_interval) {
            (Some(k), Some((low, high))) => format!("κ so far {k:.2} [{low:.2}, {high:.2}]"),
            (Some(k), None) => format!("κ so far {k:.2}"),
            (None, _) => format!(
                "κ so far — ({} labels with a judge verdict)",
                agreement.labels
            ),
        }
    }
}

/// unset → pass → fail → unset.
fn cycle(chosen: &mut BTreeMap<String, LabelVerdict>, criterion: &str) {
    match chosen.get(criterion) {
        None => chosen.insert(criterion.to_string(), LabelVerdict::Pass),
        Some(LabelVerdict::Pass) => chosen.insert(criterion.to_string(), LabelVerdict::Fail),
        Some(LabelVerdict::Fail) => chosen.remove(criterion),
    };
}

/// The answer's text and each tool with its result.
fn answer_and_tools(log: &RunLog) -> String {
    let mut answer = String::new();
    let mut tools = String::new();
    for event in log.events() {
        match event {
            ChatEvent::TextDelta { text } => answer.push_str(text),
            ChatEvent::ToolResult {
                tool, ok, result, ..
            } => {
                let mark = if *ok { "ok" } else { "failed" };
                let result = promptlab::text::one_line(result, 160);
                tools.push_str(&format!("  {tool} ({mark}): {result}\n"));
            }
            ChatEvent::Error { message } => answer.push_str(&format!("\n[error: {message}]")),
            _ => {}
        }
    }
    let mut out = format!("answer:\n{}\n", answer.trim_end());
    if !tools.is_empty() {
        out.push_str(&format!("\ntools:\n{tools}"));
    }
    out
}

fn write_raw(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// One key as the terminal sent it: a byte, or an escape sequence (an
/// arrow, a function key, Alt with a key) read whole and never taken for
/// the keys inside it; `End` when input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Char(u8),
    Sequence,
    End,
}

/// How long after an ESC the rest of a sequence may take to arrive: a
/// terminal sends it in one write; a lone Escape has nothing after it.
const SEQUENCE_GAP_MS: i32 = 30;

/// The terminal in raw mode while it lives — no line editing, no echo, and
/// Ctrl-C as a key (so that the settings are always put back): one key a
/// read. The settings it found are put back when it is dropped.
struct RawKeys {
    saved: libc::termios,
    /// A byte read after a lone Escape (the next key, typed quickly).
    pending: std::cell::Cell<Option<u8>>,
}

impl RawKeys {
    fn enter() -> Result<RawKeys, CliError> {
        // SAFETY: tcgetattr writes only `saved`, a plain C struct.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        let mut mode = saved;
        mode.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        mode.c_cc[libc::VMIN] = 1;
        mode.c_cc[libc::VTIME] = 0;
        // SAFETY: `mode` is a copy of the settings tcgetattr gave.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &mode) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(RawKeys {
            saved,
            pending: std::cell::Cell::new(None),
        })
    }

    fn byte(&self) -> std::io::Result<Option<u8>> {
        if let Some(byte) = self.pending.take() {
            return Ok(Some(byte));
        }
        let mut byte = [0u8; 1];
        match std::io::stdin().lock().read(&mut byte)? {
            0 => Ok(None),
            _ => Ok(Some(byte[0])),
        }
    }

    /// Whether a byte arrives within `SEQUENCE_GAP_MS`.
    fn more_soon(&self) -> bool {
        let mut poll = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, owned here, for the call's length.
        unsafe { libc::poll(&mut poll, 1, SEQUENCE_GAP_MS) > 0 }
    }

    /// The next key; a lone Escape is `Char(27)`.
    fn key(&self) -> std::io::Result<Key> {
        let Some(byte) = self.byte()? else {
            return Ok(Key::End);
        };
        if byte != 27 || !self.more_soon() {
            return Ok(Key::Char(byte));
        }
        // CSI (`ESC [ … final`) or SS3 (`ESC O x`); anything else after an
        // Escape is the next key, typed quickly (Alt with a key reads as
        // Escape, then the key).
        match self.byte()? {
            Some(b'[') => {
                while let Some(byte) = self.byte()? {
                    if (0x40..=0x7e).contains(&byte) {
                        break;
                    }
                }
                Ok(Key::Sequence)
            }
            Some(b'O') => {
                self.byte()?;
                Ok(Key::Sequence)
            }
            next => {
                self.pending.set(next);
                Ok(Key::Char(27))
            }
        }
    }

    /// A line typed for a note, starting from `current`, echoed: Enter
    /// keeps it, Escape or Ctrl-C leaves the note as it was (`None`);
    /// Backspace erases; sequences are ignored. Bounded like a label's text.
    fn line(&self, prompt: &str, current: Option<&str>) -> std::io::Result<Option<String>> {
        let mut bytes: Vec<u8> = current.unwrap_or_default().as_bytes().to_vec();
        let show = |bytes: &[u8]| {
            let text = printable(&String::from_utf8_lossy(bytes));
            write_raw(&format!("\r\x1b[2K{prompt}{text}"))
        };
        write_raw("\r\n")?;
        show(&bytes)?;
        loop {
            match self.key()? {
                Key::Char(b'\r' | b'\n') => break,
                Key::Char(27 | 3) | Key::End => return Ok(None),
                Key::Char(8 | 127) => {
                    // A whole character, not a byte of it.
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    let mut chars = text.chars();
                    chars.next_back();
                    bytes = chars.as_str().as_bytes().to_vec();
                }
                Key::Char(byte) if byte >= 0x20 => {
                    if bytes.len() < promptlab::runs::labels::MAX_LABEL_TEXT_BYTES {
                        bytes.push(byte);
                    }
                }
                Key::Char(_) | Key::Sequence => continue,
            }
            show(&bytes)?;
        }
        Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string()))
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        // SAFETY: as in `set`: the settings found at the start.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}
