//! A review queue (SPEC §15): an eval run's turns for a person to label,
//! one at a time — a seeded random sample stratified by the judge's
//! verdict, so that a calibration made from it is not biased toward one
//! side, with the turns the reviewer has labelled already left out (a
//! queue quit half-way resumes where it stopped).

use std::path::PathBuf;

use super::calibration::Agreement;
use super::calibration::judge_verdict;
use crate::runs::labels::{LabelVerdict, current_by_reviewer, read_labels};

/// The turns a queue offers at most by default.
pub const DEFAULT_QUEUE_LENGTH: usize = 40;

/// A turn waiting for its label.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedTurn {
    pub path: PathBuf,
    pub turn_id: String,
    pub variant: Option<String>,
    /// The judge's verdict on its rubric: `None` when it has none (no
    /// rubric, or the judge could not judge).
    pub judge: Option<LabelVerdict>,
}

/// A review queue: the turns in order, and the reviewer's earlier labels
/// of this run's turns paired with the judge's verdicts (for the running
/// kappa).
#[derive(Debug, Clone, PartialEq)]
pub struct Queue {
    pub turns: Vec<QueuedTurn>,
    pub earlier: Vec<(LabelVerdict, LabelVerdict)>,
}

/// The finished turns among `paths` (an eval run's members), of
/// `variant` when given, each with the judge's verdict on its rubric; a
/// log that cannot be read is left out.
pub fn queued_turns(paths: Vec<PathBuf>, variant: Option<&str>) -> Vec<QueuedTurn> {
    let mut turns = Vec::new();
    for path in paths {
        if crate::runs::naming::is_partial(&path) {
            continue;
        }
        let Ok(log) = crate::runs::read_run_log_checked(&path) else {
            continue;
        };
        let turn_variant = log.header.labels.as_ref().map(|l| l.variant.clone());
        if variant.is_some_and(|wanted| turn_variant.as_deref() != Some(wanted)) {
            continue;
        }
        let verdict = crate::runs::rescore::current_verdict(&log, &path);
        turns.push(QueuedTurn {
            turn_id: log.header.turn_id.clone(),
            judge: judge_verdict(verdict.as_ref()),
            path,
            variant: turn_variant,
        });
    }
    turns
}

/// `reviewer`'s current labels of `turns` beside the judge's verdicts,
/// where both judged: what the running kappa is computed over.
pub fn reviewer_pairs(
    turns: &[QueuedTurn],
    reviewer: &str,
) -> std::io::Result<Vec<(LabelVerdict, LabelVerdict)>> {
    let mut pairs = Vec::new();
    for turn in turns {
        let Some(judge) = turn.judge else { continue };
        if std::fs::symlink_metadata(crate::runs::labels::labels_dir(&turn.path)).is_err() {
            continue;
        }
        let (labels, _) = read_labels(&turn.path, &turn.turn_id)?;
        if let Some(label) = current_by_reviewer(&labels).get(reviewer) {
            pairs.push((label.verdict, judge));
        }
    }
    Ok(pairs)
}

/// `turns` in the queue's order: shuffled with `seed` within each judge
/// verdict (pass, fail, none), then taken from each in turn, so that the
/// first `limit` hold as many of each as there are; the turns `reviewer`
/// labelled already are left out.
pub fn queue(
    turns: Vec<QueuedTurn>,
    reviewer: &str,
    seed: u64,
    limit: usize,
) -> std::io::Result<Queue> {
    let mut strata: [Vec<QueuedTurn>; 3] = Default::default();
    let mut earlier = Vec::new();
    for turn in turns {
        let (labels, _) = read_labels(&turn.path, &turn.turn_id)?;
        if let Some(label) = current_by_reviewer(&labels).get(reviewer) {
            earlier.extend(turn.judge.map(|judge| (label.verdict, judge)));
            continue;
        }
        let stratum = match turn.judge {
            Some(LabelVerdict::Pass) => 0,
            Some(LabelVerdict::Fail) => 1,
            None => 2,
        };
        strata[stratum].push(turn);
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    for stratum in &mut strata {
        // Sorted first: the order is the seed's, whatever the listing's.
        stratum.sort_by(|a, b| a.turn_id.cmp(&b.turn_id));
        rng.shuffle(stratum);
        stratum.reverse();
    }
    let mut order = Vec::new();
    while order.len() < limit && strata.iter().any(|s| !s.is_empty()) {
        for stratum in &mut strata {
            if order.len() < limit
                && let Some(turn) = stratum.pop()
            {
                order.push(turn);
            }
        }
    }
    Ok(Queue {
        turns: order,
        earlier,
    })
}

/// The running agreement of a reviewer's labels with the judge, over the
/// turns both judged: `12 of 40 · κ so far 0.71 [0.48, 0.94]`'s figure.
pub fn running_agreement(pairs: &[(LabelVerdict, LabelVerdict)]) -> Agreement {
    Agreement::of(pairs.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, judge: Option<LabelVerdict>) -> QueuedTurn {
        QueuedTurn {
            path: PathBuf::from(format!("/nonexistent/x-{id}.ndjson")),
            turn_id: id.into(),
            variant: None,
            judge,
        }
    }

    #[test]
    fn the_queue_alternates_the_judge_s_verdicts_and_is_the_seed_s() {
        use LabelVerdict::{Fail, Pass};
        let mut turns: Vec<QueuedTurn> = (0..30)
            .map(|i| turn(&format!("p{i:02}"), Some(Pass)))
            .collect();
        turns.extend((0..4).map(|i| turn(&format!("f{i}"), Some(Fail))));
        let order = queue(turns.clone(), "ann", 7, 10).unwrap().turns;
        let judged: Vec<_> = order.iter().map(|t| t.judge).collect();
        // All four fails are in the first ten, one after each pass.
        assert_eq!(judged.iter().filter(|j| **j == Some(Fail)).count(), 4);
        assert_eq!(&judged[..2], &[Some(Pass), Some(Fail)]);
        turns.reverse();
        assert_eq!(
            queue(turns.clone(), "ann", 7, 10).unwrap().turns,
            order,
            "the listing's order does not matter"
        );
        assert_ne!(
            queue(turns, "ann", 8, 10).unwrap().turns,
            order,
            "another seed, another sample"
        );
    }
}
