//! Never-panics properties of the inputs the cost and cache work added: a
//! `--prices` file, a re-score beside a run log, a cache entry on disk, and
//! prices applied to any token counts.

use promptlab::cost::PriceTable;
use promptlab::event::Usage;
use promptlab::judge::JudgeCache;
use promptlab::provider::cache::ModelCache;
use promptlab::runs::rescore::{read_rescore, rescore_path};
use proptest::prelude::*;

/// Text near the shape of the files: YAML/JSON structure and their field names.
const NEAR: &str = "(currency|models|USD|input|cachedInput|output|thinking|tiers|above|source|date|turnId|verdict|outcome|pass|rubric|key|reply|events|summary|: |\n  |\\{|\\}|\\[|\\]|,|\"|-1|1e400|0\\.5|x){0,40}";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn price_files_load_or_say_which(text in prop_oneof![".{0,300}", NEAR]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.yaml");
        std::fs::write(&path, &text).unwrap();
        if let Err(error) = PriceTable::embedded().with_file(&path) {
            prop_assert!(error.to_string().starts_with("--prices"), "{error}");
        }
    }

    #[test]
    fn prices_of_any_counts_are_finite_and_never_negative_and_unknown_without_one(
        input in any::<u64>(), cached in any::<u64>(), output in any::<u64>(), thinking in any::<u64>(),
        left_out in 0usize..4,
    ) {
        let table = PriceTable::embedded();
        let mut counts = [Some(input), Some(output), Some(cached)];
        if let Some(count) = counts.get_mut(left_out) {
            *count = None;
        }
        let usage = Usage::reported(counts[0], counts[1], counts[2]);
        for (_, prices) in table.models() {
            match prices.price(usage, thinking) {
                Some(price) => {
                    prop_assert!(usage.is_known(), "a count left out is never priced as 0");
                    prop_assert!(price.is_finite() && price >= 0.0, "{price}");
                }
                None => prop_assert!(!usage.is_known()),
            }
        }
    }

    #[test]
    fn a_damaged_rescore_or_cache_entry_is_an_error_or_a_miss(bytes in prop::collection::vec(any::<u8>(), 0..400), text in NEAR) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("20261130T000000.000Z-t.ndjson");
        for body in [bytes.as_slice(), text.as_bytes()] {
            std::fs::write(rescore_path(&log), body).unwrap();
            let _ = read_rescore(&log, "t");
            let key = "ab".repeat(32);
            for kind in ["model", "judge"] {
                let entry = dir.path().join(kind).join("ab").join(format!("{key}.json"));
                std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
                std::fs::write(&entry, body).unwrap();
            }
            let _ = ModelCache::new(dir.path().join("model")).get(&key);
            let _ = JudgeCache::new(dir.path().join("judge")).get(&key);
        }
    }
}
