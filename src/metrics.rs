//! What operators scrape from `GET /metrics`: counters the server, the worker and the GitHub
//! client add to, written out in Prometheus' text exposition format (version 0.0.4). A leaf:
//! it imports nothing of the crate; the job gauges are read from the store by the server at
//! scrape time and handed to [`Metrics::render`] as plain numbers.
//!
//! The exposition is written by hand rather than with a crate (`prometheus-client` and the
//! like): six families of counters, one gauge and one fixed-bucket histogram are a page of
//! code, and a registry crate would add its tree to every build on small CI machines.
//!
//! Label values that come from outside are bounded: an event name counts under its own
//! label only if it is an event this App knows or came with a valid signature (and looks
//! like a GitHub event name); anything else is `other`, so an unauthenticated client cannot
//! make the exposition grow.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Upper bounds (seconds) of the job latency histogram's buckets: seconds when GitHub and
/// the evidence are prompt, up to the hour a stalled queue or a rate-limit wait can take.
pub(crate) const LATENCY_BUCKETS: [f64; 12] = [
    0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

/// Distinct event labels kept; deliveries of further event names count as `other`.
const MAX_EVENT_LABELS: usize = 64;

/// What became of a webhook delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeliveryOutcome {
    /// Stored as a job (202).
    Accepted,
    /// Valid but not acted on (a ping, an event or action the App ignores).
    Ignored,
    /// A delivery id seen before (GitHub's redelivery).
    Duplicate,
    /// Refused: bad signature, headers, size or payload.
    Rejected,
    /// Could not be stored (500; GitHub may redeliver).
    Error,
}

impl DeliveryOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Accepted => "accepted",
            DeliveryOutcome::Ignored => "ignored",
            DeliveryOutcome::Duplicate => "duplicate",
            DeliveryOutcome::Rejected => "rejected",
            DeliveryOutcome::Error => "error",
        }
    }
}

/// How a worker's attempt at a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobOutcome {
    /// Finished: published, or nothing to do.
    Done,
    /// Finished by publishing INCONCLUSIVE (retrying would not help).
    Inconclusive,
    /// Failed; queued again after a backoff or GitHub's wait.
    Retry,
    /// Out of attempts: INCONCLUSIVE published, the job dead.
    Dead,
    /// Another worker took the job over after this one's lease expired.
    LeaseLost,
}

impl JobOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            JobOutcome::Done => "done",
            JobOutcome::Inconclusive => "inconclusive",
            JobOutcome::Retry => "retry",
            JobOutcome::Dead => "dead",
            JobOutcome::LeaseLost => "lease_lost",
        }
    }
}

/// Jobs in the store by state, read at scrape time. The four are disjoint: `queued` jobs
/// have not failed yet (evidence deadlines waiting for their time included), `failed` ones
/// wait to retry after a failed attempt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobGauges {
    pub queued: u64,
    pub failed: u64,
    pub running: u64,
    pub dead: u64,
    /// Rows the flake history holds, all repositories together.
    pub history_rows: u64,
}

/// A histogram with [`LATENCY_BUCKETS`].
#[derive(Debug, Default)]
struct Histogram {
    /// Observations at most each bound (not cumulative; summed when written).
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| v <= *b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum += v;
    }
}

#[derive(Debug, Default)]
struct Counts {
    deliveries: BTreeMap<(String, DeliveryOutcome), u64>,
    jobs: BTreeMap<JobOutcome, u64>,
    latency: Histogram,
    /// (status class, code) → calls; class `error` and code `none` when no answer came.
    github: BTreeMap<(String, String), u64>,
    /// Installation id → the last `x-ratelimit-remaining` GitHub sent it.
    rate_limit: BTreeMap<u64, u64>,
}

/// The App's counters, shared by the server, the worker and the GitHub client of one process.
#[derive(Debug, Default)]
pub struct Metrics {
    counts: Mutex<Counts>,
    /// Scrapes whose job gauges could not be read (the store was unreachable).
    store_errors: AtomicU64,
}

/// The label an event name counts under: its own when the App acts on it (`known`), or when the
/// delivery was signed and the name looks like one of GitHub's; `other` otherwise.
pub(crate) fn event_label(name: &str, known: bool, signed: bool) -> String {
    let looks_like_github =
        !name.is_empty() && name.len() <= 40 && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    if known || (signed && looks_like_github) {
        name.to_owned()
    } else {
        "other".to_owned()
    }
}

