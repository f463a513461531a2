//! The eval run's spill (`eval::spill::ResultStore`): every finished turn
//! goes there and the end of the run reads it back in matrix order. It is
//! read as untrusted input: a truncated, garbled, missing, out-of-range,
//! duplicated or altered record is an error naming the file, never a
//! result; arbitrary bytes never panic the reader. The file lives in the
//! runs folder under a name no scanner takes for a run log, and is gone
//! when the run ends.

use crate::support;

use std::path::{Path, PathBuf};

use promptlab::eval::expect::{Observation, Outcome, Verdict};
use promptlab::eval::spill::ResultStore;
use promptlab::eval::{TurnResult, TurnSpec};
use proptest::prelude::*;
use support::{promptlab, run_command, write};

const MATRIX: usize = 6;

fn result(index: usize, outcome: Outcome) -> TurnResult {
    let spec = TurnSpec {
        index,
        variant: index % 2,
        claim_id: format!("CLM-HH-000{index}"),
        case: 0,
        sample: 1,
    };
    let observation = Observation {
        answer: format!("The excess is £{index}50."),
        latency_ms: 10 + index as u64,
        cost_usd: Some(0.001),
        turn_id: Some(format!("turn-{index}")),
        eval_run: Some("ev-0123456789".into()),
        ..Observation::default()
    };
    let verdict = Verdict::new(outcome, vec![format!("failure of {index}")]);
    TurnResult {
        run_log: Some(PathBuf::from(format!("runs/fp/turn-{index}.ndjson"))),
        from_log: index == 4,
        ..TurnResult::new(&spec, observation, verdict)
    }
}

/// A store holding turns 3, 0, 4 and 1 (put in that order), and what each
/// must read back as.
fn filled(dir: &Path) -> (ResultStore, Vec<TurnResult>) {
    let mut store = ResultStore::create(dir, "ev-0123456789", MATRIX).unwrap();
    let put = [
        result(3, Outcome::Pass),
        result(0, Outcome::Fail),
        result(4, Outcome::Error),
        result(1, Outcome::Pass),
    ];
    let mut expected: Vec<TurnResult> = put.iter().cloned().map(TurnResult::kept).collect();
    expected.sort_by_key(|r| r.spec.index);
    for result in put {
        store.push(result);
    }
    (store, expected)
}

/// Everything a pass reads, or its first error.
fn read_all(store: &mut ResultStore) -> Result<Vec<TurnResult>, String> {
    let order = store.in_matrix_order().map_err(|e| e.to_string())?;
    order.map(|r| r.map_err(|e| e.to_string())).collect()
}

#[test]
fn results_come_back_whole_in_matrix_order_and_the_file_goes_with_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, expected) = filled(dir.path());
    let path = store.path().to_path_buf();
    assert_eq!(path.parent(), Some(dir.path()));
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(".eval-spill.ev-0123456789."), "{name}");
    assert!(
        !promptlab::runs::naming::is_run_log(&path),
        "not named like a run log"
    );
    assert_eq!(read_all(&mut store).unwrap(), expected);
    // A second pass reads the same.
    assert_eq!(read_all(&mut store).unwrap(), expected);
    assert_eq!(store.len(), 4);
    assert!(store.contains(3) && !store.contains(2) && !store.contains(99));
    let index = index_path(&store);
    assert!(index.exists(), "its index beside it");
    assert!(!promptlab::runs::naming::is_run_log(&index));
    drop(store);
    assert!(!path.exists(), "removed with the store");
    assert!(!index.exists(), "its index too");
}

/// Where a store keeps where each record is.
fn index_path(store: &ResultStore) -> PathBuf {
    let mut name = store.path().as_os_str().to_owned();
    name.push(".index");
    PathBuf::from(name)
}

/// Turn `n` of `len` in an order far from the matrix's: times a prime that
/// does not divide `len`, modulo `len`, each `n` is another turn, and
/// consecutive ones are 7,919 apart.
fn scattered(n: usize, len: usize) -> usize {
    (n * 7_919) % len
}

