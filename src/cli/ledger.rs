//! `flakegate ledger add | renew | prune | expiring | lint` (and `maintain`, `ledger_maintain.rs`): edit the committed
//! freeze ledger deterministically, so that its diffs stay small and every
//! change carries evidence.
//!
//! Every write has the same form: entries sorted by `test`, keys in the order
//! test, observed, reason, owner, frozen_at, expires (absent optional fields
//! left out), 2-space JSON, a trailing newline; written to a temporary file
//! and renamed into place. The result is validated by the gate's own
//! [`parse_ledger`] before anything is written: an invalid edit fails with
//! exit status 2 and leaves the file byte for byte as it was.

use super::ledger_file::{open, read_probe, LedgerOpts, Opened, ReadProbe};
use super::today_utc;
use crate::evidence::read_text;
use crate::gate::config::{parse_config, Config};
use crate::gate::ledger::{parse_ledger, FreezeEntry};
use crate::gate::nodeid::{IdKind, TestId};
use crate::gate::probe::Stability;
use crate::probe::summary::{observed, pct, power_of};
use chrono::NaiveDate;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum LedgerCmd {
    /// Freeze a test: add an entry with owner, reason, observation and expiry.
    Add(AddArgs),
    /// Extend a freeze, recording a fresh observation from a probe.
    Renew(RenewArgs),
    /// Remove entries a complete probe now finds stable, listing them.
    Prune(PruneArgs),
    /// List entries expired or expiring soon with their owners. Exits 1 when any is expired.
    Expiring(ExpiringArgs),
    /// Validate a ledger; list entries expired or expiring soon. Exits 1 when invalid or any entry is expired.
    Lint(LintArgs),
    /// Prune, renew and propose freezes from the flake history (and a probe): entries past or
    /// near expiry, and unstable tests nobody froze. Writes the ledger and lists each change
    /// with its evidence.
    Maintain(Box<super::ledger_maintain::MaintainArgs>),
}

/// `flakegate ledger lint`.
#[derive(Debug, Clone, clap::Args)]
pub struct LintArgs {
    file: PathBuf,
    /// List entries expiring within this many days (default: the policy's expiry_warning_days, 7).
    #[arg(long, value_name = "DAYS")]
    within: Option<u32>,
    #[arg(long, value_name = "YYYY-MM-DD")]
    today: Option<NaiveDate>,
    /// Policy file (for max_freeze_days).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Run a ledger subcommand; returns the exit status.
pub fn run(cmd: LedgerCmd) -> anyhow::Result<i32> {
    match cmd {
        LedgerCmd::Add(args) => add(args),
        LedgerCmd::Renew(args) => renew(args),
        LedgerCmd::Prune(args) => prune(args),
        LedgerCmd::Expiring(args) => expiring(args),
        LedgerCmd::Lint(args) => lint(&args),
        LedgerCmd::Maintain(args) => super::ledger_maintain::maintain(*args),
    }
}

/// `flakegate ledger add`.
#[derive(Debug, Clone, clap::Args)]
pub struct AddArgs {
    /// The test to freeze: a pytest node id, or a class / parametrised base name prefix.
    pub nodeid: String,
    /// Who owns the freeze (a name or a GitHub handle such as @org/team). Required: flakegate never invents one.
    #[arg(long, value_name = "OWNER")]
    pub owner: Option<String>,
    /// Why the test is frozen. Required.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// The freeze expires this many days after today (default 14, at most the policy's max_freeze_days).
    #[arg(long, value_name = "DAYS")]
    pub days: Option<u32>,
    /// What was observed, e.g. "3/7 fail on clean base".
    #[arg(long, value_name = "TEXT", conflicts_with = "probe")]
    pub observed: Option<String>,
    /// Take the observation from a probe (probe JSON, or a directory of K result files).
    #[arg(long, value_name = "FILE|DIR")]
    pub probe: Option<PathBuf>,
    /// The kind of test id (default: the kind of the ledger's entries; in an empty ledger a
    /// pytest node id or a Bazel label).
    #[arg(long, value_enum, value_name = "KIND")]
    pub id_kind: Option<IdKindArg>,
    #[command(flatten)]
    pub opts: LedgerOpts,
}

/// `--id-kind`: the test ids of another language's evidence (docs/cli.md, "Other languages").
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IdKindArg {
    Pytest,
    Bazel,
    Lcov,
    Junit,
}

impl IdKindArg {
    fn kind(self) -> IdKind {
        match self {
            IdKindArg::Pytest => IdKind::PytestNode,
            IdKindArg::Bazel => IdKind::BazelLabel,
            IdKindArg::Lcov => IdKind::LcovTestName,
            IdKindArg::Junit => IdKind::JUnitCase,
        }
    }
}

/// `flakegate ledger renew`.
#[derive(Debug, Clone, clap::Args)]
pub struct RenewArgs {
    /// The frozen test (exactly as its entry names it).
    pub nodeid: String,
    /// The renewed freeze expires this many days after today.
    #[arg(long, value_name = "DAYS")]
    pub days: u32,
    /// Allow the new expiry to be earlier than the current one (a renewal never shortens a
    /// freeze otherwise).
    #[arg(long)]
    pub shorten: bool,
    /// A fresh probe that ran the test (probe JSON or a directory of K result files): a renewal records evidence.
    #[arg(long, value_name = "FILE|DIR")]
    pub probe: Option<PathBuf>,
    #[command(flatten)]
    pub opts: LedgerOpts,
}

/// `flakegate ledger prune`.
#[derive(Debug, Clone, clap::Args)]
pub struct PruneArgs {
    /// A complete probe (every test's counts, as `flakegate probe` writes; or a directory of K result files).
    #[arg(long, value_name = "FILE|DIR")]
    pub probe: Option<PathBuf>,
    /// List what would be removed without writing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub opts: LedgerOpts,
}

/// `flakegate ledger expiring`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExpiringArgs {
    /// List entries expiring within this many days (default: the policy's expiry_warning_days, 7).
    #[arg(long, value_name = "DAYS")]
    pub within: Option<u32>,
    #[command(flatten)]
    pub opts: LedgerOpts,
}

