//! A stateful fake repository on top of [`FakeGithub`]: pull requests (JSON, diff, files
//! listing), file contents per commit, workflow runs with their evidence artifacts (real zips),
//! check runs, issue comments and workflow re-runs — kept in memory and served the way GitHub
//! serves them. Every request still goes through `FakeGithub`'s checks (installation token,
//! declared query parameters, body against the OpenAPI subset); unknown shas, paths, runs or
//! ids answer 404 like GitHub.
//!
//! Set-up is synchronous (`put_file`, `add_pull`, …) so a test can change the repository at
//! any point; what the App did is read back with `check_runs()`, `comments(pr)`,
//! `rerun_requests()` and `calls(…)`. `fail_next` and `stall_next` inject GitHub's failures.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::{Request, ResponseTemplate};

use super::fake_github::FakeGithub;

/// OpenAPI path templates of the operations the App calls, for `fail_next`, `stall_next` and `calls`.
pub mod op {
    pub const PULL: &str = "/repos/{owner}/{repo}/pulls/{pull_number}";
    pub const PULL_FILES: &str = "/repos/{owner}/{repo}/pulls/{pull_number}/files";
    pub const COMMIT_PULLS: &str = "/repos/{owner}/{repo}/commits/{commit_sha}/pulls";
    pub const CONTENTS: &str = "/repos/{owner}/{repo}/contents/{path}";
    pub const RUN_ARTIFACTS: &str = "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts";
    pub const ARTIFACT_ZIP: &str = "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}";
    pub const RERUN: &str = "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun";
    pub const CHECK_RUNS: &str = "/repos/{owner}/{repo}/check-runs";
    pub const CHECK_RUN: &str = "/repos/{owner}/{repo}/check-runs/{check_run_id}";
    pub const COMMIT_CHECK_RUNS: &str = "/repos/{owner}/{repo}/commits/{ref}/check-runs";
    pub const ISSUE_COMMENTS: &str = "/repos/{owner}/{repo}/issues/{issue_number}/comments";
    pub const COMMENT: &str = "/repos/{owner}/{repo}/issues/comments/{comment_id}";
    pub const COMPARE: &str = "/repos/{owner}/{repo}/compare/{base}...{head}";
    pub const RUNS: &str = "/repos/{owner}/{repo}/actions/runs";
}

/// An evidence artifact as a workflow run left it.
#[derive(Debug, Clone)]
pub enum ArtifactState {
    /// Listed, downloadable: these zip bytes.
    Zip(Vec<u8>),
    /// Listed with `expired: true`; `/zip` answers 410.
    Expired,
    /// The run lists no artifact of that name (only an unrelated one).
    Missing,
}

/// A check run as GitHub holds it after every create and update the App sent.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRunState {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub external_id: Option<String>,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
    /// Every annotation sent, in order, accumulated over the create and all PATCHes (GitHub appends).
    pub annotations: Vec<Value>,
    /// The annotations of each request, for checking GitHub's 50-per-request limit.
    pub annotation_batches: Vec<usize>,
    pub actions: Vec<Value>,
    /// PATCHes received.
    pub updates: usize,
    /// The app that made it: the App under test, or another (say, a workflow's token).
    pub app_id: u64,
}

/// The app id GitHub gives check runs a workflow makes with its `GITHUB_TOKEN` (`github-actions`).
pub const GITHUB_ACTIONS_APP_ID: u64 = 15368;

/// An issue comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentState {
    pub id: u64,
    pub pr: u64,
    pub body: String,
    /// PATCHes received.
    pub edits: usize,
    /// Written by the App (a bot comment `performed_via_github_app`), not by a person.
    pub by_app: bool,
}

#[derive(Debug, Clone)]
pub struct PullState {
    pub number: u64,
    pub base_sha: String,
    pub head_sha: String,
    pub diff: String,
    /// What the diff media type serves: `diff`'s bytes, unless a test set others (not UTF-8).
    pub diff_bytes: Vec<u8>,
    pub too_large: bool,
    pub state: String,
    pub base_ref: String,
    /// The head is in a fork (another repository).
    pub fork: bool,
    /// Once merged: the commit the merge made and when (ISO 8601).
    pub merged: Option<(String, String)>,
}

#[derive(Debug, Clone)]
struct CompareState {
    diff: String,
    too_large: bool,
}

/// A workflow run the runs listing shows.
#[derive(Debug, Clone)]
pub struct ListedRun {
    pub id: u64,
    pub event: String,
    pub head_sha: String,
    pub path: String,
    pub status: String,
}

#[derive(Debug, Clone)]
struct RunState {
    artifact_name: String,
    artifact: ArtifactState,
    artifact_id: u64,
}

#[derive(Debug, Clone)]
struct FailRule {
    method: String,
    template: String,
    remaining: usize,
    status: u16,
    headers: Vec<(String, String)>,
}

