//! A small typed JUnit writer (over `quick-xml`) that writes only what
//! `junit-10.xsd` allows: `name`, `tests`, `failures`, `errors` and `time` on
//! `<testsuites>`; `skipped`, `timestamp` and `<properties>` on each
//! `<testsuite>`; no properties on a `<testcase>`. It writes as it goes,
//! so a report of a million testcases never sits in memory; the counts are
//! given first (`junit.rs` derives them and each testcase's status from the
//! same folds, so they cannot disagree).

use std::io::{self, Write};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

/// A `<testsuite>`'s attributes and properties, written before its cases.
pub struct SuiteHead {
    pub name: String,
    pub timestamp: DateTime<Utc>,
    pub properties: Vec<(String, String)>,
    pub counts: Counts,
}

pub struct TestCase {
    pub name: String,
    pub classname: String,
    pub time: Duration,
    pub status: Status,
    pub system_out: String,
}

pub enum Status {
    Passed,
    /// An expectation was not met: `message` is the first, `body` all.
    Failed {
        message: String,
        body: String,
    },
    /// Nothing could be judged.
    Errored {
        message: String,
        body: String,
    },
    Skipped {
        message: String,
    },
}

/// Tests, failures, errors and skipped testcases, and their time: known
/// before the testcases are written (from the folds), since they are
/// attributes of the elements that hold them.
#[derive(Default, Clone, Copy)]
pub struct Counts {
    pub tests: usize,
    pub failures: usize,
    pub errors: usize,
    pub skipped: usize,
    pub time: Duration,
}

/// The report written as it goes: `start`, then each suite's head, cases
/// and end, then `finish`.
pub struct JunitWriter<W: Write> {
    writer: Writer<W>,
}

impl<W: Write> JunitWriter<W> {
    pub fn start(out: W, name: &str, counts: Counts) -> io::Result<JunitWriter<W>> {
        let mut writer = Writer::new_with_indent(out, b' ', 4);
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        let start = BytesStart::new("testsuites").with_attributes([
            ("name", xml_safe(name).as_str()),
            ("tests", &counts.tests.to_string()),
            ("failures", &counts.failures.to_string()),
            ("errors", &counts.errors.to_string()),
            ("time", &seconds(counts.time)),
        ]);
        writer.write_event(Event::Start(start))?;
        Ok(JunitWriter { writer })
    }

    pub fn start_suite(&mut self, suite: &SuiteHead) -> io::Result<()> {
        let counts = suite.counts;
        let start = BytesStart::new("testsuite").with_attributes([
            ("name", xml_safe(&suite.name).as_str()),
            ("tests", &counts.tests.to_string()),
            ("failures", &counts.failures.to_string()),
            ("errors", &counts.errors.to_string()),
            ("skipped", &counts.skipped.to_string()),
            ("time", &seconds(counts.time)),
            (
                "timestamp",
                &suite.timestamp.to_rfc3339_opts(SecondsFormat::Secs, true),
            ),
        ]);
        self.writer.write_event(Event::Start(start))?;
        if !suite.properties.is_empty() {
            self.writer
                .create_element("properties")
                .write_inner_content(|writer| {
                    for (name, value) in &suite.properties {
                        writer
                            .create_element("property")
                            .with_attributes([
                                ("name", xml_safe(name).as_str()),
                                ("value", &xml_safe(value)),
                            ])
                            .write_empty()?;
                    }
                    Ok::<_, io::Error>(())
                })?;
        }
        Ok(())
    }

    pub fn case(&mut self, case: &TestCase) -> io::Result<()> {
        write_case(&mut self.writer, case)
    }

    pub fn end_suite(&mut self) -> io::Result<()> {
        self.writer
            .write_event(Event::End(BytesEnd::new("testsuite")))
    }

    /// Closes the report, with a final line end.
    pub fn finish(mut self) -> io::Result<W> {
        self.writer
            .write_event(Event::End(BytesEnd::new("testsuites")))?;
        let mut out = self.writer.into_inner();
        out.write_all(b"\n")?;
        Ok(out)
    }
}

fn write_case<W: Write>(writer: &mut Writer<W>, case: &TestCase) -> io::Result<()> {
    writer
        .create_element("testcase")
        .with_attributes([
            ("name", xml_safe(&case.name).as_str()),
            ("classname", &xml_safe(&case.classname)),
            ("time", &seconds(case.time)),
        ])
        .write_inner_content(|writer| {
            let (tag, message, body) = match &case.status {
                Status::Passed => return write_system_out(writer, &case.system_out),
                Status::Failed { message, body } => ("failure", message, Some(body)),
                Status::Errored { message, body } => ("error", message, Some(body)),
                Status::Skipped { message } => ("skipped", message, None),
            };
            let element = writer
                .create_element(tag)
                .with_attribute(("message", xml_safe(message).as_str()));
            match body {
                Some(body) => element.write_text_content(BytesText::new(&xml_safe(body)))?,
                None => element.write_empty()?,
            };
            write_system_out(writer, &case.system_out)
        })?;
    Ok(())
}

fn write_system_out<W: Write>(writer: &mut Writer<W>, text: &str) -> io::Result<()> {
    if !text.is_empty() {
        writer
            .create_element("system-out")
            .write_text_content(BytesText::new(&xml_safe(text)))?;
    }
    Ok(())
}

/// Seconds with at most three decimals, as the schema's `SUREFIRE_TIME`.
fn seconds(time: Duration) -> String {
    format!("{:.3}", time.as_secs_f64())
}

/// Text as XML 1.0 can carry it: control characters (model text may hold
/// them) and the non-characters U+FFFE and U+FFFF dropped, tabs and line
/// ends kept.
fn xml_safe(text: &str) -> String {
    text.chars()
        .filter(|c| {
            matches!(c, '\n' | '\t' | '\r')
                || !(c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}'))
        })
        .collect()
}
