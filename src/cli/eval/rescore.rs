//! `eval --rescore`'s line on stderr: what was re-scored and what the
//! judge was asked (`eval::session::rescore` does the work).

use std::path::PathBuf;

use promptlab::eval::session::Rescored;

/// `rescore: 3 of 4 selected turns recorded in runs; no chat model call; …`
pub fn say(rescored: &Rescored, dirs: &[PathBuf]) {
    let (calls, cached) = (rescored.judge.calls, rescored.judge.cached);
    let folders: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    promptlab::text::eprintln_or_drop!(
        "rescore: {} of {} selected turns recorded in {}; no chat model call; judge: {} asked, \
         {cached} from the cache",
        rescored.rescored,
        rescored.ended.spill.len(),
        folders.join(", "),
        calls - cached
    );
}