#[derive(Debug)]
struct StallRule {
    method: String,
    template: String,
    notify: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct RepoState {
    /// (sha, path) → bytes.
    files: BTreeMap<(String, String), Vec<u8>>,
    pulls: BTreeMap<u64, PullState>,
    runs: BTreeMap<u64, RunState>,
    check_runs: Vec<CheckRunState>,
    comments: Vec<CommentState>,
    reruns: Vec<u64>,
    /// (base, head) → the unified diff `compare/{base}...{head}` serves (a merge group's).
    compares: BTreeMap<(String, String), CompareState>,
    /// Workflow runs as `GET /actions/runs` lists them, oldest first.
    listed_runs: Vec<ListedRun>,
    failures: Vec<FailRule>,
    stalls: Vec<StallRule>,
    /// (method, template, path with query) of every request served or refused here.
    log: Vec<(String, String, String)>,
    next_id: u64,
}

impl RepoState {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// A stateful repository `owner/name` on a [`FakeGithub`].
#[derive(Clone)]
pub struct FakeRepo {
    state: Arc<Mutex<RepoState>>,
    pub owner: String,
    pub name: String,
    uri: String,
    app_id: u64,
}

impl FakeRepo {
    /// Mounts stateful handlers for `owner/name` on `fake` (any number of calls; no `times`
    /// expectations). A test's own `fake.mock(…)` for one of these paths takes precedence.
    pub async fn mount(fake: &FakeGithub, owner: &str, name: &str) -> FakeRepo {
        let repo = FakeRepo {
            state: Arc::new(Mutex::new(RepoState {
                next_id: 1000,
                ..RepoState::default()
            })),
            owner: owner.to_owned(),
            name: name.to_owned(),
            uri: fake.uri(),
            app_id: fake.app_id,
        };
        let r = repo.clone();
        fake.mock_prefix(&format!("/repos/{owner}/{name}/"), 6, move |req, template| {
            r.serve(req, template)
        })
        .await;
        let r = repo.clone();
        fake.mock_raw("GET", &r.blob_path(), 0_u64.., move |req: &Request| r.serve_blob(req))
            .await;
        repo
    }

    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    fn st(&self) -> std::sync::MutexGuard<'_, RepoState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn blob_path(&self) -> String {
        format!("/blob/{}/{}/artifact.zip", self.owner, self.name)
    }

    // ---- set-up -------------------------------------------------------------------------

    /// Served by `GET /repos/{o}/{r}/contents/{path}?ref=sha` (base64 JSON; over 1 MB, as GitHub
    /// does, `encoding: none` and the bytes on the raw media type); 404 for any other sha or path.
    pub fn put_file(&self, sha: &str, path: &str, bytes: &[u8]) {
        self.st()
            .files
            .insert((sha.to_owned(), path.to_owned()), bytes.to_vec());
    }

    /// An open pull request (added again: updated, e.g. a new head after a push). Served as JSON,
    /// as the diff (diff media type), as the files listing derived from the diff, and through
    /// `/commits/{head_sha}/pulls`.
    pub fn add_pull(&self, number: u64, base_sha: &str, head_sha: &str, diff: &str) {
        let mut st = self.st();
        let too_large = st.pulls.get(&number).is_some_and(|p| p.too_large);
        let base_ref = st.pulls.get(&number).map_or("main".to_owned(), |p| p.base_ref.clone());
        st.pulls.insert(
            number,
            PullState {
                number,
                base_sha: base_sha.to_owned(),
                head_sha: head_sha.to_owned(),
                diff: diff.to_owned(),
                diff_bytes: diff.as_bytes().to_vec(),
                too_large,
                state: "open".to_owned(),
                base_ref,
                fork: false,
                merged: None,
            },
        );
    }

    /// Pull request `number`'s head is in a fork: another repository, `fork-owner/…`.
    pub fn set_fork(&self, number: u64) {
        if let Some(p) = self.st().pulls.get_mut(&number) {
            p.fork = true;
        }
    }

    /// Pull request `number`'s diff (diff media type) is these bytes, which need not be UTF-8
    /// (a Latin-1 file in the pull request); the files listing stays derived from `add_pull`'s.
    pub fn set_diff_bytes(&self, number: u64, bytes: &[u8]) {
        if let Some(p) = self.st().pulls.get_mut(&number) {
            p.diff_bytes = bytes.to_vec();
        }
    }

    /// Close (or reopen with `"open"`) pull request `number`.
    pub fn set_pull_state(&self, number: u64, state: &str) {
        if let Some(p) = self.st().pulls.get_mut(&number) {
            p.state = state.to_owned();
        }
    }

    /// Pull request `number` was merged at `merged_at` (ISO 8601) by commit `merge_sha`.
    pub fn merge(&self, number: u64, merge_sha: &str, merged_at: &str) {
        if let Some(p) = self.st().pulls.get_mut(&number) {
            p.state = "closed".to_owned();
            p.merged = Some((merge_sha.to_owned(), merged_at.to_owned()));
        }
    }

    /// Pull request `number`'s base branch is called `base_ref` (default `main`).
    pub fn set_base_ref(&self, number: u64, base_ref: &str) {
        if let Some(p) = self.st().pulls.get_mut(&number) {
            p.base_ref = base_ref.to_owned();
        }
    }

