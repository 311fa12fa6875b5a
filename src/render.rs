//! Rendering the evidence record: plain text for a terminal, markdown from the
//! `templates/` (the same ones the App posts), and JSON.

use crate::gate::config::is_handle;
use crate::gate::inert;
use crate::gate::report::{FileEvidence, LineClass, Report, Verdict, WitnessStatus};
use anyhow::Context as _;
use std::fmt::Write as _;
use std::path::Path;

/// The bundled templates; `--templates DIR` overrides any of them by file name.
pub const CHECK_SUMMARY: &str = include_str!("../templates/check-summary.md.j2");
pub const COMMENT: &str = include_str!("../templates/comment.md.j2");
pub const EXPIRED_FREEZES: &str = include_str!("../templates/expired-freezes.md.j2");

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

pub fn render(report: &Report, format: Format, templates: Option<&Path>) -> anyhow::Result<String> {
    match format {
        Format::Json => Ok(json(report)),
        Format::Text => Ok(text(report)),
        Format::Markdown => markdown(report, "check-summary.md.j2", templates),
    }
}

/// The evidence record as pretty JSON with a trailing newline.
pub fn json(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report always serialises");
    s.push('\n');
    s
}

fn verdict_icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅",
        Verdict::PassWithCaveat => "⚠️",
        Verdict::Inconclusive => "⛔",
        Verdict::Fail => "❌",
    }
}

/// Compress line numbers into ranges: `3-5, 9`.
pub fn line_ranges(lines: &[u32]) -> String {
    crate::gate::report::line_list(lines)
}

/// The template environment for everything flakegate renders as markdown (the check-run
/// summary, the pull-request comment, `--format markdown`): trim_blocks, lstrip_blocks, strict
/// undefined, and every interpolated string inert by default.
///
/// The strings a template shows come, one way or another, from the pull request (paths, node
/// ids, diff text quoted in reasons, ledger fields), so `{{ x }}` renders a string as
/// [`inert::text`] (one line, HTML-escaped, markdown punctuation escaped, no mention, no issue
/// reference); numbers and booleans as they are. Filters:
/// - `code`: an inline code span nothing inside can close ([`inert::code`]);
/// - `code_cell`: the same for a table cell (`|` escaped too);
/// - `md`: [`inert::text`] marked safe, for a piece of a `~` concatenation that is then
///   marked `safe` as a whole;
/// - `mention`: a GitHub handle (`@user`, `@org/team`) as it is, anything else inert; only
///   for owners the base ledger, base CODEOWNERS or the config's `owners` name;
/// - `safe` (built in): our own markup, never a string from the pull request;
/// - `lines`: line numbers as ranges (`3-5, 9`; `—` for none).
pub fn environment() -> minijinja::Environment<'static> {
    use minijinja::value::{Value, ValueKind};
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_formatter(|out, state, value| {
        let inert = !value.is_safe()
            && !matches!(
                value.kind(),
                ValueKind::Number | ValueKind::Bool | ValueKind::None | ValueKind::Undefined
            );
        if inert {
            out.write_str(&inert::text(&value.to_string()))
                .map_err(minijinja::Error::from)
        } else {
            minijinja::escape_formatter(out, state, value)
        }
    });
    env.add_filter("code", |s: String| Value::from_safe_string(inert::code(&s)));
    env.add_filter("code_cell", |s: String| Value::from_safe_string(inert::code_cell(&s)));
    env.add_filter("md", |s: String| Value::from_safe_string(inert::text(&s)));
    env.add_filter("mention", |s: String| {
        Value::from_safe_string(if is_handle(&s) { s } else { inert::text(&s) })
    });
    env.add_filter("lines", |v: Vec<u32>| {
        if v.is_empty() {
            "—".to_string()
        } else {
            line_ranges(&v)
        }
    });
    env
}

