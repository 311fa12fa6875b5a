//! The expired-freezes issue end to end: signed `push` webhooks and the periodic sweep through
//! the real router, store and worker, against the fake GitHub (issues, installations and
//! repositories served from GitHub's own example answers, every request body checked against
//! the OpenAPI subset). The clock is the harness's: 2026-11-20.

use std::collections::BTreeMap;

use flakegate::store::{JobState, RetryPolicy};
use flakegate::worker::{SWEEP_EVENT, SWEEP_REPO_EVENT};
use serde_json::{json, Value};
use wiremock::{Request, ResponseTemplate};

use crate::support::app_harness::{push_event as push, App, CONFIG_PATH, INSTALLATION, LEDGER_PATH, NAME, OWNER};
use crate::support::fake_github::{example, FakeGithub, APP_ID};
use crate::support::fake_issues::{FakeIssues, ISSUE, ISSUES};
use crate::support::fake_repo::FakeRepo;

const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);
const MARKER: &str = "<!-- flakegate:expired-freezes -->";

// ---- inputs -------------------------------------------------------------------------------------

fn entry(test: &str, owner: &str, expires: &str) -> String {
    format!(
        r#"{{"test": "{test}", "reason": "timing", "owner": "{owner}", "frozen_at": "2026-10-01", "expires": "{expires}"}}"#
    )
}

fn ledger(entries: &[String]) -> Vec<u8> {
    format!("{{\"frozen\": [\n  {}\n]}}\n", entries.join(",\n  ")).into_bytes()
}

/// Two expired entries (one owned through the config's owner map, one by a plain name), one
/// expiring within the week, and one far off.
fn expired_ledger() -> Vec<u8> {
    ledger(&[
        entry(
            "tests/test_billing.py::test_retry_backoff",
            "billing-oncall",
            "2026-11-10",
        ),
        entry("tests/test_cart.py::TestCart::test_total", "@alice", "2026-11-19"),
        entry("tests/test_cart.py::test_discount", "Jane Doe", "2026-11-24"),
        entry("tests/test_shipping.py::test_eta", "@alice", "2027-01-31"),
    ])
}

/// The issue alone: the ledger's upkeep beside it has tests of its own (`ledger_upkeep.rs`).
const CONFIG: &str = "owners:\n  billing-oncall: '@octo-org/billing'\nledger_maintenance: off\n";

async fn app_with_repo() -> (App, FakeRepo, FakeIssues) {
    let app = App::start_with(RetryPolicy::default(), |c| c.sweep_interval = Some(DAY)).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let issues = FakeIssues::mount(&app.fake, OWNER, NAME).await;
    repo.put_file("main", CONFIG_PATH, CONFIG.as_bytes());
    (app, repo, issues)
}

// ---- tests --------------------------------------------------------------------------------------

