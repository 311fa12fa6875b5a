//! Schema migrations, applied in order at open and recorded in `schema_migrations`.
//! Never edit a released migration; append a new one.

/// SQLite: times are unix milliseconds.
pub const SQLITE: &[&str] = &[
    r#"
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    action TEXT,
    repo TEXT,
    pr INTEGER,
    head_sha TEXT,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_until INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX jobs_due ON jobs (state, next_attempt_at);
CREATE INDEX jobs_pr ON jobs (repo, pr);
CREATE TABLE pr_heads (repo TEXT NOT NULL, pr INTEGER NOT NULL, head_sha TEXT NOT NULL, PRIMARY KEY (repo, pr));
CREATE TABLE check_runs (
    repo TEXT NOT NULL, head_sha TEXT NOT NULL, check_run_id INTEGER NOT NULL, PRIMARY KEY (repo, head_sha)
);
CREATE TABLE comments (
    repo TEXT NOT NULL, pr INTEGER NOT NULL, comment_id INTEGER NOT NULL, body_sha256 TEXT NOT NULL,
    PRIMARY KEY (repo, pr)
);
"#,
    // 2: re-evaluation looks up the latest delivery of an event for a head.
    HEAD_INDEX,
    // 3: GitHub appends annotations on every check-run update; what was sent is remembered.
    PUBLISHED_ANNOTATIONS,
    // 4: every pull request sharing a head has its own verdict; the check run shows the worst.
    PR_VERDICTS,
    // 5: the run of the evidence workflow last judged for a head (re-run / re-evaluate act on it).
    EVIDENCE_RUNS,
    // 6: what each check run was last sent, so a job re-run after its instance died sends nothing twice.
    PUBLICATIONS,
    // 7: the expired-freezes issue per repository, and short-lived named locks.
    EXPIRY_ISSUES,
    // 8: the flake history (per repository id: per-day counts, per-sha counts, failures in detail).
    HISTORY_SQLITE,
    // 9: an evidence run that was cancelled, timed out… is remembered as such (re-evaluation too).
    EVIDENCE_RUN_CUT_SHORT,
    // 10: which repository id the state kept under a repository's name belongs to.
    REPOSITORY_IDS,
];

/// The latest delivery of an event for a head (`Store::latest_delivery`); same on both backends.
const HEAD_INDEX: &str = "CREATE INDEX jobs_head ON jobs (repo, head_sha, event, action, id)";

/// Digests of the annotations already sent to a check run (`Store::published_annotations`).
const PUBLISHED_ANNOTATIONS: &str = "CREATE TABLE published_annotations (repo TEXT NOT NULL, head_sha TEXT NOT NULL, \
                                     check_run_id BIGINT NOT NULL, digests TEXT NOT NULL, PRIMARY KEY (repo, head_sha, \
                                     check_run_id))";

/// One verdict per pull request on a head (`Store::pr_verdicts`).
const PR_VERDICTS: &str = "CREATE TABLE pr_verdicts (repo TEXT NOT NULL, head_sha TEXT NOT NULL, pr BIGINT NOT NULL, \
                           base_sha TEXT NOT NULL, base_ref TEXT NOT NULL, verdict TEXT NOT NULL, conclusion TEXT NOT \
                           NULL, title TEXT NOT NULL, PRIMARY KEY (repo, head_sha, pr))";

/// The evidence workflow's run per head (`Store::evidence_run`).
const EVIDENCE_RUNS: &str =
    "CREATE TABLE evidence_runs (repo TEXT NOT NULL, head_sha TEXT NOT NULL, run_id BIGINT NOT \
                             NULL, workflow_path TEXT NOT NULL, PRIMARY KEY (repo, head_sha))";

/// The digest of what was last sent to each published subject (`Store::publication`).
const PUBLICATIONS: &str = "CREATE TABLE publications (repo TEXT NOT NULL, subject TEXT NOT NULL, digest TEXT NOT \
                            NULL, PRIMARY KEY (repo, subject))";
/// The expired-freezes issue of each repository (`Store::expiry_issue`; issue number 0: none open) and
/// named locks with an expiry (`Store::try_lock`). Two statements, the same on both backends.
const EXPIRY_ISSUES: &str = "CREATE TABLE expiry_issues (repo TEXT PRIMARY KEY, issue_number BIGINT NOT NULL, \
                             list_sha256 TEXT NOT NULL); CREATE TABLE named_locks (name TEXT PRIMARY KEY, owner \
                             TEXT NOT NULL, until_ms BIGINT NOT NULL)";

