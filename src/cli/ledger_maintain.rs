//! `flakegate ledger maintain`: the ledger's upkeep from the flake history (and a probe), for
//! teams without the App — the same plan the App proposes in its ledger pull request
//! (`gate::ledger::maintain`), written to the ledger file and listed.

use super::history_file::{noon, open as open_history, runtime, LOCAL_REPO_ID};
use super::ledger_file::{open, read_probe, LedgerOpts};
use super::{unusable, write_atomic};
use crate::gate::codeowners::{CodeOwners, CODEOWNERS_PATHS};
use crate::gate::history::Stabilities;
use crate::gate::ledger::maintain::{codeowner_of, plan, MaintainPolicy, Plan};
use crate::gate::TestId;
use crate::store::HistoryQuery;
use std::path::PathBuf;

/// `flakegate ledger maintain`.
#[derive(Debug, Clone, clap::Args)]
pub struct MaintainArgs {
    /// The flake history's SQLite file (`check --history --record` keeps it).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// The repository the history belongs to (as for `check --history`).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repository: Option<String>,
    /// A probe of the tests (a probe directory or probe.json), judged with the history.
    #[arg(long, value_name = "PATH")]
    pub probe: Option<PathBuf>,
    /// CODEOWNERS, for the owner of a proposed freeze (default: .github/CODEOWNERS, CODEOWNERS
    /// or docs/CODEOWNERS of the current directory, as GitHub looks for it).
    #[arg(long, value_name = "FILE")]
    pub codeowners: Option<PathBuf>,
    /// Passing runs in a row that prune an entry (at least; a test that failed before needs
    /// what the history's recovery rule asks).
    #[arg(long, value_name = "N", default_value_t = MaintainPolicy::default().prune_runs)]
    pub prune_runs: u32,
    /// List the changes without writing the ledger.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub opts: LedgerOpts,
}

/// Plan, print, write. Exit 0; 2 on unusable input.
pub fn maintain(args: MaintainArgs) -> anyhow::Result<i32> {
    if args.history.is_none() && args.probe.is_none() {
        return Err(unusable(
            "ledger maintain needs evidence: --history FILE (the flake history) and/or --probe PATH",
        ));
    }
    let o = open(&args.opts, false)?;
    let probe = match &args.probe {
        Some(p) => Some(read_probe(p)?.probe),
        None => None,
    };
    let policy = MaintainPolicy {
        prune_runs: args.prune_runs,
        ..MaintainPolicy::of(&o.config)
    };
    let window = o.config.history;
    let now = noon(o.today);
    let mut tests: Vec<TestId> = o.ledger.entries.iter().map(|e| TestId::new(e.test.clone())).collect();
    let (history, candidates) = match &args.history {
        None => (None, Vec::new()),
        Some(path) => runtime()?.block_on(async {
            let store = open_history(path, args.repository.as_deref()).await?;
            let candidates = store
                .history_unstable_tests(LOCAL_REPO_ID, now, window.window_days)
                .await?;
            tests.extend(candidates.iter().cloned());
            let q = HistoryQuery {
                tests: &tests,
                base_sha: None,
                head_sha: None,
                now,
                policy: window,
                exclude: None,
            };
            let h = store.history_for(LOCAL_REPO_ID, &q).await?;
            anyhow::Ok((Some(h), candidates))
        })?,
    };
    let codeowners = read_codeowners(args.codeowners.as_ref())?;
    let owner_of = |t: &TestId| codeowners.as_ref().and_then(|c| codeowner_of(c, t));
    let stab = Stabilities::new(probe.as_ref(), history.as_ref());
    let plan = plan(&o.ledger, &stab, &candidates, &owner_of, &policy, o.today);
    print_plan(&plan, &o.name, args.dry_run);
    if let (Some(text), false) = (&plan.ledger, args.dry_run) {
        write_atomic(&o.path, text.as_bytes()).map_err(|e| unusable(format!("{}: cannot write: {e}", o.name)))?;
    }
    Ok(0)
}

fn read_codeowners(given: Option<&PathBuf>) -> anyhow::Result<Option<CodeOwners>> {
    if let Some(p) = given {
        let text = std::fs::read_to_string(p).map_err(|e| unusable(format!("{}: cannot read: {e}", p.display())))?;
        return Ok(Some(CodeOwners::parse(&text)));
    }
    for p in CODEOWNERS_PATHS {
        if let Ok(text) = std::fs::read_to_string(p) {
            return Ok(Some(CodeOwners::parse(&text)));
        }
    }
    Ok(None)
}

/// The list of changes and of what waits for evidence; the ledger's strings on one line.
fn print_plan(plan: &Plan, ledger: &str, dry_run: bool) {
    let ol = crate::gate::inert::one_line_default;
    for c in &plan.changes {
        println!("  {}", ol(&c.describe()));
    }
    for p in &plan.pending {
        println!("  waiting: {}: {}", ol(&p.test), ol(&p.why));
    }
    let wanted = plan.wanted_runs();
    if !wanted.is_empty() {
        let only: Vec<String> = wanted
            .iter()
            .map(|t| format!("'{}'", t.replace('\'', "'\\''")))
            .collect();
        println!(
            "  more runs decide the waiting entries: flakegate probe --only {} …",
            ol(&only.join(" "))
        );
    }
    let verb = match (plan.ledger.is_some(), dry_run) {
        (false, _) => "nothing to change in",
        (true, true) => "would change",
        (true, false) => "changed",
    };
    let unowned = plan
        .changes
        .iter()
        .filter(|c| matches!(c, crate::gate::ledger::maintain::Change::Freeze { owner: None, .. }))
        .count();
    println!(
        "{ledger}: {verb} {} entr{}, {} waiting for evidence{}",
        plan.changes.len(),
        if plan.changes.len() == 1 { "y" } else { "ies" },
        plan.pending.len(),
        if unowned > 0 && !dry_run {
            format!("; {unowned} proposed freeze(s) have owner null: name the owner before this ledger passes lint")
        } else {
            String::new()
        }
    );
}
