//! The ledger's upkeep end to end: signed `push` webhooks through the real router, store and
//! worker, against the fake GitHub with a stateful fake of what the upkeep writes — the App's
//! branch (git refs), the ledger committed on it (contents), its pull request, and the
//! evidence workflow's dispatches — every request body checked against the OpenAPI subset.
//! The flake history is the store's own, filled as recorded runs fill it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use flakegate::gate::{Observation, RunKind, Source, TestId};
use flakegate::store::{JobState, RetryPolicy};
use serde_json::{json, Value};
use wiremock::{Request, ResponseTemplate};

use crate::support::app_harness::{push_event, App, CONFIG_PATH, LEDGER_PATH, NAME, OWNER, REPO_ID};
use crate::support::fake_github::FakeGithub;
use crate::support::fake_repo::FakeRepo;

const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);
const BRANCH: &str = "flakegate/ledger";
const PULLS: &str = "/repos/{owner}/{repo}/pulls";
const PULL: &str = "/repos/{owner}/{repo}/pulls/{pull_number}";
const REFS: &str = "/repos/{owner}/{repo}/git/refs";
const REF: &str = "/repos/{owner}/{repo}/git/refs/{ref}";
const GET_REF: &str = "/repos/{owner}/{repo}/git/ref/{ref}";
const DISPATCH: &str = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches";
const PUT_FILE: &str = "/repos/{owner}/{repo}/contents/{path}";

const FLAKY: &str = "tests/test_cart.py::TestCart::test_total";
const FIXED: &str = "tests/test_pricing.py::test_apply_tax";
const STRAY: &str = "tests/test_refunds.py::test_refund";

// ---- a stateful fake of what the upkeep writes -------------------------------------------------

#[derive(Debug, Clone)]
struct PullState {
    number: u64,
    body: String,
    state: String,
    head: String,
    base: String,
}

#[derive(Default)]
struct UpkeepState {
    /// Branch → the commit it points at.
    branches: BTreeMap<String, String>,
    /// The ledger's text on the App's branch.
    on_branch: Option<Vec<u8>>,
    /// The ledger's text on the default branch.
    on_main: Vec<u8>,
    pulls: BTreeMap<u64, PullState>,
    dispatches: Vec<Value>,
    /// (method, template) of every request.
    log: Vec<(String, String)>,
    /// A status the next dispatches are answered with (a refused trigger, a missing permission).
    refuse_dispatch: Option<u16>,
    /// Answer every write with 403 (an installation without contents/pull request write access).
    read_only: bool,
    next_sha: u64,
}

#[derive(Clone)]
struct FakeUpkeep {
    state: Arc<Mutex<UpkeepState>>,
    repo: FakeRepo,
}

fn sha(n: u64) -> String {
    format!("{n:040x}")
}

fn forbidden() -> ResponseTemplate {
    ResponseTemplate::new(403).set_body_json(json!({ "message": "Resource not accessible by integration" }))
}

impl FakeUpkeep {
    async fn mount(fake: &FakeGithub, repo: &FakeRepo) -> FakeUpkeep {
        let upkeep = FakeUpkeep {
            state: Arc::new(Mutex::new(UpkeepState {
                next_sha: 0xb0000,
                ..UpkeepState::default()
            })),
            repo: repo.clone(),
        };
        for prefix in ["git/", "pulls", "actions/workflows/"] {
            let me = upkeep.clone();
            fake.mock_prefix(&format!("/repos/{OWNER}/{NAME}/{prefix}"), 4, move |req, template| {
                me.serve(req, template)
            })
            .await;
        }
        let me = upkeep.clone();
        fake.mock(
            "PUT",
            &format!("/repos/{OWNER}/{NAME}/contents/{LEDGER_PATH}"),
            0..,
            move |req| me.serve(req, PUT_FILE),
        )
        .await;
        upkeep.set_main(b"{\"frozen\": []}\n");
        upkeep
    }

