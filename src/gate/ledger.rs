//! The freeze ledger (`.github/flake-ledger.json`): every frozen test with
//! why, who owns it and when the freeze expires; and how a patch changes it
//! ([`ledger_changes`], entry by entry, which the trust rules judge) — between the two
//! sides of the patch's own edit of the file (`edit.rs`).
//!
//! serde_json has no spans, so the text is first checked by serde_json (for
//! its syntax errors with line and column) and then read again by
//! `json_spans.rs`, a small reader that keeps the line and column of every
//! value and key. Every problem is collected, not just the first.

use crate::gate::error::{InputError, Location};
use crate::gate::json_spans;
use crate::gate::nodeid::{IdKind, TestId};
use chrono::NaiveDate;
use serde::Serialize;
use std::collections::BTreeMap;

pub mod edit;
pub mod maintain;
pub mod moved;

/// One frozen test (or class, or parametrised base name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FreezeEntry {
    /// A node id or a prefix of node ids (class, parametrised base name).
    pub test: String,
    pub observed: Option<String>,
    pub reason: Option<String>,
    pub owner: String,
    pub frozen_at: Option<NaiveDate>,
    pub expires: NaiveDate,
    /// 1-based line of the entry's `{` in the ledger file.
    #[serde(skip)]
    pub line: usize,
}

impl FreezeEntry {
    pub fn covers(&self, test: &TestId) -> bool {
        test.is_under(&self.test)
    }
    /// Past its expiry: the UTC date is later than `expires` (on that day it still holds).
    pub fn is_expired(&self, today: NaiveDate) -> bool {
        today > self.expires
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    pub entries: Vec<FreezeEntry>,
}

impl Ledger {
    /// Entries that cover this test.
    pub fn entries_for<'a>(&'a self, test: &'a TestId) -> impl Iterator<Item = &'a FreezeEntry> + 'a {
        self.entries.iter().filter(move |e| e.covers(test))
    }
    pub fn is_frozen(&self, test: &TestId) -> bool {
        self.entries_for(test).next().is_some()
    }

    /// Entries expired as of `today` or expiring within `within` days, in ledger
    /// order, each with its days left (negative: days past).
    pub fn expiring(&self, today: NaiveDate, within: u32) -> Vec<(&FreezeEntry, i64)> {
        self.entries
            .iter()
            .map(|e| (e, (e.expires - today).num_days()))
            .filter(|(e, days)| e.is_expired(today) || *days <= i64::from(within))
            .collect()
    }

    /// The canonical text the ledger commands write: entries sorted by test, keys in
    /// the order test, observed, reason, owner, frozen_at, expires (absent optional
    /// fields left out), 2-space JSON, a trailing newline.
    pub fn canonical_text(entries: &[FreezeEntry]) -> String {
        let mut sorted: Vec<&FreezeEntry> = entries.iter().collect();
        sorted.sort_by(|a, b| a.test.cmp(&b.test));
        let out = LedgerFile {
            frozen: sorted
                .into_iter()
                .map(|e| EntryFile {
                    test: e.test.clone(),
                    observed: e.observed.clone(),
                    reason: e.reason.clone(),
                    owner: e.owner.clone(),
                    frozen_at: e.frozen_at.map(|d| d.to_string()),
                    expires: e.expires.to_string(),
                })
                .collect(),
        };
        let mut s = serde_json::to_string_pretty(&out).expect("ledger serialises");
        s.push('\n');
        s
    }
}

/// The ledger file as the ledger commands write it ([`Ledger::canonical_text`]), and its JSON
/// Schema (`flakegate schema ledger`). [`parse_ledger`] reads the same shape, field by field,
/// to name the line and column of each problem.
#[derive(Serialize, schemars::JsonSchema)]
#[schemars(
    deny_unknown_fields,
    title = "flakegate freeze ledger (.github/flake-ledger.json)",
    description = "Every frozen test, with its owner and expiry: a frozen test is not evidence."
)]
pub struct LedgerFile {
    /// The frozen tests: not evidence until they are fixed, re-probed and unfrozen.
    pub frozen: Vec<EntryFile>,
}

/// One frozen test as the ledger file holds it.
#[derive(Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EntryFile {
    /// A pytest node id (`path::name…`) or a prefix of node ids (a class, a parametrised base
    /// name); another runner's test name or Bazel label (docs/cli.md, "Other languages").
    #[schemars(length(min = 1))]
    pub test: String,
    /// What the probe showed, e.g. "2/5 fail on clean base".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    /// Why it is flaky, as far as anyone knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who fixes it: a GitHub handle (`@user`, `@org/team`) or a name `owners` maps to one.
    #[schemars(length(min = 1))]
    pub owner: String,
    /// When it was frozen (YYYY-MM-DD).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub frozen_at: Option<String>,
    /// The day after which the freeze blinds every pull request until renewed or removed (YYYY-MM-DD).
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub expires: String,
}

