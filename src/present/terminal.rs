//! The evidence record as text for a terminal (`flakegate check --format text`), one section
//! after another: the verdict and its reasons, the files line by line, who is blind, the probe,
//! the head's results, notes, and the inputs read. Every string from the pull request is shown
//! on one line with its control characters (ANSI escapes among them) replaced:
//! [`inert::one_line`](crate::gate::inert::one_line).

use super::words::status_word;
use crate::gate::inert::one_line_default as ol;
use crate::gate::report::{FileEvidence, FileReport, LineClass, Report};
use std::fmt::Write as _;

/// The text report for a terminal.
pub fn text(r: &Report) -> String {
    text_with(r, false)
}

/// The text report, the verdicts coloured when `color` (green PASS, yellow PASS_WITH_CAVEAT,
/// red INCONCLUSIVE and FAIL).
pub fn text_with(r: &Report, color: bool) -> String {
    let mut s = String::new();
    verdict(&mut s, r, color);
    let _ = writeln!(s, "\nfiles:");
    // Without a probe nothing measured stability: a witness that passed is "not probed".
    let stable = if r.probe.is_some() { "stable" } else { "not probed" };
    for f in &r.files {
        file(&mut s, f, stable);
    }
    owners_and_expired(&mut s, r);
    probe(&mut s, r);
    results(&mut s, r);
    for n in &r.notes {
        let _ = writeln!(s, "\nnote: {}", ol(n));
    }
    inputs(&mut s, r);
    s
}

/// `text` (padded to `width` first) in the verdict's colour when `color`.
fn paint(text: &str, v: crate::gate::report::Verdict, color: bool, width: usize) -> String {
    use anstyle::{AnsiColor, Style};
    let padding = " ".repeat(width.saturating_sub(text.chars().count()));
    if !color {
        return format!("{text}{padding}");
    }
    let hue = match v {
        crate::gate::report::Verdict::Pass => AnsiColor::Green,
        crate::gate::report::Verdict::PassWithCaveat => AnsiColor::Yellow,
        crate::gate::report::Verdict::Inconclusive | crate::gate::report::Verdict::Fail => AnsiColor::Red,
    };
    let style = Style::new().fg_color(Some(hue.into())).bold();
    format!("{}{text}{}{padding}", style.render(), style.render_reset())
}

/// The verdict, the first reason beside it, and every reason.
fn verdict(s: &mut String, r: &Report, color: bool) {
    let first = ol(r.reasons.first().map(|x| x.message.as_str()).unwrap_or(""));
    let _ = writeln!(
        s,
        "flakegate: {} — {first}",
        paint(&r.verdict.to_string(), r.verdict, color, 0)
    );
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
            "  {:<22} {} {}",
            reason.code.as_str(),
            paint(&verdict, reason.verdict, color, 16),
            ol(&reason.message)
        );
    }
}

/// One file: how its change was measured, each executable changed line with its witnesses,
/// and its deletions.
fn file(s: &mut String, f: &FileReport, stable: &str) {
    let from = f
        .old_path
        .as_ref()
        .map(|p| format!(" (from {})", ol(p)))
        .unwrap_or_default();
    let how = match f.evidence {
        FileEvidence::NotNeeded => match &f.no_evidence_reason {
            Some(why) => format!("no evidence needed: {}", ol(why)),
            None => "no evidence needed".to_string(),
        },
        FileEvidence::NoExecutableChange => "no executable change".to_string(),
        FileEvidence::Blind => format!("BLIND: {}", ol(f.blind_reason.as_deref().unwrap_or(""))),
        FileEvidence::Measured => format!(
            "{} changed, {} executable: {} {stable}, {} frozen-only, {} uncovered, {} excluded{}",
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
    changed_lines(s, f, stable);
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

/// A file's executable changed lines: class and the witnesses the record lists (with their
/// phases when not only `run`), and how many more there are.
fn changed_lines(s: &mut String, f: &FileReport, stable: &str) {
    for l in &f.lines {
        if !f.executable_changed_lines.contains(&l.line) {
            continue;
        }
        let class = match l.class {
            LineClass::Stable => stable,
            LineClass::FrozenOnly => "FROZEN-ONLY",
            LineClass::Uncovered => "UNCOVERED",
            LineClass::Excluded => "EXCLUDED",
            LineClass::ImportTime => "import-time",
            LineClass::NotExecutable => "-",
        };
        let mut ws: Vec<String> = l
            .listed_witnesses(f.witness_limit)
            .map(|w| {
                let phases: Vec<&str> = w.phases.iter().map(|p| p.as_str()).collect();
                let phase = if phases == ["run"] {
                    String::new()
                } else {
                    format!(" |{}", phases.join(","))
                };
                let word = match w.status {
                    crate::gate::report::WitnessStatus::Stable => stable,
                    other => status_word(other),
                };
                format!("{} ({word}{phase})", ol(w.test.as_str()))
            })
            .collect();
        // As the record lists them: the first few, and how many more.
        if l.witnesses.len() > ws.len() {
            ws.push(format!("and {} more", l.witnesses.len() - ws.len()));
        }
        let _ = writeln!(s, "    {:>5}  {:<12} {}", l.line, class, ws.join(", "));
    }
}

/// The owners of blind lines and what they are asked to do; the expired freezes.
fn owners_and_expired(s: &mut String, r: &Report) {
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
                if !e.waived_by_probe {
                    ""
                } else if super::actions::broken_on_base(r, &e.test) {
                    ", and the probe shows it failing every run: fix it, then remove the entry"
                } else {
                    ", but the probe shows it stable: prune the entry"
                }
            );
        }
    }
}

/// The probe of the base: K, its power, and each probed test's failures.
fn probe(s: &mut String, r: &Report) {
    let Some(p) = &r.probe else { return };
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

/// The head's test results, when given: the counts and each failure.
fn results(s: &mut String, r: &Report) {
    if !r.results.given {
        return;
    }
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

/// The files read, each with the start of its digest.
fn inputs(s: &mut String, r: &Report) {
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
}
