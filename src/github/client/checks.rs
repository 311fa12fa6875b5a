//! Check runs: the App's own run found by name and external id, created and updated with
//! annotations sent 50 per request, every field checked against GitHub's limits before it is sent.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{encode_path, InstallationClient};
use crate::github::error::GithubError;
use crate::github::types::*;

#[derive(Serialize)]
struct OutputBody<'a> {
    title: &'a str,
    summary: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    annotations: &'a [Annotation],
}

#[derive(Serialize)]
struct CheckRunBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    head_sha: Option<&'a str>,
    name: &'a str,
    external_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<CheckStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conclusion: Option<Conclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<OutputBody<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    actions: &'a [CheckAction],
}

impl InstallationClient {
    /// The newest check run `name` on `head_sha` with `external_id` made by this App, if one
    /// exists (so publishing after a crash or retry updates it instead of adding another).
    /// A check run of that name made by anyone else — a workflow with `checks: write` can make
    /// one, green — is never ours to update.
    pub async fn find_check_run(
        &self,
        repo: &RepoName,
        head_sha: &CommitSha,
        name: &str,
        external_id: &str,
    ) -> Result<Option<CheckRun>, GithubError> {
        let path = format!(
            "{}/commits/{}/check-runs?check_name={}&filter=all",
            repo.api_path(),
            head_sha,
            encode_path(name)
        );
        let all = self
            .paged("list check runs", &path, 10, |v| {
                serde_json::from_value::<CheckRunListRaw>(v).ok().map(|l| l.check_runs)
            })
            .await?;
        let mut found = None;
        for v in all {
            let run: CheckRun =
                serde_json::from_value(v).map_err(|e| GithubError::fatal(format!("list check runs: {e}")))?;
            if run.name == name && run.external_id.as_deref() == Some(external_id) && run.made_by(self.app_id) {
                // GitHub lists the newest first; keep the highest id to be sure.
                if found.as_ref().is_none_or(|f: &CheckRun| run.id > f.id) {
                    found = Some(run);
                }
            }
        }
        Ok(found)
    }

    /// Create the check run; annotations beyond the first 50 are appended by further updates.
    pub async fn create_check_run(
        &self,
        repo: &RepoName,
        head_sha: &CommitSha,
        fields: &CheckRunFields,
    ) -> Result<CheckRun, GithubError> {
        validate_fields(fields)?;
        let batches = annotation_batches(fields);
        let body = check_body(Some(head_sha), fields, batches[0]);
        let run: CheckRun = self
            .json(
                "create check run",
                "POST",
                &format!("{}/check-runs", repo.api_path()),
                Some(&body),
            )
            .await?;
        self.append_annotations(repo, run.id, fields, &batches[1..]).await?;
        Ok(run)
    }

    /// Update check run `id` with `fields`; annotations are appended 50 per request.
    pub async fn update_check_run(
        &self,
        repo: &RepoName,
        id: u64,
        fields: &CheckRunFields,
    ) -> Result<CheckRun, GithubError> {
        validate_fields(fields)?;
        let batches = annotation_batches(fields);
        let body = check_body(None, fields, batches[0]);
        let run: CheckRun = self
            .json(
                "update check run",
                "PATCH",
                &format!("{}/check-runs/{id}", repo.api_path()),
                Some(&body),
            )
            .await?;
        self.append_annotations(repo, id, fields, &batches[1..]).await?;
        Ok(run)
    }