const TOP_FIELDS: &[&str] = &["frozen"];
const ENTRY_FIELDS: &[&str] = &["test", "observed", "reason", "owner", "frozen_at", "expires"];

/// Parse and validate a ledger. `max_freeze_days`: the policy's limit on
/// `expires − frozen_at` (None: no limit). Every problem is an error naming
/// the file, line and column: bad JSON, unknown fields, missing `test`,
/// `owner` or `expires`, non-ISO dates, `expires` before `frozen_at`,
/// a freeze longer than the policy allows, duplicate tests, a `test` that is
/// not a node id (`path::name…`).
pub fn parse_ledger(file: &str, text: &str, max_freeze_days: Option<u32>) -> Result<Ledger, Vec<InputError>> {
    use json_spans::JVal;
    let root = json_spans::parse(file, text).map_err(|e| vec![e])?;
    let mut errors = Vec::new();
    let at = |p: json_spans::Pos| Location::at(file, p.line, Some(p.col));

    let JVal::Obj(members) = &root.val else {
        return Err(vec![InputError::new(
            at(root.pos),
            format!(
                "expected a JSON object {{\"frozen\": [...]}} at the top level, found {}",
                root.val.kind()
            ),
        )]);
    };
    json_spans::check_fields(file, members, TOP_FIELDS, "the ledger's top level", &mut errors);
    let frozen = members.iter().rev().find(|m| m.key == "frozen");
    let mut entries = Vec::new();
    match frozen {
        None => errors.push(InputError::new(
            at(root.pos),
            "missing field \"frozen\": expected {\"frozen\": [...]}",
        )),
        Some(m) => match &m.value.val {
            JVal::Arr(items) => {
                for item in items {
                    if let Some(e) = parse_entry(file, item, max_freeze_days, &mut errors) {
                        entries.push(e);
                    }
                }
            }
            other => errors.push(InputError::new(
                at(m.value.pos),
                format!("expected \"frozen\" to be an array of entries, found {}", other.kind()),
            )),
        },
    }

    // Duplicate tests: the same string twice, each occurrence names the others.
    let mut by_test: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    if let Some(JVal::Arr(items)) = frozen.map(|m| &m.value.val) {
        for item in items {
            if let JVal::Obj(fields) = &item.val {
                if let Some(t) = fields.iter().rev().find(|f| f.key == "test") {
                    if let JVal::Str(s) = &t.value.val {
                        by_test
                            .entry(s.as_str())
                            .or_default()
                            .push((t.value.pos.line, t.value.pos.col));
                    }
                }
            }
        }
    }
    for (test, places) in &by_test {
        if places.len() < 2 {
            continue;
        }
        for (i, &(line, col)) in places.iter().enumerate() {
            let mut others: Vec<String> = places
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, (l, _))| l.to_string())
                .take(6)
                .collect();
            if places.len() > 6 {
                others.truncate(5);
                others.push(format!("and {} more", places.len() - 6));
            }
            errors.push(InputError::new(
                Location::at(file, line, Some(col)),
                format!(
                    "duplicate test {test:?}: also frozen at line{} {}; expected each test once",
                    if others.len() > 1 { "s" } else { "" },
                    others.join(", ")
                ),
            ));
        }
    }

    if errors.is_empty() {
        Ok(Ledger { entries })
    } else {
        errors.sort_by_key(|e| (e.location.line, e.location.column));
        Err(errors)
    }
}

