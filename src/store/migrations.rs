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
    // 11: the history names each test and sha once; its counts refer to them by number.
    HISTORY_IDS_SQLITE,
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
    // 11
    HISTORY_IDS_POSTGRES,
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

/// The history keyed by numbers: each test node id and each sha is written once per repository
/// (`history_tests`, `history_shas`) and the counts refer to them, so a row is a few integers
/// instead of a node id and a sha repeated in the row and in every index
/// (docs/performance.md, "The flake history at scale"). The passing streak becomes a column of
/// the test, and so do its running totals (`passes`, `failures` and `first_day` over the days it
/// has counts for: a read sums no days, it takes out only the days compaction has not dropped
/// yet). A test's and a sha's `last_at` is the latest time any of its counts was observed,
/// so compaction drops them with the counts that name them (nothing older than the window
/// refers to them), and a run recording one updates it first — holding the row against a
/// concurrent compaction. Every count is carried over.
macro_rules! history_ids {
    ($id:literal, $day_key:literal, $sha_key:literal, $clustered:literal) => {
        concat!(
            "CREATE TABLE history_tests (id ", $id, ", repo_id BIGINT NOT NULL, test TEXT NOT NULL,
    streak BIGINT NOT NULL DEFAULT 0, last_at BIGINT NOT NULL, passes BIGINT NOT NULL DEFAULT 0,
    failures BIGINT NOT NULL DEFAULT 0, first_day BIGINT, UNIQUE (repo_id, test));
CREATE TABLE history_shas (id ", $id, ", repo_id BIGINT NOT NULL, sha TEXT NOT NULL, last_at BIGINT NOT NULL,
    UNIQUE (repo_id, sha));
INSERT INTO history_tests (repo_id, test, last_at) SELECT repo_id, test, MAX(at) FROM (SELECT repo_id, test,
    (day + 1) * 86400000 - 1 AS at FROM history_days UNION ALL SELECT repo_id, test, last_at FROM history_sha
    UNION ALL SELECT repo_id, test, at FROM history_failures UNION ALL SELECT repo_id, test, 0 FROM history_streak) x
    GROUP BY repo_id, test;
UPDATE history_tests SET streak = COALESCE((SELECT s.passes FROM history_streak s WHERE s.repo_id =
    history_tests.repo_id AND s.test = history_tests.test), 0), passes = COALESCE((SELECT SUM(d.passes) FROM
    history_days d WHERE d.repo_id = history_tests.repo_id AND d.test = history_tests.test), 0), failures =
    COALESCE((SELECT SUM(d.failures) FROM history_days d WHERE d.repo_id = history_tests.repo_id AND d.test =
    history_tests.test), 0), first_day = (SELECT MIN(d.day) FROM history_days d WHERE d.repo_id =
    history_tests.repo_id AND d.test = history_tests.test);
INSERT INTO history_shas (repo_id, sha, last_at) SELECT repo_id, sha, MAX(at) FROM (SELECT repo_id, sha,
    last_at AS at FROM history_sha UNION ALL SELECT repo_id, sha, at FROM history_failures) x GROUP BY repo_id, sha;
CREATE TABLE history_day_counts (test_id BIGINT NOT NULL, day BIGINT NOT NULL, passes BIGINT NOT NULL,
    failures BIGINT NOT NULL, PRIMARY KEY (test_id, day)", $day_key, ")", $clustered, ";
INSERT INTO history_day_counts (test_id, day, passes, failures) SELECT t.id, d.day, d.passes, d.failures
    FROM history_days d JOIN history_tests t ON t.repo_id = d.repo_id AND t.test = d.test;
CREATE TABLE history_sha_counts (test_id BIGINT NOT NULL, sha_id BIGINT NOT NULL, passes BIGINT NOT NULL,
    failures BIGINT NOT NULL, last_at BIGINT NOT NULL, PRIMARY KEY (test_id, sha_id)", $sha_key, ")", $clustered, ";
INSERT INTO history_sha_counts (test_id, sha_id, passes, failures, last_at) SELECT t.id, h.id, s.passes,
    s.failures, s.last_at FROM history_sha s JOIN history_tests t ON t.repo_id = s.repo_id AND t.test = s.test
    JOIN history_shas h ON h.repo_id = s.repo_id AND h.sha = s.sha;
CREATE TABLE history_failed (id ", $id, ", test_id BIGINT NOT NULL, sha_id BIGINT NOT NULL,
    kind TEXT NOT NULL, pr BIGINT, run_id BIGINT, attempt BIGINT, failures BIGINT NOT NULL, run_key TEXT NOT NULL,
    at BIGINT NOT NULL);
INSERT INTO history_failed (test_id, sha_id, kind, pr, run_id, attempt, failures, run_key, at) SELECT t.id,
    h.id, f.kind, f.pr, f.run_id, f.attempt, f.failures, f.run_key, f.at FROM history_failures f
    JOIN history_tests t ON t.repo_id = f.repo_id AND t.test = f.test JOIN history_shas h ON h.repo_id = f.repo_id
    AND h.sha = f.sha ORDER BY f.id;
DROP TABLE history_days;
DROP TABLE history_sha;
DROP TABLE history_failures;
DROP TABLE history_streak;
CREATE INDEX history_day_counts_day ON history_day_counts (day);
CREATE INDEX history_sha_counts_last ON history_sha_counts (last_at);
CREATE INDEX history_failed_test ON history_failed (test_id, at);
CREATE INDEX history_failed_at ON history_failed (at);
CREATE INDEX history_tests_last ON history_tests (last_at);
CREATE INDEX history_shas_last ON history_shas (last_at);
"
        )
    };
}

/// SQLite keeps the counts in their primary key's order (`WITHOUT ROWID`): one b-tree per
/// table, a test's rows side by side.
const HISTORY_IDS_SQLITE: &str = history_ids!("INTEGER PRIMARY KEY AUTOINCREMENT", "", "", " WITHOUT ROWID");

/// PostgreSQL keeps rows in the order they came (by day, not by test): the primary keys carry
/// the counts (`INCLUDE`), so a read is an index-only scan rather than a page per row.
const HISTORY_IDS_POSTGRES: &str = history_ids!(
    "BIGSERIAL PRIMARY KEY",
    " INCLUDE (passes, failures)",
    " INCLUDE (passes, failures, last_at)",
    ""
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