/// The probe's observation of an entry's test (or every test under a prefix).
struct Observation {
    failures: u32,
    runs: u32,
    tests: usize,
    all_passing: bool,
}

impl Observation {
    fn text(&self) -> String {
        let base = observed(self.failures, self.runs);
        if self.tests > 1 {
            format!("{base} ({} tests under this prefix)", self.tests)
        } else {
            base
        }
    }
}

fn observe(p: &ReadProbe, test: &str) -> Result<Observation, String> {
    let under: Vec<_> = p.probe.tests.iter().filter(|(id, _)| id.is_under(test)).collect();
    if under.is_empty() {
        return Err(if p.probe.complete {
            format!(
                "{} did not run {test}: probe it first (flakegate probe --only '{test}' …)",
                p.name
            )
        } else {
            format!(
                "{} lists only unstable tests and not {test}, so it does not show that {test} ran; use a complete \
                 probe (flakegate probe writes every test's counts)",
                p.name
            )
        });
    }
    let (failures, runs) = under.iter().fold((0, 0), |(f, r), (_, c)| (f + c.failures, r + c.runs));
    if runs == 0 {
        return Err(format!(
            "{} ran {test} but it was skipped in every run: nothing was observed",
            p.name
        ));
    }
    let all_passing = under
        .iter()
        .all(|(_, c)| c.runs > 0 && c.stability() == Stability::StablePassing);
    Ok(Observation {
        failures,
        runs,
        tests: under.len(),
        all_passing,
    })
}

