//! Markdown from the `templates/`: the environment every template renders in (strings from the
//! pull request inert by default), the bundled templates, and `--format markdown`.

use super::actions;
use super::links;
use super::words::line_ranges;
use crate::gate::config::{is_handle, Config};
use crate::gate::inert;
use crate::gate::report::{Report, Verdict};
use anyhow::Context as _;
use std::path::Path;

/// The bundled templates; `--templates DIR` overrides any of them by file name.
pub const CHECK_SUMMARY: &str = include_str!("../../templates/check-summary.md.j2");
pub const COMMENT: &str = include_str!("../../templates/comment.md.j2");
pub const EXPIRED_FREEZES: &str = include_str!("../../templates/expired-freezes.md.j2");

fn verdict_icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✅",
        Verdict::PassWithCaveat => "⚠️",
        Verdict::Inconclusive => "⛔",
        Verdict::Fail => "❌",
    }
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
/// - `msg`: a message flakegate wrote around strings from the pull request, its `` `…` ``
///   pairs as code spans ([`inert::message`]);
/// - `reason_link`: a reason code as a code span linking to its explanation;
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
    env.add_filter("msg", |s: String| Value::from_safe_string(inert::message(&s)));
    env.add_filter("reason_link", |s: String| {
        let code = crate::gate::report::ReasonCode::ALL.iter().find(|c| c.as_str() == s);
        Value::from_safe_string(match code {
            Some(c) => format!("[{}]({})", inert::code(c.as_str()), links::reason(*c)),
            None => inert::code(&s),
        })
    });
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

/// Render a markdown template against the record. Besides the record `r`, the context holds
/// what the check-summary template leads with: `headline`, `merge_line`, `actions` (who must do
/// what, mentions as `config.mentions` says), `probed`, `stable_passed` (the stable witnesses
/// that did not fail on head), `docs` (the project's docs) and `probe_matters` (whether the
/// verdict rests on witnesses that passed every probe run, which K runs can miss a flake in).
pub fn markdown(report: &Report, config: &Config, name: &str, templates: Option<&Path>) -> anyhow::Result<String> {
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
    let failed: std::collections::BTreeSet<&str> = report.results.failures.iter().map(|f| f.test.as_str()).collect();
    let stable_passed: Vec<&str> = report
        .witnesses
        .stable
        .iter()
        .map(|t| t.as_str())
        .filter(|t| !failed.contains(t))
        .collect();
    let actions: Vec<actions::Action> = actions::actions(report, config);
    let out = tmpl
        .render(minijinja::context! {
            r => minijinja::Value::from_serialize(report),
            verdict_icon => minijinja::Value::from_safe_string(verdict_icon(report.verdict).to_string()),
            blocks => report.verdict.blocks(),
            headline => actions::headline(report),
            merge_line => minijinja::Value::from_safe_string(actions::merge_line(report.verdict).to_string()),
            actions => minijinja::Value::from_serialize(&actions),
            probed => report.probe.is_some(),
            // Only a verdict that rests on witnesses the probe saw pass can be wrong by what it
            // missed; a blocking verdict rests on something else.
            probe_matters => report.probe.is_some() && !stable_passed.is_empty() && !report.verdict.blocks(),
            stable_passed => stable_passed,
            docs => minijinja::Value::from_safe_string(links::docs()),
        })
        .with_context(|| format!("rendering template {name}"))?;
    Ok(if out.ends_with('\n') { out } else { out + "\n" })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
