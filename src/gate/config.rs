//! Repository configuration, `.github/flakegate.yml`: where the ledger is, which
//! evidence to trust, and the policy knobs. Every field is optional and has a
//! documented default; unknown keys are rejected with their line and column, so
//! a typo never silently turns a knob off.

use crate::gate::error::{InputError, Location};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole `.github/flakegate.yml`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Path of the freeze ledger in the repository. Default `.github/flake-ledger.json`.
    pub ledger: String,
    pub evidence: EvidenceConfig,
    pub policy: Policy,
    /// Owner name as written in the ledger → GitHub handle (`@user`, `@org/team`).
    pub owners: BTreeMap<String, String>,
    /// The flake history's window and recovery rule.
    #[serde(skip_serializing_if = "crate::gate::history::HistoryPolicy::is_default")]
    pub history: crate::gate::history::HistoryPolicy,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ledger: ".github/flake-ledger.json".into(),
            evidence: EvidenceConfig::default(),
            policy: Policy::default(),
            owners: BTreeMap::new(),
            history: crate::gate::history::HistoryPolicy::default(),
        }
    }
}

/// Where the App finds the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvidenceConfig {
    /// Name of the workflow artifact holding the evidence directory. Default `flakegate-evidence`.
    pub artifact: String,
    /// Workflow files (under `.github/workflows/`) whose runs may carry evidence.
    /// Empty: any workflow run that uploads the artifact.
    pub workflows: Vec<String>,
    /// Minutes to wait for evidence before completing the check as INCONCLUSIVE. Default 120.
    pub timeout_minutes: u32,
}

impl Default for EvidenceConfig {
    fn default() -> Self {
        EvidenceConfig {
            artifact: "flakegate-evidence".into(),
            workflows: Vec::new(),
            timeout_minutes: 120,
        }
    }
}

/// What the check run's conclusion is for PASS_WITH_CAVEAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaveatConclusion {
    #[default]
    Success,
    Neutral,
    Failure,
}

/// What a caveat signal does to the verdict (`policy.signals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalLevel {
    /// The reason is dropped from the verdict; the report's notes say policy turned it off.
    Off,
    /// PASS becomes PASS_WITH_CAVEAT (the default).
    Caveat,
    /// The reason makes the verdict INCONCLUSIVE.
    Inconclusive,
}

/// Per caveat signal, what it does (`policy.signals`); an unset signal is a caveat.
/// Keys are the reasons' codes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Signals {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weakened_test: Option<SignalLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_witness: Option<SignalLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_only_witness: Option<SignalLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_edited: Option<SignalLevel>,
    /// `inconclusive` is what `strict_lines: true` does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blind_lines: Option<SignalLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub some_frozen: Option<SignalLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_results: Option<SignalLevel>,
    /// A stable-on-base test failed and then passed on a rerun on head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_flaky: Option<SignalLevel>,
}

impl Signals {
    /// The level set for a reason code (`None`: the code is not a signal, or it is unset).
    pub fn get(&self, code: &str) -> Option<SignalLevel> {
        match code {
            "weakened_test" => self.weakened_test,
            "self_witness" => self.self_witness,
            "phase_only_witness" => self.phase_only_witness,
            "ledger_edited" => self.ledger_edited,
            "blind_lines" => self.blind_lines,
            "some_frozen" => self.some_frozen,
            "no_results" => self.no_results,
            "head_flaky" => self.head_flaky,
            _ => None,
        }
    }
}

/// The policy knobs of the decision.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Any changed line without a stable witness makes the verdict INCONCLUSIVE
    /// (default false: such lines are a caveat).
    pub strict_lines: bool,
    /// Count only a test's `run` phase as witnessing; lines run only in fixture
    /// setup/teardown are then unwitnessed (default false: they witness, with a caveat).
    pub run_phase_only: bool,
    /// Attribute a pure deletion to the surviving lines directly above and
    /// below it (default false: deletions are listed only).
    pub attribute_deletions: bool,
    /// Check-run conclusion for PASS_WITH_CAVEAT (default `success`).
    pub caveat_conclusion: CaveatConclusion,
    /// Longest freeze allowed, `expires − frozen_at` in days (default: no limit).
    pub max_freeze_days: Option<u32>,
    /// Globs of paths that need no evidence.
    pub no_evidence_paths: Vec<String>,
    /// Days before expiry from which `ledger lint` warns. Default 7.
    pub expiry_warning_days: u32,
    /// Per caveat signal: `off`, `caveat` (default) or `inconclusive`.
    pub signals: Signals,
}

