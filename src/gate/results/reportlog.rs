//! pytest-reportlog's JSON lines (`--report-log=FILE`) → [`TestResults`].

use super::model::{first_line, CollectionError, Outcome, TestResult, TestResults};
use crate::gate::error::{InputError, Location};
use crate::gate::nodeid::{Phase, TestId};
use serde_json::Value;
use std::collections::BTreeMap;

/// Parse a pytest-reportlog file (`--report-log=FILE`).
///
/// Every non-blank line must be a JSON object with a `$report_type`.
/// `TestReport`s are reduced per node id (see `reduce`); failed
/// `CollectReport`s are collection errors; other record types are ignored.
pub fn parse_reportlog(file: &str, text: &str) -> Result<TestResults, InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let last_content = lines.iter().rposition(|l| !l.trim().is_empty());
    let mut acc: BTreeMap<String, Phases> = BTreeMap::new();
    let mut out = TestResults::default();
    let mut saw_finish = false;
    for (i, raw) in lines.iter().enumerate() {
        let lineno = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let at = |col: Option<usize>| Location::at(file, lineno, col);
        let rec: Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                let mut err = InputError::json(file, &e);
                err.location = at(Some(e.column()));
                if Some(i) == last_content && !saw_finish {
                    err.message = format!(
                        "{}: the file looks truncated (its last line is not valid JSON and there is no \
                         SessionFinish record; did the run get killed?)",
                        err.message
                    );
                } else {
                    err.message = format!("expected one JSON object per line: {}", err.message);
                }
                return Err(err);
            }
        };
        let Some(obj) = rec.as_object() else {
            return Err(InputError::new(
                at(Some(1)),
                "expected a JSON object (a report-log record) on this line",
            ));
        };
        let Some(kind) = obj.get("$report_type") else {
            return Err(InputError::new(
                at(Some(1)),
                "expected a \"$report_type\" field: is this a pytest report-log (--report-log)?",
            ));
        };
        let str_field = |key: &str| -> Result<&str, InputError> {
            match obj.get(key) {
                Some(Value::String(s)) => Ok(s.as_str()),
                Some(other) => Err(InputError::new(
                    at(None),
                    format!("expected {key:?} to be a string, found {}", json_kind(other)),
                )),
                None => Err(InputError::new(at(None), format!("this record has no {key:?} field"))),
            }
        };
        match kind.as_str() {
            Some("TestReport") => {
                let nodeid = str_field("nodeid")?;
                let when = str_field("when")?;
                let outcome = match str_field("outcome")? {
                    "passed" => Raw::Passed,
                    "failed" => Raw::Failed,
                    "skipped" => Raw::Skipped,
                    // pytest-rerunfailures: a failed attempt that is run again. The next
                    // attempt's reports decide the outcome; the attempt is counted.
                    "rerun" => {
                        let phases = acc.entry(nodeid.to_string()).or_default();
                        phases.reruns = phases.reruns.saturating_add(1);
                        phases.rerun_line.get_or_insert(lineno);
                        continue;
                    }
                    other => {
                        return Err(InputError::new(
                            at(None),
                            format!(
                                "expected \"outcome\" to be \"passed\", \"failed\", \"skipped\" or \"rerun\", found {other:?}"
                            ),
                        ))
                    }
                };
                let wasxfail = obj.get("wasxfail").is_some_and(|v| !v.is_null());
                let rec = PhaseRec {
                    outcome,
                    wasxfail,
                    message: longrepr_message(obj.get("longrepr")),
                    line: lineno,
                };
                let phases = acc.entry(nodeid.to_string()).or_default();
                let slot = match when {
                    "setup" => &mut phases.setup,
                    "call" => &mut phases.call,
                    "teardown" => &mut phases.teardown,
                    other => {
                        return Err(InputError::new(
                            at(None),
                            format!("expected \"when\" to be \"setup\", \"call\" or \"teardown\", found {other:?}"),
                        ))
                    }
                };
                // A repeated phase (merged logs): a failure is never overwritten.
                if slot.as_ref().is_none_or(|old| old.outcome != Raw::Failed) {
                    *slot = Some(rec);
                }
            }
            Some("CollectReport") => {
                let nodeid = str_field("nodeid")?;
                if str_field("outcome")? == "failed" {
                    out.collection_errors.push(CollectionError {
                        nodeid: nodeid.to_string(),
                        message: longrepr_message(obj.get("longrepr")),
                        source: format!("{file}:{lineno}"),
                    });
                }
            }
            Some("SessionFinish") => saw_finish = true,
            Some(_) => {} // SessionStart, WarningMessage, …
            None => {
                return Err(InputError::new(
                    at(None),
                    format!("expected \"$report_type\" to be a string, found {}", json_kind(kind)),
                ))
            }
        }
    }
    for (nodeid, phases) in acc {
        out.tests.insert(TestId::new(nodeid), reduce(file, &phases));
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Raw {
    Passed,
    Failed,
    Skipped,
}

#[derive(Debug, Clone)]
struct PhaseRec {
    outcome: Raw,
    wasxfail: bool,
    message: Option<String>,
    line: usize,
}

#[derive(Debug, Clone, Default)]
struct Phases {
    setup: Option<PhaseRec>,
    call: Option<PhaseRec>,
    teardown: Option<PhaseRec>,
    /// Attempts pytest-rerunfailures reported as `rerun` (failed, then run again).
    reruns: u32,
    /// The first `rerun` record's line.
    rerun_line: Option<usize>,
}

/// One test's phases → its outcome. In order: setup failed → Error(setup);
/// call failed → Failed (a strict xpass is reported failed by pytest);
/// teardown failed → Error(teardown), even after a passing call; skipped in
/// setup or call → Skipped, or XFailed with `wasxfail`; call passed → Passed,
/// or XPassed with `wasxfail`. A test with no decisive report (the run stopped
/// inside it) is an Error, never a pass.
fn reduce(file: &str, p: &Phases) -> TestResult {
    fn failed(r: &Option<PhaseRec>) -> Option<&PhaseRec> {
        r.as_ref().filter(|r| r.outcome == Raw::Failed)
    }
    let res = |outcome, phase, r: &PhaseRec| TestResult {
        outcome,
        phase,
        message: r.message.clone(),
        source: format!("{file}:{}", r.line),
        reruns: p.reruns,
    };
    if let Some(r) = failed(&p.setup) {
        return res(Outcome::Error, Some(Phase::Setup), r);
    }
    if let Some(r) = failed(&p.call) {
        return res(Outcome::Failed, None, r);
    }
    if let Some(r) = failed(&p.teardown) {
        return res(Outcome::Error, Some(Phase::Teardown), r);
    }
    for r in [&p.setup, &p.call].into_iter().flatten() {
        if r.outcome == Raw::Skipped {
            return res(if r.wasxfail { Outcome::XFailed } else { Outcome::Skipped }, None, r);
        }
    }
    if let Some(r) = &p.call {
        return res(if r.wasxfail { Outcome::XPassed } else { Outcome::Passed }, None, r);
    }
    let line = [&p.setup, &p.teardown]
        .into_iter()
        .flatten()
        .map(|r| r.line)
        .next()
        .or(p.rerun_line)
        .unwrap_or(0);
    TestResult {
        outcome: Outcome::Error,
        phase: None,
        message: Some("no call-phase report: the run stopped inside this test".into()),
        source: format!("{file}:{line}"),
        reruns: p.reruns,
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A report's `longrepr` → the first line of its message: a dict's
/// `reprcrash.message`, a string itself, a skip's `[path, lineno, "Skipped: …"]`.
fn longrepr_message(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => first_line(s),
        Value::Object(o) => match o.get("reprcrash").and_then(|c| c.get("message")) {
            Some(Value::String(s)) => first_line(s),
            _ => match o.get("longrepr") {
                Some(Value::String(s)) => first_line(s),
                _ => None,
            },
        },
        Value::Array(a) => a.get(2).and_then(Value::as_str).and_then(first_line),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Report-log shapes seen from pytest 9.2.0 in /tmp/rshape (reduced to the fields used):
    /// a `skip` mark skips in setup with longrepr `[path, lineno, "Skipped: …"]`; an xfail
    /// skips in call with `wasxfail` and a dict longrepr; `pytest.xfail()` the same.
    #[test]
    fn reportlog_skip_and_xfail_shapes() {
        let text = r#"{"nodeid": "t.py::test_skip", "when": "setup", "outcome": "skipped", "longrepr": ["/tmp/t.py", 39, "Skipped: not today"], "$report_type": "TestReport"}
{"nodeid": "t.py::test_skip", "when": "teardown", "outcome": "passed", "longrepr": null, "$report_type": "TestReport"}
{"nodeid": "t.py::test_xfail", "when": "setup", "outcome": "passed", "longrepr": null, "$report_type": "TestReport"}
{"nodeid": "t.py::test_xfail", "when": "call", "outcome": "skipped", "wasxfail": "known bug", "longrepr": {"reprcrash": {"message": "assert False"}}, "$report_type": "TestReport"}
{"nodeid": "t.py::test_xfail_inline", "when": "call", "outcome": "skipped", "wasxfail": "inline xfail", "longrepr": {"reprcrash": {"message": "_pytest.outcomes.XFailed: inline xfail"}}, "$report_type": "TestReport"}
{"nodeid": "t.py::test_xfail_norun", "when": "setup", "outcome": "skipped", "wasxfail": "", "longrepr": ["/tmp/t.py", 3, "NOTRUN"], "$report_type": "TestReport"}
{"nodeid": "t.py::test_stopped", "when": "setup", "outcome": "passed", "longrepr": null, "$report_type": "TestReport"}
"#;
        let r = parse_reportlog("rl", text).unwrap();
        let o = |id: &str| {
            (
                r.tests[&TestId::new(id)].outcome,
                r.tests[&TestId::new(id)].message.clone(),
            )
        };
        assert_eq!(
            o("t.py::test_skip"),
            (Outcome::Skipped, Some("Skipped: not today".into()))
        );
        assert_eq!(o("t.py::test_xfail"), (Outcome::XFailed, Some("assert False".into())));
        assert_eq!(o("t.py::test_xfail_inline").0, Outcome::XFailed);
        assert_eq!(o("t.py::test_xfail_norun").0, Outcome::XFailed);
        // A test with only a setup report (the run stopped inside it) is not a pass.
        assert_eq!(o("t.py::test_stopped").0, Outcome::Error);
    }

    #[test]
    fn reportlog_errors() {
        let good = r#"{"$report_type": "SessionStart"}"#;
        let finish = r#"{"exitstatus": 0, "$report_type": "SessionFinish"}"#;
        let cases: &[(&str, String, usize, Option<usize>, &str)] = &[
            ("bad middle line", format!("{good}\n\n{{\"a\": tru}}\n{finish}\n"), 3, Some(10), "expected one JSON object per line"),
            ("truncated", format!("{good}\n{{\"nodeid\": \"t.py::x\", \"when\": \"ca"), 2, Some(33), "looks truncated"),
            ("truncated, trailing newline", format!("{good}\n{{\"nodeid\": \"t.py::x\"\n\n"), 2, Some(20), "looks truncated"),
            ("bad last line after finish", format!("{good}\n{finish}\n{{x"), 3, Some(2), "expected one JSON object per line"),
            ("not an object", format!("{good}\n[1]\n"), 2, Some(1), "expected a JSON object"),
            ("no report type", format!("{good}\n{{\"nodeid\": \"x\"}}\n"), 2, Some(1), "\"$report_type\""),
            ("bad outcome", format!("{good}\n{{\"$report_type\": \"TestReport\", \"nodeid\": \"t.py::x\", \"when\": \"call\", \"outcome\": \"flaky\"}}\n"), 2, None, "found \"flaky\""),
            ("bad when", format!("{good}\n{{\"$report_type\": \"TestReport\", \"nodeid\": \"t.py::x\", \"when\": \"run\", \"outcome\": \"passed\"}}\n"), 2, None, "\"when\""),
            ("nodeid type", format!("{good}\n{{\"$report_type\": \"TestReport\", \"nodeid\": 3, \"when\": \"call\", \"outcome\": \"passed\"}}\n"), 2, None, "\"nodeid\" to be a string"),
            ("missing outcome", format!("{good}\n{{\"$report_type\": \"CollectReport\", \"nodeid\": \"t.py\"}}\n"), 2, None, "no \"outcome\""),
        ];
        for (name, text, line, col, msg) in cases {
            let e = parse_reportlog("rl.jsonl", text).expect_err(name);
            assert_eq!((e.location.line, e.location.column), (Some(*line), *col), "{name}: {e}");
            assert!(e.message.contains(msg), "{name}: {e}");
            assert_eq!(e.location.file, "rl.jsonl");
        }
        // Blank lines, CRLF and a BOM are fine; an empty file has no tests.
        let ok = format!("\u{feff}{good}\r\n\r\n{finish}\r\n");
        assert_eq!(parse_reportlog("rl", &ok).unwrap(), TestResults::default());
        assert_eq!(parse_reportlog("rl", "").unwrap(), TestResults::default());
    }

    proptest::proptest! {
        #[test]
        fn reportlog_never_panics(s in "\\PC*") {
            let _ = parse_reportlog("f", &s);
        }
        #[test]
        fn reportlog_jsonish_never_panics(s in "[{}\\[\\]\":, a-z$0-9\n]{0,120}") {
            let _ = parse_reportlog("f", &s);
            let _ = parse_reportlog("f", &format!("{{\"$report_type\": \"TestReport\", {s}"));
        }
    }
}
