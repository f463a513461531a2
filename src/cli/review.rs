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
    #[arg(long, value_name = "N", default_value_t = DEFAULT_QUEUE_LENGTH)]
    pub limit: usize,
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
    let reviewer = match &args.reviewer {
        Some(name) if !name.trim().is_empty() => name.trim().to_string(),
        Some(_) => return Err(CliError::usage("--reviewer: the name is empty")),
        None => super::label::default_reviewer()?,
    };
    let (eval_run, turns) = eval_run_turns(&args, runs_dir)?;
    let queue = queue(turns, &reviewer, args.seed, args.limit)?;
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
    drop(raw);
    let labelled = session.labelled;
    writeln!(
        std::io::stdout(),
        "\r\nlabelled {labelled} turn{} of {eval_run}; `promptlab judge calibrate` measures the judge against them",
        if labelled == 1 { "" } else { "s" }
    )?;
    result.map(|()| Exit::Success)
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
    Ok((eval_run, turns))
}

/// What one reviewer has done in this queue.
struct Session {
    reviewer: String,
    show_judge: bool,
    /// (label, judge) on the turns both judged: the running kappa's.
    pairs: Vec<(LabelVerdict, LabelVerdict)>,
    /// This session's decision per queue place (for `b`ack).
    decided: BTreeMap<usize, LabelVerdict>,
    labelled: usize,
    /// The last decision beside the judge's verdict, shown once decided.
    last: Option<String>,
}

/// What a key asks for.
enum Step {
    Next,
    Back,
    Quit,
}

impl Session {
    fn review(&mut self, turns: &[QueuedTurn], keys: &RawKeys) -> Result<(), CliError> {
        let mut at = 0;
        while at < turns.len() {
            let turn = &turns[at];
            let log = promptlab::runs::read_run_log_checked(&turn.path)?;
            match self.one(turns.len(), at, turn, &log, keys)? {
                Step::Next => at += 1,
                Step::Back => at = at.saturating_sub(1),
                Step::Quit => return Ok(()),
            }
        }
        Ok(())
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
        let mut chosen: BTreeMap<String, LabelVerdict> = BTreeMap::new();
        let mut note: Option<String> = None;
        loop {
            let screen = self.screen((total, at), turn, log, (&criteria, &chosen, &note));
            write_raw(&screen)?;
            let Some(key) = keys.key()? else {
                return Ok(Step::Quit);
            };
            let verdict = match key {
                b'p' => LabelVerdict::Pass,
                b'f' => LabelVerdict::Fail,
                b's' => return Ok(Step::Next),
                b'b' => return Ok(Step::Back),
                b'q' | 3 | 4 => return Ok(Step::Quit),
                b'n' => {
                    note = keys.line("note: ")?.filter(|n| !n.trim().is_empty());
                    continue;
                }
                b'1'..=b'9' => {
                    if let Some(criterion) = criteria.get(usize::from(key - b'1')) {
                        cycle(&mut chosen, criterion);
                    }
                    continue;
                }
                _ => continue,
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
        if let (Some(earlier), Some(judge)) = (self.decided.insert(at, verdict), turn.judge) {
            if let Some(place) = self.pairs.iter().position(|p| *p == (earlier, judge)) {
                self.pairs.remove(place);
            }
        } else {
            self.labelled += 1;
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

/// The terminal in non-canonical, no-echo mode while it lives: one key a
/// read. The settings it found are put back when it is dropped.
struct RawKeys {
    saved: libc::termios,
}

impl RawKeys {
    fn enter() -> Result<RawKeys, CliError> {
        // SAFETY: tcgetattr writes only `saved`, a plain C struct.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        let keys = RawKeys { saved };
        keys.set(false)?;
        Ok(keys)
    }

    /// `canonical`: line by line with echo (for a note), else key by key.
    fn set(&self, canonical: bool) -> std::io::Result<()> {
        let mut mode = self.saved;
        if !canonical {
            mode.c_lflag &= !(libc::ICANON | libc::ECHO);
            mode.c_cc[libc::VMIN] = 1;
            mode.c_cc[libc::VTIME] = 0;
        }
        // SAFETY: `mode` is a copy of the settings tcgetattr gave.
        match unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &mode) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    /// The next key; `None` at the end of input.
    fn key(&self) -> std::io::Result<Option<u8>> {
        let mut byte = [0u8; 1];
        match std::io::stdin().lock().read(&mut byte)? {
            0 => Ok(None),
            _ => Ok(Some(byte[0])),
        }
    }

    /// A line typed with echo, for a note (bounded like a label's text).
    fn line(&self, prompt: &str) -> std::io::Result<Option<String>> {
        self.set(true)?;
        write_raw(&format!("\r\n{prompt}"))?;
        let mut bytes = Vec::new();
        let mut byte = [0u8; 1];
        let mut stdin = std::io::stdin().lock();
        let read = loop {
            match stdin.read(&mut byte) {
                Ok(1) if byte[0] != b'\n' => bytes.push(byte[0]),
                Ok(_) => break Ok(()),
                Err(error) => break Err(error),
            }
            if bytes.len() >= promptlab::runs::labels::MAX_LABEL_TEXT_BYTES {
                break Ok(());
            }
        };
        self.set(false)?;
        read?;
        Ok(Some(String::from_utf8_lossy(&bytes).trim_end().to_string()))
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        // SAFETY: as in `set`: the settings found at the start.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}