/// More turns than are sorted in memory at a time (16,384), put in an
/// order far from the matrix's: they come back in matrix order, each
/// once, in every pass — the sorted runs on disk merged.
#[test]
fn many_turns_put_in_any_order_come_back_in_matrix_order() {
    let dir = tempfile::tempdir().unwrap();
    let len = 50_000;
    let mut store = ResultStore::create(dir.path(), "ev-0123456789", len).unwrap();
    for n in 0..len {
        let index = scattered(n, len);
        if index % 5 != 1 {
            store.push(turn(index, index % 3, "CLM-HH-0001"));
        }
    }
    let expected: Vec<usize> = (0..len).filter(|index| index % 5 != 1).collect();
    for _pass in 0..2 {
        let read: Vec<usize> = store
            .in_matrix_order()
            .unwrap()
            .map(|result| result.unwrap().spec.index)
            .collect();
        assert!(
            read == expected,
            "{} read, {} put",
            read.len(),
            expected.len()
        );
    }
    assert!(store.contains(0) && !store.contains(1) && store.contains(len - 1));
}

/// The error the first pass gives once `change` was made to the index
/// after the run put its turns in.
fn index_damaged(change: impl FnOnce(Vec<u8>) -> Vec<u8>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = filled(dir.path());
    store.flush().unwrap();
    let index = index_path(&store);
    std::fs::write(&index, change(std::fs::read(&index).unwrap())).unwrap();
    let error = read_all(&mut store).expect_err("a damaged index is never read as results");
    assert!(error.starts_with("the eval run's spill file `"), "{error}");
    error
}

const INDEX_CHANGED: &str =
    "its index (the same name with `.index`) was changed after it was written";

#[test]
fn an_index_cut_short_or_changed_is_an_error_never_results() {
    let cut = index_damaged(|mut bytes| {
        bytes.truncate(bytes.len() - 16);
        bytes
    });
    assert!(cut.ends_with(INDEX_CHANGED), "{cut}");
    let empty = index_damaged(|_| Vec::new());
    assert!(empty.ends_with(INDEX_CHANGED), "{empty}");
    // The first two entries swapped: the same bytes in another order.
    let swapped = index_damaged(|bytes| [&bytes[16..32], &bytes[..16], &bytes[32..]].concat());
    assert!(swapped.ends_with(INDEX_CHANGED), "{swapped}");
    let flipped = index_damaged(|mut bytes| {
        bytes[20] ^= 1;
        bytes
    });
    assert!(flipped.ends_with(INDEX_CHANGED), "{flipped}");
}

/// After the first pass, the index's sorted part cut short, an entry
/// doubled or moved, is caught by the next pass: a turn left out or read
/// twice would be a wrong count.
#[test]
fn an_index_changed_between_passes_is_caught_by_the_next_one() {
    let change_after_first_pass = |change: &dyn Fn(Vec<u8>) -> Vec<u8>| {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, expected) = filled(dir.path());
        assert_eq!(read_all(&mut store).unwrap(), expected);
        let index = index_path(&store);
        let bytes = std::fs::read(&index).unwrap();
        assert_eq!(bytes.len(), 2 * 4 * 16, "the entries, then the same sorted");
        std::fs::write(&index, change(bytes)).unwrap();
        read_all(&mut store).unwrap_err()
    };
    // The sorted run is entries 4 to 7 (turns 0, 1, 3, 4).
    let last_cut = change_after_first_pass(&|bytes| bytes[..7 * 16].to_vec());
    assert!(last_cut.ends_with(INDEX_CHANGED), "{last_cut}");
    let doubled = change_after_first_pass(&|bytes| {
        [&bytes[..5 * 16], &bytes[4 * 16..5 * 16], &bytes[6 * 16..]].concat()
    });
    assert!(doubled.ends_with(INDEX_CHANGED), "{doubled}");
    // Turn 4's entry pointing at turn 3's line.
    let pointed = change_after_first_pass(&|bytes| {
        let (turn_3, turn_4) = (6 * 16, 7 * 16);
        let offset_of_3 = &bytes[turn_3 + 4..turn_3 + 12];
        [&bytes[..turn_4 + 4], offset_of_3, &bytes[turn_4 + 12..]].concat()
    });
    assert!(
        pointed.contains("turn #3 where turn #4 was written"),
        "{pointed}"
    );
    // Turn 4's entry pointing past the end of the spill.
    let far = change_after_first_pass(&|bytes| {
        let turn_4 = 7 * 16;
        let past = (1u64 << 40).to_le_bytes();
        [&bytes[..turn_4 + 4], &past[..], &bytes[turn_4 + 12..]].concat()
    });
    assert!(far.ends_with(INDEX_CHANGED), "{far}");
}

