//! The GitHub client against the fake GitHub (`support::fake_github`).

use std::io::Write;
use std::time::Duration;

use crate::support::fake_github::{example, validate_request_body, FakeGithub};
use flakegate::github::*;
use serde_json::{json, Value};
use wiremock::{Request, ResponseTemplate};

const SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

fn repo() -> RepoName {
    RepoName::new("octo-org", "octo-repo")
}

fn client(fake: &FakeGithub) -> std::sync::Arc<InstallationClient> {
    let creds = AppCredentials::from_pem(AppId(fake.app_id), fake.private_key_pem().as_bytes()).unwrap();
    GithubApp::new(&fake.uri(), creds)
        .unwrap()
        .installation(InstallationId(77))
        .unwrap()
}

fn body(req: &Request) -> Value {
    serde_json::from_slice(&req.body).unwrap()
}

#[tokio::test]
async fn installation_token_is_cached_across_calls() {
    let fake = FakeGithub::start().await;
    fake.mock("GET", "/repos/octo-org/octo-repo/pulls/1347", 2, |_| {
        ResponseTemplate::new(200).set_body_json(example("pull-request"))
    })
    .await;
    let gh = client(&fake);
    let pr = gh.pull_request(&repo(), PullNumber(1347)).await.unwrap();
    assert_eq!(pr.number, PullNumber(1347));
    assert_eq!(pr.head.sha, CommitSha::from(SHA));
    gh.pull_request(&repo(), PullNumber(1347)).await.unwrap();
    assert_eq!(fake.token_requests(), 1);
    fake.verify().await;
}

#[tokio::test]
async fn each_installation_fetches_one_token_however_many_callers() {
    let fake = FakeGithub::start().await;
    fake.mock("GET", "/repos/octo-org/octo-repo/pulls/1347", 3, |_| {
        ResponseTemplate::new(200).set_body_json(example("pull-request"))
    })
    .await;
    let creds = AppCredentials::from_pem(AppId(fake.app_id), fake.private_key_pem().as_bytes()).unwrap();
    let app = GithubApp::new(&fake.uri(), creds).unwrap();
    // Three jobs, each asking the App for the installation's client.
    for _ in 0..3 {
        let gh = app.installation(InstallationId(77)).unwrap();
        gh.pull_request(&repo(), PullNumber(1347)).await.unwrap();
    }
    assert_eq!(fake.token_requests(), 1);
    fake.verify().await;
}

#[tokio::test]
async fn token_close_to_expiry_is_renewed() {
    let fake = FakeGithub::start().await;
    fake.set_token_ttl(Duration::from_secs(120)); // under the 5-minute margin
    fake.mock("GET", "/repos/octo-org/octo-repo/pulls/1347", 2, |_| {
        ResponseTemplate::new(200).set_body_json(example("pull-request"))
    })
    .await;
    let gh = client(&fake);
    gh.pull_request(&repo(), PullNumber(1347)).await.unwrap();
    gh.pull_request(&repo(), PullNumber(1347)).await.unwrap();
    assert_eq!(fake.token_requests(), 2);
    fake.verify().await;
}

#[tokio::test]
async fn commit_pulls_for_a_fork_run() {
    let fake = FakeGithub::start().await;
    let path = format!("/repos/octo-org/octo-repo/commits/{SHA}/pulls");
    fake.mock("GET", &path, 1, |_| {
        ResponseTemplate::new(200).set_body_json(json!([example("pull-request")]))
    })
    .await;
    let pulls = client(&fake)
        .commit_pulls(&repo(), &CommitSha::from(SHA))
        .await
        .unwrap();
    assert_eq!(pulls.len(), 1);
    fake.verify().await;
}

