//! The webhook events the App acts on, decided once at the boundary: which
//! `X-GitHub-Event` + `action` pairs become work (the table is [`Event::parse`]),
//! and the typed payload each carries, so no handler reads raw JSON. The server
//! parses a delivery to decide whether to queue it; the worker parses the stored
//! payload with the same function.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A repository as payloads name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repository {
    pub full_name: String,
    /// GitHub's id of the repository: a workflow run's pull requests name their base
    /// repository by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The default branch's name (payloads of `push` and the installation listings carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
}

/// The App installation a delivery is for (absent in some sample payloads; the worker
/// cannot act without it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installation {
    pub id: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ShaRef {
    pub sha: String,
}

/// What every accepted payload carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub repository: Repository,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation: Option<Installation>,
}

/// `pull_request` opened, synchronize, reopened or ready_for_review: a new head to judge;
/// `edited` with `changes.base`: the same head against another base.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestEvent {
    /// `ready_for_review` re-judges a head whose evidence was judged while it was a draft.
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub number: Option<u64>,
    pub pull_request: PullRequestPayload,
    /// What an `edited` delivery changed; only `base` matters here.
    #[serde(default)]
    pub changes: Option<PullRequestChanges>,
    #[serde(flatten)]
    pub envelope: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestPayload {
    #[serde(default)]
    pub number: Option<u64>,
    pub head: ShaRef,
    pub base: ShaRef,
    /// `closed`: whether it was merged (else it was closed unmerged).
    #[serde(default)]
    pub merged: Option<bool>,
    /// `closed` and merged: the commit the merge made on the base branch.
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestChanges {
    /// Present when the pull request was retargeted (GitHub sends the old `ref` and `sha`).
    #[serde(default)]
    pub base: Option<serde_json::Value>,
}

impl PullRequestEvent {
    pub fn number(&self) -> Option<u64> {
        self.pull_request.number.or(self.number)
    }
}

/// `workflow_run` completed: a run that may carry evidence.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRunEvent {
    pub workflow_run: WorkflowRun,
    #[serde(flatten)]
    pub envelope: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    pub head_sha: String,
    /// Which attempt of the run this is (1, then 2… for each re-run): every attempt's
    /// outcomes join the flake history.
    #[serde(default)]
    pub run_attempt: Option<u32>,
    /// The workflow file, e.g. `.github/workflows/flakegate-evidence.yml`.
    #[serde(default)]
    pub path: Option<String>,
    /// Empty (or absent) for a fork's run: GitHub lists only same-repository pull requests.
    #[serde(default)]
    pub pull_requests: Option<Vec<RunPullRequest>>,
    /// What triggered the run (`pull_request`, `merge_group`, …): a `merge_group` run is
    /// evidence for the merge group at its head, never for a pull request.
    #[serde(default)]
    pub event: Option<String>,
    /// How the run ended (`success`, `failure`, `cancelled`, `timed_out`…): only a run that
    /// completed (its tests passed or failed) is evidence; one cut short may have left a
    /// partial artifact.
    #[serde(default)]
    pub conclusion: Option<String>,
    /// The branch the run ran on (a dispatched run's ref; the pull request's branch otherwise).
    #[serde(default)]
    pub head_branch: Option<String>,
}

/// `merge_group` checks_requested or destroyed: a merge queue's group, whose head commit
/// (`base_sha` plus the queued pull requests) needs the required checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeGroupEvent {
    pub merge_group: MergeGroup,
    /// `destroyed` only: `merged`, `dequeued` or `invalidated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub envelope: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeGroup {
    pub head_sha: String,
    pub base_sha: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
}

/// A pull request a workflow run lists; entries GitHub leaves incomplete are skipped.
/// Its number is only meaningful in its base repository, which may be another one (a
/// fork's own pull requests are listed too).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RunPullRequest {
    #[serde(default)]
    pub number: Option<u64>,
    #[serde(default)]
    pub head: Option<ShaRef>,
    #[serde(default)]
    pub base: Option<RunPullRef>,
}

