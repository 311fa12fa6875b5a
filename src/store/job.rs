//! The queue's records — jobs, deliveries, retry policy, comment state — and the SQL and
//! row mapping both backends share.

use chrono::{DateTime, TimeZone as _, Utc};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(pub i64);

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for `next_attempt_at`.
    Queued,
    /// Leased by a worker until `lease_until`.
    Running,
    Done,
    /// Gave up after the last attempt.
    Dead,
    /// A newer head commit of the same pull request made this job pointless.
    Superseded,
}

impl JobState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Dead => "dead",
            JobState::Superseded => "superseded",
        }
    }

    pub(super) fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "dead" => JobState::Dead,
            "superseded" => JobState::Superseded,
            other => anyhow::bail!("unknown job state {other:?} in the store"),
        })
    }
}

/// A webhook delivery worth acting on, as the server records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    /// `X-GitHub-Delivery`; a redelivery carries the same id.
    pub delivery_id: String,
    /// `X-GitHub-Event`.
    pub event: String,
    pub action: Option<String>,
    /// `owner/name`.
    pub repo: Option<String>,
    pub pr: Option<u64>,
    pub head_sha: Option<String>,
    /// The raw JSON body.
    pub payload: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Inserted(JobId),
    /// This delivery id was recorded before; no second job.
    Duplicate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: JobId,
    pub delivery_id: String,
    pub event: String,
    pub action: Option<String>,
    pub repo: Option<String>,
    pub pr: Option<u64>,
    pub head_sha: Option<String>,
    pub payload: String,
    pub state: JobState,
    /// Failed attempts so far, counting leases that expired (a worker that died mid-job).
    pub attempts: u32,
    pub next_attempt_at: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub last_error: Option<String>,
    /// When the delivery was recorded (an evidence deadline: when it comes due).
    pub created_at: DateTime<Utc>,
}

/// What `fail` did with the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    Retry {
        at: DateTime<Utc>,
    },
    /// Out of attempts: the job is dead and will not be claimed again.
    Dead,
    /// The worker's lease had expired and the job was claimed again: the failure is not
    /// counted; the worker holding the lease now decides the outcome.
    LeaseLost,
}

/// Attempts and exponential backoff: `base * 2^(attempts-1)`, at most `cap`, of which up to
/// `jitter_percent` is taken off (so jobs that failed together do not retry together). A wait
/// GitHub asked for (`Retry-After`, a rate-limit reset) replaces the backoff exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base: Duration,
    pub cap: Duration,
    /// 0 (exact doubling) to 100.
    pub jitter_percent: u32,
}

impl Default for RetryPolicy {
    /// About 1 s, doubling to 8 s: a check is queued or judged within seconds of GitHub
    /// recovering; 50 attempts ride out 3 to 6 minutes of failures before INCONCLUSIVE.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 50,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(8),
            jitter_percent: 50,
        }
    }
}

impl RetryPolicy {
    /// The delay before the next try after `attempts` failures (attempts >= 1), without jitter.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let exp = attempts.saturating_sub(1).min(30);
        self.base.saturating_mul(1u32 << exp).min(self.cap)
    }

    /// [`backoff`](Self::backoff) less its jitter: between `1 - jitter_percent/100` and 1 times
    /// it, chosen by a hash of `job` and `attempts` (deterministic, so a test's clock can
    /// step to it; different jobs spread apart).
    pub fn backoff_for(&self, job: JobId, attempts: u32) -> Duration {
        let full = self.backoff(attempts);
        let jitter = u128::from(self.jitter_percent.min(100));
        // splitmix64: a well-mixed fraction in [0, 1) as u / 2^32.
        let mut z = (job.0 as u64) ^ (u64::from(attempts) << 40) ^ 0x9e37_79b9_7f4a_7c15;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let u = u128::from((z ^ (z >> 31)) >> 32);
        let full_ns = full.as_nanos();
        let off = (full_ns * jitter / 100 * u) >> 32;
        Duration::from_nanos(u64::try_from(full_ns - off).unwrap_or(u64::MAX))
    }
}

/// The sticky pull-request comment: its id and a hash of the body last written, so an
/// unchanged comment is not edited again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentState {
    pub comment_id: u64,
    pub body_sha256: String,
}