/// Render a markdown template against the record.
pub fn markdown(report: &Report, name: &str, templates: Option<&Path>) -> anyhow::Result<String> {
    let source = match templates.map(|d| d.join(name)) {
        Some(p) if p.is_file() => {
            std::fs::read_to_string(&p).with_context(|| format!("reading template {}", p.display()))?
        }
        _ => match name {
            "check-summary.md.j2" => CHECK_SUMMARY.to_string(),
            other => anyhow::bail!("no template named {other}"),
        },
    };
    let mut env = environment();
    env.add_template_owned(name.to_string(), source)
        .with_context(|| format!("template {name}"))?;
    let tmpl = env.get_template(name)?;
    let out = tmpl
        .render(minijinja::context! {
            r => minijinja::Value::from_serialize(report),
            verdict_icon => minijinja::Value::from_safe_string(verdict_icon(report.verdict).to_string()),
            blocks => report.verdict.blocks(),
        })
        .with_context(|| format!("rendering template {name}"))?;
    Ok(if out.ends_with('\n') { out } else { out + "\n" })
}

/// Cut text to at most `limit` bytes on a line boundary, with a note saying so.
pub fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    const NOTE: &str = "\n\n… cut here: the full report is longer than GitHub allows; run `flakegate check --format json` on the evidence for all of it.\n";
    let budget = limit.saturating_sub(NOTE.len());
    let mut cut = budget;
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind('\n').unwrap_or(cut);
    format!("{}{NOTE}", &text[..cut])
}

fn status_word(s: WitnessStatus) -> &'static str {
    match s {
        WitnessStatus::Stable => "stable",
        WitnessStatus::Frozen => "frozen",
        WitnessStatus::Unstable => "unstable",
        WitnessStatus::FailingOnBase => "fails on base",
        WitnessStatus::Unjoined => "no head result under this id",
        WitnessStatus::HeadFlaky => "flaky on head",
    }
}