    /// The diff media type answers GitHub's 406 "too large", so the App must page the files listing.
    pub fn set_diff_too_large(&self, number: u64) {
        if let Some(p) = self.st().pulls.get_mut(&number) {
            p.too_large = true;
        }
    }

    /// Workflow run `run_id`'s artifact `artifact_name`, served by its artifacts listing and
    /// download (the run itself — workflow, head sha — is what the test's `workflow_run`
    /// webhook says).
    pub fn add_workflow_run(&self, run_id: u64, artifact_name: &str, artifact: ArtifactState) {
        let mut st = self.st();
        let artifact_id = st.id();
        st.runs.insert(
            run_id,
            RunState {
                artifact_name: artifact_name.to_owned(),
                artifact,
                artifact_id,
            },
        );
    }

    /// `compare/{base}...{head}` serves `diff` (diff media type) and the files listing derived
    /// from it (JSON), as GitHub does for a merge group's commits.
    pub fn add_compare(&self, base_sha: &str, head_sha: &str, diff: &str) {
        self.st().compares.insert(
            (base_sha.to_owned(), head_sha.to_owned()),
            CompareState {
                diff: diff.to_owned(),
                too_large: false,
            },
        );
    }

    /// The compare's diff media type answers GitHub's 406 "too large": the App must read the
    /// compare's files listing (which GitHub cuts at 300 files).
    pub fn set_compare_too_large(&self, base_sha: &str, head_sha: &str) {
        if let Some(c) = self.st().compares.get_mut(&(base_sha.to_owned(), head_sha.to_owned())) {
            c.too_large = true;
        }
    }

    /// A workflow run `GET /actions/runs` lists (filtered by `event` and `head_sha`, newest first).
    pub fn list_run(&self, run: ListedRun) {
        self.st().listed_runs.push(run);
    }

    /// A check run that already exists on GitHub (say, from before the App's database was lost).
    pub fn add_check_run(&self, head_sha: &str, name: &str, external_id: Option<&str>, status: &str) -> u64 {
        self.add_foreign_check_run(head_sha, name, external_id, status, None, self.app_id)
    }

    /// A check run made by app `app_id` (e.g. [`GITHUB_ACTIONS_APP_ID`]: a workflow with
    /// `checks: write`), completed with `conclusion` when given.
    pub fn add_foreign_check_run(
        &self,
        head_sha: &str,
        name: &str,
        external_id: Option<&str>,
        status: &str,
        conclusion: Option<&str>,
        app_id: u64,
    ) -> u64 {
        let mut st = self.st();
        let id = st.id();
        st.check_runs.push(CheckRunState {
            id,
            name: name.to_owned(),
            head_sha: head_sha.to_owned(),
            external_id: external_id.map(str::to_owned),
            status: status.to_owned(),
            conclusion: conclusion.map(str::to_owned),
            title: None,
            summary: None,
            text: None,
            annotations: Vec::new(),
            annotation_batches: Vec::new(),
            actions: Vec::new(),
            updates: 0,
            app_id,
        });
        id
    }

    /// A comment written by a person (not the App), e.g. one quoting the marker.
    pub fn add_user_comment(&self, pr: u64, body: &str) -> u64 {
        let mut st = self.st();
        let id = st.id();
        st.comments.push(CommentState {
            id,
            pr,
            body: body.to_owned(),
            edits: 0,
            by_app: false,
        });
        id
    }

    /// A zip of `dir`'s files, as `actions/upload-artifact` makes it (paths relative to `dir`,
    /// deflated, no directory entries).
    pub fn zip_dir(dir: &Path) -> Vec<u8> {
        Self::zip_dirs(&[(dir, "")])
    }

