//! The evidence record as `flakegate check --format` prints it: text for a terminal
//! ([`super::terminal`]), markdown from the check-summary template ([`super::markdown`]), or
//! JSON.

use super::{markdown, terminal};
use crate::gate::config::Config;
use crate::gate::report::Report;
use std::path::Path;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
    /// GitHub Actions workflow commands: annotations on the changed lines and the verdict.
    Github,
    /// SARIF 2.1.0 for code scanning: one rule per reason code, results on the changed lines.
    Sarif,
}

pub fn render(report: &Report, config: &Config, format: Format, templates: Option<&Path>) -> anyhow::Result<String> {
    match format {
        Format::Json => Ok(json(report)),
        Format::Text => Ok(terminal::text(report)),
        Format::Markdown => markdown::markdown(report, config, "check-summary.md.j2", templates),
        Format::Github => Ok(super::workflow_commands::github(report)),
        Format::Sarif => Ok(super::sarif::sarif(report)),
    }
}

/// The evidence record as pretty JSON with a trailing newline.
pub fn json(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serialises");
    s.push('\n');
    s
}