/// `ledger add`: exit 0, or an error (exit 2) with the file untouched.
pub fn add(args: AddArgs) -> anyhow::Result<i32> {
    let o = open(&args.opts, true)?;
    let test = args.nodeid.clone();
    let owner = match args.owner.as_deref().map(str::trim) {
        None => {
            return Err(o.refuse("--owner is required: name who owns this freeze (flakegate never invents an owner)"))
        }
        Some("") => return Err(o.refuse("--owner is empty: name who owns this freeze")),
        Some(_) => args.owner.clone().unwrap_or_default(),
    };
    let reason = match args.reason.as_deref().map(str::trim) {
        None | Some("") => return Err(o.refuse("--reason is required: say why the test is frozen")),
        Some(_) => args.reason.clone(),
    };
    check_id_kind(&o, &test, args.id_kind)?;
    if let Some(e) = o.ledger.entries.iter().find(|e| e.test == test) {
        return Err(o.refuse(&format!(
            "{test} is already frozen (line {}, owner {}, expires {}); use flakegate ledger renew to extend it",
            e.line, e.owner, e.expires
        )));
    }
    let days = o.days(args.days)?;
    let observed = match (&args.observed, &args.probe) {
        (Some(t), _) if t.trim().is_empty() => return Err(o.refuse("--observed is empty")),
        (Some(t), _) => Some(t.clone()),
        (None, Some(p)) => {
            let rp = read_probe(p).map_err(|e| o.refuse(&e.to_string()))?;
            let obs = observe(&rp, &test).map_err(|e| o.refuse(&e))?;
            if obs.all_passing {
                eprintln!(
                    "flakegate ledger: warning: {} shows {test} passing every run ({}): nothing shows it flaky, \
                     and a frozen test no longer witnesses changes",
                    rp.name,
                    obs.text()
                );
            } else if obs.failures == obs.runs {
                eprintln!(
                    "flakegate ledger: warning: {} shows {test} failing every run ({}): it is broken on base, not \
                     flaky; fix it rather than freeze it",
                    rp.name,
                    obs.text()
                );
            }
            Some(obs.text())
        }
        (None, None) => None,
    };
    if let Some(prefix) = o
        .ledger
        .entries
        .iter()
        .find(|e| TestId::new(test.clone()).is_under(&e.test))
    {
        eprintln!(
            "flakegate ledger: note: {test} is already covered by the entry {} (owner {})",
            prefix.test, prefix.owner
        );
    }
    let entry = FreezeEntry {
        test: test.clone(),
        observed,
        reason,
        owner: owner.clone(),
        frozen_at: Some(o.today),
        expires: o.today + chrono::Days::new(u64::from(days)),
        line: 0,
    };
    let expires = entry.expires;
    let mut entries = o.ledger.entries.clone();
    entries.push(entry);
    o.write(&entries)?;
    println!(
        "{}: froze {test} (owner {owner}) from {} until {expires}",
        o.name, o.today
    );
    Ok(0)
}

/// The id `ledger add` freezes must be of the kind asked for (`--id-kind`), else of the kind
/// of the ledger's entries, else a pytest node id or a Bazel label: `test_total` is no node id.
fn check_id_kind(o: &Opened, test: &str, asked: Option<IdKindArg>) -> anyhow::Result<()> {
    let kind = IdKind::of(test).map_err(|why| o.refuse(&format!("{test:?} is not a test id: {why}")))?;
    let expected: Vec<IdKind> = match (asked, o.ledger.entries.first()) {
        (Some(a), _) => vec![a.kind()],
        (None, Some(e)) => IdKind::of(&e.test).map(|k| vec![k]).unwrap_or_default(),
        (None, None) => vec![IdKind::PytestNode, IdKind::BazelLabel],
    };
    if expected.is_empty() || expected.contains(&kind) {
        return Ok(());
    }
    let wanted: Vec<&str> = expected.iter().map(|k| k.describe()).collect();
    Err(o.refuse(&format!(
        "{test} is {}, not {}: give the full id (for pytest `path::name`, e.g. tests/test_x.py::{test}), or \
         --id-kind when the evidence names tests that way",
        kind.describe(),
        wanted.join(" or ")
    )))
}

/// `ledger renew`: a new expiry, recorded with a fresh observation.
pub fn renew(args: RenewArgs) -> anyhow::Result<i32> {
    let o = open(&args.opts, false)?;
    let test = args.nodeid.clone();
    let Some(pos) = o.ledger.entries.iter().position(|e| e.test == test) else {
        return Err(o.refuse(&format!("{test} is not in the ledger (use flakegate ledger add)")));
    };
    let Some(probe_path) = &args.probe else {
        return Err(o.refuse(
            "renew needs a fresh observation: --probe probe.json from a probe that ran this test (flakegate probe), \
             so the renewal records evidence and not just a new date",
        ));
    };
    let days = o.days(Some(args.days))?;
    let rp = read_probe(probe_path).map_err(|e| o.refuse(&e.to_string()))?;
    let old = &o.ledger.entries[pos];
    if let (Some(d), Some(f)) = (rp.date, old.frozen_at) {
        if d < f {
            return Err(o.refuse(&format!(
                "{} was taken on {d}, before this freeze began ({f}): not a fresh observation; probe again",
                rp.name
            )));
        }
    }
    let obs = observe(&rp, &test).map_err(|e| o.refuse(&e))?;
    if obs.all_passing {
        eprintln!(
            "flakegate ledger: note: {} shows {test} stable ({}); consider flakegate ledger prune --probe {} instead",
            rp.name,
            obs.text(),
            rp.name
        );
    }
    let expires = o.today + chrono::Days::new(u64::from(days));
    if expires < old.expires && !args.shorten {
        return Err(o.refuse(&format!(
            "--days {days} ends the freeze on {expires}, before its current expiry {}: a renewal never shortens a \
             freeze (give --shorten to mean it, or remove the entry when the test is fixed)",
            old.expires
        )));
    }
    let mut entries = o.ledger.entries.clone();
    let e = &mut entries[pos];
    e.observed = Some(obs.text());
    // `frozen_at` says when the freeze began: a renewal keeps it (an entry without one gets today).
    e.frozen_at = e.frozen_at.or(Some(o.today));
    e.expires = expires;
    let (owner, expires, obs_text) = (e.owner.clone(), e.expires, obs.text());
    o.write(&entries)?;
    println!(
        "{}: renewed {test} (owner {owner}) until {expires}; observed {obs_text}",
        o.name
    );
    Ok(0)
}