    /// The default branch moves to a new commit with `ledger`.
    fn set_main(&self, ledger: &[u8]) {
        let mut st = self.state.lock().unwrap();
        st.next_sha += 1;
        let head = sha(st.next_sha);
        st.branches.insert("main".into(), head);
        st.on_main = ledger.to_vec();
        self.repo.put_file("main", LEDGER_PATH, ledger);
    }

    fn main_head(&self) -> String {
        self.state.lock().unwrap().branches["main"].clone()
    }

    /// A person pushes a commit of their own onto the App's branch.
    fn human_commit(&self) {
        let mut st = self.state.lock().unwrap();
        st.next_sha += 1;
        let s = sha(st.next_sha);
        st.branches.insert(BRANCH.into(), s);
    }

    fn serve(&self, req: &Request, template: &str) -> ResponseTemplate {
        let method = req.method.as_str().to_uppercase();
        let mut st = self.state.lock().unwrap();
        st.log.push((method.clone(), template.to_owned()));
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let path = req.url.path().to_owned();
        let writes = method != "GET";
        match (method.as_str(), template) {
            ("POST", DISPATCH) => {
                if let Some(status) = st.refuse_dispatch {
                    return ResponseTemplate::new(status)
                        .set_body_json(json!({ "message": "Workflow does not have 'workflow_dispatch' trigger" }));
                }
                st.dispatches.push(body);
                ResponseTemplate::new(204)
            }
            _ if writes && st.read_only => forbidden(),
            ("GET", GET_REF) => {
                let name = path.split("/git/ref/heads/").nth(1).unwrap_or("").to_owned();
                match st.branches.get(&name) {
                    Some(s) => ResponseTemplate::new(200).set_body_json(json!({
                        "ref": format!("refs/heads/{name}"), "node_id": "x", "url": "u",
                        "object": { "sha": s, "type": "commit", "url": "u" },
                    })),
                    None => ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" })),
                }
            }
            ("POST", REFS) => {
                let name = body["ref"]
                    .as_str()
                    .unwrap_or("")
                    .trim_start_matches("refs/heads/")
                    .to_owned();
                if st.branches.contains_key(&name) {
                    return ResponseTemplate::new(422).set_body_json(json!({ "message": "Reference already exists" }));
                }
                let at = body["sha"].as_str().unwrap_or("").to_owned();
                assert_eq!(
                    at, st.branches["main"],
                    "the branch starts at the default branch's head"
                );
                st.branches.insert(name, at);
                st.on_branch = Some(st.on_main.clone());
                self.repo.put_file(BRANCH, LEDGER_PATH, &st.on_main);
                ResponseTemplate::new(201)
                    .set_body_json(json!({ "ref": body["ref"], "object": { "sha": body["sha"] } }))
            }
            ("PATCH", REF) => {
                let at = body["sha"].as_str().unwrap_or("").to_owned();
                assert_eq!(body["force"], json!(true));
                assert_eq!(at, st.branches["main"], "rebased on the default branch's head");
                st.branches.insert(BRANCH.into(), at);
                st.on_branch = Some(st.on_main.clone());
                self.repo.put_file(BRANCH, LEDGER_PATH, &st.on_main);
                ResponseTemplate::new(200)
                    .set_body_json(json!({ "ref": "refs/heads/x", "object": { "sha": body["sha"] } }))
            }
            ("DELETE", REF) => {
                st.branches.remove(BRANCH);
                st.on_branch = None;
                ResponseTemplate::new(204)
            }
            ("PUT", PUT_FILE) => {
                assert_eq!(body["branch"], json!(BRANCH), "only the App's branch is written");
                let content = unbase64(body["content"].as_str().unwrap_or(""));
                // Replacing a file names the blob it replaces.
                if st.on_branch.as_ref().is_some_and(|b| !b.is_empty()) {
                    assert_eq!(body["sha"], json!("0".repeat(40)), "{body}");
                }
                st.next_sha += 1;
                let commit = sha(st.next_sha);
                st.branches.insert(BRANCH.into(), commit.clone());
                st.on_branch = Some(content.clone());
                self.repo.put_file(BRANCH, LEDGER_PATH, &content);
                ResponseTemplate::new(200).set_body_json(json!({ "content": {}, "commit": { "sha": commit } }))
            }
            ("GET", PULLS) => {
                let head = req
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "head")
                    .map(|(_, v)| v.into_owned());
                let listed: Vec<Value> = st
                    .pulls
                    .values()
                    .filter(|p| p.state == "open" && head.as_deref() == Some(&format!("{OWNER}:{}", p.head)))
                    .map(pull_json)
                    .collect();
                ResponseTemplate::new(200).set_body_json(Value::Array(listed))
            }
            ("POST", PULLS) => {
                let number = st.pulls.keys().max().copied().unwrap_or(100) + 1;
                let p = PullState {
                    number,
                    body: body["body"].as_str().unwrap_or("").to_owned(),
                    state: "open".into(),
                    head: body["head"].as_str().unwrap_or("").to_owned(),
                    base: body["base"].as_str().unwrap_or("").to_owned(),
                };
                let v = pull_json(&p);
                st.pulls.insert(number, p);
                ResponseTemplate::new(201).set_body_json(v)
            }
            ("PATCH", PULL) => {
                let number: u64 = path.rsplit('/').next().and_then(|n| n.parse().ok()).unwrap_or(0);
                let Some(p) = st.pulls.get_mut(&number) else {
                    return ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }));
                };
                if let Some(b) = body["body"].as_str() {
                    p.body = b.to_owned();
                }
                if let Some(s) = body["state"].as_str() {
                    p.state = s.to_owned();
                }
                let v = pull_json(p);
                ResponseTemplate::new(200).set_body_json(v)
            }
            _ => ResponseTemplate::new(501).set_body_json(json!({ "message": "fake upkeep: not served" })),
        }
    }

    fn calls(&self, method: &str, template: &str) -> usize {
        let st = self.state.lock().unwrap();
        st.log.iter().filter(|(m, t)| m == method && t == template).count()
    }

    fn writes(&self) -> usize {
        let st = self.state.lock().unwrap();
        st.log.iter().filter(|(m, _)| m != "GET").count()
    }

    fn pulls(&self) -> Vec<PullState> {
        self.state.lock().unwrap().pulls.values().cloned().collect()
    }

    fn dispatches(&self) -> Vec<Value> {
        self.state.lock().unwrap().dispatches.clone()
    }

    fn on_branch(&self) -> Option<Value> {
        let st = self.state.lock().unwrap();
        st.on_branch
            .as_ref()
            .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
    }

    fn on_branch_text(&self) -> String {
        let st = self.state.lock().unwrap();
        String::from_utf8_lossy(st.on_branch.as_deref().unwrap_or_default()).into_owned()
    }
}