/// A repository's expired-freezes issue: its number (`None`: none is open, as far as the App
/// knows) and a hash of the list it last published, so an unchanged list is not edited again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiryIssue {
    pub issue_number: Option<u64>,
    pub list_sha256: String,
}

/// One pull request's verdict on a head. Several open pull requests can share a head (and
/// its one check run) with different bases; the check run shows the worst of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrVerdict {
    pub pr: u64,
    pub base_sha: String,
    /// The base branch, as GitHub names it.
    pub base_ref: String,
    /// `PASS` … `FAIL`, or `QUEUED` while not judged yet.
    pub verdict: String,
    /// The check-run conclusion this verdict gives under its base's config
    /// (`success`, `neutral`, `failure`).
    pub conclusion: String,
    /// The check-run title it was published with.
    pub title: String,
}

/// The evidence workflow's run last judged for a head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRun {
    pub run_id: u64,
    pub workflow_path: String,
    /// How the run ended when it did not complete (`cancelled`, `timed_out`…): its evidence
    /// may be partial and is never judged.
    pub cut_short: Option<String>,
}

pub(crate) fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_millis(ms: i64) -> anyhow::Result<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .ok_or_else(|| anyhow::anyhow!("timestamp {ms} out of range in the store"))
}

pub(crate) fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Columns of `jobs` in the order `JobRow` reads them.
pub(crate) const JOB_COLUMNS: &str = "id, delivery_id, event, action, repo, pr, head_sha, payload, state, attempts, \
                                      next_attempt_at, lease_owner, last_error, created_at";

/// A `jobs` row as both backends decode it.
pub(crate) type JobRow = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    String,
    String,
    i64,
    i64,
    Option<String>,
    Option<String>,
    i64,
);

pub(crate) fn job_from_row(r: JobRow) -> anyhow::Result<Job> {
    let (
        id,
        delivery_id,
        event,
        action,
        repo,
        pr,
        head_sha,
        payload,
        state,
        attempts,
        next,
        lease_owner,
        last_error,
        created_at,
    ) = r;
    Ok(Job {
        id: JobId(id),
        delivery_id,
        event,
        action,
        repo,
        pr: pr.map(|n| n as u64),
        head_sha,
        payload,
        state: JobState::parse(&state)?,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        next_attempt_at: from_millis(next)?,
        lease_owner,
        last_error,
        created_at: from_millis(created_at)?,
    })
}