#[test]
fn a_kept_result_is_what_comes_back_and_an_odd_log_path_survives() {
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    let mut store = ResultStore::create(dir.path(), "ev-0123456789", MATRIX).unwrap();
    let mut long = result(2, Outcome::Fail);
    long.observation.answer = "é".repeat(5_000);
    long.observation.message = "the question".into();
    long.run_log = Some(PathBuf::from(std::ffi::OsString::from_vec(
        b"runs/\xff\xfe.ndjson".to_vec(),
    )));
    store.push(long.clone());
    let back = read_all(&mut store).unwrap();
    assert_eq!(back, vec![long.clone().kept()]);
    assert_eq!(back[0].run_log, long.run_log);
    assert_eq!(back[0].observation.answer.chars().count(), 2_001);
}

#[test]
fn without_a_runs_folder_the_spill_goes_to_the_temporary_folder() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-yet");
    let store = ResultStore::create(&missing, "ev-0123456789", MATRIX).unwrap();
    assert_eq!(store.path().parent(), Some(std::env::temp_dir().as_path()));
    assert!(!missing.exists(), "no runs folder made for it");
}

/// The error reading gives once `change` was made to the file between the
/// run (the turns put in) and its end (the first read).
fn damaged(change: impl FnOnce(Vec<u8>) -> Vec<u8>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = filled(dir.path());
    store.flush().unwrap();
    let bytes = std::fs::read(store.path()).unwrap();
    std::fs::write(store.path(), change(bytes)).unwrap();
    let error = read_all(&mut store).expect_err("a damaged spill is never read as results");
    let prefix = format!("the eval run's spill file `{}`: ", store.path().display());
    assert!(error.starts_with(&prefix), "{error}");
    assert!(error.len() < prefix.len() + 300, "said briefly: {error}");
    error
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn replace(bytes: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains(from), "{from} in {text}");
    text.replacen(from, to, 1).into_bytes()
}

#[test]
fn a_truncated_garbled_missing_or_duplicated_record_is_an_error_naming_the_spill() {
    let cut = damaged(|mut bytes| {
        bytes.truncate(bytes.len() - 10);
        bytes
    });
    assert!(cut.ends_with("its last record is cut short"), "{cut}");
    let garbage = damaged(|bytes| {
        let mut all = b"<<not a record>>\n".to_vec();
        all.extend(lines(&bytes).concat()[..].iter().skip(20));
        all
    });
    assert!(
        garbage.contains("damaged at byte 0: not a record"),
        "{garbage}"
    );
    let missing = damaged(|bytes| lines(&bytes)[..3].concat());
    assert!(missing.ends_with("records are missing"), "{missing}");
    let twice = damaged(|bytes| {
        let all = lines(&bytes);
        [all.clone(), vec![all[0].clone()]].concat().concat()
    });
    assert!(
        twice.contains("turn #3 again (written at byte 0)"),
        "{twice}"
    );
    let outside = damaged(|bytes| replace(bytes, "{\"index\":3,", "{\"index\":9,"));
    assert!(
        outside.ends_with("turn #9 is outside the matrix"),
        "{outside}"
    );
    let never = damaged(|bytes| replace(bytes, "{\"index\":3,", "{\"index\":5,"));
    assert!(never.ends_with("turn #5 was never put in"), "{never}");
    let moved = damaged(|bytes| {
        let all = lines(&bytes);
        [all[1].clone(), all[0].clone(), all[2..].concat()].concat()
    });
    assert!(
        moved.contains("damaged at byte 0: turn #0 again"),
        "{moved}"
    );
    // The same length, valid JSON, the same index: a verdict turned round.
    let flipped = damaged(|bytes| replace(bytes, "\"outcome\":\"pass\"", "\"outcome\":\"fail\""));
    assert!(
        flipped.ends_with("damaged at byte 0: turn #3's record was changed after it was written"),
        "{flipped}"
    );
}

/// A store whose first pass read every result, then the file with `from`
/// changed to `to` in place, and the error of the next pass.
fn changed_between_passes(from: &str, to: &str) -> (tempfile::TempDir, ResultStore, String) {
    changed_before(from, to, |store| read_all(store).map(|_| ()))
}

/// `changed_between_passes`, its next pass `next`.
fn changed_before(
    from: &str,
    to: &str,
    next: impl FnOnce(&mut ResultStore) -> Result<(), String>,
) -> (tempfile::TempDir, ResultStore, String) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, expected) = filled(dir.path());
    assert_eq!(read_all(&mut store).unwrap(), expected);
    let bytes = std::fs::read(store.path()).unwrap();
    std::fs::write(store.path(), replace(bytes, from, to)).unwrap();
    let error = next(&mut store).unwrap_err();
    (dir, store, error)
}

