//! Repository configuration, `.github/flakegate.yml`: where the ledger is, which
//! evidence to trust, and the policy knobs. Every field is optional and has a
//! documented default; unknown keys are rejected with their line and column, so
//! a typo never silently turns a knob off.

use crate::gate::error::{InputError, Location};
use crate::gate::report::{ReasonCode, Signal};
use serde::{de, Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The whole `.github/flakegate.yml`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(title = "flakegate repository configuration (.github/flakegate.yml)")]
pub struct Config {
    /// Path of the freeze ledger in the repository. Default `.github/flake-ledger.json`.
    pub ledger: String,
    pub evidence: EvidenceConfig,
    pub policy: Policy,
    /// Owner name as written in the ledger → GitHub handle (`@user`, `@org/team`).
    pub owners: BTreeMap<String, String>,
    /// Which owners the comment and the expired-freezes issue @-mention. Default `blocking`.
    #[serde(skip_serializing_if = "Mentions::is_default")]
    pub mentions: Mentions,
    /// The flake history's window and recovery rule.
    #[serde(skip_serializing_if = "crate::gate::history::HistoryPolicy::is_default")]
    pub history: crate::gate::history::HistoryPolicy,
    /// Whether the App keeps the ledger from the evidence (read at the default branch): asks
    /// the evidence workflow for runs of freezes near or past expiry and of unstable tests
    /// nobody froze, and proposes the ledger change in a pull request of its own. Default `on`.
    #[serde(skip_serializing_if = "LedgerMaintenance::is_default")]
    pub ledger_maintenance: LedgerMaintenance,
}

/// `ledger_maintenance`: the App's ledger upkeep on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LedgerMaintenance {
    /// Probe runs dispatched, the ledger pull request kept (or, without the permissions, the
    /// change offered in the expired-freezes issue).
    #[default]
    On,
    /// Nothing of it: the expired-freezes issue only lists the entries.
    Off,
}

impl LedgerMaintenance {
    fn is_default(&self) -> bool {
        *self == LedgerMaintenance::default()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ledger: ".github/flake-ledger.json".into(),
            evidence: EvidenceConfig::default(),
            policy: Policy::default(),
            owners: BTreeMap::new(),
            mentions: Mentions::default(),
            history: crate::gate::history::HistoryPolicy::default(),
            ledger_maintenance: LedgerMaintenance::default(),
        }
    }
}

/// Where the App finds the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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

/// Whom flakegate notifies with an @-mention (`mentions`); an owner it does not mention is
/// named without the `@`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mentions {
    /// Only owners who must act before the pull request can merge: the owners of the frozen
    /// or unstable tests behind a blocking verdict, of an expired freeze, and every owner in
    /// the expired-freezes issue (an expired freeze blocks every pull request).
    #[default]
    Blocking,
    /// Every owner named, caveats included.
    Always,
    /// Nobody: every owner is named without the `@`.
    Never,
}

impl Mentions {
    fn is_default(&self) -> bool {
        *self == Mentions::default()
    }
}

/// What the check run's conclusion is for PASS_WITH_CAVEAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaveatConclusion {
    #[default]
    Success,
    Neutral,
    Failure,
}

/// What a caveat signal does to the verdict (`policy.signals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, schemars::JsonSchema)]
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
/// Keys are the signals' codes (`Signal::KEYS`); any other key is an error naming its
/// line and column and listing the keys, as a struct's unknown field is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signals(BTreeMap<Signal, SignalLevel>);

impl Signals {
    /// The level set for a signal (`None`: unset, a caveat).
    pub fn get(&self, signal: Signal) -> Option<SignalLevel> {
        self.0.get(&signal).copied()
    }
    /// The level set for a reason (`None`: the reason is no signal, or it is unset).
    pub fn for_code(&self, code: ReasonCode) -> Option<SignalLevel> {
        code.signal().and_then(|s| self.get(s))
    }
    #[cfg(test)]
    pub fn set(&mut self, signal: Signal, level: SignalLevel) {
        self.0.insert(signal, level);
    }
}