/// PostgreSQL: the same tables and types as SQLite, so both decode into the same rows.
pub const POSTGRES: &[&str] = &[
    r#"
CREATE TABLE jobs (
    id BIGSERIAL PRIMARY KEY,
    delivery_id TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    action TEXT,
    repo TEXT,
    pr BIGINT,
    head_sha TEXT,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX jobs_due ON jobs (state, next_attempt_at);
CREATE INDEX jobs_pr ON jobs (repo, pr);
CREATE TABLE pr_heads (repo TEXT NOT NULL, pr BIGINT NOT NULL, head_sha TEXT NOT NULL, PRIMARY KEY (repo, pr));
CREATE TABLE check_runs (
    repo TEXT NOT NULL, head_sha TEXT NOT NULL, check_run_id BIGINT NOT NULL, PRIMARY KEY (repo, head_sha)
);
CREATE TABLE comments (
    repo TEXT NOT NULL, pr BIGINT NOT NULL, comment_id BIGINT NOT NULL, body_sha256 TEXT NOT NULL,
    PRIMARY KEY (repo, pr)
);
"#,
    // 2
    HEAD_INDEX,
    // 3
    PUBLISHED_ANNOTATIONS,
    // 4
    PR_VERDICTS,
    // 5
    EVIDENCE_RUNS,
    // 6
    PUBLICATIONS,
    // 7
    EXPIRY_ISSUES,
    // 8
    HISTORY_POSTGRES,
    // 9
    EVIDENCE_RUN_CUT_SHORT,
    // 10
    REPOSITORY_IDS,
];

/// The repository id whose state is kept under each repository name (`Store::claim_repository_name`).
const REPOSITORY_IDS: &str = "CREATE TABLE repository_ids (repo TEXT PRIMARY KEY, repo_id BIGINT NOT NULL)";

/// How the evidence run ended when it did not complete (`cancelled`, `timed_out`…; NULL for a
/// run that completed): a re-evaluation of its head judges it as the first judgement did.
const EVIDENCE_RUN_CUT_SHORT: &str = "ALTER TABLE evidence_runs ADD COLUMN cut_short TEXT";

/// The flake history, keyed by repository id (a rename keeps it; a new repository under an old
/// name does not inherit it). Failures are rare, so they are kept in detail (`history_failures`,
/// the audit trail); passes only as counts: per test and day (`history_days`, the window's
/// totals), per test and sha where the test was probed or has failed (`history_sha`, the "same
/// code" check), and the passing streak since the last failure (`history_streak`, recovery).
/// `history_repositories` names each repository id's history (the command line's file checks it).
macro_rules! history_tables {
    () => {
        "
CREATE TABLE history_repositories (repo_id BIGINT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE history_recorded (repo_id BIGINT NOT NULL, run_key TEXT NOT NULL, run_id BIGINT, attempt BIGINT,
    observations TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (repo_id, run_key));
CREATE TABLE history_days (repo_id BIGINT NOT NULL, test TEXT NOT NULL, day BIGINT NOT NULL,
    passes BIGINT NOT NULL, failures BIGINT NOT NULL, PRIMARY KEY (repo_id, test, day));
CREATE INDEX history_days_day ON history_days (day);
CREATE TABLE history_sha (repo_id BIGINT NOT NULL, test TEXT NOT NULL, sha TEXT NOT NULL,
    passes BIGINT NOT NULL, failures BIGINT NOT NULL, last_at BIGINT NOT NULL, PRIMARY KEY (repo_id, test, sha));
CREATE INDEX history_sha_last ON history_sha (last_at);
CREATE TABLE history_streak (repo_id BIGINT NOT NULL, test TEXT NOT NULL, passes BIGINT NOT NULL,
    PRIMARY KEY (repo_id, test));
CREATE INDEX history_failures_test ON history_failures (repo_id, test, at);
CREATE INDEX history_failures_at ON history_failures (at);
"
    };
}

const HISTORY_SQLITE: &str = concat!(
    "CREATE TABLE history_failures (id INTEGER PRIMARY KEY AUTOINCREMENT, repo_id BIGINT NOT NULL, test TEXT NOT NULL,
    sha TEXT NOT NULL, kind TEXT NOT NULL, pr BIGINT, run_id BIGINT, attempt BIGINT, failures BIGINT NOT NULL,
    run_key TEXT NOT NULL, at BIGINT NOT NULL);",
    history_tables!()
);

const HISTORY_POSTGRES: &str = concat!(
    "CREATE TABLE history_failures (id BIGSERIAL PRIMARY KEY, repo_id BIGINT NOT NULL, test TEXT NOT NULL,
    sha TEXT NOT NULL, kind TEXT NOT NULL, pr BIGINT, run_id BIGINT, attempt BIGINT, failures BIGINT NOT NULL,
    run_key TEXT NOT NULL, at BIGINT NOT NULL);",
    history_tables!()
);

/// A database migrated by a newer flakegate (a history file from a later version) is refused,
/// not read with a schema this build does not know.
pub fn check_version(applied: i64, known: usize) -> anyhow::Result<()> {
    if applied > known as i64 {
        anyhow::bail!(
            "the database has schema version {applied}, newer than this flakegate knows ({known}): use the flakegate that wrote it, or a newer one"
        );
    }
    Ok(())
}

pub const CREATE_VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)";