/// Standard base64 as the contents API takes it.
fn unbase64(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("the contents API takes standard base64")
}

fn pull_json(p: &PullState) -> Value {
    json!({
        "number": p.number,
        "state": p.state,
        "title": "t",
        "body": p.body,
        "html_url": format!("https://github.com/{OWNER}/{NAME}/pull/{}", p.number),
        "head": { "ref": p.head },
        "base": { "ref": p.base },
    })
}

// ---- inputs ---------------------------------------------------------------------------------

fn entry(test: &str, owner: &str, expires: &str) -> Value {
    json!({ "test": test, "reason": "timing", "owner": owner, "frozen_at": "2026-11-01", "expires": expires })
}

fn ledger(entries: &[Value]) -> Vec<u8> {
    serde_json::to_vec_pretty(&json!({ "frozen": entries })).unwrap()
}

/// Runs of `test` on `sha`: `passes` and `failures` of them, recorded as the App records a
/// probe (each call is a run of its own).
async fn record(app: &App, key: &str, test: &str, sha: &str, passes: u32, failures: u32) {
    let now = (app.clock())();
    let o = Observation {
        test: TestId::new(test),
        passes,
        failures,
        source: Source {
            sha: sha.into(),
            kind: RunKind::Probe,
            pr: None,
            run_id: Some(77),
            attempt: Some(1),
            date: now.date_naive(),
        },
    };
    app.store.record_history(REPO_ID as i64, key, &[o], now).await.unwrap();
}

