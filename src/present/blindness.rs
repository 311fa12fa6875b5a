//! `flakegate blindness`'s three renderings of a [`BlindnessMap`]: JSON, Markdown for a person
//! (every string from the repository inert, [`super::markdown::environment`]), and a
//! self-contained HTML report, an index and one page per file with its source, each measured
//! line marked (minijinja with HTML auto-escaping; the stylesheet inline; no script, nothing
//! fetched). Pure: the sources are passed in, the pages come back as (file name, text).

use super::words::line_ranges;
use crate::gate::blindness::{BlindnessMap, LineState, OwnerBlindness, TestBlindness};
use anyhow::Context as _;
use serde::Serialize;
use std::collections::BTreeMap;

pub const MARKDOWN: &str = include_str!("../../templates/blindness.md.j2");
const INDEX: &str = include_str!("../../templates/blindness-index.html.j2");
const FILE: &str = include_str!("../../templates/blindness-file.html.j2");
const CSS: &str = include_str!("../../templates/blindness.css");

/// What the HTML shows of each file's source.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Path → the source, for the files that were read.
    pub texts: BTreeMap<String, String>,
    /// Path → why its source is not shown.
    pub notes: BTreeMap<String, String>,
}

/// The map as pretty JSON with a trailing newline.
pub fn json(map: &BlindnessMap) -> String {
    let mut s = serde_json::to_string_pretty(map).expect("a blindness map always serialises");
    s.push('\n');
    s
}

/// A frozen or not-stable test as the templates show it.
#[derive(Serialize)]
struct TestRow<'a> {
    test: &'a str,
    status: String,
    owner: Option<&'a str>,
    expires: Option<String>,
    expired: bool,
    blind: usize,
    only: usize,
    /// Markdown only: the files and line ranges, inert.
    #[serde(rename = "where")]
    where_: String,
    /// HTML: each file with its ranges as text.
    only_files: Vec<OnlyFile<'a>>,
}

#[derive(Serialize)]
struct OnlyFile<'a> {
    path: &'a str,
    ranges: &'a [(u32, u32)],
    text: String,
}

#[derive(Serialize)]
struct OwnerRow<'a> {
    owner: &'a str,
    blind: usize,
    /// Markdown only: the files, inert.
    files: String,
    file_list: &'a [(String, usize)],
    soonest: String,
    freezes: usize,
}

fn ranges_text(ranges: &[(u32, u32)]) -> String {
    let lines: Vec<u32> = ranges.iter().flat_map(|&(a, b)| a..=b).collect();
    format!("lines {}", line_ranges(&lines))
}

fn test_rows(map: &BlindnessMap) -> Vec<TestRow<'_>> {
    map.tests
        .iter()
        .map(|t: &TestBlindness| TestRow {
            test: t.test.as_str(),
            status: serde_json::to_value(t.status)
                .ok()
                .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
                .unwrap_or_default(),
            owner: t.freeze.as_ref().map(|f| f.owner.as_str()),
            expires: t.freeze.as_ref().map(|f| f.expires.to_string()),
            expired: t.freeze.as_ref().is_some_and(|f| f.expired),
            blind: t.blind_lines,
            only: t.only_witness_lines,
            where_: t
                .only_witness
                .iter()
                .map(|f| format!("{} {}", crate::gate::inert::code_cell(&f.path), ranges_text(&f.ranges)))
                .collect::<Vec<_>>()
                .join("; "),
            only_files: t
                .only_witness
                .iter()
                .map(|f| OnlyFile {
                    path: &f.path,
                    ranges: &f.ranges,
                    text: ranges_text(&f.ranges),
                })
                .collect(),
        })
        .collect()
}

fn owner_rows(map: &BlindnessMap) -> Vec<OwnerRow<'_>> {
    map.owners
        .iter()
        .map(|o: &OwnerBlindness| OwnerRow {
            owner: &o.owner,
            blind: o.blind_lines,
            files: if o.files.is_empty() {
                "—".into()
            } else {
                o.files
                    .iter()
                    .map(|(p, n)| format!("{} ({n})", crate::gate::inert::code_cell(p)))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            file_list: &o.files,
            soonest: o.soonest_expiry.map_or_else(|| "—".into(), |d| d.to_string()),
            freezes: o.freezes,
        })
        .collect()
}