/// A record changed in place after the first pass checked the file (the
/// same length, valid JSON, its own index) is caught by the pass that
/// reads it, not read as the turn's result.
#[test]
fn a_verdict_flipped_between_passes_is_caught_when_read() {
    // Turn 3's line is the first written: its "pass" becomes "fail".
    let (_dir, _store, error) =
        changed_between_passes("\"outcome\":\"pass\"", "\"outcome\":\"fail\"");
    assert!(
        error.ends_with("turn #3's record was changed after it was written"),
        "{error}"
    );
}

#[test]
fn a_turn_put_twice_or_outside_the_matrix_leaves_the_run_without_results() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = ResultStore::create(dir.path(), "ev-0123456789", MATRIX).unwrap();
    store.push(result(1, Outcome::Pass));
    store.push(result(1, Outcome::Fail));
    let error = read_all(&mut store).unwrap_err();
    assert!(error.ends_with("turn #1 was put twice"), "{error}");
    let mut store = ResultStore::create(dir.path(), "ev-0123456780", MATRIX).unwrap();
    store.push(result(MATRIX, Outcome::Pass));
    let error = read_all(&mut store).unwrap_err();
    assert!(
        error.ends_with(&format!("turn #{MATRIX} is outside the matrix")),
        "{error}"
    );
}

#[test]
fn a_record_changed_after_the_check_is_caught_when_it_is_read() {
    let (_dir, mut store, error) = changed_between_passes("{\"index\":3,", "{\"index\":5,");
    assert!(
        error.contains("turn #5 where turn #3 was written"),
        "{error}"
    );
    std::fs::write(store.path(), b"").unwrap();
    let error = read_all(&mut store).unwrap_err();
    assert!(
        error.contains("the file ends before this record"),
        "{error}"
    );
}

/// What the ids pass reads (`MatrixOrder::turn_ids`), or its first error.
fn read_ids(store: &mut ResultStore) -> Result<Vec<(String, bool)>, String> {
    let order = store.in_matrix_order().map_err(|e| e.to_string())?;
    let mut ids = Vec::new();
    let walked = order.turn_ids(&mut |id, from_log| {
        ids.push((id.to_string(), from_log));
        Ok(())
    });
    walked.map(|()| ids).map_err(|e| e.to_string())
}

/// The ids of the turns `filled` put in, in matrix order (turn 4 taken
/// from a log), as `result` made them.
fn ids_put() -> Vec<(String, bool)> {
    [(0, false), (1, false), (3, false), (4, true)]
        .map(|(index, from_log)| (format!("turn-{index}"), from_log))
        .to_vec()
}

#[test]
fn the_ids_pass_gives_each_turn_id_in_matrix_order_first_or_after_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = filled(dir.path());
    assert_eq!(read_ids(&mut store).unwrap(), ids_put());
    let (mut store, expected) = filled(dir.path());
    assert_eq!(read_all(&mut store).unwrap(), expected);
    assert_eq!(read_ids(&mut store).unwrap(), ids_put());
    // A turn without an id (it ended before its log was started) is
    // not listed.
    let mut store = ResultStore::create(dir.path(), "ev-0123456789", MATRIX).unwrap();
    let mut no_id = result(2, Outcome::Error);
    no_id.observation.turn_id = None;
    store.push(no_id);
    store.push(result(5, Outcome::Pass));
    assert_eq!(
        read_ids(&mut store).unwrap(),
        [("turn-5".to_string(), false)]
    );
}

#[test]
fn an_error_of_what_takes_the_ids_ends_the_pass_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = filled(dir.path());
    let mut seen = 0;
    let error = (store.in_matrix_order().unwrap())
        .turn_ids(&mut |_, _| {
            seen += 1;
            Err(std::io::Error::other("the index is locked"))
        })
        .unwrap_err();
    assert_eq!(error.to_string(), "the index is locked");
    assert_eq!(seen, 1, "nothing after the error");
}