#[tokio::test]
async fn diff_is_fetched_with_the_diff_media_type() {
    let fake = FakeGithub::start().await;
    fake.mock("GET", "/repos/octo-org/octo-repo/pulls/5", 1, |req| {
        let accept: Vec<_> = req.headers.get_all("accept").iter().collect();
        assert_eq!(accept, ["application/vnd.github.diff"]);
        ResponseTemplate::new(200).set_body_string("diff --git a/x b/x\n")
    })
    .await;
    let p = client(&fake).pull_diff(&repo(), PullNumber(5)).await.unwrap();
    assert_eq!(p, PatchSource::Diff(b"diff --git a/x b/x\n".to_vec()));
    fake.verify().await;
}

#[tokio::test]
async fn too_large_diff_falls_back_to_two_pages_of_files() {
    let fake = FakeGithub::start().await;
    fake.mock("GET", "/repos/octo-org/octo-repo/pulls/5", 1, |_| {
        ResponseTemplate::new(406).set_body_json(json!({
            "message": "Sorry, the diff exceeded the maximum number of files (300).",
            "errors": [{ "resource": "PullRequest", "field": "diff", "code": "too_large" }],
        }))
    })
    .await;
    fake.mock("GET", "/repos/octo-org/octo-repo/pulls/5/files", 2, |req| {
        let q: std::collections::HashMap<String, String> = req.url.query_pairs().into_owned().collect();
        assert_eq!(q["per_page"], "100");
        let (start, n) = match q["page"].as_str() {
            "1" => (0, 100),
            "2" => (100, 20),
            p => panic!("page {p}"),
        };
        let files: Vec<Value> = (start..start + n)
            .map(|i| {
                json!({ "sha": "bbcd538c8e72b8c175046e27cc8f907076331401", "filename": format!("src/f{i}.py"),
                "status": "modified", "additions": 1, "deletions": 1, "changes": 2,
                "patch": "@@ -1 +1 @@\n-a\n+b" })
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(files)
    })
    .await;
    let p = client(&fake).pull_diff(&repo(), PullNumber(5)).await.unwrap();
    let PatchSource::Files(json) = p else {
        panic!("expected the files listing")
    };
    let patch = flakegate::gate::patch::parse_github_files("files.json", &json).unwrap();
    assert_eq!(patch.files.len(), 120);
    fake.verify().await;
}

#[tokio::test]
async fn file_at_decodes_base64_and_maps_404_to_none() {
    let fake = FakeGithub::start().await;
    fake.mock(
        "GET",
        "/repos/octo-org/octo-repo/contents/.github/flakegate.yml",
        1,
        |req| {
            assert_eq!(req.url.query(), Some(format!("ref={SHA}").as_str()));
            let mut v = example("content-file-response-if-content-is-a-file");
            v["content"] = json!("dmVyc2lvbjog\nMQo=\n"); // "version: 1\n"
            ResponseTemplate::new(200).set_body_json(v)
        },
    )
    .await;
    fake.mock(
        "GET",
        "/repos/octo-org/octo-repo/contents/.flakegate/ledger.json",
        1,
        |_| ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" })),
    )
    .await;
    let gh = client(&fake);
    let sha = CommitSha::from(SHA);
    assert_eq!(
        gh.file_at(&repo(), ".github/flakegate.yml", &sha)
            .await
            .unwrap()
            .unwrap(),
        b"version: 1\n"
    );
    assert_eq!(gh.file_at(&repo(), ".flakegate/ledger.json", &sha).await.unwrap(), None);
    fake.verify().await;
}

fn zip_bytes(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[tokio::test]
async fn artifact_redirect_download_and_extraction() {
    let fake = FakeGithub::start().await;
    fake.mock(
        "GET",
        "/repos/octo-org/octo-repo/actions/runs/30433642/artifacts",
        1,
        |_| ResponseTemplate::new(200).set_body_json(example("artifact-paginated")),
    )
    .await;
    let blob = format!("{}/blob/11.zip", fake.uri());
    fake.mock(
        "GET",
        "/repos/octo-org/octo-repo/actions/artifacts/11/zip",
        1,
        move |_| ResponseTemplate::new(302).insert_header("location", blob.as_str()),
    )
    .await;
    let zip = zip_bytes(&[("report.json", b"{}"), ("coverage/.coverage", b"sqlite")]);
    fake.mock_raw("GET", "/blob/11.zip", 1, move |req| {
        assert!(
            req.headers.get("authorization").is_none(),
            "the installation token leaked to blob storage"
        );
        ResponseTemplate::new(200).set_body_bytes(zip.clone())
    })
    .await;
    fake.mock("GET", "/repos/octo-org/octo-repo/actions/artifacts/13/zip", 1, |_| {
        ResponseTemplate::new(410).set_body_json(json!({ "message": "Artifact has expired" }))
    })
    .await;
    let gh = client(&fake);
    let arts = gh.run_artifacts(&repo(), 30433642).await.unwrap();
    assert_eq!(arts.iter().map(|a| a.id).collect::<Vec<_>>(), [11, 13]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = gh
        .download_artifact(&repo(), 11, tmp.path(), &ArtifactLimits::default())
        .await
        .unwrap();
    assert_eq!(std::fs::read(dir.join("coverage/.coverage")).unwrap(), b"sqlite");
    assert!(
        !tmp.path().join("artifact-11.zip").exists(),
        "the downloaded zip is removed"
    );
    let e = gh
        .download_artifact(&repo(), 13, tmp.path(), &ArtifactLimits::default())
        .await
        .unwrap_err();
    assert!(matches!(e, GithubError::Gone(_)), "{e:?}");
    fake.verify().await;
}

#[tokio::test]
async fn download_cap_stops_the_stream() {
    let fake = FakeGithub::start().await;
    let blob = format!("{}/blob/11.zip", fake.uri());
    fake.mock(
        "GET",
        "/repos/octo-org/octo-repo/actions/artifacts/11/zip",
        1,
        move |_| ResponseTemplate::new(302).insert_header("location", blob.as_str()),
    )
    .await;
    fake.mock_raw("GET", "/blob/11.zip", 1, |_| {
        ResponseTemplate::new(200).set_body_bytes(vec![7u8; 4096])
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let limits = ArtifactLimits {
        max_download_bytes: 1000,
        ..Default::default()
    };
    let e = client(&fake)
        .download_artifact(&repo(), 11, tmp.path(), &limits)
        .await
        .unwrap_err();
    assert!(
        matches!(e, GithubError::Artifact(ArtifactError::DownloadTooLarge { .. })),
        "{e:?}"
    );
    fake.verify().await;
}

fn check_run_json(id: u64, external_id: &str) -> Value {
    let mut v = example("check-run");
    v["id"] = json!(id);
    v["name"] = json!("flakegate");
    v["head_sha"] = json!(SHA);
    v["external_id"] = json!(external_id);
    v["app"]["id"] = json!(crate::support::fake_github::APP_ID);
    v
}

fn completed_fields(annotations: usize) -> CheckRunFields {
    let mut f = CheckRunFields::new("pr-5", CheckStatus::Completed);
    f.conclusion = Some(Conclusion::Failure);
    f.output = Some(CheckOutput {
        title: "FAIL: 3 blind lines".into(),
        summary: "summary".into(),
        text: Some("```json\n{}\n```".into()),
        annotations: (0..annotations)
            .map(|i| Annotation {
                path: "src/app.py".into(),
                start_line: i as u32 + 1,
                end_line: i as u32 + 1,
                annotation_level: AnnotationLevel::Warning,
                message: format!("blind line {i}"),
                title: None,
                raw_details: None,
            })
            .collect(),
    });
    f.actions = vec![CheckAction {
        label: "Re-run evidence".into(),
        description: "Re-run the evidence workflow".into(),
        identifier: "rerun".into(),
    }];
    f
}

#[tokio::test]
async fn check_run_with_120_annotations_takes_three_requests() {
    let fake = FakeGithub::start().await;
    fake.mock("POST", "/repos/octo-org/octo-repo/check-runs", 1, |_| {
        ResponseTemplate::new(201).set_body_json(check_run_json(99, "pr-5"))
    })
    .await;
    fake.mock("PATCH", "/repos/octo-org/octo-repo/check-runs/99", 2, |_| {
        ResponseTemplate::new(200).set_body_json(check_run_json(99, "pr-5"))
    })
    .await;
    let run = client(&fake)
        .create_check_run(&repo(), &CommitSha::from(SHA), &completed_fields(120))
        .await
        .unwrap();
    assert_eq!(run.id, 99);
    let mut sizes = Vec::new();
    for r in fake.requests("POST", "/repos/octo-org/octo-repo/check-runs").await {
        let b = body(&r);
        assert_eq!(
            (b["name"].as_str(), b["conclusion"].as_str()),
            (Some("flakegate"), Some("failure"))
        );
        sizes.push(b["output"]["annotations"].as_array().unwrap().len());
    }
    for r in fake.requests("PATCH", "/repos/octo-org/octo-repo/check-runs/99").await {
        let b = body(&r);
        assert_eq!(b["output"]["text"], "```json\n{}\n```", "text is resent, not cleared");
        sizes.push(b["output"]["annotations"].as_array().unwrap().len());
    }
    assert_eq!(sizes, [50, 50, 20]);
    assert_eq!(
        body(&fake.requests("PATCH", "/repos/octo-org/octo-repo/check-runs/99").await[1])["output"]["annotations"][19]
            ["message"],
        "blind line 119"
    );
    fake.verify().await;
}

/// Only this App's check run is "ours": one of the same name and external id made by another
/// app (a workflow's token with `checks: write`, say) is never returned to be updated.
#[tokio::test]
async fn existing_check_run_is_found_only_among_our_apps() {
    let fake = FakeGithub::start().await;
    let list = format!("/repos/octo-org/octo-repo/commits/{SHA}/check-runs");
    fake.mock("GET", &list, 2, |req| {
        assert!(req.url.query().unwrap().contains("check_name=flakegate"));
        let mut foreign = check_run_json(7, "pr-5");
        foreign["app"]["id"] = json!(15368);
        foreign["conclusion"] = json!("success");
        ResponseTemplate::new(200).set_body_json(json!({
            "total_count": 3,
            "check_runs": [foreign, check_run_json(5, "pr-4"), check_run_json(6, "pr-5")],
        }))
    })
    .await;
    let c = client(&fake);
    let found = c
        .find_check_run(&repo(), &CommitSha::from(SHA), "flakegate", "pr-5")
        .await
        .unwrap();
    assert_eq!(found.map(|r| r.id), Some(6));
    let none = c
        .find_check_run(&repo(), &CommitSha::from(SHA), "flakegate", "pr-9")
        .await
        .unwrap();
    assert_eq!(none, None);
    fake.verify().await;
}

#[tokio::test]
async fn sticky_comment_find_create_update() {
    let fake = FakeGithub::start().await;
    const MARKER: &str = "<!-- flakegate -->";
    let comments = move |with_ours: bool| {
        let human =
            json!({ "id": 1, "body": format!("quoting {MARKER}"), "user": { "login": "octocat", "type": "User" } });
        let ours = json!({ "id": 2, "body": format!("{MARKER}\nblind"), "user": { "login": "flakegate[bot]", "type": "Bot" },
            "performed_via_github_app": { "id": crate::support::fake_github::APP_ID } });
        if with_ours {
            json!([human, ours])
        } else {
            json!([human])
        }
    };
    fake.mock("GET", "/repos/octo-org/octo-repo/issues/5/comments", 1, move |_| {
        ResponseTemplate::new(200).set_body_json(comments(true))
    })
    .await;
    fake.mock("GET", "/repos/octo-org/octo-repo/issues/6/comments", 1, move |_| {
        ResponseTemplate::new(200).set_body_json(comments(false))
    })
    .await;
    fake.mock("PATCH", "/repos/octo-org/octo-repo/issues/comments/2", 1, |req| {
        ResponseTemplate::new(200).set_body_json(json!({ "id": 2, "body": body(req)["body"] }))
    })
    .await;
    fake.mock("POST", "/repos/octo-org/octo-repo/issues/6/comments", 1, |req| {
        ResponseTemplate::new(201).set_body_json(json!({ "id": 3, "body": body(req)["body"] }))
    })
    .await;
    let gh = client(&fake);
    let found = gh
        .find_comment_with_marker(&repo(), PullNumber(5), MARKER)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, 2, "a human quoting the marker is not ours");
    gh.update_comment(&repo(), found.id, &format!("{MARKER}\nnow clear"))
        .await
        .unwrap();
    assert!(gh
        .find_comment_with_marker(&repo(), PullNumber(6), MARKER)
        .await
        .unwrap()
        .is_none());
    assert_eq!(gh.create_comment(&repo(), PullNumber(6), MARKER).await.unwrap().id, 3);
    fake.verify().await;
}

#[tokio::test]
async fn rerun_workflow() {
    let fake = FakeGithub::start().await;
    fake.mock(
        "POST",
        "/repos/octo-org/octo-repo/actions/runs/30433642/rerun",
        1,
        |_| ResponseTemplate::new(201).set_body_json(json!({})),
    )
    .await;
    client(&fake).rerun_workflow(&repo(), 30433642).await.unwrap();
    fake.verify().await;
}

#[tokio::test]
async fn rate_limits_and_errors_are_classified() {
    let fake = FakeGithub::start().await;
    // Any instant: the reset is passed on as the instant it is, not a wait from our clock.
    let reset: u64 = 1_795_000_000;
    let answers = [
        ResponseTemplate::new(429).insert_header("retry-after", "7"),
        ResponseTemplate::new(403)
            .insert_header("retry-after", "60")
            .set_body_json(json!({ "message": "You have exceeded a secondary rate limit." })),
        ResponseTemplate::new(403)
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", reset.to_string().as_str())
            .set_body_json(json!({ "message": "API rate limit exceeded" })),
        ResponseTemplate::new(502),
        ResponseTemplate::new(403).set_body_json(json!({ "message": "Resource not accessible by integration" })),
        ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" })),
    ];
    for (i, answer) in answers.into_iter().enumerate() {
        fake.mock(
            "GET",
            &format!("/repos/octo-org/octo-repo/pulls/{}", i + 1),
            1,
            move |_| answer.clone(),
        )
        .await;
    }
    let gh = client(&fake);
    let mut got = Vec::new();
    for i in 1..=6 {
        got.push(gh.pull_request(&repo(), PullNumber(i)).await.unwrap_err());
    }
    assert!(
        matches!(got[0], GithubError::Retryable { retry_after: Some(d), .. } if d == Wait::For(Duration::from_secs(7))),
        "{:?}",
        got[0]
    );
    assert!(
        matches!(got[1], GithubError::Retryable { retry_after: Some(d), .. } if d == Wait::For(Duration::from_secs(60))),
        "{:?}",
        got[1]
    );
    assert!(
        matches!(got[2], GithubError::Retryable { retry_after: Some(d), .. } if d == Wait::Until(std::time::UNIX_EPOCH + Duration::from_secs(reset))),
        "{:?}",
        got[2]
    );
    assert!(
        matches!(got[3], GithubError::Retryable { retry_after: None, .. }),
        "{:?}",
        got[3]
    );
    assert!(
        matches!(got[4], GithubError::Fatal { status: Some(403), .. }),
        "{:?}",
        got[4]
    );
    assert!(matches!(got[5], GithubError::NotFound(_)), "{:?}", got[5]);
    fake.verify().await;
}

#[test]
fn the_fake_rejects_bodies_github_would() {
    let create = "/repos/{owner}/{repo}/check-runs";
    let ok = json!({ "name": "flakegate", "head_sha": SHA, "status": "completed", "conclusion": "success" });
    validate_request_body("POST", create, &ok).unwrap();
    let no_conclusion = json!({ "name": "flakegate", "head_sha": SHA, "status": "completed" });
    assert!(validate_request_body("POST", create, &no_conclusion).is_err());
    let anns: Vec<Value> = (0..51)
        .map(|i| json!({ "path": "a", "start_line": i + 1, "end_line": i + 1, "annotation_level": "warning", "message": "m" }))
        .collect();
    let too_many =
        json!({ "name": "f", "head_sha": SHA, "output": { "title": "t", "summary": "s", "annotations": anns } });
    assert!(validate_request_body("POST", create, &too_many).is_err());
    let long_label = json!({ "name": "f", "head_sha": SHA, "actions": [{ "label": "x".repeat(21), "description": "d", "identifier": "i" }] });
    assert!(validate_request_body("POST", create, &long_label).is_err());
    assert!(validate_request_body(
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        &json!({})
    )
    .is_err());
}

#[tokio::test]
#[should_panic(expected = "requests matched no mock")]
async fn strict_teardown_fails_on_an_unmatched_request() {
    let fake = FakeGithub::start().await;
    let _ = client(&fake).pull_request(&repo(), PullNumber(1)).await;
    fake.verify().await;
}

#[tokio::test]
#[should_panic(expected = "not authenticated with an installation token")]
async fn strict_teardown_fails_on_an_unauthenticated_or_invalid_request() {
    let fake = FakeGithub::start().await;
    fake.mock("POST", "/repos/octo-org/octo-repo/issues/6/comments", 1, |_| {
        ResponseTemplate::new(201)
    })
    .await;
    let url = format!("{}/repos/octo-org/octo-repo/issues/6/comments", fake.uri());
    let r = reqwest::Client::new()
        .post(url)
        .json(&json!({ "bodyy": "typo" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    fake.verify().await;
}

/// An API answer that redirects to another host is never followed: the installation token goes
/// to the API's host only (the artifact download alone follows its one redirect, without the
/// token: `artifact_redirect_download_and_extraction`). The call fails instead; nothing reaches
/// the other host.
#[tokio::test]
async fn api_redirects_are_not_followed_with_the_token() {
    let fake = FakeGithub::start().await;
    let elsewhere = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_json(example("pull-request")))
        .mount(&elsewhere)
        .await;
    let away = format!("{}/stolen", elsewhere.uri());
    for (status, path) in [
        (301, "/repos/octo-org/octo-repo/pulls/1347"),
        (302, "/repos/octo-org/octo-repo/contents/src/app.py"),
        (307, "/repos/octo-org/octo-repo/actions/runs/30433642/artifacts"),
        (308, "/repos/octo-org/octo-repo/pulls/1348"),
    ] {
        let away = away.clone();
        fake.mock("GET", path, 1.., move |_| {
            ResponseTemplate::new(status).insert_header("location", away.as_str())
        })
        .await;
    }
    let gh = client(&fake);
    let sha = CommitSha::from(SHA);
    let results = [
        gh.pull_request(&repo(), PullNumber(1347)).await.map(|_| ()),
        gh.file_at(&repo(), "src/app.py", &sha).await.map(|_| ()),
        gh.run_artifacts(&repo(), 30433642).await.map(|_| ()),
        gh.pull_diff(&repo(), PullNumber(1348)).await.map(|_| ()),
    ];
    for r in &results {
        assert!(r.is_err(), "a redirect was taken for an answer: {results:?}");
    }
    let seen = elsewhere.received_requests().await.unwrap_or_default();
    assert!(seen.is_empty(), "a redirect was followed: {seen:#?}");
}