/// `ledger prune`: drop entries whose every probed test passed every run (of a
/// probe taken no earlier than the freeze began).
pub fn prune(args: PruneArgs) -> anyhow::Result<i32> {
    let o = open(&args.opts, false)?;
    let Some(probe_path) = &args.probe else {
        return Err(o.refuse("prune needs --probe probe.json: a probe that shows which frozen tests are now stable"));
    };
    let rp = read_probe(probe_path).map_err(|e| o.refuse(&e.to_string()))?;
    if !rp.probe.complete {
        return Err(o.refuse(&format!(
            "{} lists only unstable tests: a test absent from it may be stable or may not have run; prune needs a \
             complete probe (flakegate probe writes every test's counts)",
            rp.name
        )));
    }
    let power = power_of(rp.probe.k);
    let bound = power
        .min_detectable_rate
        .map(|r| format!("not shown unstable at p ≥ {}", pct(r)));
    let mut keep = Vec::new();
    let mut removed = Vec::new();
    let mut kept_lines = Vec::new();
    for e in &o.ledger.entries {
        if let (Some(d), Some(f)) = (rp.date, e.frozen_at) {
            if d < f {
                kept_lines.push(format!("  kept {}: frozen on {f}, after this probe ({d})", e.test));
                keep.push(e.clone());
                continue;
            }
        }
        match observe(&rp, &e.test) {
            Ok(obs) if obs.all_passing => removed.push((e.clone(), obs.text())),
            Ok(obs) => {
                kept_lines.push(format!("  kept {}: {} (owner {})", e.test, obs.text(), e.owner));
                keep.push(e.clone());
            }
            Err(_) => {
                kept_lines.push(format!("  kept {}: not in this probe", e.test));
                keep.push(e.clone());
            }
        }
    }
    let verb = if args.dry_run { "would remove" } else { "removed" };
    let mut out = String::new();
    for (e, obs) in &removed {
        out.push_str(&format!(
            "  {verb} {}: {obs}{} (owner {})\n",
            e.test,
            bound.as_deref().map(|b| format!(", {b}")).unwrap_or_default(),
            e.owner
        ));
    }
    for l in &kept_lines {
        out.push_str(l);
        out.push('\n');
    }
    if !removed.is_empty() && !args.dry_run {
        o.write(&keep)?;
    }
    print!("{out}");
    println!(
        "{}: {} {} entr{} the probe ({} runs) finds stable; {} kept",
        o.name,
        verb,
        removed.len(),
        if removed.len() == 1 { "y" } else { "ies" },
        rp.probe.k,
        keep.len()
    );
    Ok(0)
}

/// `ledger expiring`: entries expired or expiring soon, with owners; exit 1 when any has expired.
pub fn expiring(args: ExpiringArgs) -> anyhow::Result<i32> {
    let o = open(&args.opts, false)?;
    let within = args.within.unwrap_or(o.config.policy.expiry_warning_days);
    let mut listed = o.ledger.expiring(o.today, within);
    listed.sort_by(|(a, _), (b, _)| a.expires.cmp(&b.expires).then(a.test.cmp(&b.test)));
    let mut expired = 0;
    for &(e, days) in &listed {
        // A ledger may come from a pull request: its strings on one line, controls replaced.
        let ol = crate::gate::inert::one_line_default;
        let owner = match crate::gate::config::handle_for(&e.owner, &o.config) {
            Some(h) if h != e.owner => format!("{} ({})", ol(&e.owner), ol(&h)),
            _ => ol(&e.owner),
        };
        if e.is_expired(o.today) {
            expired += 1;
            println!(
                "EXPIRED  {} ({} day{} ago)  {}  owner {owner}",
                e.expires,
                -days,
                if days == -1 { "" } else { "s" },
                ol(&e.test)
            );
        } else {
            let when = match days {
                0 => "today, its last day".to_string(),
                1 => "in 1 day".to_string(),
                d => format!("in {d} days"),
            };
            println!("expires  {} ({when})  {}  owner {owner}", e.expires, ol(&e.test));
        }
    }
    println!(
        "{}: {} entr{}, {expired} expired, {} expiring within {within} days (as of {})",
        o.name,
        o.ledger.entries.len(),
        if o.ledger.entries.len() == 1 { "y" } else { "ies" },
        listed.len() - expired,
        o.today
    );
    Ok(if expired > 0 { 1 } else { 0 })
}