/// `base` (or `head`) of a workflow run's pull request: sha and the repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RunPullRef {
    pub sha: String,
    #[serde(default)]
    pub repo: Option<RunRepo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RunRepo {
    #[serde(default)]
    pub id: Option<u64>,
}

/// `push`: commits pushed to a branch (or a tag); the App acts on pushes to the default
/// branch (the ledger there may have changed).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PushEvent {
    /// `refs/heads/<branch>` or `refs/tags/<tag>`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The branch's new head (all zeros when the branch was deleted).
    pub after: String,
    #[serde(default)]
    pub deleted: bool,
    #[serde(flatten)]
    pub envelope: Envelope,
}

impl PushEvent {
    /// The pushed branch is the repository's default branch (and still exists).
    pub fn to_default_branch(&self) -> bool {
        let branch = self.git_ref.strip_prefix("refs/heads/");
        !self.deleted && branch.is_some() && branch == self.envelope.repository.default_branch.as_deref()
    }
}

/// The app that made a check run or check suite.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AppOf {
    pub id: u64,
}

/// `check_run` rerequested or requested_action.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRunEvent {
    pub check_run: CheckRunPayload,
    #[serde(default)]
    pub requested_action: Option<RequestedActionPayload>,
    #[serde(flatten)]
    pub envelope: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRunPayload {
    #[serde(default)]
    pub name: Option<String>,
    /// The app that made the check run: the App acts only on its own.
    #[serde(default)]
    pub app: Option<AppOf>,
    pub head_sha: String,
    #[serde(default)]
    pub pull_requests: Vec<NumberOnly>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RequestedActionPayload {
    pub identifier: String,
}

/// `check_suite` rerequested.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSuiteEvent {
    pub check_suite: CheckSuitePayload,
    #[serde(flatten)]
    pub envelope: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSuitePayload {
    pub head_sha: String,
    #[serde(default)]
    pub app: Option<AppOf>,
    #[serde(default)]
    pub pull_requests: Vec<NumberOnly>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NumberOnly {
    #[serde(default)]
    pub number: Option<u64>,
}

/// The buttons flakegate puts on its check run (`requested_action.identifier`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestedAction {
    /// "Re-run evidence": re-run the evidence workflow.
    Rerun,
    /// "Re-evaluate": judge the latest evidence again.
    Reevaluate,
    /// Not one of ours.
    Other(String),
}

impl RequestedAction {
    pub fn of(identifier: &str) -> Self {
        match identifier {
            "rerun" => RequestedAction::Rerun,
            "reevaluate" => RequestedAction::Reevaluate,
            other => RequestedAction::Other(other.to_owned()),
        }
    }

    /// The identifier GitHub sends back (at most 20 characters).
    pub fn identifier(&self) -> &str {
        match self {
            RequestedAction::Rerun => "rerun",
            RequestedAction::Reevaluate => "reevaluate",
            RequestedAction::Other(s) => s,
        }
    }
}

/// An event the App acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A pull request got a new head (opened, synchronize, reopened, ready_for_review).
    PullRequest(PullRequestEvent),
    /// A pull request's base was changed (`edited` with `changes.base`): judge it again.
    PullRequestRetargeted(PullRequestEvent),
    /// A workflow run completed: maybe the evidence.
    WorkflowRunCompleted(WorkflowRunEvent),
    /// Someone asked for the check run again.
    CheckRunRerequested(CheckRunEvent),
    /// A button on the check run.
    CheckRunRequestedAction(CheckRunEvent),
    /// Someone asked for the check suite again.
    CheckSuiteRerequested(CheckSuiteEvent),
    /// A merge queue asks for the checks of a merge group's head.
    MergeGroupChecksRequested(MergeGroupEvent),
    /// A merge group left the queue (merged, dequeued or invalidated): what is pending for it ends.
    MergeGroupDestroyed(MergeGroupEvent),
    /// Commits were pushed (the worker acts on the default branch only).
    Push(PushEvent),
    /// A pull request was merged (`closed` with `merged`): the branch it went into has new code,
    /// and its head's evidence is a full-suite run of it (the codebase's blindness map).
    PullRequestMerged(PullRequestEvent),
}

