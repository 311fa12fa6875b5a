//! The verdict as GitHub Actions workflow commands (`flakegate check --format github`), for the
//! gate run inside a workflow instead of by the App: each annotation the check run would carry
//! becomes `::error`, `::warning` or `::notice` on its file and lines, and a last command states
//! the verdict. GitHub shows them on the pull request's Files view and in the run's log.
//!
//! Every value is escaped as GitHub's runner reads it (`actions/toolkit`'s `escapeData` and
//! `escapeProperty`): `%`, CR and LF in the message; those and `:` and `,` in a property. A
//! message can then never end its command early nor start another (a newline in a test id or a
//! path is `%0A`, not a line of its own).

use super::annotations::annotations;
use crate::gate::inert;
use crate::gate::report::{Report, Verdict};
use crate::github::AnnotationLevel;
use std::fmt::Write as _;

fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn command(level: &str, properties: &[(&str, String)], message: &str) -> String {
    let props: Vec<String> = properties
        .iter()
        .map(|(k, v)| format!("{k}={}", escape_property(v)))
        .collect();
    let sep = if props.is_empty() { "" } else { " " };
    format!("::{level}{sep}{}::{}\n", props.join(","), escape_data(message))
}

/// The report as workflow commands: one per annotation, then the verdict's.
pub fn github(report: &Report) -> String {
    let mut out = String::new();
    for a in annotations(report) {
        let level = match a.annotation_level {
            AnnotationLevel::Failure => "error",
            AnnotationLevel::Warning => "warning",
            AnnotationLevel::Notice => "notice",
        };
        let mut props = vec![
            ("file", a.path.clone()),
            ("line", a.start_line.to_string()),
            ("endLine", a.end_line.to_string()),
        ];
        if let Some(t) = &a.title {
            props.push(("title", t.clone()));
        }
        out.push_str(&command(level, &props, &a.message));
    }
    let level = match report.verdict {
        Verdict::Pass => "notice",
        Verdict::PassWithCaveat => "warning",
        Verdict::Inconclusive | Verdict::Fail => "error",
    };
    let mut message = format!("{}", report.verdict);
    if let Some(first) = report.reasons.first() {
        let first = inert::plain(&first.message, inert::TEXT_MAX_CHARS);
        let stop = if first.ends_with(['.', '!', '?']) { "" } else { "." };
        let _ = write!(message, ": {first}{stop}");
    }
    if report.verdict.blocks() {
        message.push_str(" This blocks merge.");
    }
    out.push_str(&command(level, &[("title", "flakegate".to_owned())], &message));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile value cannot end its command early nor start another.
    #[test]
    fn values_are_escaped_as_the_runner_reads_them() {
        let evil = "a,b:c%d\r\n::error file=x::owned\n::add-mask::secret";
        let line = command("error", &[("file", evil.to_owned()), ("line", "3".to_owned())], evil);
        assert_eq!(line.matches('\n').count(), 1, "{line:?}");
        assert!(line.ends_with('\n'));
        assert_eq!(
            line,
            "::error file=a%2Cb%3Ac%25d%0D%0A%3A%3Aerror file=x%3A%3Aowned%0A%3A%3Aadd-mask%3A%3Asecret,line=3::\
             a,b:c%25d%0D%0A::error file=x::owned%0A::add-mask::secret\n"
        );
        // Decoding the properties back (as the runner does) gives the value again.
        let decode = |s: &str| {
            s.replace("%0D", "\r")
                .replace("%0A", "\n")
                .replace("%3A", ":")
                .replace("%2C", ",")
                .replace("%25", "%")
        };
        let props = line.trim_start_matches("::error ").split("::").next().unwrap();
        let file = props.split(',').next().unwrap().trim_start_matches("file=");
        assert_eq!(decode(file), evil);
        assert_eq!(command("notice", &[], "ok"), "::notice::ok\n");
    }
}