/// Where the repository configuration lives (read at the base commit).
pub const CONFIG_PATH: &str = ".github/flakegate.yml";

/// `.github/**` (workflows, CODEOWNERS, the ledger, this config) cannot be executed by a test; the
/// trust rules judge the parts of it that shape the evidence.
pub const DEFAULT_NO_EVIDENCE_PATHS: &[&str] =
    &["**/*.md", "**/*.rst", "**/*.txt", "docs/**", "LICENSE*", ".github/**"];

impl Default for Policy {
    fn default() -> Self {
        Policy {
            strict_lines: false,
            run_phase_only: false,
            attribute_deletions: false,
            caveat_conclusion: CaveatConclusion::Success,
            max_freeze_days: None,
            no_evidence_paths: DEFAULT_NO_EVIDENCE_PATHS.iter().map(|s| s.to_string()).collect(),
            expiry_warning_days: 7,
            signals: Signals::default(),
        }
    }
}

/// Matches paths against `no_evidence_paths`.
#[derive(Debug, Clone)]
pub struct PathGlobs(globset::GlobSet);

impl PathGlobs {
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut b = globset::GlobSetBuilder::new();
        for p in patterns {
            let glob = globset::GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("bad glob {p:?} in no_evidence_paths: {e}"))?;
            b.add(glob);
        }
        b.build().map(PathGlobs).map_err(|e| e.to_string())
    }
    pub fn is_match(&self, path: &str) -> bool {
        self.0.is_match(path)
    }
}

/// Parse `.github/flakegate.yml`. An empty file is the default config.
pub fn parse_config(file: &str, text: &str) -> Result<Config, InputError> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    let config: Config = serde_yaml_ng::from_str(text).map_err(|e| {
        let location = match e.location() {
            Some(l) => Location::at(file, l.line(), Some(l.column())),
            None => Location::file(file),
        };
        let msg = e.to_string();
        // serde_yaml appends " at line X column Y"; Location carries it.
        let msg = match msg.find(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        InputError::new(location, msg)
    })?;
    PathGlobs::new(&config.policy.no_evidence_paths).map_err(|m| InputError::new(Location::file(file), m))?;
    if let Some(level) = config.policy.signals.blind_lines {
        if config.policy.strict_lines && level != SignalLevel::Inconclusive {
            let level = serde_json::to_value(level).ok();
            let level = level.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
            return Err(InputError::new(
                Location::file(file),
                format!("policy.signals.blind_lines: {level} contradicts policy.strict_lines: true (which makes blind lines INCONCLUSIVE); set one of them"),
            ));
        }
    }
    for (owner, handle) in &config.owners {
        if !is_handle(handle) {
            return Err(InputError::new(
                Location::file(file),
                format!("owners.{owner}: expected a GitHub handle like @user or @org/team, got {handle:?}"),
            ));
        }
    }
    Ok(config)
}

/// Is this a GitHub handle (`@user` or `@org/team`)?
pub fn is_handle(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('@') else { return false };
    let ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    };
    match rest.split_once('/') {
        Some((org, team)) => ok(org) && ok(team),
        None => ok(rest),
    }
}

/// The GitHub handle to mention for an owner: the owner itself when it is a
/// handle, else the config's mapping; any other name is never @-mentioned.
pub fn handle_for(owner: &str, config: &Config) -> Option<String> {
    if is_handle(owner) {
        Some(owner.to_string())
    } else {
        config.owners.get(owner).cloned()
    }
}

#[cfg(test)]
mod tests;