/// A delivery as the queue sees it: its action and repository (for logs and the
/// store), and the event when it is one the App acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub action: Option<String>,
    pub repo: Option<String>,
    /// `None`: acknowledged and ignored.
    pub event: Option<Event>,
}

/// What the queue records about a job: its pull request and head sha.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub pr: Option<u64>,
    pub head_sha: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("payload is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("not a valid {event}.{action} payload: {error}")]
    Invalid {
        event: String,
        action: String,
        error: serde_json::Error,
    },
}

#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    repository: Option<HeadRepo>,
}

#[derive(Deserialize)]
struct HeadRepo {
    #[serde(default)]
    full_name: Option<String>,
}

/// The kinds of [`Event`], one per accepted `X-GitHub-Event` + `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PullRequest,
    PullRequestEdited,
    WorkflowRunCompleted,
    CheckRunRerequested,
    CheckRunRequestedAction,
    CheckSuiteRerequested,
    MergeGroupChecksRequested,
    MergeGroupDestroyed,
    Push,
    PullRequestClosed,
}

/// The one table of what the App acts on: `X-GitHub-Event`, `action`, kind.
const ACCEPTED: &[(&str, &str, Kind)] = &[
    ("pull_request", "opened", Kind::PullRequest),
    ("pull_request", "synchronize", Kind::PullRequest),
    ("pull_request", "reopened", Kind::PullRequest),
    ("pull_request", "ready_for_review", Kind::PullRequest),
    // Only a retarget (`changes.base`) becomes work; `parse` ignores other edits.
    ("pull_request", "edited", Kind::PullRequestEdited),
    // Only a merge (`merged`) becomes work; `parse` ignores a pull request closed unmerged.
    ("pull_request", "closed", Kind::PullRequestClosed),
    ("workflow_run", "completed", Kind::WorkflowRunCompleted),
    ("check_run", "rerequested", Kind::CheckRunRerequested),
    ("check_run", "requested_action", Kind::CheckRunRequestedAction),
    ("check_suite", "rerequested", Kind::CheckSuiteRerequested),
    ("merge_group", "checks_requested", Kind::MergeGroupChecksRequested),
    ("merge_group", "destroyed", Kind::MergeGroupDestroyed),
    // A push has no `action`: the empty action stands for its absence.
    ("push", "", Kind::Push),
];

fn kind(name: &str, action: Option<&str>) -> Option<Kind> {
    let action = action.unwrap_or("");
    ACCEPTED
        .iter()
        .find(|(n, a, _)| *n == name && *a == action)
        .map(|(_, _, k)| *k)
}

impl Event {
    /// Every `X-GitHub-Event` + `action` pair that can become work (the App manifest must
    /// subscribe to each event named here, and to no other).
    pub fn accepted() -> impl Iterator<Item = (&'static str, &'static str)> {
        ACCEPTED.iter().map(|(n, a, _)| (*n, *a))
    }

    /// Whether a delivery of `name` with `action` becomes work (the App manifest's
    /// events must all have an accepted action).
    pub fn accepts(name: &str, action: Option<&str>) -> bool {
        kind(name, action).is_some()
    }