/// A record changed in place after the first pass — its verdict, its
/// turn, its id, whether it came from a log — is caught by the ids pass
/// too: it never hands out an id the run did not write.
#[test]
fn a_record_changed_after_the_first_pass_is_caught_by_the_ids_pass() {
    let changes = [
        (
            "\"outcome\":\"pass\"",
            "\"outcome\":\"fail\"",
            "turn #3's record was changed",
        ),
        (
            "{\"index\":3,",
            "{\"index\":5,",
            "turn #5 where turn #3 was written",
        ),
        (
            "\"turnId\":\"turn-3\"",
            "\"turnId\":\"turn-9\"",
            "turn #3's record was changed",
        ),
        // One byte longer: turn 1's line, the last written, is read from
        // a byte early.
        (
            "\"fromLog\":true",
            "\"fromLog\":false",
            "not a record (EOF while parsing",
        ),
    ];
    for (from, to, said) in changes {
        let (_dir, _store, error) = changed_before(from, to, |store| read_ids(store).map(|_| ()));
        assert!(
            error.starts_with("the eval run's spill file `") && error.contains(said),
            "{from} → {to}: {error}"
        );
    }
}

/// Where turn 3's entry sits in the index once a pass has sorted it: the
/// third of turns 0, 1, 3, 4, after the four written.
const TURN_3_SORTED: std::ops::Range<usize> = 6 * 16..7 * 16;

/// In place of turn 3's record (the first line, read once already) and
/// of its sorted entry: `line` and `entry`, as someone could write them
/// between two passes; the next pass's error.
fn turn_3_replaced(store: &mut ResultStore, line: Vec<u8>, entry: &[u8]) -> String {
    let spill = std::fs::read(store.path()).unwrap();
    let first = lines(&spill)[0].len();
    assert_eq!(line.len(), first, "a line of the same length");
    std::fs::write(store.path(), [line, spill[first..].to_vec()].concat()).unwrap();
    let mut index = std::fs::read(index_path(store)).unwrap();
    index[TURN_3_SORTED].copy_from_slice(entry);
    std::fs::write(index_path(store), index).unwrap();
    read_all(store).unwrap_err()
}

/// After the first pass, a verdict turned round in the spill and the
/// digest in its sorted index entry made to match, as anyone could with
/// SipHash's public keys (turn, then line, as the store hashes them): the
/// digest is keyed at random for the run, so the next pass still says the
/// record was changed.
#[test]
fn a_record_and_its_digest_both_changed_between_passes_are_caught() {
    use std::hash::{DefaultHasher, Hasher};
    let dir = tempfile::tempdir().unwrap();
    let (mut store, expected) = filled(dir.path());
    assert_eq!(read_all(&mut store).unwrap(), expected);
    let first = lines(&std::fs::read(store.path()).unwrap())[0].clone();
    let forged = replace(first, "\"outcome\":\"pass\"", "\"outcome\":\"fail\"");
    let mut digest = DefaultHasher::new();
    digest.write_u64(3);
    digest.write(&forged);
    let digest = digest.finish() as u32;
    let mut entry = std::fs::read(index_path(&store)).unwrap()[TURN_3_SORTED].to_vec();
    entry[12..].copy_from_slice(&digest.to_le_bytes());
    let error = turn_3_replaced(&mut store, forged, &entry);
    assert!(
        error.ends_with("turn #3's record was changed after it was written"),
        "{error}"
    );
}

