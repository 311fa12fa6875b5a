//! The worker's own jobs, queued in the store beside the webhook deliveries: the evidence
//! deadline of a head, the periodic expired-freezes sweep, and one repository's share of it —
//! their event names and payloads.

use crate::github::event::Envelope;
use serde::{Deserialize, Serialize};

/// The worker's own delayed job: when it comes due and the check run is still not completed,
/// no evidence arrived in time and the check completes as INCONCLUSIVE saying what it waited for.
pub const EVIDENCE_TIMEOUT_EVENT: &str = "flakegate_evidence_timeout";

/// The sweep job: list installations and their repositories, queue one job per repository.
pub const SWEEP_EVENT: &str = "flakegate_expiry_sweep";
/// One repository's share of the sweep.
pub const SWEEP_REPO_EVENT: &str = "flakegate_expiry_repo";

/// The worker's own delayed job: the evidence deadline of a head.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct EvidenceTimeout {
    #[serde(flatten)]
    pub(super) envelope: Envelope,
    pub(super) head_sha: String,
    pub(super) artifact: String,
    pub(super) workflows: Vec<String>,
    pub(super) timeout_minutes: u32,
    /// The head is a merge group's: the evidence comes from a `merge_group` run.
    #[serde(default)]
    pub(super) merge_group: bool,
}

/// The sweep job's payload: which interval it is for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Sweep {
    pub(super) slot: i64,
}

/// One repository's sweep job: the repository (with its default branch) and installation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct SweepRepo {
    pub(super) slot: i64,
    #[serde(flatten)]
    pub(super) envelope: Envelope,
}