/// The map for a person, in Markdown.
pub fn markdown(map: &BlindnessMap) -> anyhow::Result<String> {
    let mut env = super::markdown::environment();
    env.add_template("blindness.md.j2", MARKDOWN)
        .context("template blindness.md.j2")?;
    Ok(env.get_template("blindness.md.j2")?.render(minijinja::context! {
        m => minijinja::Value::from_serialize(map),
        tests => minijinja::Value::from_serialize(test_rows(map)),
        owners => minijinja::Value::from_serialize(owner_rows(map)),
    })?)
}

/// The name of a file's page: its path's hash, so that no path from the repository becomes
/// part of a file name or a link as it is.
pub fn page_name(path: &str) -> String {
    use sha2::Digest as _;
    let h = sha2::Sha256::digest(path.as_bytes());
    format!("file-{}.html", hex::encode(&h[..8]))
}

/// One line of a file's page.
#[derive(Serialize)]
struct PageLine<'a> {
    n: u32,
    state: &'static str,
    text: Option<&'a str>,
    tests: Vec<&'a str>,
}

fn state_name(s: Option<LineState>) -> &'static str {
    match s {
        Some(LineState::Witnessed) => "witnessed",
        Some(LineState::Blind) => "blind",
        Some(LineState::Uncovered) => "uncovered",
        None => "plain",
    }
}

/// The HTML report: `index.html` and one page per measured file, as (file name, page).
pub fn html(map: &BlindnessMap, sources: &Sources) -> anyhow::Result<Vec<(String, String)>> {
    let mut env = minijinja::Environment::new();
    // `.html.j2`: every value is HTML-escaped (minijinja's default for an `.html` name).
    env.add_template("blindness-index.html.j2", INDEX)?;
    env.add_template("blindness-file.html.j2", FILE)?;
    let css = minijinja::Value::from_safe_string(CSS.to_string());
    let pages: BTreeMap<&str, String> = map
        .files
        .iter()
        .map(|f| (f.path.as_str(), page_name(&f.path)))
        .collect();
    let mut out = Vec::with_capacity(map.files.len() + 1);
    let index = env
        .get_template("blindness-index.html.j2")?
        .render(minijinja::context! {
            m => minijinja::Value::from_serialize(map),
            css => css.clone(),
            pages => minijinja::Value::from_serialize(&pages),
            tests => minijinja::Value::from_serialize(test_rows(map)),
            owners => minijinja::Value::from_serialize(owner_rows(map)),
        })?;
    out.push(("index.html".to_string(), index));
    let file_tmpl = env.get_template("blindness-file.html.j2")?;
    for f in &map.files {
        let text = sources.texts.get(&f.path);
        let mut lines: Vec<PageLine<'_>> = Vec::new();
        if let Some(t) = text {
            for (i, l) in t.lines().enumerate() {
                let n = i as u32 + 1;
                let st = f.state_of(n);
                lines.push(PageLine {
                    n,
                    state: state_name(st.map(|s| s.0)),
                    text: Some(l),
                    tests: st.map(|s| s.1.iter().map(|t| t.as_str()).collect()).unwrap_or_default(),
                });
            }
        } else {
            // No source: the measured lines by number.
            let mut measured: Vec<u32> = f
                .witnessed_lines
                .iter()
                .chain(&f.uncovered_lines)
                .copied()
                .chain(f.blind_lines.iter().map(|b| b.line))
                .collect();
            measured.sort_unstable();
            for n in measured {
                let st = f.state_of(n);
                lines.push(PageLine {
                    n,
                    state: state_name(st.map(|s| s.0)),
                    text: None,
                    tests: st.map(|s| s.1.iter().map(|t| t.as_str()).collect()).unwrap_or_default(),
                });
            }
        }
        let note = f
            .note
            .clone()
            .or_else(|| sources.notes.get(&f.path).cloned())
            .or_else(|| text.is_none().then(|| "the source was not read".to_string()));
        let page = file_tmpl.render(minijinja::context! {
            f => minijinja::Value::from_serialize(f),
            today => map.today.to_string(),
            css => css.clone(),
            note => note,
            lines => minijinja::Value::from_serialize(&lines),
        })?;
        out.push((page_name(&f.path), page));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