async fn setup(config: &str) -> (App, FakeRepo, FakeUpkeep) {
    let app = App::start_with(RetryPolicy::default(), |c| c.sweep_interval = Some(DAY)).await;
    let repo = FakeRepo::mount(&app.fake, OWNER, NAME).await;
    let upkeep = FakeUpkeep::mount(&app.fake, &repo).await;
    repo.put_file("main", CONFIG_PATH, config.as_bytes());
    repo.put_file(
        "main",
        ".github/CODEOWNERS",
        b"tests/test_refunds.py @octo-org/refunds\n",
    );
    (app, repo, upkeep)
}

/// The body of the App's expired-freezes issue (served by the fake repository's issues).
async fn deliver_push(app: &App, n: u8) {
    app.deliver("push", &push_event("refs/heads/main", &format!("{n:02x}").repeat(20)))
        .await;
    app.worker.run_until_idle().await.unwrap();
}

// ---- tests ----------------------------------------------------------------------------------

#[tokio::test]
async fn an_expiring_entry_is_probed_once_then_proposed_edited_in_place_and_closed() {
    let (app, _repo, upkeep) = setup("owners:\n  cart-team: '@octo-org/cart'\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.set_main(&ledger(&[
        entry(FLAKY, "cart-team", "2026-11-22"),
        entry(FIXED, "@alice", "2026-11-18"),
    ]));

    // Nothing known of either test: one dispatch asks for runs of both, on the default branch.
    deliver_push(&app, 1).await;
    let d = upkeep.dispatches();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["ref"], "main");
    assert_eq!(d[0]["inputs"]["tests"], format!("{FLAKY}\n{FIXED}"));
    assert_eq!(d[0]["inputs"]["k"], "50");
    assert!(upkeep.pulls().is_empty(), "nothing to propose without evidence");
    let body = issues.ours()[0].body.clone();
    assert!(body.contains("Probe runs asked"), "{body}");
    // Asked once per interval, however often the default branch moves.
    deliver_push(&app, 2).await;
    assert_eq!(upkeep.dispatches().len(), 1);

    // The runs come back: FIXED passed 60 in a row, FLAKY passed and failed on one sha.
    let head = upkeep.main_head();
    record(&app, "run:77:1", FIXED, &head, 60, 0).await;
    record(&app, "run:77:2", FLAKY, &head, 40, 3).await;
    deliver_push(&app, 3).await;
    let pulls = upkeep.pulls();
    assert_eq!(pulls.len(), 1, "one pull request");
    let pr = &pulls[0];
    assert_eq!(
        (pr.head.as_str(), pr.base.as_str(), pr.state.as_str()),
        (BRANCH, "main", "open")
    );
    assert!(
        pr.body
            .contains(&format!("**prune** `{FIXED}` (owner @alice): 0 of 60 runs failed")),
        "{}",
        pr.body
    );
    assert!(
        pr.body.contains(&format!(
            "**renew** `{FLAKY}` (owner @octo-org/cart) from 2026-11-22 to 2026-12-04"
        )),
        "{}",
        pr.body
    );
    let proposed = upkeep.on_branch().unwrap();
    let tests: Vec<&str> = proposed["frozen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["test"].as_str().unwrap())
        .collect();
    assert_eq!(tests, vec![FLAKY]);
    assert_eq!(proposed["frozen"][0]["expires"], "2026-12-04");
    assert_eq!(proposed["frozen"][0]["frozen_at"], "2026-11-01");
    let body = issues.ours()[0].body.clone();
    assert!(body.contains(&format!("in #{}", pr.number)), "{body}");

    // The same evidence again: nothing is written.
    let writes = upkeep.writes();
    deliver_push(&app, 4).await;
    assert_eq!(upkeep.writes(), writes, "an unchanged proposal sends nothing");

    // A person renews FLAKY on the default branch by hand: the proposal is rebased on their
    // ledger and edited in place (their entry kept as they wrote it; FIXED still pruned).
    upkeep.set_main(&ledger(&[
        entry(FLAKY, "cart-team", "2026-12-20"),
        entry(FIXED, "@alice", "2026-11-18"),
    ]));
    deliver_push(&app, 5).await;
    assert_eq!(upkeep.pulls().len(), 1, "still one pull request");
    assert_eq!(upkeep.calls("POST", PULLS), 1);
    assert_eq!(
        upkeep.calls("PATCH", REF),
        1,
        "the branch moved onto the new default head"
    );
    let proposed = upkeep.on_branch().unwrap();
    assert_eq!(proposed["frozen"][0]["expires"], "2026-12-20", "{proposed}");
    assert_eq!(proposed["frozen"].as_array().unwrap().len(), 1);
    let pr = &upkeep.pulls()[0];
    assert!(!pr.body.contains("**renew**"), "{}", pr.body);

    // The person prunes FIXED too: nothing is left to propose; the pull request is closed
    // and the App's branch deleted.
    upkeep.set_main(&ledger(&[entry(FLAKY, "cart-team", "2026-12-20")]));
    deliver_push(&app, 6).await;
    assert_eq!(upkeep.pulls()[0].state, "closed");
    assert_eq!(upkeep.calls("DELETE", REF), 1);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");
    app.fake.verify().await;
}

