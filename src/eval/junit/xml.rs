//! A small typed JUnit writer (over `quick-xml`) that writes only what
//! `junit-10.xsd` allows: `name`, `tests`, `failures`, `errors` and `time` on
//! `<testsuites>`; `skipped`, `timestamp` and `<properties>` on each
//! `<testsuite>`; no properties on a `<testcase>`. The counts are derived
//! from the testcases, so they cannot disagree with them.

use std::io;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

pub struct Report {
    pub name: String,
    pub suites: Vec<Suite>,
}

pub struct Suite {
    pub name: String,
    pub timestamp: DateTime<Utc>,
    pub properties: Vec<(String, String)>,
    pub cases: Vec<TestCase>,
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

/// Tests, failures, errors and skipped testcases.
#[derive(Default, Clone, Copy)]
struct Counts {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Counts {
    fn of(cases: &[TestCase]) -> Counts {
        let mut counts = Counts::default();
        for case in cases {
            counts.tests += 1;
            match case.status {
                Status::Passed => {}
                Status::Failed { .. } => counts.failures += 1,
                Status::Errored { .. } => counts.errors += 1,
                Status::Skipped { .. } => counts.skipped += 1,
            }
        }
        counts
    }

    fn add(self, other: Counts) -> Counts {
        Counts {
            tests: self.tests + other.tests,
            failures: self.failures + other.failures,
            errors: self.errors + other.errors,
            skipped: self.skipped + other.skipped,
        }
    }
}

impl Suite {
    fn time(&self) -> Duration {
        self.cases.iter().map(|case| case.time).sum()
    }
}

impl Report {
    pub fn to_xml(&self) -> io::Result<String> {
        let mut writer = Writer::new_with_indent(Vec::new(), b' ', 4);
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        let counts = self.suites.iter().fold(Counts::default(), |sum, suite| {
            sum.add(Counts::of(&suite.cases))
        });
        let time: Duration = self.suites.iter().map(Suite::time).sum();
        writer
            .create_element("testsuites")
            .with_attributes([
                ("name", xml_safe(&self.name).as_str()),
                ("tests", &counts.tests.to_string()),
                ("failures", &counts.failures.to_string()),
                ("errors", &counts.errors.to_string()),
                ("time", &seconds(time)),
            ])
            .write_inner_content(|writer| {
                self.suites
                    .iter()
                    .try_for_each(|suite| write_suite(writer, suite))
            })?;
        let mut xml = String::from_utf8(writer.into_inner()).map_err(io::Error::other)?;
        xml.push('\n');
        Ok(xml)
    }
}

fn write_suite(writer: &mut Writer<Vec<u8>>, suite: &Suite) -> io::Result<()> {
    let counts = Counts::of(&suite.cases);
    writer
        .create_element("testsuite")
        .with_attributes([
            ("name", xml_safe(&suite.name).as_str()),
            ("tests", &counts.tests.to_string()),
            ("failures", &counts.failures.to_string()),
            ("errors", &counts.errors.to_string()),
            ("skipped", &counts.skipped.to_string()),
            ("time", &seconds(suite.time())),
            (
                "timestamp",
                &suite.timestamp.to_rfc3339_opts(SecondsFormat::Secs, true),
            ),
        ])
        .write_inner_content(|writer| {
            if !suite.properties.is_empty() {
                writer
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
                        Ok(())
                    })?;
            }
            suite
                .cases
                .iter()
                .try_for_each(|case| write_case(writer, case))
        })?;
    Ok(())
}

fn write_case(writer: &mut Writer<Vec<u8>>, case: &TestCase) -> io::Result<()> {
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

fn write_system_out(writer: &mut Writer<Vec<u8>>, text: &str) -> io::Result<()> {
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