/// SQL shared by both backends (sqlx binds `$n` on SQLite too).
pub(crate) mod sql {
    pub const RECORD: &str = "INSERT INTO jobs (delivery_id, event, action, repo, pr, head_sha, payload, state, \
                              attempts, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', 0, \
                              $8, $8) ON CONFLICT (delivery_id) DO NOTHING RETURNING id";
    /// Job updates by a worker hold only while it holds the lease (`lease_owner = $2`).
    pub const COMPLETE: &str = "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_until = NULL WHERE id = $1 \
                                AND state = 'running' AND lease_owner = $2";
    pub const RELEASE: &str = "UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_until = NULL WHERE id = $1 \
                               AND state = 'running' AND lease_owner = $2";
    pub const BUMP_ATTEMPTS: &str = "UPDATE jobs SET attempts = attempts + 1, last_error = $3 WHERE id = $1 AND state \
                                     = 'running' AND lease_owner = $2 RETURNING attempts";
    /// Served by the `jobs_head` index.
    pub const LATEST_DELIVERY: &str = "SELECT {columns} FROM jobs WHERE repo = $1 AND head_sha = $2 AND event = $3 \
                                       AND action = $4 ORDER BY id DESC LIMIT 1";
    pub const SET_RETRY: &str = "UPDATE jobs SET state = $2, next_attempt_at = $3, lease_owner = NULL, lease_until = \
                                 NULL WHERE id = $1";
    pub const SET_HEAD: &str = "INSERT INTO pr_heads (repo, pr, head_sha) VALUES ($1, $2, $3) ON CONFLICT (repo, pr) \
                                DO UPDATE SET head_sha = excluded.head_sha";
    pub const SUPERSEDE: &str = "UPDATE jobs SET state = 'superseded' WHERE repo = $1 AND pr = $2 AND state = \
                                 'queued' AND head_sha IS NOT NULL AND head_sha <> $3";
    pub const CURRENT_HEAD: &str = "SELECT head_sha FROM pr_heads WHERE repo = $1 AND pr = $2";
    pub const CHECK_RUN: &str = "SELECT check_run_id FROM check_runs WHERE repo = $1 AND head_sha = $2";
    pub const SET_CHECK_RUN: &str = "INSERT INTO check_runs (repo, head_sha, check_run_id) VALUES ($1, $2, $3) ON \
                                     CONFLICT (repo, head_sha) DO UPDATE SET check_run_id = excluded.check_run_id";
    pub const PUBLISHED: &str =
        "SELECT digests FROM published_annotations WHERE repo = $1 AND head_sha = $2 AND check_run_id = $3";
    pub const SET_PUBLISHED: &str = "INSERT INTO published_annotations (repo, head_sha, check_run_id, digests) VALUES \
                                     ($1, $2, $3, $4) ON CONFLICT (repo, head_sha, check_run_id) DO UPDATE SET digests \
                                     = excluded.digests";
    pub const EXPIRY_ISSUE: &str = "SELECT issue_number, list_sha256 FROM expiry_issues WHERE repo = $1";
    pub const SET_EXPIRY_ISSUE: &str = "INSERT INTO expiry_issues (repo, issue_number, list_sha256) VALUES ($1, $2, \
                                        $3) ON CONFLICT (repo) DO UPDATE SET issue_number = excluded.issue_number, \
                                        list_sha256 = excluded.list_sha256";
    /// Taken when free, expired, or already `owner`'s; no row changes otherwise.
    pub const TRY_LOCK: &str = "INSERT INTO named_locks (name, owner, until_ms) VALUES ($1, $2, $3) ON CONFLICT \
                                (name) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms WHERE \
                                named_locks.until_ms <= $4 OR named_locks.owner = excluded.owner";
    pub const UNLOCK: &str = "DELETE FROM named_locks WHERE name = $1 AND owner = $2";
    pub const COMMENT: &str = "SELECT comment_id, body_sha256 FROM comments WHERE repo = $1 AND pr = $2";
    pub const SET_COMMENT: &str = "INSERT INTO comments (repo, pr, comment_id, body_sha256) VALUES ($1, $2, $3, $4) \
                                   ON CONFLICT (repo, pr) DO UPDATE SET comment_id = excluded.comment_id, body_sha256 \
                                   = excluded.body_sha256";
    pub const PR_VERDICTS: &str = "SELECT pr, base_sha, base_ref, verdict, conclusion, title FROM pr_verdicts WHERE \
                                   repo = $1 AND head_sha = $2 ORDER BY pr";
    pub const SET_PR_VERDICT: &str = "INSERT INTO pr_verdicts (repo, head_sha, pr, base_sha, base_ref, verdict, \
                                      conclusion, title) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (repo, \
                                      head_sha, pr) DO UPDATE SET base_sha = excluded.base_sha, base_ref = \
                                      excluded.base_ref, verdict = excluded.verdict, conclusion = \
                                      excluded.conclusion, title = excluded.title";
    pub const REMOVE_PR_VERDICT: &str = "DELETE FROM pr_verdicts WHERE repo = $1 AND head_sha = $2 AND pr = $3";
    pub const REPOSITORY_ID: &str = "SELECT repo_id FROM repository_ids WHERE repo = $1";
    pub const SET_REPOSITORY_ID: &str = "INSERT INTO repository_ids (repo, repo_id) VALUES ($1, $2) ON CONFLICT \
                                         (repo) DO UPDATE SET repo_id = excluded.repo_id";
    /// What is kept under a repository's name about its check runs, comments and pull requests.
    pub const FORGET_REPOSITORY: [&str; 8] = [
        "DELETE FROM check_runs WHERE repo = $1",
        "DELETE FROM comments WHERE repo = $1",
        "DELETE FROM published_annotations WHERE repo = $1",
        "DELETE FROM pr_verdicts WHERE repo = $1",
        "DELETE FROM evidence_runs WHERE repo = $1",
        "DELETE FROM publications WHERE repo = $1",
        "DELETE FROM expiry_issues WHERE repo = $1",
        "DELETE FROM pr_heads WHERE repo = $1",
    ];
    pub const EVIDENCE_RUN: &str =
        "SELECT run_id, workflow_path, cut_short FROM evidence_runs WHERE repo = $1 AND head_sha = $2";
    pub const SET_EVIDENCE_RUN: &str = "INSERT INTO evidence_runs (repo, head_sha, run_id, workflow_path, cut_short) \
                                        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (repo, head_sha) DO UPDATE SET run_id = \
                                        excluded.run_id, workflow_path = excluded.workflow_path, cut_short = \
                                        excluded.cut_short";
    /// Jobs not done by state, for `/metrics`: `queued` (with how many of them failed an attempt
    /// before) and the rest. Done and superseded jobs, nearly all of the table, are not
    /// visited: the `jobs_due` index starts with the state.
    pub const JOB_GAUGES: &str = "SELECT state, COUNT(*), COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), \
                                  0) FROM jobs WHERE state IN ('queued', 'running', 'dead') GROUP BY state";
    /// Finished jobs (done, superseded, dead) recorded before `$1`: their delivery ids are
    /// forgotten with them, so a redelivery after that is a new job.
    pub const TRIM_FINISHED: &str =
        "DELETE FROM jobs WHERE state IN ('done', 'superseded', 'dead') AND created_at < $1";
    /// Every live lease runs out now (`$1`): the next claim takes each such job over, counting
    /// the attempt as for any expired lease.
    pub const EXPIRE_LEASES: &str = "UPDATE jobs SET lease_until = $1 WHERE state = 'running' AND (lease_until IS \
                                     NULL OR lease_until > $1)";
    /// Extends the lease of a job `$2` still holds.
    pub const RENEW: &str = "UPDATE jobs SET lease_until = $3 WHERE id = $1 AND state = 'running' AND lease_owner = $2";
    /// The due job, or one whose lease expired — but never one whose repository and head sha
    /// another job holds under a live lease: two jobs of one head (a `pull_request` and its
    /// `workflow_run`, say) never run at once on two instances, so they cannot race to create
    /// the head's check run or comment. `{lock}` is `FOR UPDATE SKIP LOCKED` on PostgreSQL,
    /// where `PgStore::claim` also holds an advisory lock so claims are serialised; SQLite runs
    /// the statement under its single writer lock.
    pub const CLAIM: &str = "UPDATE jobs SET state = 'running', lease_owner = $1, lease_until = $2, attempts = \
                             attempts + CASE WHEN state = 'running' THEN 1 ELSE 0 END WHERE id = (SELECT j.id FROM \
                             jobs j WHERE ((j.state = 'queued' AND j.next_attempt_at <= $3) OR (j.state = 'running' \
                             AND j.lease_until <= $3)) AND NOT EXISTS (SELECT 1 FROM jobs o WHERE o.repo = j.repo \
                             AND o.head_sha = j.head_sha AND o.state = 'running' AND o.lease_until > $3 AND o.id <> \
                             j.id) ORDER BY j.next_attempt_at, j.id LIMIT 1 {lock}) RETURNING ";
    /// What was last published to a subject (a check run, a comment) of a repository.
    pub const PUBLICATION: &str = "SELECT digest FROM publications WHERE repo = $1 AND subject = $2";
    pub const SET_PUBLICATION: &str = "INSERT INTO publications (repo, subject, digest) VALUES ($1, $2, $3) ON \
                                       CONFLICT (repo, subject) DO UPDATE SET digest = excluded.digest";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_less_at_most_its_jitter() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff(1), Duration::from_secs(1));
        assert_eq!(p.backoff(3), Duration::from_secs(4));
        assert_eq!(p.backoff(10), Duration::from_secs(8));
        let mut seen = std::collections::BTreeSet::new();
        for job in 0..200 {
            for attempts in 1..6 {
                let full = p.backoff(attempts);
                let d = p.backoff_for(JobId(job), attempts);
                assert!(d <= full && d >= full / 2, "{d:?} of {full:?}");
                assert_eq!(d, p.backoff_for(JobId(job), attempts), "deterministic");
                if attempts == 1 {
                    seen.insert(d.as_millis() / 50);
                }
            }
        }
        // Jobs failing together spread over the window (ten 50 ms buckets between 0.5 s and 1 s).
        assert!(seen.len() >= 9, "{seen:?}");
        let exact = RetryPolicy { jitter_percent: 0, ..p };
        assert_eq!(exact.backoff_for(JobId(7), 2), Duration::from_secs(2));
    }
}