    /// [`zip_dir`](Self::zip_dir) of several directories as one tree: the files under each
    /// `(dir, prefix)` are named `prefix/<path relative to dir>` (no prefix for `""`), in path order.
    pub fn zip_dirs(dirs: &[(&Path, &str)]) -> Vec<u8> {
        fn walk(root: &Path, dir: &Path, prefix: &Path, out: &mut Vec<(PathBuf, PathBuf)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(root, &p, prefix, out);
                } else {
                    out.push((prefix.join(p.strip_prefix(root).unwrap()), p));
                }
            }
        }
        let mut files = Vec::new();
        for (dir, prefix) in dirs {
            walk(dir, dir, Path::new(prefix), &mut files);
        }
        // Path order compares component by component: the order of one tree walked sorted.
        files.sort();
        let owned: Vec<(String, Vec<u8>)> = files
            .into_iter()
            .map(|(name, path)| (name.to_string_lossy().replace('\\', "/"), std::fs::read(path).unwrap()))
            .collect();
        let entries: Vec<(&str, &[u8])> = owned.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
        Self::zip_entries(&entries)
    }

    /// A deflated zip of exactly these entries (names as given, so a test can write hostile ones).
    pub fn zip_entries(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    // ---- failure injection ----------------------------------------------------------------

    /// The next `n` requests whose method and OpenAPI path template match (see [`op`]) answer
    /// `status` with `headers` (e.g. 502, or 429 with `retry-after`) and change nothing; then
    /// normal service resumes.
    pub fn fail_next(&self, method: &str, template: &str, n: usize, status: u16, headers: &[(&str, &str)]) {
        self.st().failures.push(FailRule {
            method: method.to_uppercase(),
            template: template.to_owned(),
            remaining: n,
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        });
    }

    /// The next matching request takes effect (GitHub did it) but its answer never comes back:
    /// the response is held for an hour. The returned `Notify` fires when that request arrives,
    /// so a test can then kill the worker mid-job (drop its future) or shut it down.
    pub fn stall_next(&self, method: &str, template: &str) -> Arc<tokio::sync::Notify> {
        let notify = Arc::new(tokio::sync::Notify::new());
        self.st().stalls.push(StallRule {
            method: method.to_uppercase(),
            template: template.to_owned(),
            notify: notify.clone(),
        });
        notify
    }

    // ---- what the App did ---------------------------------------------------------------

    /// GitHub forgets every check run (the repository was deleted and its name taken by a new
    /// one with the same commits).
    pub fn forget_check_runs(&self) {
        self.st().check_runs.clear();
    }

    /// Every check run, in creation order.
    pub fn check_runs(&self) -> Vec<CheckRunState> {
        self.st().check_runs.clone()
    }

    /// The check runs on `head_sha`.
    pub fn check_runs_for(&self, head_sha: &str) -> Vec<CheckRunState> {
        self.st()
            .check_runs
            .iter()
            .filter(|c| c.head_sha == head_sha)
            .cloned()
            .collect()
    }

    /// Every comment, on any pull request, oldest first.
    pub fn all_comments(&self) -> Vec<CommentState> {
        self.st().comments.clone()
    }

    /// The comments on pull request `pr`, oldest first.
    pub fn comments(&self, pr: u64) -> Vec<CommentState> {
        self.st().comments.iter().filter(|c| c.pr == pr).cloned().collect()
    }

    /// Run ids POSTed to `/actions/runs/{id}/rerun`, in order.
    pub fn rerun_requests(&self) -> Vec<u64> {
        self.st().reruns.clone()
    }

    /// How many requests for `method template` reached this repository (failed ones included).
    pub fn calls(&self, method: &str, template: &str) -> usize {
        let m = method.to_uppercase();
        self.st()
            .log
            .iter()
            .filter(|(lm, lt, _)| *lm == m && lt == template)
            .count()
    }

    // ---- serving --------------------------------------------------------------------------

    fn serve(&self, req: &Request, template: &str) -> ResponseTemplate {
        let method = req.method.as_str().to_uppercase();
        let path = req.url.path().to_owned();
        let mut st = self.st();
        let shown = match req.url.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        st.log.push((method.clone(), template.to_owned(), shown));
        if let Some(rule) = st
            .failures
            .iter_mut()
            .find(|r| r.remaining > 0 && r.method == method && r.template == template)
        {
            rule.remaining -= 1;
            let mut resp = ResponseTemplate::new(rule.status).set_body_json(json!({
                "message": format!("fake GitHub: injected {}", rule.status),
                "documentation_url": "https://docs.github.com/rest",
            }));
            for (k, v) in &rule.headers {
                resp = resp.insert_header(k.as_str(), v.as_str());
            }
            return resp;
        }
        let stall = st
            .stalls
            .iter()
            .position(|r| r.method == method && r.template == template)
            .map(|i| st.stalls.remove(i));
        let segs: Vec<String> = path
            .split('/')
            .skip(4) // "", "repos", owner, name
            .map(percent_decode)
            .collect();
        let resp = self.route(&mut st, req, &method, template, &segs);
        drop(st);
        match stall {
            Some(rule) => {
                rule.notify.notify_one();
                resp.set_delay(Duration::from_secs(3600))
            }
            None => resp,
        }
    }

    fn route(
        &self,
        st: &mut RepoState,
        req: &Request,
        method: &str,
        template: &str,
        segs: &[String],
    ) -> ResponseTemplate {
        let seg = |i: usize| segs.get(i).map(String::as_str).unwrap_or("");
        let num = |i: usize| seg(i).parse::<u64>().ok();
        let query = |k: &str| req.url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned());
        let page = query("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).max(1);
        let per_page = query("per_page")
            .and_then(|p| p.parse::<usize>().ok())
            .unwrap_or(30)
            .clamp(1, 100);
        let paged = |items: Vec<Value>| -> Vec<Value> {
            items.into_iter().skip((page - 1) * per_page).take(per_page).collect()
        };
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let accept = req
            .headers
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();

        match (method, template) {
            ("GET", op::PULL) => {
                let Some(p) = num(1).and_then(|n| st.pulls.get(&n)) else {
                    return not_found();
                };
                if accept.contains("diff") {
                    if p.too_large {
                        return ResponseTemplate::new(406).set_body_json(json!({
                            "message": "Sorry, the diff exceeded the maximum number of files (300). Consider using 'List pull requests files' API or locally cloning the repository instead.",
                            "errors": [{ "resource": "PullRequest", "field": "diff", "code": "too_large" }],
                            "documentation_url": "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files",
                        }));
                    }
                    return ResponseTemplate::new(200).set_body_raw(p.diff_bytes.clone(), "text/x-diff");
                }
                ResponseTemplate::new(200).set_body_json(self.pull_json(p))
            }
            ("GET", op::PULL_FILES) => {
                let Some(p) = num(1).and_then(|n| st.pulls.get(&n)) else {
                    return not_found();
                };
                ResponseTemplate::new(200).set_body_json(Value::Array(paged(files_listing(&p.diff))))
            }
            ("GET", op::COMMIT_PULLS) => {
                let sha = seg(1);
                let pulls: Vec<Value> = st
                    .pulls
                    .values()
                    .filter(|p| p.head_sha == sha)
                    .map(|p| self.pull_json(p))
                    .collect();
                ResponseTemplate::new(200).set_body_json(Value::Array(paged(pulls)))
            }
            ("GET", op::CONTENTS) => {
                let path = segs[1..].join("/");
                let Some(sha) = query("ref") else {
                    return not_found();
                };
                let Some(bytes) = st.files.get(&(sha, path.clone())) else {
                    return not_found();
                };
                let name = path.rsplit('/').next().unwrap_or("").to_owned();
                if bytes.len() > 1 << 20 {
                    if accept.contains("raw") {
                        return ResponseTemplate::new(200).set_body_raw(bytes.clone(), "application/octet-stream");
                    }
                    return ResponseTemplate::new(200).set_body_json(json!({
                        "type": "file", "encoding": "none", "content": "", "size": bytes.len(),
                        "name": name, "path": path, "sha": "0".repeat(40),
                    }));
                }
                ResponseTemplate::new(200).set_body_json(json!({
                    "type": "file",
                    "encoding": "base64",
                    "size": bytes.len(),
                    "name": name,
                    "path": path,
                    "sha": "0".repeat(40),
                    "content": base64(bytes),
                }))
            }
            ("GET", op::RUN_ARTIFACTS) => {
                let Some(run) = num(2).and_then(|id| st.runs.get(&id)) else {
                    return not_found();
                };
                // Every run also uploads something else: the App must pick by name.
                let mut artifacts = vec![self.artifact_json(run.artifact_id + 500_000, "coverage-html", false)];
                match &run.artifact {
                    ArtifactState::Zip(_) => {
                        artifacts.push(self.artifact_json(run.artifact_id, &run.artifact_name, false))
                    }
                    ArtifactState::Expired => {
                        artifacts.push(self.artifact_json(run.artifact_id, &run.artifact_name, true))
                    }
                    ArtifactState::Missing => {}
                }
                let total = artifacts.len();
                ResponseTemplate::new(200).set_body_json(json!({ "total_count": total, "artifacts": paged(artifacts) }))
            }
            ("GET", op::ARTIFACT_ZIP) => {
                let Some(id) = num(2) else { return not_found() };
                if seg(3) != "zip" {
                    return not_found();
                }
                let Some(run) = st.runs.values().find(|r| r.artifact_id == id) else {
                    return not_found();
                };
                match run.artifact {
                    ArtifactState::Zip(_) => ResponseTemplate::new(302).insert_header(
                        "location",
                        format!("{}{}?artifact={id}&sig=fake-signed-url", self.uri, self.blob_path()).as_str(),
                    ),
                    ArtifactState::Expired => ResponseTemplate::new(410).set_body_json(json!({
                        "message": "Artifact has expired",
                        "documentation_url": "https://docs.github.com/rest/actions/artifacts#download-an-artifact",
                    })),
                    ArtifactState::Missing => not_found(),
                }
            }
            ("GET", op::COMPARE) => {
                let Some((base, head)) = seg(1).split_once("...") else {
                    return not_found();
                };
                let Some(c) = st.compares.get(&(base.to_owned(), head.to_owned())) else {
                    return not_found();
                };
                if accept.contains("diff") {
                    if c.too_large {
                        return ResponseTemplate::new(406).set_body_json(json!({
                            "message": "Sorry, this diff is taking too long to generate.",
                            "errors": [{ "resource": "Comparison", "field": "diff", "code": "too_large" }],
                            "documentation_url": "https://docs.github.com/rest/commits/commits#compare-two-commits",
                        }));
                    }
                    return ResponseTemplate::new(200).set_body_raw(c.diff.clone().into_bytes(), "text/x-diff");
                }
                // GitHub lists at most 300 files, on the first page only, and says nothing of a cut.
                let files: Vec<Value> = files_listing(&c.diff).into_iter().take(300).collect();
                let files = if page == 1 { files } else { Vec::new() };
                ResponseTemplate::new(200).set_body_json(json!({
                    "status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
                    "commits": [], "files": files,
                }))
            }
            ("GET", op::RUNS) => {
                let event = query("event");
                let head = query("head_sha");
                let runs: Vec<Value> = st
                    .listed_runs
                    .iter()
                    .rev()
                    .filter(|r| event.as_deref().is_none_or(|e| r.event == e))
                    .filter(|r| head.as_deref().is_none_or(|h| r.head_sha == h))
                    .map(|r| {
                        json!({
                            "id": r.id, "head_sha": r.head_sha, "event": r.event, "path": r.path,
                            "status": r.status,
                            "conclusion": if r.status == "completed" { json!("success") } else { Value::Null },
                        })
                    })
                    .collect();
                let total = runs.len();
                ResponseTemplate::new(200).set_body_json(json!({ "total_count": total, "workflow_runs": paged(runs) }))
            }
            ("POST", op::RERUN) => {
                let Some(id) = num(2).filter(|id| st.runs.contains_key(id)) else {
                    return not_found();
                };
                st.reruns.push(id);
                ResponseTemplate::new(201).set_body_json(json!({}))
            }
            ("GET", op::COMMIT_CHECK_RUNS) => {
                let sha = seg(1);
                let name = query("check_name");
                let latest = query("filter").as_deref() != Some("all");
                let mut runs: Vec<&CheckRunState> = st
                    .check_runs
                    .iter()
                    .filter(|c| c.head_sha == sha && name.as_deref().is_none_or(|n| c.name == n))
                    .collect();
                if latest {
                    // The most recent run of each name.
                    let mut by_name: BTreeMap<&str, &CheckRunState> = BTreeMap::new();
                    for c in runs {
                        by_name.insert(c.name.as_str(), c);
                    }
                    runs = by_name.into_values().collect();
                }
                let all: Vec<Value> = runs.into_iter().map(|c| self.check_run_json(c)).collect();
                let total = all.len();
                ResponseTemplate::new(200).set_body_json(json!({ "total_count": total, "check_runs": paged(all) }))
            }
            ("POST", op::CHECK_RUNS) => {
                let id = st.id();
                let mut c = CheckRunState {
                    id,
                    name: body["name"].as_str().unwrap_or("").to_owned(),
                    head_sha: body["head_sha"].as_str().unwrap_or("").to_owned(),
                    external_id: body["external_id"].as_str().map(str::to_owned),
                    status: "queued".to_owned(),
                    conclusion: None,
                    title: None,
                    summary: None,
                    text: None,
                    annotations: Vec::new(),
                    annotation_batches: Vec::new(),
                    actions: Vec::new(),
                    updates: 0,
                    app_id: self.app_id,
                };
                apply_check_body(&mut c, &body);
                let out = self.check_run_json(&c);
                st.check_runs.push(c);
                ResponseTemplate::new(201).set_body_json(out)
            }
            ("GET", op::CHECK_RUN) | ("PATCH", op::CHECK_RUN) => {
                let Some(c) = num(1).and_then(|id| st.check_runs.iter_mut().find(|c| c.id == id)) else {
                    return not_found();
                };
                if method == "PATCH" && c.app_id != self.app_id {
                    // GitHub: an app may update only the check runs it made.
                    return ResponseTemplate::new(403).set_body_json(json!({
                        "message": "Invalid app_id `4242` - check run can only be modified by the GitHub App that created it.",
                    }));
                }
                if method == "PATCH" {
                    apply_check_body(c, &body);
                    c.updates += 1;
                }
                let c = c.clone();
                ResponseTemplate::new(200).set_body_json(self.check_run_json(&c))
            }
            ("GET", op::ISSUE_COMMENTS) | ("POST", op::ISSUE_COMMENTS) => {
                let Some(pr) = num(1).filter(|n| st.pulls.contains_key(n)) else {
                    return not_found();
                };
                if method == "GET" {
                    let all: Vec<Value> = st
                        .comments
                        .iter()
                        .filter(|c| c.pr == pr)
                        .map(|c| self.comment_json(c))
                        .collect();
                    return ResponseTemplate::new(200).set_body_json(Value::Array(paged(all)));
                }
                let id = st.id();
                let c = CommentState {
                    id,
                    pr,
                    body: body["body"].as_str().unwrap_or("").to_owned(),
                    edits: 0,
                    by_app: true,
                };
                let out = self.comment_json(&c);
                st.comments.push(c);
                ResponseTemplate::new(201).set_body_json(out)
            }
            ("PATCH", op::COMMENT) => {
                let Some(c) = num(2).and_then(|id| st.comments.iter_mut().find(|c| c.id == id)) else {
                    return not_found();
                };
                if !c.by_app {
                    return ResponseTemplate::new(403).set_body_json(json!({
                        "message": "Resource not accessible by integration",
                    }));
                }
                c.body = body["body"].as_str().unwrap_or("").to_owned();
                c.edits += 1;
                let c = c.clone();
                ResponseTemplate::new(200).set_body_json(self.comment_json(&c))
            }
            _ => ResponseTemplate::new(501).set_body_json(json!({
                "message": format!("fake repository: {method} {template} is not modelled")
            })),
        }
    }

    fn serve_blob(&self, req: &Request) -> ResponseTemplate {
        if req.headers.get("authorization").is_some() {
            // The signed blob URL needs no token; sending ours there would leak it.
            return ResponseTemplate::new(400).set_body_string("the installation token was sent to blob storage");
        }
        let id = req
            .url
            .query_pairs()
            .find(|(k, _)| k == "artifact")
            .and_then(|(_, v)| v.parse::<u64>().ok());
        let st = self.st();
        match id.and_then(|id| st.runs.values().find(|r| r.artifact_id == id)) {
            Some(RunState {
                artifact: ArtifactState::Zip(bytes),
                ..
            }) => ResponseTemplate::new(200).set_body_raw(bytes.clone(), "application/zip"),
            _ => ResponseTemplate::new(404).set_body_string("BlobNotFound"),
        }
    }

    // ---- JSON shapes ----------------------------------------------------------------------

    fn repo_json(&self) -> Value {
        json!({
            "id": super::app_harness::REPO_ID,
            "name": self.name,
            "full_name": self.full_name(),
            "owner": { "login": self.owner, "type": "Organization" },
        })
    }

    fn pull_json(&self, p: &PullState) -> Value {
        json!({
            "number": p.number,
            "state": p.state,
            "draft": false,
            "title": format!("Pull request {}", p.number),
            "html_url": format!("https://github.com/{}/pull/{}", self.full_name(), p.number),
            "user": { "login": "octocat", "type": "User" },
            "head": { "sha": p.head_sha, "ref": format!("feature-{}", p.number), "repo": if p.fork {
                json!({"id": 999_999, "full_name": "fork-owner/fork", "name": "fork"})
            } else {
                self.repo_json()
            } },
            "base": { "sha": p.base_sha, "ref": p.base_ref, "repo": self.repo_json() },
            "merged": p.merged.is_some(),
            "merge_commit_sha": p.merged.as_ref().map(|m| &m.0),
            "merged_at": p.merged.as_ref().map(|m| &m.1),
        })
    }

    fn artifact_json(&self, id: u64, name: &str, expired: bool) -> Value {
        json!({
            "id": id,
            "node_id": format!("MDg6QXJ0aWZhY3Q{id}"),
            "name": name,
            "size_in_bytes": 4096,
            "url": format!("{}/repos/{}/actions/artifacts/{id}", self.uri, self.full_name()),
            "archive_download_url": format!("{}/repos/{}/actions/artifacts/{id}/zip", self.uri, self.full_name()),
            "expired": expired,
            "created_at": "2026-11-20T11:00:00Z",
            "expires_at": "2027-02-18T11:00:00Z",
        })
    }

    fn check_run_json(&self, c: &CheckRunState) -> Value {
        json!({
            "id": c.id,
            "name": c.name,
            "head_sha": c.head_sha,
            "external_id": c.external_id,
            "status": c.status,
            "conclusion": c.conclusion,
            "html_url": format!("https://github.com/{}/runs/{}", self.full_name(), c.id),
            "output": {
                "title": c.title,
                "summary": c.summary,
                "text": c.text,
                "annotations_count": c.annotations.len(),
            },
            "app": { "id": c.app_id, "slug": if c.app_id == self.app_id { "flakegate" } else { "github-actions" } },
            "pull_requests": [],
        })
    }

    fn comment_json(&self, c: &CommentState) -> Value {
        let (user, app) = if c.by_app {
            (
                json!({ "login": "flakegate[bot]", "type": "Bot" }),
                json!({ "id": self.app_id, "slug": "flakegate", "name": "flakegate" }),
            )
        } else {
            (json!({ "login": "octocat", "type": "User" }), Value::Null)
        };
        json!({
            "id": c.id,
            "body": c.body,
            "user": user,
            "performed_via_github_app": app,
            "html_url": format!("https://github.com/{}/pull/{}#issuecomment-{}", self.full_name(), c.pr, c.id),
        })
    }
}

