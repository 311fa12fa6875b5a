//! `POST /webhook`: signature over the raw body first, then which deliveries become jobs.
//! Nothing here calls GitHub: a delivery is stored and answered at once.

use super::AppState;
use crate::store::{NewDelivery, Recorded};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::atomic::Ordering;
use tracing::Instrument as _;

/// GitHub caps webhook payloads at 25 MB.
pub const MAX_BODY: usize = 25 * 1024 * 1024;

/// The events and actions that become jobs; everything else is acknowledged and ignored.
pub fn accepts(event: &str, action: Option<&str>) -> bool {
    matches!(
        (event, action),
        (
            "pull_request",
            Some("opened" | "synchronize" | "reopened" | "ready_for_review")
        ) | ("workflow_run", Some("completed"))
            | ("check_run", Some("rerequested" | "requested_action"))
            | ("check_suite", Some("rerequested"))
    )
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

pub(super) async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let m = &state.metrics;
    let body = match body {
        Ok(b) => b,
        Err(rejection) => {
            m.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(status = %rejection.status(), "webhook body rejected: {}", rejection.body_text());
            return rejection.into_response();
        }
    };
    let delivery_id = header(&headers, "x-github-delivery").unwrap_or("").to_owned();
    let event = header(&headers, "x-github-event").unwrap_or("").to_owned();
    let span = tracing::info_span!(
        "delivery",
        delivery_id = %delivery_id,
        event = %event,
        repository = tracing::field::Empty
    );
    async move {
        if !super::signature::verify(&state.secrets, header(&headers, "x-hub-signature-256"), &body) {
            m.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "webhook signature missing or wrong: check FLAKEGATE_WEBHOOK_SECRET matches the App's webhook secret"
            );
            return (StatusCode::UNAUTHORIZED, "bad signature").into_response();
        }
        if delivery_id.is_empty() || event.is_empty() {
            m.rejected.fetch_add(1, Ordering::Relaxed);
            return (StatusCode::BAD_REQUEST, "missing X-GitHub-Delivery or X-GitHub-Event").into_response();
        }
        if event == "ping" {
            m.ignored.fetch_add(1, Ordering::Relaxed);
            tracing::info!("ping");
            return (StatusCode::OK, "pong").into_response();
        }
        let payload: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                m.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("webhook payload is not JSON: {e}");
                return (StatusCode::BAD_REQUEST, "payload is not JSON").into_response();
            }
        };
        let facts = Facts::of(&event, &payload);
        if let Some(repo) = &facts.repo {
            tracing::Span::current().record("repository", repo.as_str());
        }
        if !accepts(&event, facts.action.as_deref()) {
            m.ignored.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(action = ?facts.action, "ignored");
            return (StatusCode::OK, "ignored").into_response();
        }
        let delivery = NewDelivery {
            delivery_id: delivery_id.clone(),
            event: event.clone(),
            action: facts.action,
            repo: facts.repo,
            pr: facts.pr,
            head_sha: facts.head_sha,
            // Valid JSON is valid UTF-8.
            payload: String::from_utf8_lossy(&body).into_owned(),
        };
        match state.store.record_delivery(&delivery, (state.clock)()).await {
            Ok(Recorded::Inserted(job)) => {
                m.accepted.fetch_add(1, Ordering::Relaxed);
                tracing::info!(%job, "queued");
                // A new head makes queued work for older heads of the same pull request moot.
                if let (true, Some(repo), Some(pr), Some(sha)) =
                    (event == "pull_request", &delivery.repo, delivery.pr, &delivery.head_sha)
                {
                    if let Err(e) = state.store.supersede(repo, pr, sha).await {
                        tracing::warn!("superseding older jobs failed: {e:#}");
                    }
                }
                (StatusCode::ACCEPTED, "queued").into_response()
            }
            Ok(Recorded::Duplicate) => {
                m.duplicate.fetch_add(1, Ordering::Relaxed);
                tracing::info!("duplicate delivery");
                (StatusCode::OK, "duplicate").into_response()
            }
            Err(e) => {
                // 500 lets GitHub's redelivery (or an operator) try again.
                tracing::error!("storing the delivery failed: {e:#}");
                (StatusCode::INTERNAL_SERVER_ERROR, "store unavailable").into_response()
            }
        }
    }
    .instrument(span)
    .await
}

/// What the queue needs from a payload: its action, repository, pull request and head sha.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub action: Option<String>,
    pub repo: Option<String>,
    pub pr: Option<u64>,
    pub head_sha: Option<String>,
}

impl Facts {
    pub fn of(event: &str, p: &Value) -> Facts {
        let s = |v: &Value| v.as_str().map(str::to_owned);
        let first_pr = |v: &Value| v["pull_requests"][0]["number"].as_u64();
        let (pr, head_sha) = match event {
            "pull_request" => (
                p["pull_request"]["number"].as_u64().or(p["number"].as_u64()),
                s(&p["pull_request"]["head"]["sha"]),
            ),
            "workflow_run" => (first_pr(&p["workflow_run"]), s(&p["workflow_run"]["head_sha"])),
            "check_run" => (first_pr(&p["check_run"]), s(&p["check_run"]["head_sha"])),
            "check_suite" => (first_pr(&p["check_suite"]), s(&p["check_suite"]["head_sha"])),
            _ => (None, None),
        };
        Facts {
            action: s(&p["action"]),
            repo: s(&p["repository"]["full_name"]),
            pr,
            head_sha,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_table() {
        let cases = [
            ("pull_request", Some("opened"), true),
            ("pull_request", Some("synchronize"), true),
            ("pull_request", Some("reopened"), true),
            ("pull_request", Some("ready_for_review"), true),
            ("pull_request", Some("closed"), false),
            ("pull_request", Some("edited"), false),
            ("pull_request", None, false),
            ("workflow_run", Some("completed"), true),
            ("workflow_run", Some("requested"), false),
            ("check_run", Some("rerequested"), true),
            ("check_run", Some("requested_action"), true),
            ("check_run", Some("completed"), false),
            ("check_suite", Some("rerequested"), true),
            ("check_suite", Some("requested"), false),
            ("push", None, false),
            ("ping", None, false),
        ];
        for (event, action, want) in cases {
            assert_eq!(accepts(event, action), want, "{event}.{action:?}");
        }
    }
}
