//! The webhook handler. Every input is parsed as each accepted event (`Event::parse`,
//! then the facts the queue records), and is also sent through the real router — body
//! limits, signature check, parse, store (SQLite in memory) — as one delivery. Input:
//! `<X-GitHub-Event name>\n<flag byte><body>`; the flag's low bit set signs the body with
//! the wrong secret, which must be answered 401 whatever the body.
#![no_main]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use flakegate::github::event::Event;
use flakegate::server::{router, signature, AppState};
use flakegate::store::{RetryPolicy, Store};
use libfuzzer_sys::fuzz_target;
use secrecy::SecretString;
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt as _;

const SECRET: &str = "fuzz-webhook-secret";

struct App {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    names: Vec<&'static str>,
}

fn app() -> &'static App {
    static APP: OnceLock<App> = OnceLock::new();
    APP.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store = rt
            .block_on(Store::open("sqlite::memory:", RetryPolicy::default()))
            .expect("in-memory store");
        let state = AppState::new(Arc::new(store), vec![SecretString::from(SECRET)]);
        let accepted: BTreeSet<&'static str> = Event::accepted().map(|(name, _)| name).collect();
        let mut names: Vec<&'static str> = accepted.into_iter().collect();
        names.extend(["ping", "push", "installation"]);
        App {
            rt,
            router: router(state),
            names,
        }
    })
}

fn parse_as_every_event(app: &App, body: &[u8]) {
    for name in &app.names {
        if let Ok(delivery) = Event::parse(name, body) {
            if let Some(event) = &delivery.event {
                assert!(Event::accepts(name, delivery.action.as_deref()));
                let _ = event.facts();
                let _ = event.envelope();
                let _ = event.requested_action();
            }
        }
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

fuzz_target!(|data: &[u8]| {
    let app = app();
    let Some(newline) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(name) = std::str::from_utf8(&data[..newline]) else {
        return;
    };
    let [flags, body @ ..] = &data[newline + 1..] else {
        return;
    };
    parse_as_every_event(app, body);
    if axum::http::HeaderValue::from_str(name).is_err() {
        return;
    }
    let signed = flags & 1 == 0;
    let sig = if signed {
        signature::sign(SECRET.as_bytes(), body)
    } else {
        signature::sign(b"not-the-secret", body)
    };
    // A bounded set of delivery ids: the in-memory store stays small, and duplicates occur.
    let delivery_id = format!("fuzz-{}", fnv(body) % 512);
    let request = Request::builder()
        .method("POST")
        .uri("/webhook")
        .header("content-length", body.len())
        .header("x-github-event", name)
        .header("x-github-delivery", delivery_id)
        .header("x-hub-signature-256", sig)
        .body(Body::from(body.to_vec()))
        .unwrap();
    let response = app.rt.block_on(app.router.clone().oneshot(request)).unwrap();
    let status = response.status();
    if !signed {
        assert_eq!(status, StatusCode::UNAUTHORIZED, "an unsigned body got {status}");
        return;
    }
    assert!(
        [StatusCode::OK, StatusCode::ACCEPTED, StatusCode::BAD_REQUEST].contains(&status),
        "{name}: unexpected status {status}"
    );
    if name.is_empty() {
        assert_eq!(status, StatusCode::BAD_REQUEST, "a delivery without an event name");
    }
});