fn parse_entry(
    file: &str,
    node: &json_spans::Node,
    max_freeze_days: Option<u32>,
    errors: &mut Vec<InputError>,
) -> Option<FreezeEntry> {
    use json_spans::JVal;
    let at = |p: json_spans::Pos| Location::at(file, p.line, Some(p.col));
    let JVal::Obj(fields) = &node.val else {
        errors.push(InputError::new(
            at(node.pos),
            format!(
                "expected a ledger entry object {{\"test\", \"owner\", \"expires\", ...}}, found {}",
                node.val.kind()
            ),
        ));
        return None;
    };
    let before = errors.len();
    json_spans::check_fields(file, fields, ENTRY_FIELDS, "a ledger entry", errors);
    let get = |k: &str| fields.iter().rev().find(|f| f.key == k).map(|f| &f.value);

    // Required or optional string fields.
    let string = |key: &str, required: bool, errors: &mut Vec<InputError>| -> Option<String> {
        match get(key) {
            None if required => {
                errors.push(InputError::new(
                    at(node.pos),
                    format!("entry is missing the required field {key:?}"),
                ));
                None
            }
            None => None,
            Some(v) => match &v.val {
                JVal::Str(s) => Some(s.clone()),
                JVal::Null if !required => None,
                other => {
                    errors.push(InputError::new(
                        at(v.pos),
                        format!("expected {key:?} to be a string, found {}", other.kind()),
                    ));
                    None
                }
            },
        }
    };
    let test = string("test", true, errors);
    let observed = string("observed", false, errors);
    let reason = string("reason", false, errors);
    let owner = string("owner", true, errors);
    let frozen_at_s = string("frozen_at", false, errors);
    let expires_s = string("expires", true, errors);

    if let (Some(t), Some(v)) = (&test, get("test")) {
        // A pytest node id (or prefix), a Bazel label, an LCOV test name or a JUnit
        // classname.name (`IdKind`); a string with `::` must be a well-formed node id.
        let why = match IdKind::of(t) {
            Ok(IdKind::PytestNode) => check_node_id(t).err().map(|w| format!("is not a pytest node id: {w}")),
            Ok(_) => None,
            Err(w) => Some(format!("is not a test id: {w}")),
        };
        if let Some(why) = why {
            errors.push(InputError::new(at(v.pos), format!("\"test\" {t:?} {why}")));
        }
    }
    if let (Some(o), Some(v)) = (&owner, get("owner")) {
        if o.trim().is_empty() {
            errors.push(InputError::new(
                at(v.pos),
                "\"owner\" is empty: expected who owns this freeze",
            ));
        }
    }
    let date = |key: &str, s: &Option<String>, errors: &mut Vec<InputError>| -> Option<NaiveDate> {
        let (s, v) = (s.as_ref()?, get(key)?);
        match parse_date(s) {
            Ok(d) => Some(d),
            Err(why) => {
                errors.push(InputError::new(at(v.pos), format!("{key:?} {s:?} {why}")));
                None
            }
        }
    };
    let frozen_at = date("frozen_at", &frozen_at_s, errors);
    let expires = date("expires", &expires_s, errors);

    if let (Some(f), Some(e)) = (frozen_at, expires) {
        let pos = get("expires").map(|v| v.pos).unwrap_or(node.pos);
        if e < f {
            errors.push(InputError::new(
                at(pos),
                format!("\"expires\" {e} is before \"frozen_at\" {f}: expected expires on or after frozen_at"),
            ));
        } else if let Some(max) = max_freeze_days {
            let days = (e - f).num_days();
            if days > i64::from(max) {
                errors.push(InputError::new(
                    at(pos),
                    format!(
                        "freeze of {days} days (frozen_at {f}, expires {e}) is longer than the policy's \
                         max_freeze_days of {max}"
                    ),
                ));
            }
        }
    }
    if max_freeze_days.is_some() && get("frozen_at").is_none_or(|v| matches!(v.val, JVal::Null)) {
        errors.push(InputError::new(
            at(node.pos),
            "entry is missing \"frozen_at\": required because the policy sets max_freeze_days",
        ));
    }

    if errors.len() > before {
        return None;
    }
    Some(FreezeEntry {
        test: test?,
        observed,
        reason,
        owner: owner?,
        frozen_at,
        expires: expires?,
        line: node.pos.line,
    })
}

/// A strict ISO calendar date `YYYY-MM-DD`.
pub(crate) fn parse_date(s: &str) -> Result<NaiveDate, String> {
    let b = s.as_bytes();
    let shape_ok = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !shape_ok {
        return Err("is not an ISO date: expected YYYY-MM-DD".into());
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    NaiveDate::from_ymd_opt(y as i32, m, d).ok_or_else(|| "is not a calendar date: expected a valid YYYY-MM-DD".into())
}

/// Is this a node id or node id prefix (`path::name…`)?
fn check_node_id(t: &str) -> Result<(), &'static str> {
    if t.is_empty() {
        return Err("it is empty; expected path::name");
    }
    if t.trim() != t {
        return Err("it has leading or trailing whitespace; expected path::name");
    }
    let Some((path, rest)) = t.split_once("::") else {
        return Err("expected path::name (no \"::\" found)");
    };
    if path.is_empty() {
        return Err("the path before \"::\" is empty; expected path::name");
    }
    if path.chars().any(char::is_whitespace) {
        return Err("the path before \"::\" contains whitespace; expected path::name");
    }
    if rest.is_empty() || rest.starts_with(':') {
        return Err("the name after \"::\" is empty; expected path::name");
    }
    // Only the part before a parameter list must be well-formed (`[…]` may hold anything).
    let head = rest.split('[').next().unwrap_or(rest);
    if head
        .split("::")
        .any(|p| p.is_empty() || p.chars().any(char::is_whitespace))
        && !head.is_empty()
    {
        return Err("a name part is empty or contains whitespace; expected path::Class::name");
    }
    Ok(())
}

