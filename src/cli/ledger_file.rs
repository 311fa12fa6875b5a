//! The ledger file and a probe as the ledger commands read them: the file opened and parsed
//! with its config (an invalid ledger refused before any edit), an edit validated by the
//! gate's own reader and written atomically, and a probe read for its observations.

use super::{freeze_days, local_config, today_utc, unusable, write_atomic};
use crate::evidence::{self, read_text};
use crate::gate::config::Config;
use crate::gate::ledger::{parse_ledger, FreezeEntry, Ledger};
use crate::gate::probe::Probe;
use chrono::NaiveDate;
use std::path::{Path, PathBuf};

/// Options every ledger subcommand takes.
#[derive(Debug, Clone, clap::Args)]
pub struct LedgerOpts {
    /// The ledger file (default: the config's ledger path, .github/flake-ledger.json).
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Policy file (default .github/flakegate.yml when it exists): ledger path, max_freeze_days, expiry_warning_days.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Today's UTC date (default: today).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub today: Option<NaiveDate>,
}

/// A ledger file as read: its path, bytes (None: it does not exist yet) and entries.
pub(super) struct Opened {
    pub(super) path: PathBuf,
    pub(super) name: String,
    pub(super) original: Option<Vec<u8>>,
    pub(super) ledger: Ledger,
    pub(super) config: Config,
    pub(super) today: NaiveDate,
}

pub(super) fn open(opts: &LedgerOpts, may_be_missing: bool) -> anyhow::Result<Opened> {
    let config = local_config(opts.config.as_deref())?;
    let path = opts.ledger.clone().unwrap_or_else(|| PathBuf::from(&config.ledger));
    let name = path.display().to_string();
    let today = opts.today.unwrap_or_else(today_utc);
    let original = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && may_be_missing => None,
        Err(e) => return Err(unusable(format!("{name}: cannot read: {e}"))),
    };
    let ledger = match &original {
        None => Ledger::default(),
        Some(b) => {
            let text = crate::gate::error::text_of(&name, b)?;
            parse_ledger(&name, &text, config.policy.max_freeze_days).map_err(|errs| {
                let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                unusable(format!(
                    "{name} is invalid, fix it first (flakegate ledger lint {name}); the file is left untouched:\n  {}",
                    msgs.join("\n  ")
                ))
            })?
        }
    };
    Ok(Opened {
        path,
        name,
        original,
        ledger,
        config,
        today,
    })
}

impl Opened {
    /// Validate the edited entries with the gate's reader, then write them.
    /// Returns false when the file already says exactly this.
    pub(super) fn write(&self, entries: &[FreezeEntry]) -> anyhow::Result<bool> {
        let text = Ledger::canonical_text(entries);
        if let Err(errs) = parse_ledger(&self.name, &text, self.config.policy.max_freeze_days) {
            let msgs: Vec<String> = errs.iter().map(|e| e.message.clone()).collect();
            return Err(self.refuse(&msgs.join("; ")));
        }
        if self.original.as_deref() == Some(text.as_bytes()) {
            return Ok(false);
        }
        write_atomic(&self.path, text.as_bytes()).map_err(|e| unusable(format!("{}: cannot write: {e}", self.name)))?;
        Ok(true)
    }

    pub(super) fn refuse(&self, why: &str) -> anyhow::Error {
        let state = if self.original.is_some() {
            "left untouched"
        } else {
            "not created"
        };
        unusable(format!("invalid edit, {} {state}: {why}", self.name))
    }

    pub(super) fn days(&self, days: Option<u32>) -> anyhow::Result<u32> {
        let d = freeze_days(days, &self.config).map_err(|e| self.refuse(&e.to_string()))?;
        if d == 0 {
            return Err(self.refuse("--days must be at least 1"));
        }
        Ok(d)
    }
}

/// A probe read for an edit, with the date it was taken when known.
pub(super) struct ReadProbe {
    pub(super) probe: Probe,
    pub(super) name: String,
    pub(super) date: Option<NaiveDate>,
}

pub(super) fn read_probe(path: &Path) -> anyhow::Result<ReadProbe> {
    let name = path.display().to_string();
    let mut date = None;
    if path.is_file() {
        let (text, _) = read_text(path).map_err(|e| unusable(e.to_string()))?;
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            if v.get("inconclusive").and_then(|b| b.as_bool()) == Some(true) {
                let why = v
                    .get("why_inconclusive")
                    .and_then(|w| w.as_str())
                    .unwrap_or("no reason given");
                return Err(unusable(format!(
                    "{name}: the probe is inconclusive ({why}): it observed nothing"
                )));
            }
            date = v
                .get("date")
                .and_then(|d| d.as_str())
                .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
        }
    }
    let sources = evidence::EvidenceSources {
        probe: Some(path.to_path_buf()),
        ..Default::default()
    };
    let loaded = evidence::load_evidence(&sources, &crate::gate::Patch::default(), None, &Default::default());
    if let Some(e) = loaded.evidence.problems.first() {
        return Err(unusable(e.to_string()));
    }
    let probe = loaded
        .evidence
        .probe
        .ok_or_else(|| unusable(format!("{name}: no probe read")))?;
    Ok(ReadProbe { probe, name, date })
}
