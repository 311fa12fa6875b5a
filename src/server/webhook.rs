//! `POST /webhook`: signature over the raw body first, then which deliveries become jobs.
//! Nothing here calls GitHub: a delivery is stored and answered at once.
//!
//! Before the signature can be checked the body must be read, so reading it is bounded:
//! a `Content-Length` is required and over [`MAX_BODY`] is refused before a byte is read;
//! the bytes received are charged to one budget shared by every body in flight, and, until
//! the signature is checked, to their client's share of it ([`super::budget`]: 64 MiB in
//! all, 32 MiB per client by default), so clients that declare large bodies and send
//! nothing hold nothing, and one client cannot starve a signed delivery; a body that would
//! exceed either is turned away with 503 at once instead of waiting; and a body must arrive
//! within the body timeout. `/healthz` and `/metrics` read no body and are never held up.

use super::budget::{Charge, Spent};
use super::AppState;
use crate::github::event::{Event, EventError};
use crate::metrics::{event_label, DeliveryOutcome};
use crate::store::{NewDelivery, Recorded};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use std::net::{IpAddr, SocketAddr};
use tracing::Instrument as _;

/// GitHub caps webhook payloads at 25 MB.
pub const MAX_BODY: usize = 25 * 1024 * 1024;

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// An unverified header value as a log field: at most 100 characters, control characters
/// (a forged log line's newline) replaced.
fn inert(v: &str) -> String {
    v.chars()
        .take(100)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// The metrics label of the `X-GitHub-Event` header `event`, `signed` or not yet.
fn label(event: &str, signed: bool) -> String {
    let known = event == "ping" || Event::accepted().any(|(name, _)| name == event);
    event_label(event, known, signed)
}

/// The client a request's body is charged to: the address in the configured proxy header,
/// else the connection's peer; `None` when neither is known (a router served without
/// [`super::serve_on`]'s loop), and only the total budget applies.
fn client_of(limits: &super::Limits, parts: &axum::http::request::Parts) -> Option<IpAddr> {
    if let Some(name) = &limits.client_ip_header {
        if let Some(ip) = parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<IpAddr>().ok())
        {
            return Some(ip);
        }
    }
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip())
}

/// Read the body within the limits, its bytes charged to the budget as they arrive (and to
/// `client`'s share until the signature is checked); the charge is held while the body is
/// handled. Or the response that refuses it.
// A `Response` as the error is what the handler returns as is; it is built once per request.
#[allow(clippy::result_large_err)]
async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    client: Option<IpAddr>,
    body: Body,
) -> Result<(Bytes, Charge), Response> {
    let limits = &state.limits;
    let event = header(headers, "x-github-event").unwrap_or("");
    let refuse = |status: StatusCode, why: &'static str| {
        state.metrics.delivery(&label(event, false), DeliveryOutcome::Rejected);
        tracing::warn!(%status, "webhook body refused: {why}");
        Err((status, why).into_response())
    };
    let busy = |why: &'static str| {
        let mut r = refuse(StatusCode::SERVICE_UNAVAILABLE, why).unwrap_err();
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        Err(r)
    };
    let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return refuse(StatusCode::LENGTH_REQUIRED, "Content-Length required");
    };
    if len > limits.max_body as u64 {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "payload larger than GitHub sends");
    }
    // `len` ≤ max_body ≤ u32::MAX. A body that could never fit is turned away before a byte.
    let len = len as usize;
    let room = if client.is_some() {
        limits.budget.per_client()
    } else {
        limits.budget.capacity()
    };
    if len > room {
        return busy("too many webhook bodies in flight");
    }
    let mut charge = limits.budget.charge(client);
    // Grown as bytes arrive, never allocated by the declared length alone.
    let mut received: Vec<u8> = Vec::new();
    let read = async {
        let mut frames = body.into_data_stream();
        while let Some(frame) = frames.next().await {
            let frame = frame.map_err(|_| None)?;
            if received.len() + frame.len() > len {
                return Err(None);
            }
            charge.take(frame.len()).map_err(Some)?;
            // Doubling, but never past the declared length: memory stays within twice what
            // was received.
            let need = received.len() + frame.len();
            if need > received.capacity() {
                received.reserve_exact((received.len() * 2).max(need).min(len) - received.len());
            }
            received.extend_from_slice(&frame);
        }
        if received.len() == len {
            Ok(())
        } else {
            Err(None)
        }
    };
    let outcome = tokio::time::timeout(limits.body_timeout, read).await;
    match outcome {
        Ok(Ok(())) => Ok((Bytes::from(received), charge)),
        Ok(Err(Some(Spent::Client))) => busy("this client has too many webhook bodies in flight"),
        Ok(Err(Some(Spent::Total))) => busy("too many webhook bodies in flight"),
        Ok(Err(None)) => refuse(
            StatusCode::BAD_REQUEST,
            "body unreadable or longer than its Content-Length",
        ),
        Err(_) => refuse(StatusCode::REQUEST_TIMEOUT, "body not received in time"),
    }
}

