//! What the gate decides on: [`GateInput`] (the patch, the base ledger, the
//! config, `today`, the input digests) and the [`Evidence`] read for it,
//! including `meta.json` ([`Meta`]). Built by the callers; read by
//! [`evaluate`](crate::gate::verdict::evaluate).

use crate::gate::codeowners::CodeOwners;
use crate::gate::config::Config;
use crate::gate::coverage::Coverage;
use crate::gate::error::InputError;
use crate::gate::ledger::Ledger;
use crate::gate::patch::Patch;
use crate::gate::probe::Probe;
use crate::gate::report::InputDigest;
use crate::gate::results::TestResults;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// `meta.json` of the evidence directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Meta {
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    pub k: Option<u32>,
    pub seed: Option<u64>,
    pub test_command: Option<String>,
    /// The workflow file that produced the evidence, when CI records it.
    pub workflow: Option<String>,
}

pub fn parse_meta(file: &str, text: &str) -> Result<Meta, InputError> {
    serde_json::from_str(text).map_err(|e| InputError::json(file, &e))
}

/// The evidence as read. A part that could not be read is `None` and its
/// error is in `problems`: the gate then says INCONCLUSIVE, naming it.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub coverage: Option<Coverage>,
    /// Where the coverage came from (for messages).
    pub coverage_file: Option<String>,
    pub results: Option<TestResults>,
    pub probe: Option<Probe>,
    pub meta: Option<Meta>,
    pub problems: Vec<InputError>,
    /// The patch's own edit of the ledger file (as its diff shows it: the ledger as the
    /// patch found it and as it leaves it), `None` when it does not touch the file. Never
    /// used to decide what is frozen — the base ledger is — only to report the patch's
    /// own edits and catch a patch freezing its own witnesses.
    pub ledger_edit: Option<crate::gate::ledger::edit::LedgerEdit>,
    /// CODEOWNERS at the base commit: owners of changed lines no stable test witnesses.
    pub codeowners: Option<CodeOwners>,
    /// The head's text of changed source files (repository path → text), when the
    /// face could read them: a `def`/`class` header is then witnessed by the tests
    /// that ran its body, and a continuation line judged as its statement.
    pub head_sources: std::collections::BTreeMap<String, String>,
    /// The head's text of the patch's test code (repository path → text), when the face could
    /// read it: the changed test files and the `conftest.py`, `__init__.py` and helper modules
    /// of their test packages. The trust rules parse it to follow a test into the helpers it
    /// calls and to see what a test replaces or computes.
    pub test_sources: std::collections::BTreeMap<String, String>,
    /// What the flake history knows of the tests this evidence names (earlier runs, other
    /// pull requests), when the face keeps one.
    pub history: Option<crate::gate::history::History>,
}

/// Everything the gate decides on.
#[derive(Debug, Clone)]
pub struct GateInput<'a> {
    pub patch: &'a Patch,
    /// The ledger, or every problem found in it.
    pub ledger: &'a Result<Ledger, Vec<InputError>>,
    pub config: &'a Config,
    pub evidence: &'a Evidence,
    pub today: NaiveDate,
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    pub inputs: Vec<InputDigest>,
    /// The workflow file that produced the evidence (`.github/workflows/flakegate-evidence.yml`),
    /// when known; else `meta.json`'s `workflow`.
    pub workflow: Option<String>,
}

impl GateInput<'_> {
    /// The path of the input with this role (`meta`, `coverage`, …), when given.
    pub(crate) fn input_path(&self, role: &str) -> Option<String> {
        self.inputs.iter().find(|i| i.role == role).map(|i| i.path.clone())
    }
    /// The ledger's name in messages: its input path when given, else the config's `ledger`.
    pub(crate) fn ledger_file_name(&self) -> String {
        self.inputs
            .iter()
            .find(|i| i.role == "ledger")
            .map(|i| i.path.clone())
            .unwrap_or_else(|| self.config.ledger.clone())
    }
}
