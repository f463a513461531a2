//! "Did you mean": the nearest known name to a mistyped prompt id, claim id,
//! capability or turn-id prefix, by edit distance (as cargo suggests
//! subcommands), said under the error that named the unknown one.

use std::path::{Path, PathBuf};

use promptlab::chat::PromptSetupError;
use promptlab::claims::{ClaimError, ClaimStore};
use promptlab::prompts::PromptRegistry;
use promptlab::runs::naming::turn_id_of;
use promptlab::runs::store::{RunLogError, run_log_paths};

use super::error::CliError;

pub use promptlab::text::closest;

/// "; did you mean `x`?" for an unknown prompt id, or nothing (also for a
/// known id, ignored for its text: there is nothing else it could mean).
pub fn prompt_id_suffix(id: &str, registry: &PromptRegistry) -> String {
    if registry.prompt_ids().any(|known| known == id) {
        return String::new();
    }
    closest(id, registry.prompt_ids())
        .map(|known| format!("; did you mean `{known}`?"))
        .unwrap_or_default()
}

/// A hint for a claim id that is not in the store.
pub fn claim_id(id: &str, store: &ClaimStore) -> Option<String> {
    let entries = store.entries().ok()?;
    closest(id, entries.iter().map(|entry| entry.id.as_str()))
        .map(|known| format!("did you mean `{known}`? (promptlab claims list shows them all)"))
}

/// A hint for an unknown capability (quick action).
pub fn capability(id: &str, registry: &PromptRegistry) -> Option<String> {
    closest(id, registry.capabilities().iter().map(|c| c.id.as_str()))
        .map(|known| format!("did you mean `{known}`? (promptlab prompts list shows them all)"))
}

/// A hint for a turn-id prefix that matches no run log: the turn id whose
/// start is nearest to the prefix.
pub fn turn_id(prefix: &str, runs_dir: &Path) -> Option<String> {
    let paths: Vec<PathBuf> = run_log_paths(runs_dir).ok()?;
    let ids: Vec<String> = paths
        .iter()
        .filter_map(|path| turn_id_of(path).map(str::to_string))
        .collect();
    let width = prefix.chars().count();
    let starts: Vec<&str> = ids
        .iter()
        .map(|id| id.get(..width).unwrap_or(id.as_str()))
        .collect();
    closest(prefix, starts.iter().copied())
        .map(|start| format!("did you mean `{start}`? (promptlab runs list shows recorded turns)"))
}

/// The hint to print under an error, when it names something unknown.
pub fn for_error(
    error: &CliError,
    store: &ClaimStore,
    runs_dir: &Path,
    registry: &PromptRegistry,
) -> Option<String> {
    match error {
        CliError::Claim(ClaimError::NotFound(id)) => claim_id(id, store),
        CliError::PromptSetup(PromptSetupError::UnknownCapability(id)) => capability(id, registry),
        CliError::RunLog(RunLogError::NotFound(spec)) => turn_id(spec, runs_dir),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::closest;
    use promptlab::text::edit_distance;

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("system.bse", "system.base"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("é", "e"), 1);
    }

    #[test]
    fn closest_suggests_a_near_name_and_nothing_for_a_far_one() {
        let ids = ["system.base", "system.tools", "capability.summary"];
        assert_eq!(closest("system.bse", ids), Some("system.base"));
        assert_eq!(closest("SYSTEM.TOOLS", ids), Some("system.tools"));
        assert_eq!(closest("weather", ids), None);
        assert_eq!(closest("x", Vec::<&str>::new()), None);
        // Under three characters, nothing is a typo of anything.
        assert_eq!(closest("2", ["f", "2f"]), None);
        assert_eq!(closest("", [""]), None);
        assert_eq!(closest("ab", ["abc"]), None);
        assert_eq!(closest("abd", ["abc"]), Some("abc"));
    }
}