// `Signals` reads and writes itself as the struct of one optional field per signal that
// it was (`deny_unknown_fields`, `default`, `skip_serializing_if = "Option::is_none"`):
// the same YAML and JSON, the same errors.

/// The schema of the struct `Signals` reads itself as: one optional level per signal's key,
/// no other key.
impl schemars::JsonSchema for Signals {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Signals".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let level = generator.subschema_for::<Option<SignalLevel>>();
        let properties: serde_json::Map<String, serde_json::Value> = Signal::KEYS
            .iter()
            .map(|k| (k.to_string(), level.clone().to_value()))
            .collect();
        schemars::json_schema!({
            "type": "object",
            "description": "Per caveat signal: `off`, `caveat` (the default) or `inconclusive`.",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

impl Serialize for Signals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Signals", self.0.len())?;
        for signal in Signal::ALL {
            match self.0.get(&signal) {
                // As the `Option` field it was: `Some(level)`.
                Some(level) => st.serialize_field(signal.as_str(), &Some(*level))?,
                None => st.skip_field(signal.as_str())?,
            }
        }
        st.end()
    }
}

impl<'de> Deserialize<'de> for Signals {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("Signals", &Signal::KEYS, SignalsVisitor)
    }
}

struct SignalsVisitor;

impl<'de> de::Visitor<'de> for SignalsVisitor {
    type Value = Signals;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct Signals")
    }
    /// The levels in key order; missing ones unset.
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Signals, A::Error> {
        let mut signals = Signals::default();
        for signal in Signal::ALL {
            match seq.next_element::<Option<SignalLevel>>()? {
                Some(level) => signals.0.extend(level.map(|l| (signal, l))),
                None => break,
            }
        }
        Ok(signals)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Signals, A::Error> {
        let mut signals = Signals::default();
        // A key given twice is an error even when the first value was null.
        let mut seen = Vec::new();
        while let Some(SignalKey(signal)) = map.next_key()? {
            if seen.contains(&signal) {
                return Err(de::Error::duplicate_field(signal.as_str()));
            }
            seen.push(signal);
            signals
                .0
                .extend(map.next_value::<Option<SignalLevel>>()?.map(|l| (signal, l)));
        }
        Ok(signals)
    }
}

/// A key of `policy.signals`, read as a struct's field name is.
struct SignalKey(Signal);

impl<'de> Deserialize<'de> for SignalKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(SignalKeyVisitor)
    }
}

struct SignalKeyVisitor;

impl de::Visitor<'_> for SignalKeyVisitor {
    type Value = SignalKey;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SignalKey, E> {
        match usize::try_from(v).ok().and_then(|i| Signal::ALL.get(i)) {
            Some(&s) => Ok(SignalKey(s)),
            None => Err(E::invalid_value(
                de::Unexpected::Unsigned(v),
                &format!("field index 0 <= i < {}", Signal::COUNT).as_str(),
            )),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<SignalKey, E> {
        Signal::from_key(v)
            .map(SignalKey)
            .ok_or_else(|| E::unknown_field(v, &Signal::KEYS))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<SignalKey, E> {
        let v = String::from_utf8_lossy(v);
        self.visit_str(&v)
    }
}

/// The policy knobs of the decision.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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
pub(crate) const CONFIG_PATH: &str = ".github/flakegate.yml";

/// `.github/**` (workflows, CODEOWNERS, the ledger, this config) cannot be executed by a test; the
/// trust rules judge the parts of it that shape the evidence.
pub(crate) const DEFAULT_NO_EVIDENCE_PATHS: &[&str] =
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
    if let Some(level) = config.policy.signals.get(Signal::BlindLines) {
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
pub(crate) fn is_handle(s: &str) -> bool {
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