fn not_found() -> ResponseTemplate {
    ResponseTemplate::new(404).set_body_json(json!({
        "message": "Not Found",
        "documentation_url": "https://docs.github.com/rest",
    }))
}

/// Apply a create/update body the way GitHub does: fields given replace, annotations append,
/// a conclusion completes the run.
fn apply_check_body(c: &mut CheckRunState, body: &Value) {
    if let Some(n) = body["name"].as_str() {
        c.name = n.to_owned();
    }
    if let Some(e) = body["external_id"].as_str() {
        c.external_id = Some(e.to_owned());
    }
    if let Some(s) = body["status"].as_str() {
        c.status = s.to_owned();
    }
    if let Some(k) = body["conclusion"].as_str() {
        c.conclusion = Some(k.to_owned());
        c.status = "completed".to_owned();
    }
    let out = &body["output"];
    if out.is_object() {
        if let Some(t) = out["title"].as_str() {
            c.title = Some(t.to_owned());
        }
        if let Some(s) = out["summary"].as_str() {
            c.summary = Some(s.to_owned());
        }
        if let Some(t) = out["text"].as_str() {
            c.text = Some(t.to_owned());
        }
        let anns = out["annotations"].as_array().cloned().unwrap_or_default();
        c.annotation_batches.push(anns.len());
        c.annotations.extend(anns);
    }
    if let Some(a) = body["actions"].as_array() {
        c.actions = a.clone();
    }
}