    async fn append_annotations(
        &self,
        repo: &RepoName,
        id: u64,
        fields: &CheckRunFields,
        rest: &[&[Annotation]],
    ) -> Result<(), GithubError> {
        let Some(output) = &fields.output else { return Ok(()) };
        for batch in rest {
            // Resend title/summary/text (required fields, and nothing gets cleared) with the next batch.
            let body = json!({
                "name": fields.name,
                "external_id": fields.external_id,
                "output": OutputBody { title: &output.title, summary: &output.summary, text: output.text.as_deref(), annotations: batch },
            });
            let _: Value = self
                .json(
                    "add check run annotations",
                    "PATCH",
                    &format!("{}/check-runs/{id}", repo.api_path()),
                    Some(&body),
                )
                .await?;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct CheckRunListRaw {
    check_runs: Vec<Value>,
}

/// GitHub's limits on a check run's fields (`types.rs`), checked before anything is sent: an
/// over-limit field is a bug in what was built, and GitHub would reject the whole request.
pub(super) fn validate_fields(f: &CheckRunFields) -> Result<(), GithubError> {
    let bad = |m: String| Err(GithubError::fatal(format!("check run not sent: {m}")));
    if f.status == CheckStatus::Completed && f.conclusion.is_none() {
        return bad("a completed check run needs a conclusion".into());
    }
    if f.actions.len() > MAX_ACTIONS {
        return bad(format!(
            "{} actions (GitHub takes at most {MAX_ACTIONS})",
            f.actions.len()
        ));
    }
    for a in &f.actions {
        if a.label.chars().count() > ACTION_LABEL_LIMIT
            || a.identifier.chars().count() > ACTION_IDENTIFIER_LIMIT
            || a.description.chars().count() > ACTION_DESCRIPTION_LIMIT
        {
            return bad(format!(
                "action {:?} is over GitHub's length limits ({ACTION_LABEL_LIMIT}/{ACTION_IDENTIFIER_LIMIT}/{ACTION_DESCRIPTION_LIMIT})",
                a.identifier
            ));
        }
    }
    let Some(o) = &f.output else { return Ok(()) };
    if o.title.chars().count() > TITLE_LIMIT {
        return bad(format!("output.title is over {TITLE_LIMIT} characters"));
    }
    for (field, s) in [("summary", Some(&o.summary)), ("text", o.text.as_ref())] {
        if let Some(s) = s.filter(|s| s.len() > OUTPUT_MAX_BYTES) {
            return bad(format!("output.{field} is {} bytes, over {OUTPUT_MAX_BYTES}", s.len()));
        }
    }
    for (i, a) in o.annotations.iter().enumerate() {
        let at = format!("annotation {i} ({}:{})", a.path, a.start_line);
        if a.message.len() > ANNOTATION_MESSAGE_MAX_BYTES {
            return bad(format!(
                "{at}: message is {} bytes, over {ANNOTATION_MESSAGE_MAX_BYTES}",
                a.message.len()
            ));
        }
        if let Some(r) = a
            .raw_details
            .as_ref()
            .filter(|r| r.len() > ANNOTATION_RAW_DETAILS_MAX_BYTES)
        {
            return bad(format!(
                "{at}: raw_details is {} bytes, over {ANNOTATION_RAW_DETAILS_MAX_BYTES}",
                r.len()
            ));
        }
        if a.title
            .as_ref()
            .is_some_and(|t| t.chars().count() > ANNOTATION_TITLE_MAX_CHARS)
        {
            return bad(format!("{at}: title is over {ANNOTATION_TITLE_MAX_CHARS} characters"));
        }
    }
    Ok(())
}

fn annotation_batches(f: &CheckRunFields) -> Vec<&[Annotation]> {
    let anns = f.output.as_ref().map(|o| o.annotations.as_slice()).unwrap_or(&[]);
    let mut v: Vec<&[Annotation]> = anns.chunks(ANNOTATIONS_PER_REQUEST).collect();
    if v.is_empty() {
        v.push(&[]);
    }
    v
}

fn check_body(head_sha: Option<&CommitSha>, f: &CheckRunFields, annotations: &[Annotation]) -> Value {
    let completed = f.status == CheckStatus::Completed;
    let body = CheckRunBody {
        head_sha: head_sha.map(|s| s.as_str()),
        name: &f.name,
        external_id: &f.external_id,
        status: Some(f.status),
        conclusion: if completed { f.conclusion } else { None },
        details_url: f.details_url.as_deref(),
        completed_at: completed.then(|| chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        output: f.output.as_ref().map(|o| OutputBody {
            title: &o.title,
            summary: &o.summary,
            text: o.text.as_deref(),
            annotations,
        }),
        actions: &f.actions,
    };
    serde_json::to_value(body).expect("check run body serializes")
}
