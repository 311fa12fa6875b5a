//! `POST /webhook`: signature over the raw body first, then which deliveries become jobs.
//! Nothing here calls GitHub: a delivery is stored and answered at once.

use super::AppState;
use crate::github::event::{Event, EventError};
use crate::store::{NewDelivery, Recorded};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::atomic::Ordering;
use tracing::Instrument as _;

/// GitHub caps webhook payloads at 25 MB.
pub const MAX_BODY: usize = 25 * 1024 * 1024;

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
        let parsed = match Event::parse(&event, &body) {
            Ok(d) => d,
            Err(e @ EventError::NotJson(_)) => {
                m.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("webhook {e}");
                return (StatusCode::BAD_REQUEST, "payload is not JSON").into_response();
            }
            Err(e) => {
                m.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("webhook payload rejected: {e}");
                return (StatusCode::BAD_REQUEST, "payload is not a valid event of its kind").into_response();
            }
        };
        if let Some(repo) = &parsed.repo {
            tracing::Span::current().record("repository", repo.as_str());
        }
        let Some(accepted) = &parsed.event else {
            m.ignored.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(action = ?parsed.action, "ignored");
            return (StatusCode::OK, "ignored").into_response();
        };
        let facts = accepted.facts();
        let delivery = NewDelivery {
            delivery_id: delivery_id.clone(),
            event: event.clone(),
            action: parsed.action.clone(),
            repo: Some(accepted.envelope().repository.full_name.clone()),
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
                    (accepted.is_new_head(), &delivery.repo, delivery.pr, &delivery.head_sha)
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