/// The text report for a terminal. Every string from the pull request is shown on one line
/// with its control characters (ANSI escapes among them) replaced: [`inert::one_line`].
pub fn text(r: &Report) -> String {
    let ol = inert::one_line_default;
    let mut s = String::new();
    let first = ol(r.reasons.first().map(|x| x.message.as_str()).unwrap_or(""));
    let _ = writeln!(s, "flakegate: {} — {first}", r.verdict);
    if r.verdict.blocks() {
        let _ = writeln!(s, "This blocks merge.");
    }
    let _ = writeln!(s, "\nreasons (the first decides):");
    for reason in &r.reasons {
        let verdict = if reason.escalated {
            format!("{} (policy)", reason.verdict)
        } else {
            reason.verdict.to_string()
        };
        let _ = writeln!(
            s,
            "  {:<22} {:<16} {}",
            reason.code.as_str(),
            verdict,
            ol(&reason.message)
        );
    }
    let _ = writeln!(s, "\nfiles:");
    for f in &r.files {
        let from = f
            .old_path
            .as_ref()
            .map(|p| format!(" (from {})", ol(p)))
            .unwrap_or_default();
        let how = match f.evidence {
            FileEvidence::NotNeeded => "no evidence needed".to_string(),
            FileEvidence::NoExecutableChange => "no executable change".to_string(),
            FileEvidence::Blind => format!("BLIND: {}", ol(f.blind_reason.as_deref().unwrap_or(""))),
            FileEvidence::Measured => format!(
                "{} changed, {} executable: {} stable, {} frozen-only, {} uncovered, {} excluded{}",
                f.changed_lines.len(),
                f.executable_changed_lines.len(),
                f.stable_lines.len(),
                f.frozen_only_lines.len(),
                f.uncovered_lines.len(),
                f.excluded_lines.len(),
                match f.import_time_lines.len() {
                    0 => String::new(),
                    n => format!(", {n} import-time"),
                }
            ),
        };
        let status = serde_json::to_value(f.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(s, "  {}{from} [{status}] {how}", ol(&f.path));
        for l in &f.lines {
            if !f.executable_changed_lines.contains(&l.line) {
                continue;
            }
            let class = match l.class {
                LineClass::Stable => "stable",
                LineClass::FrozenOnly => "FROZEN-ONLY",
                LineClass::Uncovered => "UNCOVERED",
                LineClass::Excluded => "EXCLUDED",
                LineClass::ImportTime => "import-time",
                LineClass::NotExecutable => "-",
            };
            let ws: Vec<String> = l
                .witnesses
                .iter()
                .map(|w| {
                    let phases: Vec<&str> = w.phases.iter().map(|p| p.as_str()).collect();
                    let phase = if phases == ["run"] {
                        String::new()
                    } else {
                        format!(" |{}", phases.join(","))
                    };
                    format!("{} ({}{phase})", ol(w.test.as_str()), status_word(w.status))
                })
                .collect();
            let _ = writeln!(s, "    {:>5}  {:<12} {}", l.line, class, ws.join(", "));
        }
        for d in &f.deletions {
            let _ = writeln!(
                s,
                "    deleted old lines {}-{} (after new line {}){}",
                d.old_start,
                d.old_start + d.old_count.saturating_sub(1),
                d.after,
                if d.attributed {
                    " attributed to its neighbours"
                } else {
                    ""
                }
            );
        }
    }
    if !r.blind_owners.is_empty() {
        let _ = writeln!(s, "\nblind owners:");
        for o in &r.blind_owners {
            let who = ol(o.handle.as_deref().unwrap_or(&o.owner));
            let _ = writeln!(s, "  {who} [{}]: {}", o.actions.join(", "), ol(&o.why.join("; ")));
        }
    }
    if !r.expired.is_empty() {
        let _ = writeln!(s, "\nexpired freezes:");
        for e in &r.expired {
            let _ = writeln!(
                s,
                "  {} (owner {}) expired {}{}",
                ol(&e.test),
                ol(&e.owner),
                ol(&e.expires),
                if e.waived_by_probe {
                    ", but the probe shows it stable"
                } else {
                    ""
                }
            );
        }
    }
    if let Some(p) = &r.probe {
        let _ = writeln!(s, "\nprobe: K = {}: {}", p.k, p.power);
        for t in &p.tests {
            let stability = match t.stability {
                crate::gate::probe::Stability::StablePassing => "stable",
                crate::gate::probe::Stability::BrokenOnBase => "broken on base",
                crate::gate::probe::Stability::Unstable => "UNSTABLE",
            };
            let _ = writeln!(
                s,
                "  {:<60} {}/{} failed ({stability})",
                ol(t.test.as_str()),
                t.failures,
                t.runs
            );
        }
    }
    if r.results.given {
        let x = &r.results;
        let _ = writeln!(
            s,
            "\nhead results: {} passed, {} failed, {} errors, {} skipped, {} xfailed, {} xpassed, {} collection errors",
            x.passed, x.failed, x.errors, x.skipped, x.xfailed, x.xpassed, x.collection_errors
        );
        for f in &x.failures {
            let _ = writeln!(
                s,
                "  {} {}{}",
                ol(f.test.as_str()),
                if f.counts { "COUNTS" } else { "ignored" },
                f.message.as_ref().map(|m| format!(": {}", ol(m))).unwrap_or_default()
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "\nnote: {}", ol(n));
    }
    let _ = writeln!(s, "\ninputs:");
    for i in &r.inputs {
        let _ = writeln!(
            s,
            "  {:<9} {}  {}",
            i.role,
            &i.sha256[..16.min(i.sha256.len())],
            ol(&i.path)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(line_ranges(&[]), "");
        assert_eq!(line_ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }

    /// Every interpolated string is inert unless a filter says otherwise.
    #[test]
    fn templates_render_strings_inert_by_default() {
        let mut env = environment();
        env.add_template(
            "t",
            "{{ s }}|{{ s | code }}|{{ n }}|{{ b }}|{{ h | mention }}|{{ s | mention }}|{{ ours | safe }}|{{ ('**' ~ (s | md) ~ '**') | safe }}",
        )
        .unwrap();
        let out = env
            .get_template("t")
            .unwrap()
            .render(minijinja::context! {
                s => "@x <b>`\n# h",
                n => 3,
                b => true,
                h => "@acme/team",
                ours => "<sub>ours</sub>",
            })
            .unwrap();
        let t = inert::text("@x <b>`\n# h");
        assert_eq!(
            out,
            format!("{t}|``@x <b>`⏎# h``|3|True|@acme/team|{t}|<sub>ours</sub>|**{t}**")
        );
        assert!(!t.contains("@x") && !t.contains('<') && !t.contains('\n'), "{t}");
    }

    #[test]
    fn truncation_is_on_a_line_and_says_so() {
        let text = "é line\n".repeat(20_000);
        let cut = truncate(&text, crate::github::OUTPUT_MAX_BYTES);
        assert!(cut.len() <= crate::github::OUTPUT_MAX_BYTES);
        assert!(cut.contains("cut here"));
        assert_eq!(truncate("short", 100), "short");
    }
}