#[tokio::test]
async fn a_push_to_the_default_branch_keeps_one_issue_edited_in_place_and_closes_it() {
    let (app, repo, issues) = app_with_repo().await;
    // A person's issue quoting the marker is not ours to edit.
    issues.add_user_issue(&format!("how do I get rid of {MARKER}?"));
    repo.put_file("main", LEDGER_PATH, &expired_ledger());

    app.deliver("push", &push("refs/heads/main", &"a".repeat(40))).await;
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1);
    let ours = issues.ours();
    assert_eq!(ours.len(), 1, "one issue opened");
    let issue = &ours[0];
    assert_eq!(issue.state, "open");
    assert_eq!(issue.title, "flakegate: frozen tests past or near their expiry");
    assert!(issue.body.starts_with(MARKER));
    // Each handle mentioned once; the plain name never, the far-off freeze not listed.
    assert_eq!(issue.body.matches("@alice").count(), 2, "{}", issue.body); // the table's code span, and one mention
    assert_eq!(
        issue.body.matches("@alice,").count() + issue.body.matches("@alice:").count(),
        1
    );
    assert!(issue.body.contains("@octo-org/billing"), "{}", issue.body);
    assert!(!issue.body.contains("@Jane"), "{}", issue.body);
    assert!(!issue.body.contains("test_eta"), "{}", issue.body);
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("expired_freezes_issue", issue.body);
    });
    let number = issue.number;

    // The same list again: no issue request at all (the store remembers the list).
    let before = issues.all_calls();
    app.deliver("push", &push("refs/heads/main", &"b".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(issues.all_calls(), before, "an unchanged list sends nothing");
    // A day later the counters moved but the list did not: still nothing.
    app.advance(std::time::Duration::from_secs(86_400));
    app.deliver("push", &push("refs/heads/main", &"c".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(issues.all_calls(), before);

    // One freeze renewed: the same issue is edited in place.
    repo.put_file(
        "main",
        LEDGER_PATH,
        &ledger(&[
            entry(
                "tests/test_billing.py::test_retry_backoff",
                "billing-oncall",
                "2026-12-20",
            ),
            entry("tests/test_cart.py::TestCart::test_total", "@alice", "2026-11-19"),
        ]),
    );
    app.deliver("push", &push("refs/heads/main", &"d".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(issues.calls("POST", ISSUES), 1, "no second issue");
    assert_eq!(issues.calls("PATCH", ISSUE), 1);
    let ours = issues.ours();
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].number, number);
    assert!(!ours[0].body.contains("test_retry_backoff"), "{}", ours[0].body);
    assert!(!ours[0].body.contains("@octo-org/billing"), "{}", ours[0].body);
    assert!(ours[0].body.contains("test_total"));

    // Everything renewed: closed with a short note.
    repo.put_file(
        "main",
        LEDGER_PATH,
        &ledger(&[entry(
            "tests/test_cart.py::TestCart::test_total",
            "@alice",
            "2027-01-15",
        )]),
    );
    app.deliver("push", &push("refs/heads/main", &"e".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    let ours = issues.ours();
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].state, "closed");
    assert!(ours[0].body.starts_with(MARKER));
    assert!(ours[0].body.contains("no entry of"), "{}", ours[0].body);
    assert_eq!(issues.calls("PATCH", ISSUE), 2);

    // Nothing expired and already closed: nothing sent.
    let before = issues.all_calls();
    app.deliver("push", &push("refs/heads/main", &"f".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(issues.all_calls(), before);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");
    app.fake.verify().await;
}

#[tokio::test]
async fn pushes_to_other_branches_tags_and_deletions_are_ignored() {
    let (app, repo, issues) = app_with_repo().await;
    repo.put_file("main", LEDGER_PATH, &expired_ledger());
    let mut deleted = push("refs/heads/main", &"0".repeat(40));
    deleted["deleted"] = json!(true);
    for (n, p) in [
        push("refs/heads/feature", &"a".repeat(40)),
        push("refs/tags/v1.0", &"b".repeat(40)),
        deleted,
    ]
    .iter()
    .enumerate()
    {
        let id = format!("push-{n}");
        assert_eq!(app.post("push", &id, p).await, (200, "ignored".to_owned()));
    }
    // Not even a job: the webhook ignores them.
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 0);
    assert_eq!(issues.all_calls(), 0);
    assert_eq!(repo.calls("GET", crate::support::fake_repo::op::CONTENTS), 0);
    assert_eq!(app.fake.token_requests(), 0, "not one GitHub call");
    assert!(app.store.jobs().await.unwrap().is_empty());
    app.fake.verify().await;
}

/// Mount `GET /app/installations` answering `ids`, and `GET /installation/repositories`
/// answering each installation's repositories (full name, default branch, archived), with
/// `low` installations saying their rate limit is nearly spent.
async fn mount_installations(fake: &FakeGithub, repos: &[(u64, &[(&str, bool)])], low: &[u64]) {
    let ids: Vec<u64> = repos.iter().map(|(i, _)| *i).collect();
    fake.mock("GET", "/app/installations", 1, move |_req: &Request| {
        let template = example("base-installation-items")[0].clone();
        let list: Vec<Value> = ids
            .iter()
            .map(|id| {
                let mut v = template.clone();
                v["id"] = json!(id);
                v["app_id"] = json!(APP_ID);
                v
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(Value::Array(list))
    })
    .await;
    let by_installation: BTreeMap<u64, Vec<(String, bool)>> = repos
        .iter()
        .map(|(i, rs)| (*i, rs.iter().map(|(n, a)| (n.to_string(), *a)).collect()))
        .collect();
    let low = low.to_vec();
    let installation_of = fake.installation_of();
    fake.mock(
        "GET",
        "/installation/repositories",
        repos.len() as u64,
        move |req: &Request| {
            let Some(id) = installation_of(req) else {
                return ResponseTemplate::new(401).set_body_json(json!({ "message": "no installation token" }));
            };
            let template = example("repository-paginated-2")["repositories"][0].clone();
            let list: Vec<Value> = by_installation
                .get(&id)
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(n, (full_name, archived))| {
                    let mut v = template.clone();
                    v["id"] = json!(id * 1000 + n as u64);
                    v["full_name"] = json!(full_name);
                    v["name"] = json!(full_name.split('/').nth(1).unwrap());
                    v["default_branch"] = json!("main");
                    v["archived"] = json!(archived);
                    v
                })
                .collect();
            let remaining = if low.contains(&id) { "12" } else { "4990" };
            ResponseTemplate::new(200)
                .insert_header("x-ratelimit-remaining", remaining)
                .set_body_json(json!({ "total_count": list.len(), "repositories": list }))
        },
    )
    .await;
}

#[tokio::test]
async fn the_periodic_sweep_covers_every_installation_paced_and_once_per_interval() {
    let app = App::start_with(RetryPolicy::default(), |c| c.sweep_interval = Some(DAY)).await;
    let fake = &app.fake;
    // Installation 1: the harness's repository (expired entries) and an archived one (never
    // read). Installation 2: a repository without a ledger, and one with an expired entry.
    let repo = FakeRepo::mount(fake, OWNER, NAME).await;
    let issues = FakeIssues::mount(fake, OWNER, NAME).await;
    repo.put_file("main", CONFIG_PATH, CONFIG.as_bytes());
    repo.put_file("main", LEDGER_PATH, &expired_ledger());
    let bare = FakeRepo::mount(fake, "other-org", "bare").await;
    let bare_issues = FakeIssues::mount(fake, "other-org", "bare").await;
    let third = FakeRepo::mount(fake, "other-org", "third").await;
    let third_issues = FakeIssues::mount(fake, "other-org", "third").await;
    for r in [&bare, &third] {
        r.put_file("main", CONFIG_PATH, b"ledger_maintenance: off\n");
    }
    third.put_file(
        "main",
        LEDGER_PATH,
        &ledger(&[entry("tests/test_x.py::test_y", "@bob", "2026-11-01")]),
    );
    let archived = FakeRepo::mount(fake, OWNER, "archived").await;
    let full = format!("{OWNER}/{NAME}");
    let archived_name = format!("{OWNER}/archived");
    let one: &[(&str, bool)] = &[(&full, false), (&archived_name, true)];
    let two: &[(&str, bool)] = &[("other-org/bare", false), ("other-org/third", false)];
    mount_installations(fake, &[(INSTALLATION, one), (INSTALLATION + 1, two)], &[]).await;
    // Flake history of an installed repository and of one the App was uninstalled from.
    let installed = (INSTALLATION * 1000) as i64;
    remember(&app, installed).await;
    remember(&app, 424_242).await;

    // Queued once per interval, however often (or by however many instances) it is asked.
    assert!(app.worker.schedule_sweep().await.unwrap());
    assert!(!app.worker.schedule_sweep().await.unwrap());
    let (_store2, worker2) = app.new_worker("second-instance").await;
    assert!(!worker2.schedule_sweep().await.unwrap());

    // The sweep job queues the three live repositories 2 s apart: only the first is due now.
    app.worker.run_until_idle().await.unwrap();
    let jobs = app.store.jobs().await.unwrap();
    let repo_jobs: Vec<_> = jobs.iter().filter(|j| j.event == SWEEP_REPO_EVENT).collect();
    assert_eq!(repo_jobs.len(), 3, "{jobs:?}");
    assert_eq!(
        repo_jobs.iter().filter(|j| j.state == JobState::Done).count(),
        1,
        "paced: {repo_jobs:?}"
    );
    assert!(jobs.iter().any(|j| j.event == SWEEP_EVENT && j.state == JobState::Done));
    // The sweep forgot the uninstalled repository's history, and only it.
    assert_eq!(app.store.history_repo_ids().await.unwrap(), vec![installed]);
    app.advance(std::time::Duration::from_secs(2));
    assert_eq!(app.worker.run_until_idle().await.unwrap(), 1, "the second, 2 s later");
    app.advance(std::time::Duration::from_secs(2));
    assert_eq!(
        app.worker.run_until_idle().await.unwrap(),
        1,
        "the third, 2 s after that"
    );

    assert_eq!(issues.ours().len(), 1);
    assert!(issues.ours()[0].body.contains("test_retry_backoff"));
    assert_eq!(third_issues.ours().len(), 1);
    assert!(third_issues.ours()[0].body.contains("@bob"));
    // No ledger: nothing to say, and no issue listing either.
    assert_eq!(bare_issues.all_calls(), 0);
    assert_eq!(
        bare.calls("GET", crate::support::fake_repo::op::CONTENTS),
        2,
        "config and ledger read"
    );
    assert_eq!(archived.calls("GET", crate::support::fake_repo::op::CONTENTS), 0);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");
    app.fake.verify().await;
}

#[tokio::test]
async fn a_sweep_skips_an_installation_low_on_rate_limit() {
    let app = App::start_with(RetryPolicy::default(), |c| c.sweep_interval = Some(DAY)).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let issues = FakeIssues::mount(&app.fake, OWNER, NAME).await;
    repo.put_file("main", LEDGER_PATH, &expired_ledger());
    let full = format!("{OWNER}/{NAME}");
    let one: &[(&str, bool)] = &[(&full, false)];
    mount_installations(&app.fake, &[(INSTALLATION, one)], &[INSTALLATION]).await;
    remember(&app, 424_242).await;
    assert!(app.worker.schedule_sweep().await.unwrap());
    app.advance(std::time::Duration::from_secs(60));
    app.worker.run_until_idle().await.unwrap();
    let jobs = app.store.jobs().await.unwrap();
    assert_eq!(jobs.len(), 1, "only the sweep itself: {jobs:?}");
    assert_eq!(jobs[0].state, JobState::Done);
    assert_eq!(issues.all_calls(), 0);
    assert_eq!(repo.calls("GET", crate::support::fake_repo::op::CONTENTS), 0);
    // An installation could not be listed: no history is taken for uninstalled.
    assert_eq!(app.store.history_repo_ids().await.unwrap(), vec![424_242]);
    app.fake.verify().await;
}

/// One observation in repository `repo_id`'s flake history, recorded now.
async fn remember(app: &App, repo_id: i64) {
    use flakegate::gate::{Observation, RunKind, Source};
    let now = (app.clock())();
    let o = Observation {
        test: flakegate::gate::TestId::new("tests/test_x.py::test_y"),
        passes: 1,
        failures: 0,
        source: Source {
            sha: "a".repeat(40),
            kind: RunKind::Probe,
            pr: Some(1),
            run_id: Some(1),
            attempt: Some(1),
            date: now.date_naive(),
        },
    };
    app.store
        .record_history(repo_id, &format!("run:1:{repo_id}"), &[o], now)
        .await
        .unwrap();
}

#[tokio::test]
async fn concurrent_instances_and_a_restart_keep_exactly_one_issue() {
    let (app, repo, issues) = app_with_repo().await;
    repo.put_file("main", LEDGER_PATH, &expired_ledger());
    // The same push delivered twice (a redelivery gets a new id) and a sweep's repository job,
    // taken by two instances at once.
    app.deliver("push", &push("refs/heads/main", &"a".repeat(40))).await;
    app.deliver("push", &push("refs/heads/main", &"a".repeat(40))).await;
    let (_s1, w1) = app.new_worker("instance-1").await;
    let (_s2, w2) = app.new_worker("instance-2").await;
    let (a, b) = tokio::join!(w1.run_until_idle(), w2.run_until_idle());
    a.unwrap();
    b.unwrap();
    // A job that found the repository locked by the other instance retries after its backoff.
    app.advance(std::time::Duration::from_secs(3600));
    let (a, b) = tokio::join!(w1.run_until_idle(), w2.run_until_idle());
    a.unwrap();
    b.unwrap();
    assert_eq!(issues.calls("POST", ISSUES), 1, "exactly one issue created");
    assert_eq!(issues.ours().len(), 1);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");

    // A restarted instance (a new store handle on the same database) finds it again.
    let before = issues.all_calls();
    let (_s3, w3) = app.new_worker("restarted").await;
    app.deliver("push", &push("refs/heads/main", &"b".repeat(40))).await;
    w3.run_until_idle().await.unwrap();
    assert_eq!(issues.all_calls(), before, "unchanged: nothing sent after a restart");

    // With the store's record lost, the marker finds the open issue again: no second issue,
    // and no edit (it says the same).
    let lost = flakegate::store::ExpiryIssue {
        issue_number: None,
        list_sha256: "lost".into(),
    };
    app.store
        .set_expiry_issue(&format!("{OWNER}/{NAME}"), &lost)
        .await
        .unwrap();
    let listed = issues.calls("GET", ISSUES);
    app.deliver("push", &push("refs/heads/main", &"c".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(issues.calls("GET", ISSUES), listed + 1, "found by its marker");
    assert_eq!(issues.calls("POST", ISSUES), 1);
    assert_eq!(issues.calls("PATCH", ISSUE), 0);
    let again = app
        .store
        .expiry_issue(&format!("{OWNER}/{NAME}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.issue_number, Some(issues.ours()[0].number));
    app.fake.verify().await;
}

#[tokio::test]
async fn ledger_text_goes_out_inert() {
    let (app, repo, issues) = app_with_repo().await;
    repo.put_file(
        "main",
        LEDGER_PATH,
        &ledger(&[entry(
            "tests/test_x.py::test_y[@octo-org/everyone|`x`]",
            "ops <img src=x> @mallory",
            "2026-11-01",
        )]),
    );
    app.deliver("push", &push("refs/heads/main", &"a".repeat(40))).await;
    app.worker.run_until_idle().await.unwrap();
    let ours = issues.ours();
    assert_eq!(ours.len(), 1);
    let body = &ours[0].body;
    // No handle: nobody mentioned; the HTML only inside a code span, the node id kept whole.
    assert!(body.contains("| `ops <img src=x> mallory` |"), "{body}");
    assert!(
        body.contains(r"``tests/test_x.py::test_y[@octo-org/everyone\|`x`]``"),
        "{body}"
    );
    assert!(!body.contains(" @mallory"), "{body}");
    assert!(!body.contains("\n@"), "{body}");
    assert!(body.contains("Owners shown without an `@`"), "{body}");
    app.fake.verify().await;
}
