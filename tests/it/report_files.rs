//! Report files (`--junit`, `--markdown-summary`, `report -o`) written as
//! their path means: through a symbolic link onto the file it names, into
//! this process's own stdout as a stream, never over the suite or over each
//! other; a FIFO or a device refused before any work. Found by probes that
//! replaced `/dev/full` and `/dev/stdout` with plain files, and hung on a
//! FIFO nobody read.

use crate::support;

use std::path::Path;

use support::{promptlab, run_command, write};

fn suite(dir: &Path) -> std::path::PathBuf {
    write(dir, "ok.yaml", "turns:\n  - text: The excess is 350.\n");
    write(
        dir,
        "suite.yaml",
        "name: t\nclaims: {ids: [CLM-HH-0001]}\ncases:\n  - {name: excess, message: What is the excess?, script: ok.yaml, expect: {answerContains: excess}}\n",
    )
}

fn eval(dir: &Path, suite: &Path, extra: &[&std::ffi::OsStr]) -> support::Run {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .args(["eval", "--provider", "script", "-q"])
        .arg(suite)
        .args(extra);
    run_command(&mut command)
}

#[test]
fn a_report_through_a_link_lands_on_the_linked_file_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::fs::write(dir.path().join("real/junit.xml"), "old").unwrap();
    let link = dir.path().join("junit.xml");
    std::os::unix::fs::symlink("real/junit.xml", &link).unwrap();
    let out = eval(dir.path(), &suite, &["--junit".as_ref(), link.as_os_str()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written = std::fs::read_to_string(dir.path().join("real/junit.xml")).unwrap();
    assert!(written.starts_with("<?xml"), "{written}");
}

/// Issue 61: `--junit` to a FIFO nobody reads hung the end of the run
/// (and the first SIGTERM or Ctrl-C was ignored). A FIFO, a device or
/// anything else under /dev that is not this process's own stdout or
/// stderr is refused before any turn runs.
#[test]
fn a_report_into_a_fifo_or_a_device_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let fifo = dir.path().join("summary.md");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let full = dir.path().join("full.xml");
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    for (flag, path, what) in [
        ("--markdown-summary", fifo.as_path(), "a FIFO"),
        ("--junit", full.as_path(), "a device"),
        ("--junit", Path::new("/dev/null"), "a device"),
    ] {
        let out = eval(dir.path(), &suite, &[flag.as_ref(), path.as_os_str()]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_eq!(
            out.stderr.trim(),
            format!(
                "error: {flag} `{}`: it is {what}, not a regular file (a report goes to a file, or to /dev/stdout or /dev/stderr)",
                path.display()
            )
        );
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(!dir.path().join("runs").exists(), "nothing ran");
}

/// Issue 61: a report written into this process's own stdout, a pipe
/// nobody reads, holds the end of the run; the first SIGTERM ends it.
#[test]
fn the_first_signal_ends_a_report_waiting_on_its_reader() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: The excess is 350.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: t\nclaims: {all: true}\nrepeats: 25\ncases:\n  - {name: excess, message: What is the excess?, script: ok.yaml, expect: {answerContains: excess}}\n",
    );
    let mut child = promptlab()
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .args([
            "eval",
            "--provider",
            "script",
            "-q",
            "--junit",
            "/dev/stdout",
        ])
        .arg(&suite)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The pipe made as small as it goes (a page): the JUnit of 24 testcases
    // (each listing 20 of its 25 samples) fills it, and nobody reads.
    let reader = child.stdout.take().unwrap();
    // SAFETY: an fcntl on a descriptor this test owns.
    let sized = unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(sized > 0, "{}", std::io::Error::last_os_error());
    // Waits (bounded) until the run is over and a thread of it sleeps in a
    // write to the full pipe: the report's.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let writing = || {
        let tasks = format!("/proc/{}/task", child.id());
        std::fs::read_dir(tasks)
            .into_iter()
            .flatten()
            .flatten()
            .any(|task| {
                std::fs::read_to_string(task.path().join("wchan"))
                    .is_ok_and(|wchan| wchan.contains("pipe_write"))
            })
    };
    while !writing() {
        assert!(
            std::time::Instant::now() < deadline,
            "the report never waited on the pipe"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    support::send_signal(&child, "TERM");
    let status = support::exit_within(&mut child, std::time::Duration::from_secs(20));
    assert_eq!(status.code(), Some(143));
    drop(reader);
}

#[test]
fn a_report_over_the_suite_or_over_the_other_report_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let before = std::fs::read_to_string(&suite).unwrap();
    let out = eval(dir.path(), &suite, &["--junit".as_ref(), suite.as_os_str()]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        format!(
            "error: --junit `{}` is the suite file: the report would replace it",
            suite.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&suite).unwrap(), before);
    let same = dir.path().join("same.xml");
    let out = eval(
        dir.path(),
        &suite,
        &[
            "--junit".as_ref(),
            same.as_os_str(),
            "--markdown-summary".as_ref(),
            same.as_os_str(),
        ],
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        format!(
            "error: --junit and --markdown-summary both name `{}`: one report would replace the other",
            same.display()
        )
    );
    let script = dir.path().join("ok.yaml");
    let out = eval(
        dir.path(),
        &suite,
        &[
            "--script".as_ref(),
            script.as_os_str(),
            "--markdown-summary".as_ref(),
            script.as_os_str(),
        ],
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        format!(
            "error: --markdown-summary `{}` is the --script file: the report would replace it",
            script.display()
        )
    );
    assert!(!dir.path().join("runs").exists(), "nothing ran");
}

#[test]
fn a_report_page_into_a_device_is_refused_and_the_link_stays() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    assert_eq!(eval(dir.path(), &suite, &[]).code, 0);
    // A link of the test's own: a broken rule replaces it, not /dev/full.
    let full = dir.path().join("page.html");
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    let mut command = promptlab();
    command
        .arg("report")
        .arg(dir.path().join("runs"))
        .arg("-o")
        .arg(&full);
    let out = run_command(&mut command);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("it is a device, not a regular file"),
        "{}",
        out.stderr
    );
    assert!(
        std::fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// `/dev/stdout` is a stream whatever stdout is: with stdout a file, the
/// report lands in that file (appended after what eval printed), the file
/// is never replaced, and its permissions stay.
#[test]
fn a_report_to_dev_stdout_redirected_to_a_file_is_written_into_it() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out_path = dir.path().join("out.txt");
    let out_file = std::fs::File::create(&out_path).unwrap();
    std::fs::set_permissions(&out_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let inode = std::fs::metadata(&out_path).unwrap().ino();
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .args([
            "eval",
            "--provider",
            "script",
            "-q",
            "--junit",
            "/dev/stdout",
        ])
        .arg(&suite)
        .stdout(out_file);
    let status = command.status().unwrap();
    assert!(status.success());
    let meta = std::fs::metadata(&out_path).unwrap();
    assert_eq!(meta.ino(), inode, "the file behind stdout was not replaced");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let written = std::fs::read_to_string(&out_path).unwrap();
    assert!(written.contains("<testsuites"), "{written}");
}

#[test]
fn a_replaced_report_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let page = dir.path().join("summary.md");
    std::fs::write(&page, "old").unwrap();
    std::fs::set_permissions(&page, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = eval(
        dir.path(),
        &suite,
        &["--markdown-summary".as_ref(), page.as_os_str()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let meta = std::fs::metadata(&page).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&page).unwrap().starts_with("## "));
}
