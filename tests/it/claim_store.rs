//! Issue #12: an eval opens only the claims its suite selects, so one
//! broken file in the store no longer stops every eval.

use crate::support;

use support::{minimal_claim_json, promptlab, run_command, write};

fn eval(dir: &std::path::Path, suite: &str) -> support::Run {
    let suite = write(dir, "suite.yaml", suite);
    run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
            .arg("--claims-dir")
            .arg(dir.join("claims"))
            .args(["eval", "--provider", "script", "--script"])
            .arg(support::repo_root().join("tests/data/scripts/excess.yaml"))
            .arg(suite),
    )
}

#[test]
fn a_broken_claim_file_affects_only_the_suites_that_select_it() {
    let dir = tempfile::tempdir().unwrap();
    let claims = dir.path().join("claims");
    std::fs::create_dir(&claims).unwrap();
    write(&claims, "F-1.json", &minimal_claim_json("F-1", "Leak"));
    write(&claims, "F-2.json", &minimal_claim_json("F-2", "Leak"));
    write(&claims, "F-3.json", "{ broken");
    write(&claims, "G-1.json", &minimal_claim_json("NOT-G-1", "Leak"));
    let case =
        "cases:\n  - name: a\n    message: What is the excess?\n    expect: {noError: false}\n";

    let by_id = eval(
        dir.path(),
        &format!("name: x\nclaims: {{ids: [F-1]}}\n{case}"),
    );
    assert_eq!(by_id.code, 0, "{}", by_id.stderr);
    assert!(!by_id.stderr.contains("warning"), "{}", by_id.stderr);

    let by_glob = eval(
        dir.path(),
        &format!("name: x\nclaims: {{globs: [\"F-*\"]}}\n{case}"),
    );
    assert_eq!(by_glob.code, 0, "{}", by_glob.stderr);
    assert!(
        by_glob.stderr.contains("warning: skipped a claim"),
        "{}",
        by_glob.stderr
    );
    assert!(by_glob.stderr.contains("F-3.json"), "{}", by_glob.stderr);
    assert!(!by_glob.stderr.contains("G-1.json"), "{}", by_glob.stderr);

    // Named exactly, a broken file or a misnamed one is the suite's error.
    for id in ["F-3", "G-1"] {
        let named = eval(
            dir.path(),
            &format!("name: x\nclaims: {{ids: [{id}]}}\n{case}"),
        );
        assert_eq!(named.code, 2, "{}", named.stderr);
        assert!(
            named.stderr.contains(&format!("{id}.json")),
            "{}",
            named.stderr
        );
    }
}