#[tokio::test]
async fn a_commit_of_a_person_on_the_branch_is_never_overwritten() {
    let (app, _repo, upkeep) = setup("{}\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    let head = upkeep.main_head();
    record(&app, "run:77:1", FIXED, &head, 60, 0).await;
    deliver_push(&app, 1).await;
    assert_eq!(upkeep.pulls().len(), 1);
    let mine = upkeep.on_branch_text();
    upkeep.human_commit();
    // New evidence would change the proposal, but the branch has a commit the App did not make.
    record(&app, "run:78:1", STRAY, &head, 10, 2).await;
    let writes = upkeep.writes();
    deliver_push(&app, 2).await;
    assert_eq!(
        upkeep.writes(),
        writes,
        "the branch and its pull request are left alone"
    );
    assert_eq!(upkeep.on_branch_text(), mine);
    let body = issues.ours()[0].body.clone();
    assert!(body.contains("has commits flakegate did not make"), "{body}");
    app.fake.verify().await;
}

#[tokio::test]
async fn a_refused_dispatch_is_a_sentence_in_the_issue_not_a_retry_loop() {
    let (app, _repo, upkeep) = setup("{}\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.state.lock().unwrap().refuse_dispatch = Some(422);
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    deliver_push(&app, 1).await;
    assert_eq!(upkeep.calls("POST", DISPATCH), 1);
    let body = issues.ours()[0].body.clone();
    assert!(
        body.contains("could not ask the evidence workflow flakegate-evidence.yml"),
        "{body}"
    );
    assert!(
        body.contains("workflow\\_dispatch") || body.contains("workflow_dispatch"),
        "{body}"
    );
    // Not asked again within the interval, and no job failed or waits for a retry.
    deliver_push(&app, 2).await;
    assert_eq!(upkeep.calls("POST", DISPATCH), 1);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");
    // The next interval asks again.
    app.advance(DAY + std::time::Duration::from_secs(60));
    deliver_push(&app, 3).await;
    assert_eq!(upkeep.calls("POST", DISPATCH), 2);
    app.fake.verify().await;
}

#[tokio::test]
async fn without_write_access_the_change_goes_into_the_issue_as_a_patch() {
    let (app, _repo, upkeep) = setup("{}\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.state.lock().unwrap().read_only = true;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    let head = upkeep.main_head();
    record(&app, "run:77:1", FIXED, &head, 60, 0).await;
    // An unstable test nobody froze: proposed with its CODEOWNERS owner.
    record(&app, "run:77:2", STRAY, &head, 10, 2).await;
    deliver_push(&app, 1).await;
    assert!(upkeep.pulls().is_empty());
    let body = issues.ours()[0].body.clone();
    assert!(body.contains("could not open its pull request"), "{body}");
    assert!(body.contains("```diff\n--- a/.github/flake-ledger.json"), "{body}");
    assert!(body.contains("flakegate ledger maintain"), "{body}");
    assert!(
        body.contains(&format!("**freeze** `{STRAY}`")) && body.contains("@octo-org/refunds"),
        "{body}"
    );
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");
    app.fake.verify().await;
}

#[tokio::test]
async fn two_instances_keep_one_pull_request() {
    let (app, _repo, upkeep) = setup("{}\n").await;
    let _issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    let head = upkeep.main_head();
    record(&app, "run:77:1", FIXED, &head, 60, 0).await;
    app.deliver("push", &push_event("refs/heads/main", &"a".repeat(40)))
        .await;
    app.deliver("push", &push_event("refs/heads/main", &"b".repeat(40)))
        .await;
    let (_s1, w1) = app.new_worker("instance-1").await;
    let (_s2, w2) = app.new_worker("instance-2").await;
    let (a, b) = tokio::join!(w1.run_until_idle(), w2.run_until_idle());
    a.unwrap();
    b.unwrap();
    app.advance(std::time::Duration::from_secs(3600));
    let (a, b) = tokio::join!(w1.run_until_idle(), w2.run_until_idle());
    a.unwrap();
    b.unwrap();
    assert_eq!(upkeep.calls("POST", PULLS), 1, "exactly one pull request opened");
    assert_eq!(upkeep.pulls().len(), 1);
    app.fake.verify().await;
}

/// `workflow_run` completed for a run the upkeep dispatched (`event: workflow_dispatch`) on
/// `branch`, carrying the real probe fixture's five runs as ran on `head`.
fn dispatched_run(repo: &FakeRepo, run_id: u64, head: &str, branch: &str) -> Value {
    let dir = crate::support::app_harness::fixtures().join("probe/reportlog");
    let mut entries: Vec<(String, Vec<u8>)> = (1..=5)
        .map(|n| {
            let name = format!("run-{n}.jsonl");
            (
                format!("evidence/probe/{name}"),
                std::fs::read(dir.join(&name)).unwrap(),
            )
        })
        .collect();
    let meta = json!({ "base_sha": head, "head_sha": head, "k": 5, "test_command": "python -m pytest" });
    entries.push(("evidence/meta.json".into(), meta.to_string().into_bytes()));
    let refs: Vec<(&str, &[u8])> = entries.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    repo.add_workflow_run(
        run_id,
        "flakegate-evidence",
        crate::support::fake_repo::ArtifactState::Zip(FakeRepo::zip_entries(&refs)),
    );
    let mut p =
        crate::support::app_harness::workflow_run_completed(run_id, head, crate::support::app_harness::WORKFLOW, &[]);
    p["workflow_run"]["event"] = json!("workflow_dispatch");
    p["workflow_run"]["head_branch"] = json!(branch);
    p["repository"]["default_branch"] = json!("main");
    p
}

async fn runs_of(app: &App, test: &str) -> u64 {
    let tests = [TestId::new(test)];
    let q = flakegate::store::HistoryQuery {
        tests: &tests,
        base_sha: None,
        head_sha: None,
        now: (app.clock())(),
        policy: flakegate::gate::HistoryPolicy::default(),
        exclude: None,
    };
    let h = app.store.history_for(REPO_ID as i64, &q).await.unwrap();
    h.tests.get(&tests[0]).map_or(0, |t| t.runs)
}

#[tokio::test]
async fn a_dispatched_run_on_the_default_branch_joins_the_history_and_the_upkeep_runs_again() {
    let (app, repo, upkeep) = setup("{}\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    deliver_push(&app, 1).await;
    assert_eq!(upkeep.dispatches().len(), 1);
    let head = upkeep.main_head();

    // A run someone dispatched on another branch is not history.
    app.deliver("workflow_run", &dispatched_run(&repo, 501, &head, "feature"))
        .await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(runs_of(&app, FIXED).await, 0);

    // The App's run on the default branch: five probe runs of every test, from run 502.
    app.deliver("workflow_run", &dispatched_run(&repo, 502, &head, "main"))
        .await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(runs_of(&app, FIXED).await, 5);
    // The issue was brought up to date with them at once.
    let body = issues.ours()[0].body.clone();
    assert!(
        body.contains("5 passing runs in a row so far; 50 would prune it"),
        "{body}"
    );
    // The same run delivered again adds nothing.
    app.deliver("workflow_run", &dispatched_run(&repo, 502, &head, "main"))
        .await;
    app.worker.run_until_idle().await.unwrap();
    assert_eq!(runs_of(&app, FIXED).await, 5);
    let jobs = app.store.jobs().await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Done), "{jobs:?}");
    app.fake.verify().await;
}

#[tokio::test]
async fn runs_that_never_come_are_given_up_after_the_evidence_timeout() {
    let (app, _repo, upkeep) = setup("evidence:\n  timeout_minutes: 60\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    deliver_push(&app, 1).await;
    assert_eq!(upkeep.dispatches().len(), 1);
    // Half an hour later the runs are still awaited.
    app.advance(std::time::Duration::from_secs(1800));
    deliver_push(&app, 2).await;
    let body = issues.ours()[0].body.clone();
    assert!(body.contains("Probe runs asked"), "{body}");
    assert!(!body.contains("given up"), "{body}");
    // Two hours later: given up, said so, not asked again before the next interval.
    app.advance(std::time::Duration::from_secs(7200));
    deliver_push(&app, 3).await;
    let body = issues.ours()[0].body.clone();
    assert!(
        body.contains("did not come within evidence.timeout\\_minutes (60 minutes): given up")
            || body.contains("did not come within evidence.timeout_minutes (60 minutes): given up"),
        "{body}"
    );
    assert_eq!(upkeep.dispatches().len(), 1);
    app.fake.verify().await;
}

#[tokio::test]
async fn without_write_access_a_proposed_freeze_opens_the_issue_even_when_nothing_expires() {
    let (app, _repo, upkeep) = setup("{}\n").await;
    let issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.state.lock().unwrap().read_only = true;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2027-02-01")]));
    let head = upkeep.main_head();
    record(&app, "run:77:2", STRAY, &head, 10, 2).await;
    deliver_push(&app, 1).await;
    let ours = issues.ours();
    assert_eq!(ours.len(), 1);
    let body = &ours[0].body;
    assert!(
        body.contains("no entry of `.github/flake-ledger.json` on `main` has expired"),
        "{body}"
    );
    assert!(body.contains(&format!("**freeze** `{STRAY}`")), "{body}");
    assert!(body.contains("```diff"), "{body}");
    app.fake.verify().await;
}

#[tokio::test]
async fn a_pull_request_a_person_closed_stays_closed_and_a_new_proposal_opens_another() {
    let (app, _repo, upkeep) = setup("{}\n").await;
    let _issues = crate::support::fake_issues::FakeIssues::mount(&app.fake, OWNER, NAME).await;
    upkeep.set_main(&ledger(&[entry(FIXED, "@alice", "2026-11-18")]));
    let head = upkeep.main_head();
    record(&app, "run:77:1", FIXED, &head, 60, 0).await;
    deliver_push(&app, 1).await;
    let first = upkeep.pulls()[0].number;
    upkeep.state.lock().unwrap().pulls.get_mut(&first).unwrap().state = "closed".into();
    // The same proposal: the closed pull request is left closed, nothing is sent.
    let writes = upkeep.writes();
    deliver_push(&app, 2).await;
    assert_eq!(upkeep.writes(), writes);
    // New evidence changes the proposal: a new pull request, the closed one untouched.
    record(&app, "run:78:1", STRAY, &head, 10, 2).await;
    deliver_push(&app, 3).await;
    let pulls = upkeep.pulls();
    assert_eq!(pulls.len(), 2, "{pulls:?}");
    assert_eq!(pulls[0].state, "closed");
    assert_eq!(pulls[1].state, "open");
    assert!(
        pulls[1].body.contains(&format!("**freeze** `{STRAY}`")),
        "{}",
        pulls[1].body
    );
    app.fake.verify().await;
}