/// Two runs in one process, the same turns but turn 3's verdict turned
/// round in the second: turn 3's line and its sorted entry copied from the
/// second into the first between two passes are refused — each store's
/// digests have keys of their own.
#[test]
fn a_record_and_entry_from_another_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut mine, expected) = filled(dir.path());
    let mut other = ResultStore::create(dir.path(), "ev-0123456780", MATRIX).unwrap();
    for (index, outcome) in [
        (3, Outcome::Fail),
        (0, Outcome::Fail),
        (4, Outcome::Error),
        (1, Outcome::Pass),
    ] {
        other.push(result(index, outcome));
    }
    assert_eq!(read_all(&mut mine).unwrap(), expected);
    read_all(&mut other).unwrap();
    let their_line = lines(&std::fs::read(other.path()).unwrap())[0].clone();
    assert!(String::from_utf8_lossy(&their_line).contains("\"outcome\":\"fail\""));
    let their_entry = std::fs::read(index_path(&other)).unwrap()[TURN_3_SORTED].to_vec();
    let error = turn_3_replaced(&mut mine, their_line, &their_entry);
    assert!(
        error.ends_with("turn #3's record was changed after it was written"),
        "{error}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever bytes the spill holds, reading them never panics, and only
    /// the bytes written read back as results.
    #[test]
    fn arbitrary_spill_bytes_never_panic_and_never_pass_for_results(
        bytes in proptest::collection::vec(any::<u8>(), 0..2_000),
        flip in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, expected) = filled(dir.path());
        store.flush().unwrap();
        let original = std::fs::read(store.path()).unwrap();
        std::fs::write(store.path(), &bytes).unwrap();
        let read = read_all(&mut store);
        prop_assert!(read.is_err() || bytes == original);
        // One byte of the real file changed.
        let (mut store, _) = filled(dir.path());
        store.flush().unwrap();
        let mut changed = original.clone();
        let at = flip.index(changed.len());
        changed[at] = byte;
        std::fs::write(store.path(), &changed).unwrap();
        match read_all(&mut store) {
            Ok(results) => {
                prop_assert_eq!(&changed, &original);
                prop_assert_eq!(results, expected);
            }
            Err(error) => prop_assert!(error.starts_with("the eval run's spill file `")),
        }
        // The same byte changed after a first pass: the ids pass that
        // follows it gives the ids put in, or an error.
        let (mut store, expected) = filled(dir.path());
        prop_assert_eq!(read_all(&mut store).unwrap(), expected);
        std::fs::write(store.path(), &changed).unwrap();
        match read_ids(&mut store) {
            Ok(ids) => {
                prop_assert_eq!(&changed, &original);
                prop_assert_eq!(ids, ids_put());
            }
            Err(error) => prop_assert!(error.starts_with("the eval run's spill file `")),
        }
    }

    /// Whatever bytes the index holds, before the first pass or between
    /// two, reading never panics, and only the index written reads back
    /// the results.
    #[test]
    fn arbitrary_index_bytes_never_panic_and_never_pass_for_results(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        flip in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        between_passes in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        for replace_all in [true, false] {
            let (mut store, expected) = filled(dir.path());
            if between_passes {
                prop_assert_eq!(read_all(&mut store).unwrap(), expected.clone());
            } else {
                store.flush().unwrap();
            }
            let index = index_path(&store);
            let original = std::fs::read(&index).unwrap();
            let changed = if replace_all {
                bytes.clone()
            } else {
                let mut changed = original.clone();
                let at = flip.index(changed.len());
                changed[at] = byte;
                changed
            };
            std::fs::write(&index, &changed).unwrap();
            match read_all(&mut store) {
                Ok(results) => prop_assert_eq!(results, expected),
                Err(error) => prop_assert!(error.starts_with("the eval run's spill file `")),
            }
        }
    }
}

/// A scripted suite of two turns in `dir`.
fn suite(dir: &Path) -> PathBuf {
    write(dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    write(
        dir,
        "suite.yaml",
        "name: leftover\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\n\
         cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: excess}\n",
    )
}

fn spills(runs: &Path) -> Vec<String> {
    std::fs::read_dir(runs)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".eval-spill"))
        .collect()
}

#[test]
fn a_run_leaves_no_spill_and_one_left_by_a_killed_run_is_no_run_log() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let suite = suite(dir.path());
    let eval = |extra: &[&str]| {
        run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .args(["eval", "--provider", "script", "--junit"])
                .arg(dir.path().join("junit.xml"))
                .arg(&suite)
                .args(extra),
        )
    };
    let ran = eval(&[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout
            .contains("2 turns: 2 passed, 0 failed, 0 errored"),
        "{}",
        ran.stdout
    );
    assert_eq!(
        spills(&runs),
        Vec::<String>::new(),
        "removed at the end of the run"
    );
    // As a run killed mid-way leaves it: a spill nobody will read.
    std::fs::write(
        runs.join(".eval-spill.ev-0123456789.1-0000abcd"),
        "{\"index\":0}\n",
    )
    .unwrap();
    let listed = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["runs", "list"]),
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        !listed.stderr.contains("spill") && !listed.stdout.contains("spill"),
        "{}\n{}",
        listed.stdout,
        listed.stderr
    );
    assert_eq!(
        listed
            .stdout
            .lines()
            .filter(|l| l.contains("spill"))
            .count(),
        0
    );
    let merged = eval(&["--report", runs.to_str().unwrap()]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    assert!(
        merged.stdout.contains("2 turns: 2 passed"),
        "{}",
        merged.stdout
    );
    assert!(!merged.stderr.contains("spill"), "{}", merged.stderr);
    assert_eq!(
        spills(&runs),
        vec![".eval-spill.ev-0123456789.1-0000abcd".to_string()]
    );
}

