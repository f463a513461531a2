//! What can be wrong with an eval run's spill: typed, each said with the
//! file it is about; an I/O error's text is kept, so that every later read
//! can say it again.

/// Why the spill could not be written or read back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the eval run's spill file `{path}`: {problem}")]
pub struct SpillError {
    pub path: String,
    pub problem: SpillProblem,
}

/// What is wrong with the spill (the text of an I/O error kept, so that
/// the error can be said again by each later read).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpillProblem {
    #[error("could not create it: {0}")]
    Create(String),
    #[error("could not write to it: {0}")]
    Write(String),
    #[error("could not read it back: {0}")]
    Read(String),
    #[error("turn #{0} is outside the matrix")]
    Outside(usize),
    #[error("turn #{0} was put twice")]
    PutTwice(usize),
    #[error("damaged at byte {offset}: {damage}")]
    Damaged { offset: u64, damage: Damage },
    #[error(
        "{lines} records in {bytes} bytes, but {count} were written in {written} bytes: records are missing"
    )]
    Missing {
        lines: usize,
        bytes: u64,
        count: usize,
        written: u64,
    },
    /// `<spill>.index`: where each record is.
    #[error("its index (the same name with `.index`) was changed after it was written")]
    IndexChanged,
    #[error("turn #{0} is not one this run selected")]
    NotSelected(usize),
    #[error("turn #{0} is recorded at another place in the matrix than the plan's")]
    Misplaced(usize),
}

/// What is wrong with one line of the spill.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Damage {
    #[error("its last record is cut short")]
    CutShort,
    #[error("a record longer than 16 MiB")]
    TooLong,
    #[error("could not read it back: {0}")]
    Read(String),
    /// serde's message, quoted briefly.
    #[error("not a record ({0})")]
    NotARecord(String),
    #[error("turn #{0} is outside the matrix")]
    Outside(usize),
    #[error("turn #{0} was never put in")]
    NeverPut(usize),
    #[error("turn #{index} again (written at byte {first})")]
    Again { index: usize, first: u64 },
    #[error("the file ends before this record")]
    Ends,
    #[error("turn #{0}'s record was changed after it was written")]
    ChangedSince(usize),
    #[error("turn #{found} where turn #{index} was written")]
    Elsewhere { found: usize, index: usize },
    #[error("a run log path that is not hexadecimal")]
    NotHex,
    #[error("two run log paths")]
    TwoPaths,
}
