//! What of an accepted delivery is stored: the fields `github::event` reads, nothing else. A
//! `workflow_run` of any workflow is accepted (only the worker, reading the repository's
//! config, knows which is the evidence workflow), and GitHub's payloads carry whole
//! repositories, actors and commit messages: stored as sent, 40 runs of another workflow with
//! a 1 MiB commit message took 42 MB. The slim payload is a few hundred bytes whatever was
//! sent.
//!
//! The kept fields are listed here, beside the typed payloads they feed, and every slim payload
//! is checked: it must parse to the very delivery the raw one did, else the raw body is stored
//! (and a warning says the list is behind `github::event`).

use crate::github::event::{Delivery, Event};
use serde_json::Value;

/// Which fields of a JSON object are kept, by name; an array applies it to each element.
enum Keep {
    /// The value as it is.
    All,
    /// Only these fields of an object (a scalar is kept as it is).
    Only(&'static [(&'static str, Keep)]),
}

use Keep::{All, Only};

const SHA: Keep = Only(&[("sha", All)]);
const APP: Keep = Only(&[("id", All)]);
const NUMBERS: Keep = Only(&[("number", All)]);

/// The fields `github::event`'s payloads read, across every accepted event.
const KEPT: Keep = Only(&[
    ("action", All),
    ("number", All),
    // merge_group destroyed
    ("reason", All),
    // push
    ("ref", All),
    ("after", All),
    ("deleted", All),
    // pull_request edited: only whether the base changed matters, and GitHub's `base` is small.
    ("changes", Only(&[("base", All)])),
    (
        "repository",
        Only(&[("full_name", All), ("id", All), ("default_branch", All)]),
    ),
    ("installation", Only(&[("id", All)])),
    (
        "pull_request",
        Only(&[
            ("number", All),
            ("head", SHA),
            ("base", SHA),
            // closed
            ("merged", All),
            ("merge_commit_sha", All),
        ]),
    ),
    (
        "workflow_run",
        Only(&[
            ("id", All),
            ("head_sha", All),
            ("run_attempt", All),
            ("conclusion", All),
            ("path", All),
            ("event", All),
            ("head_branch", All),
            (
                "pull_requests",
                Only(&[
                    ("number", All),
                    ("head", SHA),
                    ("base", Only(&[("sha", All), ("repo", Only(&[("id", All)]))])),
                ]),
            ),
        ]),
    ),
    (
        "merge_group",
        Only(&[
            ("head_sha", All),
            ("base_sha", All),
            ("head_ref", All),
            ("base_ref", All),
        ]),
    ),
    (
        "check_run",
        Only(&[
            ("name", All),
            ("app", APP),
            ("head_sha", All),
            ("pull_requests", NUMBERS),
        ]),
    ),
    ("requested_action", Only(&[("identifier", All)])),
    (
        "check_suite",
        Only(&[("head_sha", All), ("app", APP), ("pull_requests", NUMBERS)]),
    ),
]);

fn prune(value: &mut Value, keep: &Keep) {
    let Only(fields) = keep else { return };
    match value {
        Value::Object(map) => {
            map.retain(|k, _| fields.iter().any(|(name, _)| name == k));
            for (name, sub) in *fields {
                if let Some(v) = map.get_mut(*name) {
                    prune(v, sub);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                prune(item, keep);
            }
        }
        _ => {}
    }
}

/// The payload to store for `body`, a delivery of `event` that parsed to `parsed`: its slim
/// form when that parses to the same delivery, else the raw body.
pub fn payload(event: &str, body: &[u8], parsed: &Delivery) -> String {
    let slim = serde_json::from_slice::<Value>(body).ok().and_then(|mut v| {
        prune(&mut v, &KEPT);
        let text = serde_json::to_string(&v).ok()?;
        let same = Event::parse(event, text.as_bytes()).is_ok_and(|d| d == *parsed);
        same.then_some(text)
    });
    slim.unwrap_or_else(|| {
        tracing::warn!(
            "the slim payload does not parse to the same delivery: storing it whole (server::slim's list of fields is behind github::event)"
        );
        // Valid JSON is valid UTF-8.
        String::from_utf8_lossy(body).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/webhooks")
            .join(format!("{name}.json"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every sample GitHub payload of an accepted event keeps what the worker reads, and little else.
    #[test]
    fn every_accepted_sample_slims_to_the_same_delivery() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/webhooks");
        let mut slimmed = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            let event = stem.split('.').next().unwrap();
            let body = sample(stem);
            let Ok(parsed) = Event::parse(event, &body) else {
                continue;
            };
            if parsed.event.is_none() {
                continue;
            }
            let slim = payload(event, &body, &parsed);
            assert_eq!(Event::parse(event, slim.as_bytes()).unwrap(), parsed, "{stem}");
            assert!(
                slim.len() < 1024 && slim.len() * 4 < body.len(),
                "{stem}: {} of {} bytes kept: {slim}",
                slim.len(),
                body.len()
            );
            slimmed += 1;
        }
        assert!(slimmed >= 8, "only {slimmed} accepted samples");
    }

    #[test]
    fn a_megabyte_commit_message_is_not_stored() {
        let mut v: Value = serde_json::from_slice(&sample("workflow_run.completed")).unwrap();
        v["workflow_run"]["head_commit"]["message"] = Value::String("x".repeat(1 << 20));
        let body = serde_json::to_vec(&v).unwrap();
        let parsed = Event::parse("workflow_run", &body).unwrap();
        let slim = payload("workflow_run", &body, &parsed);
        assert!(slim.len() < 1024, "{slim}");
    }

    #[test]
    fn a_field_the_list_lacks_keeps_the_raw_body() {
        // As if github::event read `workflow_run.name`: the slim payload would not say the same,
        // so the raw body is stored. Simulated with a delivery the slim payload cannot match.
        let body = sample("workflow_run.completed");
        let mut parsed = Event::parse("workflow_run", &body).unwrap();
        parsed.action = Some("something else".into());
        assert_eq!(payload("workflow_run", &body, &parsed).as_bytes(), body);
    }
}