/// The pid of a process that has exited (a killed eval's, as it looks).
fn gone_pid() -> u32 {
    let mut exited = std::process::Command::new("true").spawn().unwrap();
    let gone = exited.id();
    exited.wait().unwrap();
    gone
}

#[test]
fn the_spill_of_a_killed_run_goes_when_the_next_one_starts_and_a_live_ones_stays() {
    let dir = tempfile::tempdir().unwrap();
    let gone = gone_pid();
    let dead = dir
        .path()
        .join(format!(".eval-spill.ev-0000000001.{gone}-0000abcd"));
    let live = dir.path().join(format!(
        ".eval-spill.ev-0000000002.{}-0000abcd",
        std::process::id()
    ));
    let other = dir
        .path()
        .join(format!(".eval-spill-notes.{gone}-0000abcd"));
    let dead_index = dir
        .path()
        .join(format!(".eval-spill.ev-0000000001.{gone}-0000abcd.index"));
    // A live eval in another PID namespace (a container sharing the
    // folder): its pid is none here, but it holds its spill's lock.
    let elsewhere = dir
        .path()
        .join(format!(".eval-spill.ev-0000000003.{gone}-0000beef"));
    let elsewhere_index = dir
        .path()
        .join(format!(".eval-spill.ev-0000000003.{gone}-0000beef.index"));
    for path in [
        &dead,
        &live,
        &other,
        &dead_index,
        &elsewhere,
        &elsewhere_index,
    ] {
        std::fs::write(path, "{}\n").unwrap();
    }
    let held = std::fs::File::open(&elsewhere).unwrap();
    held.lock().unwrap();
    let store = ResultStore::create(dir.path(), "ev-0123456789", MATRIX).unwrap();
    assert!(!dead.exists(), "its process is gone");
    assert!(!dead_index.exists(), "its index with it");
    assert!(live.exists() && other.exists());
    assert!(
        elsewhere.exists() && elsewhere_index.exists(),
        "its lock is held"
    );
    // And this store's own spill is held the same way, to its end.
    let own = std::fs::File::open(store.path()).unwrap();
    assert!(matches!(
        own.try_lock(),
        Err(std::fs::TryLockError::WouldBlock)
    ));
    drop(store);
}

/// A FIFO where a left-behind index's spill should be (anyone may write
/// the system's temporary folder, where a spill goes when the runs folder
/// is not there yet) does not hold the next eval's start.
#[test]
fn a_fifo_in_a_spill_s_place_does_not_hold_the_clean_up() {
    let dir = tempfile::tempdir().unwrap();
    let gone = gone_pid();
    let spill = dir
        .path()
        .join(format!(".eval-spill.ev-0000000001.{gone}-0000abcd"));
    let name = std::ffi::CString::new(spill.to_str().unwrap()).unwrap();
    // SAFETY: `name` is a valid NUL-terminated path for the call's duration.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    std::fs::write(dir.path().join(format!("{}.index", spill.display())), "").unwrap();
    let folder = dir.path().to_path_buf();
    let (done, created) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let store = ResultStore::create(&folder, "ev-0123456789", MATRIX);
        let _ = done.send(store.is_ok());
    });
    let created = created.recv_timeout(std::time::Duration::from_secs(20));
    assert_eq!(created, Ok(true), "the clean-up must not wait on a FIFO");
}

/// A plan of two cases on one claim, only case `a` selected.
fn plan(dir: &Path) -> promptlab::eval::EvalPlan {
    use promptlab::eval::{EvalPlan, LoadedSuite, Selection, build_matrix, matrix::ModelSettings};
    let path = write(
        dir,
        "plan.yaml",
        "name: plan\nclaims: {ids: [CLM-HH-0001]}\ncases:\n  - name: a\n    message: What is the excess?\n  - name: b\n    message: Is it covered?\n",
    );
    let registry = promptlab::prompts::PromptRegistry::embedded();
    let suite = LoadedSuite::load(&path, registry).unwrap();
    let defaults = ModelSettings {
        model: "m".into(),
        thinking_level: promptlab::chat::request::ThinkingLevel::Low,
        forced: false,
        provider: None,
        base_url: None,
    };
    let store =
        promptlab::claims::ClaimStore::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("claims"));
    let matrix = build_matrix(&suite, &store, registry, &defaults).unwrap();
    let selection = Selection {
        cases: vec!["a".into()],
        ..Selection::default()
    };
    EvalPlan::new(suite, matrix, selection)
}