    /// Parse a delivery: `name` is the `X-GitHub-Event` header, `body` the raw payload.
    /// An event the App does not act on is `event: None`.
    pub fn parse(name: &str, body: &[u8]) -> Result<Delivery, EventError> {
        let head: Head = serde_json::from_slice(body).map_err(EventError::NotJson)?;
        let action = head.action.clone();
        let repo = head.repository.and_then(|r| r.full_name);
        let typed = |make: fn(&[u8]) -> Result<Event, serde_json::Error>| {
            make(body).map_err(|error| EventError::Invalid {
                event: name.to_owned(),
                action: action.clone().unwrap_or_default(),
                error,
            })
        };
        let event = match kind(name, action.as_deref()) {
            Some(Kind::PullRequest) => Some(typed(|b| from(b).map(Event::PullRequest))?),
            Some(Kind::PullRequestEdited) => {
                let e = typed(|b| from(b).map(Event::PullRequestRetargeted))?;
                let retargeted = matches!(&e, Event::PullRequestRetargeted(p) if p.changes.as_ref().is_some_and(|c| c.base.is_some()));
                retargeted.then_some(e)
            }
            Some(Kind::PullRequestClosed) => {
                let e = typed(|b| from(b).map(Event::PullRequestMerged))?;
                let merged = matches!(&e, Event::PullRequestMerged(p) if p.pull_request.merged == Some(true));
                merged.then_some(e)
            }
            Some(Kind::WorkflowRunCompleted) => Some(typed(|b| from(b).map(Event::WorkflowRunCompleted))?),
            Some(Kind::CheckRunRerequested) => Some(typed(|b| from(b).map(Event::CheckRunRerequested))?),
            Some(Kind::CheckRunRequestedAction) => Some(typed(|b| from(b).map(Event::CheckRunRequestedAction))?),
            Some(Kind::CheckSuiteRerequested) => Some(typed(|b| from(b).map(Event::CheckSuiteRerequested))?),
            Some(Kind::MergeGroupChecksRequested) => Some(typed(|b| from(b).map(Event::MergeGroupChecksRequested))?),
            Some(Kind::MergeGroupDestroyed) => Some(typed(|b| from(b).map(Event::MergeGroupDestroyed))?),
            // Only a push to the default branch is work (its ledger may have changed).
            Some(Kind::Push) => {
                let e = typed(|b| from(b).map(Event::Push))?;
                matches!(&e, Event::Push(p) if p.to_default_branch()).then_some(e)
            }
            None => None,
        };
        Ok(Delivery { action, repo, event })
    }

    /// Where the event happened.
    pub fn envelope(&self) -> &Envelope {
        match self {
            Event::PullRequest(e) | Event::PullRequestRetargeted(e) | Event::PullRequestMerged(e) => &e.envelope,
            Event::WorkflowRunCompleted(e) => &e.envelope,
            Event::CheckRunRerequested(e) | Event::CheckRunRequestedAction(e) => &e.envelope,
            Event::CheckSuiteRerequested(e) => &e.envelope,
            Event::MergeGroupChecksRequested(e) | Event::MergeGroupDestroyed(e) => &e.envelope,
            Event::Push(e) => &e.envelope,
        }
    }

    /// The pull request (the first one listed, for runs and suites) and the head sha.
    pub fn facts(&self) -> Facts {
        let first = |prs: &[NumberOnly]| prs.first().and_then(|p| p.number);
        match self {
            Event::PullRequest(e) | Event::PullRequestRetargeted(e) | Event::PullRequestMerged(e) => Facts {
                pr: e.number(),
                head_sha: Some(e.pull_request.head.sha.clone()),
            },
            // The first pull request into this repository: a fork's own are listed too.
            Event::WorkflowRunCompleted(e) => Facts {
                pr: e
                    .workflow_run
                    .pull_requests
                    .iter()
                    .flatten()
                    .find(|p| {
                        let base = p.base.as_ref().and_then(|b| b.repo.as_ref()).and_then(|r| r.id);
                        base.is_some() && base == e.envelope.repository.id
                    })
                    .and_then(|p| p.number),
                head_sha: Some(e.workflow_run.head_sha.clone()),
            },
            Event::CheckRunRerequested(e) | Event::CheckRunRequestedAction(e) => Facts {
                pr: first(&e.check_run.pull_requests),
                head_sha: Some(e.check_run.head_sha.clone()),
            },
            Event::CheckSuiteRerequested(e) => Facts {
                pr: first(&e.check_suite.pull_requests),
                head_sha: Some(e.check_suite.head_sha.clone()),
            },
            // A merge group is no pull request: its head is all the queue knows it by.
            Event::MergeGroupChecksRequested(e) | Event::MergeGroupDestroyed(e) => Facts {
                pr: None,
                head_sha: Some(e.merge_group.head_sha.clone()),
            },
            Event::Push(e) => Facts {
                pr: None,
                head_sha: Some(e.after.clone()),
            },
        }
    }

