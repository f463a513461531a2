//! The claim brief built once per claim and date in a process: an eval
//! asks for the same brief for every case, variant and repeat of a claim,
//! and building it (formatting every section of the claim) was an eighth
//! of an eval turn's CPU (BENCHMARKS.md, issue #31).
//!
//! The memo is keyed by the shared claim itself, not by its digest: two
//! claims with the same bytes may have come through different parsers
//! (a `.json` and a `.yaml` file), and a `Weak` held in the entry keeps its
//! allocation from being reused for another claim while the entry lives.

use parking_lot::{Mutex, MutexGuard};
use std::sync::{Arc, OnceLock, Weak};

use chrono::NaiveDate;

use super::context::build_claim_brief;
use crate::claims::LoadedClaim;
use crate::memo::Bounded;

/// Briefs kept, and the most bytes of brief kept (`memo::Bounded`: a brief
/// has no length limit of its own — every risk flag and section name is
/// listed — so one over a sixteenth of that is built but not kept).
const KEPT_BRIEFS: usize = 1024;
const KEPT_BYTES: usize = 8 * 1024 * 1024;

type Key = (usize, NaiveDate);

struct Entry {
    /// Never read: held so that the key's address stays this claim's.
    _claim: Weak<LoadedClaim>,
    brief: Arc<str>,
}

fn locked() -> MutexGuard<'static, Bounded<Key, Entry>> {
    static MEMO: OnceLock<Mutex<Bounded<Key, Entry>>> = OnceLock::new();
    MEMO.get_or_init(|| Mutex::new(Bounded::new(KEPT_BRIEFS, KEPT_BYTES)))
        .lock()
}

/// `build_claim_brief(&claim.claim, today)`, built at most once while the
/// claim is shared. An entry's address is its claim's: the entry's `Weak`
/// keeps the allocation from being freed, so no other claim can have it.
pub fn claim_brief(claim: &Arc<LoadedClaim>, today: NaiveDate) -> Arc<str> {
    let key = (Arc::as_ptr(claim) as usize, today);
    if let Some(entry) = locked().get(&key) {
        return Arc::clone(&entry.brief);
    }
    // Built without the lock: other turns' briefs are not held up by it.
    let brief: Arc<str> = build_claim_brief(&claim.claim, today).into();
    let entry = Entry {
        _claim: Arc::downgrade(claim),
        brief: Arc::clone(&brief),
    };
    locked().insert(key, entry, brief.len());
    brief
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(text: &str) -> Arc<LoadedClaim> {
        let path = std::path::Path::new("claim.json");
        Arc::new(crate::claims::parse_claim_bytes(text.as_bytes(), path).unwrap())
    }

    const CLAIM: &str = r#"{"id": "CLM-1", "lineOfBusiness": "Motor", "status": "open",
        "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
        "incident": {"date": "2024-03-02", "description": "A rear-end collision"}}"#;

    #[test]
    fn the_brief_is_the_one_build_claim_brief_makes_for_each_claim_and_date() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
        let one = loaded(CLAIM);
        let other = loaded(&CLAIM.replace("Motor", "Property"));
        for claim in [&one, &other, &one] {
            for today in [day(1), day(30), day(1)] {
                let expected = build_claim_brief(&claim.claim, today);
                assert_eq!(&*claim_brief(claim, today), expected);
            }
        }
    }

    #[test]
    fn a_claim_dropped_and_replaced_gets_its_own_brief() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        for n in 0..50 {
            // A new claim each time, the last one dropped.
            let claim = loaded(&CLAIM.replace("CLM-1", &format!("CLM-{n}")));
            assert!(claim_brief(&claim, today).contains(&format!("Claim CLM-{n}")));
        }
    }

    #[test]
    fn a_huge_brief_is_built_but_not_kept() {
        let flags: Vec<String> = (0..5_000)
            .map(|n| format!(r#"{{"code": "FLAG-{n}-{}"}}"#, "x".repeat(140)))
            .collect();
        let text = CLAIM.replace(
            r#""status": "open","#,
            &format!(r#""status": "open", "riskFlags": [{}],"#, flags.join(",")),
        );
        let claim = loaded(&text);
        let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let brief = claim_brief(&claim, today);
        assert!(brief.len() > KEPT_BYTES / 16, "{}", brief.len());
        assert_eq!(&*brief, build_claim_brief(&claim.claim, today));
        let key = (Arc::as_ptr(&claim) as usize, today);
        assert!(locked().get(&key).is_none(), "not kept");
        assert!(locked().bytes() <= KEPT_BYTES);
    }
}