impl Metrics {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count a delivery of `event` (a label from `event_label`).
    pub fn delivery(&self, event: &str, outcome: DeliveryOutcome) {
        let mut c = self.counts();
        let seen = c.deliveries.keys().any(|(e, _)| e == event);
        let distinct = c
            .deliveries
            .keys()
            .map(|(e, _)| e.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let event = if seen || distinct < MAX_EVENT_LABELS {
            event
        } else {
            "other"
        };
        *c.deliveries.entry((event.to_owned(), outcome)).or_default() += 1;
    }

    /// Count a worker's attempt at a job.
    pub fn job(&self, outcome: JobOutcome) {
        *self.counts().jobs.entry(outcome).or_default() += 1;
    }

    /// A job finished `seconds` after it was queued (or came due).
    pub fn job_latency(&self, seconds: f64) {
        self.counts().latency.observe(seconds);
    }

    /// Count a call to GitHub answered with `status` (`None`: no answer, a transport error).
    pub fn github_call(&self, status: Option<u16>) {
        let key = match status {
            Some(s) => (format!("{}xx", s / 100), s.to_string()),
            None => ("error".to_owned(), "none".to_owned()),
        };
        *self.counts().github.entry(key).or_default() += 1;
    }

    /// GitHub said `installation` has `remaining` requests left this hour.
    pub fn rate_limit_remaining(&self, installation: u64, remaining: u64) {
        self.counts().rate_limit.insert(installation, remaining);
    }

    /// The job gauges could not be read for this scrape.
    pub fn store_error(&self) {
        self.store_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition; `jobs` is `None` when the store could not be read (the gauges are left out).
    pub fn render(&self, jobs: Option<JobGauges>) -> String {
        let c = self.counts();
        let mut out = String::new();

        family(
            &mut out,
            "flakegate_webhook_deliveries_total",
            "counter",
            "Webhook deliveries by event and outcome.",
        );
        for ((event, outcome), n) in &c.deliveries {
            let _ = writeln!(
                out,
                "flakegate_webhook_deliveries_total{{event=\"{}\",outcome=\"{}\"}} {n}",
                escape(event),
                outcome.as_str()
            );
        }

        if let Some(j) = jobs {
            family(
                &mut out,
                "flakegate_jobs",
                "gauge",
                "Jobs in the store by state (queued: not failed yet; failed: waiting to retry).",
            );
            for (state, n) in [
                ("queued", j.queued),
                ("failed", j.failed),
                ("running", j.running),
                ("dead", j.dead),
            ] {
                let _ = writeln!(out, "flakegate_jobs{{state=\"{state}\"}} {n}");
            }
            family(
                &mut out,
                "flakegate_history_rows",
                "gauge",
                "Rows the flake history holds (per-day and per-sha counts, failures), all repositories.",
            );
            let _ = writeln!(out, "flakegate_history_rows {}", j.history_rows);
        }
        family(
            &mut out,
            "flakegate_store_errors_total",
            "counter",
            "Scrapes whose job gauges could not be read from the store.",
        );
        let _ = writeln!(
            out,
            "flakegate_store_errors_total {}",
            self.store_errors.load(Ordering::Relaxed)
        );

        family(
            &mut out,
            "flakegate_job_attempts_total",
            "counter",
            "Job attempts of this process's worker by outcome.",
        );
        for (outcome, n) in &c.jobs {
            let _ = writeln!(
                out,
                "flakegate_job_attempts_total{{outcome=\"{}\"}} {n}",
                outcome.as_str()
            );
        }

        family(
            &mut out,
            "flakegate_job_latency_seconds",
            "histogram",
            "Seconds from a job being queued (or coming due) to its being done.",
        );
        let mut cumulative = 0;
        for (bound, n) in LATENCY_BUCKETS.iter().zip(c.latency.buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "flakegate_job_latency_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "flakegate_job_latency_seconds_bucket{{le=\"+Inf\"}} {}",
            c.latency.count
        );
        let _ = writeln!(out, "flakegate_job_latency_seconds_sum {}", c.latency.sum);
        let _ = writeln!(out, "flakegate_job_latency_seconds_count {}", c.latency.count);

        family(
            &mut out,
            "flakegate_github_requests_total",
            "counter",
            "Requests to GitHub by status class and code (class error: no answer).",
        );
        for ((class, code), n) in &c.github {
            let _ = writeln!(
                out,
                "flakegate_github_requests_total{{class=\"{class}\",code=\"{code}\"}} {n}"
            );
        }

        family(
            &mut out,
            "flakegate_github_rate_limit_remaining",
            "gauge",
            "The last x-ratelimit-remaining GitHub sent, by installation.",
        );
        for (installation, n) in &c.rate_limit {
            let _ = writeln!(
                out,
                "flakegate_github_rate_limit_remaining{{installation=\"{installation}\"}} {n}"
            );
        }
        out
    }
}

/// A family's `# HELP` and `# TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value as the text format wants it (`\`, `"` and newlines escaped).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounded_inclusively() {
        let m = Metrics::default();
        for s in [0.0, 0.5, 0.7, 3.0, 7200.0, f64::NAN] {
            m.job_latency(s);
        }
        let text = m.render(None);
        for line in [
            "flakegate_job_latency_seconds_bucket{le=\"0.5\"} 3",
            "flakegate_job_latency_seconds_bucket{le=\"1\"} 4",
            "flakegate_job_latency_seconds_bucket{le=\"2.5\"} 4",
            "flakegate_job_latency_seconds_bucket{le=\"5\"} 5",
            "flakegate_job_latency_seconds_bucket{le=\"3600\"} 5",
            "flakegate_job_latency_seconds_bucket{le=\"+Inf\"} 6",
            "flakegate_job_latency_seconds_count 6",
            "flakegate_job_latency_seconds_sum 7204.2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
        assert!(!text.contains("flakegate_jobs{"), "no gauges without the store");
    }

    #[test]
    fn outside_event_names_cannot_grow_the_exposition() {
        assert_eq!(event_label("pull_request", true, false), "pull_request");
        assert_eq!(event_label("push", false, true), "push");
        assert_eq!(event_label("push", false, false), "other");
        assert_eq!(event_label("x\"} 1\nfake 2", false, true), "other");
        assert_eq!(event_label(&"a".repeat(41), false, true), "other");
        let m = Metrics::default();
        for i in 0..1000 {
            let name: String = format!("e{i}")
                .chars()
                .map(|c| (b'a' + (c as u8 % 26)) as char)
                .collect();
            m.delivery(&event_label(&name, false, true), DeliveryOutcome::Ignored);
        }
        let lines = m
            .render(None)
            .lines()
            .filter(|l| l.starts_with("flakegate_webhook_deliveries_total{"))
            .count();
        assert!(
            (MAX_EVENT_LABELS..=MAX_EVENT_LABELS + 1).contains(&lines),
            "{lines} lines"
        );
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