/// How the patch changes one ledger entry (the base ledger is the one in force).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerChangeKind {
    Added,
    Removed,
    /// `expires` moved later.
    Extended,
    OwnerChanged,
    /// Anything else (reason, observed, an earlier expiry).
    Edited,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LedgerChange {
    pub test: String,
    pub kind: LedgerChangeKind,
    /// What changed, in words: "expires 2026-12-09 → 2027-03-01".
    pub detail: String,
    /// The entry's line in the head ledger (0 for a removal).
    pub line: usize,
}

impl LedgerChange {
    /// Does this change make a test frozen (or frozen for longer) than the base says?
    pub fn freezes_more(&self) -> bool {
        matches!(self.kind, LedgerChangeKind::Added | LedgerChangeKind::Extended)
    }
}

/// The patch's ledger edits, entry by entry, sorted by test.
pub fn ledger_changes(base: &Ledger, head: &Ledger) -> Vec<LedgerChange> {
    let b: BTreeMap<&str, &FreezeEntry> = base.entries.iter().map(|e| (e.test.as_str(), e)).collect();
    let h: BTreeMap<&str, &FreezeEntry> = head.entries.iter().map(|e| (e.test.as_str(), e)).collect();
    let mut out = Vec::new();
    for (test, he) in &h {
        match b.get(test) {
            None => out.push(LedgerChange {
                test: test.to_string(),
                kind: LedgerChangeKind::Added,
                detail: format!("frozen until {} (owner {})", he.expires, he.owner),
                line: he.line,
            }),
            Some(be) => {
                let (kind, detail) = if he.expires > be.expires {
                    (
                        LedgerChangeKind::Extended,
                        format!("expires {} → {}", be.expires, he.expires),
                    )
                } else if he.owner != be.owner {
                    (
                        LedgerChangeKind::OwnerChanged,
                        format!("owner {} → {}", be.owner, he.owner),
                    )
                } else if he.expires != be.expires
                    || he.reason != be.reason
                    || he.observed != be.observed
                    || he.frozen_at != be.frozen_at
                {
                    (
                        LedgerChangeKind::Edited,
                        "reason, observation or dates edited".to_string(),
                    )
                } else {
                    continue;
                };
                out.push(LedgerChange {
                    test: test.to_string(),
                    kind,
                    detail,
                    line: he.line,
                });
            }
        }
    }
    for (test, be) in &b {
        if !h.contains_key(test) {
            out.push(LedgerChange {
                test: test.to_string(),
                kind: LedgerChangeKind::Removed,
                detail: format!("was frozen until {} (owner {})", be.expires, be.owner),
                line: 0,
            });
        }
    }
    out.sort_by(|a, b| a.test.cmp(&b.test));
    out
}

#[cfg(test)]
mod ledger_change_tests {
    use super::*;

    fn e(test: &str, owner: &str, expires: &str) -> FreezeEntry {
        FreezeEntry {
            test: test.into(),
            observed: None,
            reason: None,
            owner: owner.into(),
            frozen_at: None,
            expires: expires.parse().unwrap(),
            line: 2,
        }
    }

    #[test]
    fn entry_by_entry() {
        let base = Ledger {
            entries: vec![
                e("t.py::a", "x", "2026-12-01"),
                e("t.py::b", "x", "2026-12-01"),
                e("t.py::c", "x", "2026-12-01"),
                e("t.py::d", "x", "2026-12-01"),
            ],
        };
        let head = Ledger {
            entries: vec![
                e("t.py::a", "x", "2027-01-01"),
                e("t.py::b", "y", "2026-12-01"),
                e("t.py::d", "x", "2026-12-01"),
                e("t.py::n", "z", "2026-12-24"),
            ],
        };
        let got: Vec<(String, LedgerChangeKind)> = ledger_changes(&base, &head)
            .into_iter()
            .map(|c| (c.test, c.kind))
            .collect();
        assert_eq!(
            got,
            vec![
                ("t.py::a".into(), LedgerChangeKind::Extended),
                ("t.py::b".into(), LedgerChangeKind::OwnerChanged),
                ("t.py::c".into(), LedgerChangeKind::Removed),
                ("t.py::n".into(), LedgerChangeKind::Added),
            ]
        );
        assert!(ledger_changes(&base, &base).is_empty());
    }
}

#[cfg(test)]
mod tests;