    /// The button pressed, for `check_run` `requested_action`.
    pub fn requested_action(&self) -> Option<RequestedAction> {
        match self {
            Event::CheckRunRequestedAction(e) => {
                e.requested_action.as_ref().map(|a| RequestedAction::of(&a.identifier))
            }
            _ => None,
        }
    }
}

fn from<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, json: &str) -> Delivery {
        Event::parse(name, json.as_bytes()).unwrap()
    }

    #[test]
    fn the_table_of_accepted_events() {
        let pr = r#"{"action":"A","number":7,"pull_request":{"head":{"sha":"h"},"base":{"sha":"b"}},"repository":{"full_name":"o/r"}}"#;
        for (action, accepted) in [
            ("opened", true),
            ("synchronize", true),
            ("reopened", true),
            ("ready_for_review", true),
            ("closed", false),
            ("edited", false),
        ] {
            let d = parse("pull_request", &pr.replace('A', action));
            assert_eq!(d.event.is_some(), accepted, "{action}");
            assert_eq!(d.repo.as_deref(), Some("o/r"));
        }
        let d = parse("pull_request", &pr.replace('A', "opened"));
        assert_eq!(
            d.event.unwrap().facts(),
            Facts {
                pr: Some(7),
                head_sha: Some("h".into())
            }
        );
        // An edit is work only when it changed the base.
        let retarget = pr.replace('A', "edited").replacen(
            '{',
            r#"{"changes":{"base":{"ref":{"from":"evil"},"sha":{"from":"e"}}},"#,
            1,
        );
        assert!(matches!(
            parse("pull_request", &retarget).event,
            Some(Event::PullRequestRetargeted(_))
        ));
        // A close is work only when it merged.
        let merged = pr.replace('A', "closed").replace(
            r#""base":{"sha":"b"}"#,
            r#""base":{"sha":"b"},"merged":true,"merge_commit_sha":"m""#,
        );
        match parse("pull_request", &merged).event {
            Some(e @ Event::PullRequestMerged(_)) => assert_eq!(e.facts().pr, Some(7)),
            other => panic!("a merge is work: {other:?}"),
        }
        let unmerged = merged.replace(r#""merged":true"#, r#""merged":false"#);
        assert!(parse("pull_request", &unmerged).event.is_none());
        let retitled = pr
            .replace('A', "edited")
            .replacen('{', r#"{"changes":{"title":{"from":"t"}},"#, 1);
        assert!(parse("pull_request", &retitled).event.is_none());
        let cr = r#"{"action":"A","check_run":{"name":"flakegate","head_sha":"h","pull_requests":[{"number":3}]},"requested_action":{"identifier":"rerun"},"repository":{"full_name":"o/r"},"installation":{"id":1}}"#;
        let e = parse("check_run", &cr.replace('A', "requested_action")).event.unwrap();
        assert_eq!(e.requested_action(), Some(RequestedAction::Rerun));
        assert_eq!(e.facts().pr, Some(3));
        assert_eq!(e.envelope().installation, Some(Installation { id: 1 }));
        assert!(parse("check_run", &cr.replace('A', "rerequested")).event.is_some());
        assert!(parse("check_run", &cr.replace('A', "completed")).event.is_none());
        let wr = r#"{"action":"A","workflow_run":{"id":9,"head_sha":"h","path":"w.yml","pull_requests":[]},"repository":{"full_name":"o/r"}}"#;
        assert!(parse("workflow_run", &wr.replace('A', "completed")).event.is_some());
        assert!(parse("workflow_run", &wr.replace('A', "requested")).event.is_none());
        let cs = r#"{"action":"A","check_suite":{"head_sha":"h","pull_requests":[]},"repository":{"full_name":"o/r"}}"#;
        assert!(parse("check_suite", &cs.replace('A', "rerequested")).event.is_some());
        assert!(parse("check_suite", &cs.replace('A', "requested")).event.is_none());
        // A push (no action) is work; which branch it was to the worker decides.
        let push = r#"{"ref":"refs/heads/main","after":"a1","repository":{"full_name":"o/r","default_branch":"main"}}"#;
        let Some(Event::Push(p)) = parse("push", push).event else {
            panic!("push is accepted")
        };
        assert!(p.to_default_branch());
        assert_eq!(Event::Push(p.clone()).facts().head_sha.as_deref(), Some("a1"));
        for other in [
            push.replace("refs/heads/main", "refs/heads/feature"),
            push.replace("refs/heads/main", "refs/tags/main"),
            push.replace(r#""after""#, r#""deleted":true,"after""#),
            push.replace(r#","default_branch":"main""#, ""),
        ] {
            assert!(parse("push", &other).event.is_none(), "{other}");
        }
        assert!(Event::parse("push", br#"{"repository":{"full_name":"o/r"}}"#).is_err());
        assert!(Event::accepts("push", None));
        assert!(!Event::accepts("pull_request", None));
        assert!(parse("ping", r#"{"zen":"z"}"#).event.is_none());
        assert!(parse("pull_request", r#"{"repository":{"full_name":"o/r"}}"#)
            .event
            .is_none());
    }

    #[test]
    fn merge_groups_are_work_on_their_head() {
        let mg = r#"{"action":"A","merge_group":{"head_sha":"h","base_sha":"b","head_ref":"refs/heads/gh-readonly-queue/main/pr-1-b","base_ref":"refs/heads/main"},"reason":"dequeued","repository":{"full_name":"o/r"},"installation":{"id":1}}"#;
        let e = parse("merge_group", &mg.replace('A', "checks_requested"))
            .event
            .unwrap();
        let Event::MergeGroupChecksRequested(g) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (g.merge_group.head_sha.as_str(), g.merge_group.base_sha.as_str()),
            ("h", "b")
        );
        // No pull request: the queue's group is known by its head alone.
        assert_eq!(
            e.facts(),
            Facts {
                pr: None,
                head_sha: Some("h".into())
            }
        );
        let e = parse("merge_group", &mg.replace('A', "destroyed")).event.unwrap();
        assert!(matches!(&e, Event::MergeGroupDestroyed(g) if g.reason.as_deref() == Some("dequeued")));
        assert!(parse("merge_group", &mg.replace('A', "other")).event.is_none());
        // A group without its base cannot be judged: an error, not a silent pass.
        let e = Event::parse(
            "merge_group",
            br#"{"action":"checks_requested","merge_group":{"head_sha":"h"},"repository":{"full_name":"o/r"}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("merge_group.checks_requested"), "{e}");
        // A workflow run says what triggered it.
        let wr = r#"{"action":"completed","workflow_run":{"id":9,"head_sha":"h","event":"merge_group"},"repository":{"full_name":"o/r"}}"#;
        let Some(Event::WorkflowRunCompleted(w)) = parse("workflow_run", wr).event else {
            panic!("workflow_run")
        };
        assert_eq!(w.workflow_run.event.as_deref(), Some("merge_group"));
    }

    #[test]
    fn malformed_accepted_events_and_non_json_are_errors() {
        assert!(matches!(Event::parse("ping", b"nope"), Err(EventError::NotJson(_))));
        let e = Event::parse(
            "workflow_run",
            br#"{"action":"completed","repository":{"full_name":"o/r"}}"#,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("not a valid workflow_run.completed payload"),
            "{e}"
        );
    }

    #[test]
    fn button_identifiers_round_trip() {
        for a in [RequestedAction::Rerun, RequestedAction::Reevaluate] {
            assert_eq!(RequestedAction::of(a.identifier()), a);
            assert!(a.identifier().chars().count() <= crate::github::types::ACTION_IDENTIFIER_LIMIT);
        }
    }
}
