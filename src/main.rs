//! The `promptlab` binary: parse arguments, run the command, map the outcome
//! to the documented exit code.

mod cli;

use std::process::ExitCode;

use cli::error::CliError;
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;

/// mimalloc, built without transparent huge pages (`Cargo.toml`): an eval
/// turn makes some 320 small allocations, which cost less here than in
/// glibc's malloc (BENCHMARKS.md, issue #31).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_t` (`mimalloc.h`;
/// libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back to the system after 10 ms (mimalloc 2's default),
/// not mimalloc 3's 1 s: with 1 s a 300,000-turn eval's peak RSS was 1.58×
/// its 1,000-turn peak, with 10 ms 1.44× (glibc's malloc: 1.33×), for
/// most of the CPU saved (BENCHMARKS.md, issue #31). Set before anything
/// is freed; the environment's `MIMALLOC_PURGE_DELAY`, if any, still wins.
///
/// And no transparent huge pages for the process: where the kernel gives
/// them to every large anonymous mapping (`enabled` = `always`, not the
/// usual `madvise`), mimalloc's arenas would grow the RSS in 2 MiB pages
/// (33 MB, 24 with this, glibc's malloc 20, for the 1,008-turn eval). The
/// flag is inherited by the programs promptlab starts, which lose nothing
/// but huge pages.
fn set_allocator_options() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one option's value; mimalloc reads it at each purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    }
    #[cfg(target_os = "linux")]
    // SAFETY: integer arguments only; a kernel without the option refuses
    // it (EINVAL), which leaves the process as it was.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    set_allocator_options();
    let cli = cli::Cli::parse_args();
    let store = ClaimStore::new(&cli.stores.claims_dir);
    let runs_dir = cli.stores.runs_dir.clone();
    match cli::run(cli) {
        Ok(exit) => exit.code(),
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(error @ CliError::StdoutClosed { .. }) => {
            // stderr may be closed too (`2>&-`): then say nothing.
            promptlab::text::eprintln_or_drop!("{error}");
            error.code()
        }
        Err(error) => {
            // Messages quote their input, which may hold control characters,
            // and a file of secrets (`casesFrom: .env`): the one redaction
            // of the process's own secrets goes over every message.
            let redactor = promptlab::provider::transport::redact::process_redactor(|name| {
                std::env::var(name).ok()
            });
            let report = promptlab::text::printable(&redactor.redact(&error.report()));
            promptlab::text::eprintln_or_drop!("error: {report}");
            let registry = PromptRegistry::embedded();
            if let Some(hint) = cli::suggest::for_error(&error, &store, &runs_dir, registry) {
                let hint = redactor.redact(&hint);
                promptlab::text::eprintln_or_drop!("hint: {}", promptlab::text::printable(&hint));
            }
            error.code()
        }
    }
}