/// `ledger lint`: validate; list entries expired or expiring soon; exit 1 when invalid or any has expired.
fn lint(args: &LintArgs) -> anyhow::Result<i32> {
    let (file, within, today) = (args.file.as_path(), args.within, args.today);
    // Only an explicit policy file: lint judges the ledger it is given, wherever it is.
    let config = match args.config.as_deref() {
        Some(p) => {
            let (t, _) = read_text(p)?;
            parse_config(&p.display().to_string(), &t)?
        }
        None => Config::default(),
    };
    let today = today.unwrap_or_else(today_utc);
    let within = within.unwrap_or(config.policy.expiry_warning_days);
    let name = file.display().to_string();
    let (text, _) = read_text(file)?;
    let ledger = match parse_ledger(&name, &text, config.policy.max_freeze_days) {
        Ok(l) => l,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            eprintln!(
                "{name}: {} problem{}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            );
            return Ok(1);
        }
    };
    let mut expired = 0;
    let mut out = String::new();
    // The ledger may come from a pull request: its strings on one line, controls replaced.
    let ol = crate::gate::inert::one_line_default;
    for (e, days) in ledger.expiring(today, within) {
        if e.is_expired(today) {
            expired += 1;
            out.push_str(&format!(
                "{name}:{}: EXPIRED {} ({} days ago): {} — owner {}\n",
                e.line,
                e.expires,
                -days,
                ol(&e.test),
                ol(&e.owner)
            ));
        } else {
            out.push_str(&format!(
                "{name}:{}: expires {} (in {} days): {} — owner {}\n",
                e.line,
                e.expires,
                days,
                ol(&e.test),
                ol(&e.owner)
            ));
        }
    }
    print!("{out}");
    println!(
        "{name}: {} entr{} valid, {expired} expired as of {today}",
        ledger.entries.len(),
        if ledger.entries.len() == 1 { "y" } else { "ies" }
    );
    Ok(if expired > 0 { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::ledger::Ledger;

    #[test]
    fn canonical_form_round_trips() {
        let text = "{\n  \"frozen\": [\n    {\n      \"test\": \"a.py::t\",\n      \"owner\": \"o\",\n      \"expires\": \"2026-01-01\"\n    }\n  ]\n}\n";
        let l = parse_ledger("l", text, None).unwrap();
        assert_eq!(Ledger::canonical_text(&l.entries), text);
        assert_eq!(Ledger::canonical_text(&[]), "{\n  \"frozen\": []\n}\n");
    }

    #[test]
    fn sorted_with_fixed_key_order() {
        let text = r#"{"frozen": [{"expires": "2026-02-01", "owner": "p", "test": "b.py::u", "reason": "r"},
            {"test": "a.py::t", "owner": "o", "expires": "2026-01-01", "frozen_at": "2025-12-01", "observed": "1/5 fail on clean base"}]}"#;
        let l = parse_ledger("l", text, None).unwrap();
        let out = Ledger::canonical_text(&l.entries);
        let want = "{\n  \"frozen\": [\n    {\n      \"test\": \"a.py::t\",\n      \"observed\": \"1/5 fail on clean base\",\n      \"owner\": \"o\",\n      \"frozen_at\": \"2025-12-01\",\n      \"expires\": \"2026-01-01\"\n    },\n    {\n      \"test\": \"b.py::u\",\n      \"reason\": \"r\",\n      \"owner\": \"p\",\n      \"expires\": \"2026-02-01\"\n    }\n  ]\n}\n";
        assert_eq!(out, want);
        assert_eq!(
            Ledger::canonical_text(&parse_ledger("l", &out, None).unwrap().entries),
            out
        );
    }
}
