//! The 10,000-turn report in headless Chromium, for `BENCHMARKS.md`: time
//! to first render, to open a failing cell's transcript, and to search.
//! Ignored by default (it needs a report made first):
//!
//! ```sh
//! PROMPTLAB_BENCH_REPORT=/tmp/report-10k.html \
//!   cargo test --release --test it report_bench -- --ignored --nocapture
//! ```

use crate::support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::browser::Browser;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
#[ignore = "a benchmark: needs PROMPTLAB_BENCH_REPORT, see the file's doc"]
fn a_large_report_renders_and_responds() {
    let path = PathBuf::from(
        std::env::var_os("PROMPTLAB_BENCH_REPORT").expect("PROMPTLAB_BENCH_REPORT names a report"),
    );
    let bytes = std::fs::metadata(&path).expect("the report exists").len();
    let mut browser = Browser::launch(1400, 1000);
    let opened = browser.open_report(&path, LIMIT);
    let in_page = browser
        .eval("window.__renderMs")
        .as_f64()
        .unwrap_or(f64::NAN);
    let turns = browser.eval("DATA.turns.length");
    let heap = browser.eval("performance.memory ? performance.memory.usedJSHeapSize : null");

    let clicked = Instant::now();
    browser.click("td.cell.o1");
    browser.wait_for("document.getElementById('answer')", "the transcript", LIMIT);
    let transcript = clicked.elapsed();
    browser.screenshot(
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots/report-10k.png"),
        false,
    );

    // Back to every turn, then a search: timed until the list has changed.
    for filter in ["f-variant", "f-claim", "f-case"] {
        browser.eval(&format!(
            "(() => {{ const f = document.getElementById('{filter}'); f.value = ''; \
             f.dispatchEvent(new Event('change')); }})()"
        ));
    }
    let before = browser.eval("document.getElementById('count').textContent");
    let searched = Instant::now();
    browser.eval(
        "(() => { const s = document.getElementById('search'); s.value = 'timeline'; \
         s.dispatchEvent(new Event('input')); })()",
    );
    let after = browser.wait_for(
        &format!(
            "document.getElementById('count').textContent !== {before} \
             && document.querySelectorAll('#list .row').length > 0 \
             && document.getElementById('count').textContent"
        ),
        "the search results",
        LIMIT,
    );
    let search = searched.elapsed();
    assert!(browser.errors.is_empty(), "{:#?}", browser.errors);
    println!(
        "report {bytes} bytes, {turns} turns: open to rendered {opened:?} (in-page performance.now at ready: {in_page:.0} ms), \
         JS heap {heap} bytes; failing cell to transcript {transcript:?}; search (150 ms debounce included) {search:?}: {before} → {after}"
    );
}

#[test]
#[ignore = "a benchmark: needs PROMPTLAB_BENCH_COMPARE, a compare --format html page"]
fn a_large_comparison_renders() {
    let path = PathBuf::from(
        std::env::var_os("PROMPTLAB_BENCH_COMPARE").expect("PROMPTLAB_BENCH_COMPARE names a page"),
    );
    let bytes = std::fs::metadata(&path).expect("the page exists").len();
    let mut browser = Browser::launch(1400, 1000);
    let opened = browser.open_report(&path, LIMIT);
    let pairs = browser.eval("DATA.pairs.length");
    let all = Instant::now();
    browser.eval(
        "(() => { const f = document.getElementById('f-change'); f.value = 'all'; \
         f.dispatchEvent(new Event('change')); })()",
    );
    browser.wait_for(
        "document.querySelectorAll('#pairs .pair').length > 0",
        "the pairs",
        LIMIT,
    );
    let shown = all.elapsed();
    assert!(browser.errors.is_empty(), "{:#?}", browser.errors);
    println!(
        "compare page {bytes} bytes, {pairs} pairs: open to rendered {opened:?}; all pairs listed (first page) {shown:?}"
    );
}