/// The pull-request files listing GitHub derives from a unified git diff: per file `filename`,
/// `status`, `previous_filename`, counts and the `patch` text (hunks only; none for binaries).
pub fn files_listing(diff: &str) -> Vec<Value> {
    const EMPTY_BLOB: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in diff.split_inclusive('\n') {
        if line.starts_with("diff --git ") || blocks.is_empty() {
            blocks.push(Vec::new());
        }
        blocks.last_mut().unwrap().push(line);
    }
    let strip = |p: &str, prefix: &str| -> Option<String> {
        let p = p.trim_end_matches(['\n', '\r']);
        let p = p.strip_suffix('\t').unwrap_or(p);
        if p == "/dev/null" {
            return None;
        }
        let p = p.trim_matches('"');
        Some(p.strip_prefix(prefix).unwrap_or(p).to_owned())
    };
    let mut out = Vec::new();
    for block in blocks {
        let Some(first) = block.first().filter(|l| l.starts_with("diff --git ")) else {
            continue;
        };
        // `diff --git a/x b/x`: the fallback when no ---/+++ lines (binary, mode-only, pure rename).
        let names = first.trim_start_matches("diff --git ").trim_end();
        let (mut old, mut new) = match names.split_once(" b/") {
            Some((a, b)) => (Some(a.trim_start_matches("a/").to_owned()), Some(b.to_owned())),
            None => (None, None),
        };
        let (mut status, mut binary, mut blob) = ("modified", false, None::<String>);
        let mut hunk_start = None;
        for (i, l) in block.iter().enumerate() {
            if l.starts_with("@@") {
                hunk_start = Some(i);
                break;
            }
            if l.starts_with("new file mode") {
                status = "added";
            } else if l.starts_with("deleted file mode") {
                status = "removed";
            } else if let Some(p) = l.strip_prefix("rename from ") {
                status = "renamed";
                old = Some(p.trim_end().to_owned());
            } else if let Some(p) = l.strip_prefix("rename to ") {
                new = Some(p.trim_end().to_owned());
            } else if let Some(p) = l.strip_prefix("copy from ") {
                status = "copied";
                old = Some(p.trim_end().to_owned());
            } else if let Some(p) = l.strip_prefix("copy to ") {
                new = Some(p.trim_end().to_owned());
            } else if l.starts_with("old mode") && status == "modified" {
                status = "changed";
            } else if l.starts_with("Binary files") || l.starts_with("GIT binary patch") {
                binary = true;
            } else if let Some(idx) = l.strip_prefix("index ") {
                let to = idx
                    .split("..")
                    .nth(1)
                    .unwrap_or("")
                    .split(' ')
                    .next()
                    .unwrap_or("")
                    .trim();
                blob = Some(if EMPTY_BLOB.starts_with(to) && !to.is_empty() {
                    EMPTY_BLOB.to_owned()
                } else {
                    format!("{to:0<40}")
                });
            } else if let Some(p) = l.strip_prefix("--- ") {
                if let Some(p) = strip(p, "a/") {
                    old = Some(p);
                }
            } else if let Some(p) = l.strip_prefix("+++ ") {
                if let Some(p) = strip(p, "b/") {
                    new = Some(p);
                }
            }
        }
        let hunks: Vec<&str> = hunk_start.map(|i| block[i..].to_vec()).unwrap_or_default();
        let additions = hunks.iter().filter(|l| l.starts_with('+')).count();
        let deletions = hunks.iter().filter(|l| l.starts_with('-')).count();
        let patch: String = hunks.concat();
        let patch = patch.strip_suffix('\n').unwrap_or(&patch).to_owned();
        let filename = (if status == "removed" { old.clone() } else { new.clone() }).unwrap_or_default();
        let mut entry = json!({
            "sha": blob.unwrap_or_else(|| "0".repeat(40)),
            "filename": filename,
            "status": status,
            "additions": additions,
            "deletions": deletions,
            "changes": additions + deletions,
        });
        if !binary && !patch.is_empty() {
            entry["patch"] = json!(patch);
        }
        if matches!(status, "renamed" | "copied") {
            entry["previous_filename"] = json!(old.unwrap_or_default());
        }
        out.push(entry);
    }
    out
}

/// Standard base64 with GitHub's line breaks every 60 characters (the contents API's encoding).
pub fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for (i, c) in bytes.chunks(3).enumerate() {
        if i > 0 && i % 15 == 0 {
            out.push('\n');
        }
        let n =
            (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for j in 0..4 {
            if j <= c.len() {
                out.push(T[((n >> (18 - 6 * j)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out.push('\n');
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