pub(super) async fn handle(State(state): State<AppState>, request: Request) -> Response {
    let m = &state.metrics;
    let (parts, body) = request.into_parts();
    let client = client_of(&state.limits, &parts);
    let headers = parts.headers;
    let (body, mut charge) = match read_body(&state, &headers, client, body).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let delivery_id = header(&headers, "x-github-delivery").unwrap_or("").to_owned();
    let event = header(&headers, "x-github-event").unwrap_or("").to_owned();
    // Anyone can send these headers before the signature is checked: logged inert.
    let span = tracing::info_span!(
        "delivery",
        delivery_id = %inert(&delivery_id),
        event = %inert(&event),
        action = tracing::field::Empty,
        repository = tracing::field::Empty,
        pull_request = tracing::field::Empty,
        sha = tracing::field::Empty,
    );
    async move {
        let count = |signed: bool, outcome: DeliveryOutcome| m.delivery(&label(&event, signed), outcome);
        if !super::signature::verify(&state.secrets, header(&headers, "x-hub-signature-256"), &body) {
            count(false, DeliveryOutcome::Rejected);
            tracing::warn!(
                "webhook signature missing or wrong: check FLAKEGATE_WEBHOOK_SECRET matches the App's webhook secret"
            );
            return (StatusCode::UNAUTHORIZED, "bad signature").into_response();
        }
        // Signed: its bytes no longer count against its client's share, only the total's.
        charge.verified();
        if delivery_id.is_empty() || event.is_empty() {
            count(true, DeliveryOutcome::Rejected);
            return (StatusCode::BAD_REQUEST, "missing X-GitHub-Delivery or X-GitHub-Event").into_response();
        }
        if event == "ping" {
            count(true, DeliveryOutcome::Ignored);
            tracing::info!("ping");
            return (StatusCode::OK, "pong").into_response();
        }
        let parsed = match Event::parse(&event, &body) {
            Ok(d) => d,
            Err(e @ EventError::NotJson(_)) => {
                count(true, DeliveryOutcome::Rejected);
                tracing::warn!("webhook {e}");
                return (StatusCode::BAD_REQUEST, "payload is not JSON").into_response();
            }
            Err(e) => {
                count(true, DeliveryOutcome::Rejected);
                tracing::warn!("webhook payload rejected: {e}");
                return (StatusCode::BAD_REQUEST, "payload is not a valid event of its kind").into_response();
            }
        };
        let span = tracing::Span::current();
        if let Some(repo) = &parsed.repo {
            span.record("repository", repo.as_str());
        }
        if let Some(action) = &parsed.action {
            span.record("action", action.as_str());
        }
        let Some(accepted) = &parsed.event else {
            count(true, DeliveryOutcome::Ignored);
            tracing::debug!(action = ?parsed.action, "ignored");
            return (StatusCode::OK, "ignored").into_response();
        };
        let facts = accepted.facts();
        if let Some(pr) = facts.pr {
            span.record("pull_request", pr);
        }
        if let Some(sha) = &facts.head_sha {
            span.record("sha", sha.as_str());
        }
        let delivery = NewDelivery {
            delivery_id: delivery_id.clone(),
            event: event.clone(),
            action: parsed.action.clone(),
            repo: Some(accepted.envelope().repository.full_name.clone()),
            pr: facts.pr,
            head_sha: facts.head_sha,
            // Only what the worker reads is stored: the rest of GitHub's payload (whole
            // repositories, commit messages) would grow the store with every delivery.
            payload: super::slim::payload(&event, &body, &parsed),
        };
        match state.store.record_delivery(&delivery, (state.clock)()).await {
            Ok(Recorded::Inserted(job)) => {
                count(true, DeliveryOutcome::Accepted);
                tracing::info!(%job, "queued");
                // Older heads are superseded by the worker once GitHub confirms the pull
                // request's current head: deliveries can arrive out of order.
                (StatusCode::ACCEPTED, "queued").into_response()
            }
            Ok(Recorded::Duplicate) => {
                count(true, DeliveryOutcome::Duplicate);
                tracing::info!("duplicate delivery");
                (StatusCode::OK, "duplicate").into_response()
            }
            Err(e) => {
                count(true, DeliveryOutcome::Error);
                // 500 lets GitHub's redelivery (or an operator) try again.
                tracing::error!("storing the delivery failed: {e:#}");
                (StatusCode::INTERNAL_SERVER_ERROR, "store unavailable").into_response()
            }
        }
    }
    .instrument(span)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unverified_headers_are_logged_short_and_on_one_line() {
        assert_eq!(inert("abc-123"), "abc-123");
        assert_eq!(inert("a\nINFO forged\r\t"), "a\u{fffd}INFO forged\u{fffd}\u{fffd}");
        assert_eq!(inert(&"x".repeat(5000)).chars().count(), 100);
    }

    #[test]
    fn only_known_or_signed_event_names_are_labels() {
        assert_eq!(label("workflow_run", false), "workflow_run");
        assert_eq!(label("ping", false), "ping");
        assert_eq!(label("push", false), "push");
        assert_eq!(label("release", false), "other");
        assert_eq!(label("release", true), "release");
    }
}