fn turn(index: usize, case: usize, claim: &str) -> TurnResult {
    let spec = TurnSpec {
        index,
        variant: 0,
        claim_id: claim.into(),
        case,
        sample: 1,
    };
    TurnResult::new(
        &spec,
        Observation::default(),
        Verdict::new(Outcome::Pass, vec![]),
    )
}

#[test]
fn the_end_of_a_run_holds_each_record_to_the_plan() {
    use promptlab::eval::totals::gather;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path());
    let fresh = || ResultStore::create(dir.path(), &plan.eval_run, plan.matrix.planned).unwrap();
    let mut store = fresh();
    store.push(turn(0, 0, "CLM-HH-0001"));
    let totals = gather(&plan, &mut store, 1.0, 20).unwrap();
    assert_eq!((totals.turns, totals.passed, totals.not_run), (1, 1, 0));
    assert!(totals.every_case_passed);
    let mut none = fresh();
    let totals = gather(&plan, &mut none, 1.0, 20).unwrap();
    assert_eq!((totals.turns, totals.not_run), (0, 1));
    assert!(
        !totals.every_case_passed,
        "a case that did not run did not pass"
    );
    // Case `b` was not selected; turn #0 is case `a` on CLM-HH-0001.
    let mut stray = fresh();
    stray.push(turn(1, 1, "CLM-HH-0001"));
    let error = gather(&plan, &mut stray, 1.0, 20)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.ends_with("turn #1 is not one this run selected"),
        "{error}"
    );
    let mut moved = fresh();
    moved.push(turn(0, 0, "CLM-MTR-0002"));
    let error = gather(&plan, &mut moved, 1.0, 20)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.ends_with("turn #0 is recorded at another place in the matrix than the plan's"),
        "{error}"
    );
}

/// The whole path, from the command line: a verdict changed in the spill
/// while the run goes on (here, by hand, in a part of the file already
/// written out) ends the run with no verdict — exit 1, the spill named, no
/// JUnit file, the spill removed — instead of a count that includes a
/// result nobody judged. (Changed before the end, it is the first scan's
/// check of each line's digest that finds it; a record changed between two passes
/// is `a_verdict_flipped_between_passes_is_caught_when_read`.)
#[test]
fn a_spill_changed_during_the_run_ends_it_without_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    write(
        dir.path(),
        "quick.yaml",
        "turns:\n  - chunks: [\"The excess is £250.\"]\n",
    );
    // The last turn of the matrix holds the run open while the spill's
    // first records are on disk (its writer's buffer is 64 KiB: 400 quick
    // turns of ~400 bytes are well past it).
    write(
        dir.path(),
        "slow.yaml",
        "turns:\n  - chunks: [\"The excess is £250.\"]\n    delayMs: 6000\n",
    );
    let mut suite = String::from("name: changed\nclaims: {ids: [CLM-HH-0001]}\ncases:\n");
    for n in 0..400 {
        suite.push_str(&format!(
            "  - {{name: q{n}, message: What is the excess?, script: quick.yaml}}\n"
        ));
    }
    suite.push_str("  - {name: slow, message: What is the excess?, script: slow.yaml}\n");
    let suite = write(dir.path(), "suite.yaml", &suite);
    let junit = dir.path().join("junit.xml");
    let mut child = promptlab()
        .env("PROMPTLAB_RUNS_DIR", &runs)
        .args(["eval", "--provider", "script", "-q", "-j", "2", "--junit"])
        .arg(&junit)
        .arg(&suite)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (spill, at) = loop {
        let written = spills(&runs).into_iter().find_map(|name| {
            let path = runs.join(name);
            let text = std::fs::read(&path).ok()?;
            let at = text
                .windows(16)
                .position(|w| w == b"\"outcome\":\"pass\"")?;
            Some((path, at))
        });
        if let Some(found) = written {
            break found;
        }
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no spill written out while the run went on");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // In place, the same length: "pass" becomes "fail".
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&spill)
        .unwrap();
    file.seek(SeekFrom::Start(at as u64 + 11)).unwrap();
    file.write_all(b"fail").unwrap();
    drop(file);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("spill file"), "{stderr}");
    assert!(
        stderr.contains("'s record was changed after it was written"),
        "{stderr}"
    );
    assert!(!junit.exists(), "no JUnit file from a damaged spill");
    assert_eq!(spills(&runs), Vec::<String>::new(), "removed all the same");
}
