//! Progress on stderr while the runs go: an indicatif bar on a terminal (run
//! i of K, elapsed, tests failing so far), plain lines otherwise (CI logs).

use crate::gate::nodeid::TestId;
use crate::gate::results;
use crate::probe::exec::{secs, Event, RunRecord};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

pub struct Progress {
    bar: Option<ProgressBar>,
    runs: u32,
    failing: BTreeSet<TestId>,
    started: Instant,
}

impl Progress {
    /// `terminal`: draw a bar (stderr is a terminal) rather than print lines.
    pub fn new(runs: u32, jobs: usize, terminal: bool) -> Self {
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(Some(u64::from(runs)), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} probe run {pos}/{len} [{bar:24}] {elapsed} {msg}")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message("no test failing so far");
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if bar.is_none() {
            eprintln!("flakegate probe: {runs} runs, {jobs} at a time");
        }
        Progress {
            bar,
            runs,
            failing: BTreeSet::new(),
            started: Instant::now(),
        }
    }

    fn note_failures(&mut self, rec: &RunRecord) -> Option<usize> {
        let text = std::fs::read_to_string(&rec.results_path).ok()?;
        let r = results::parse_any(&rec.results_path.display().to_string(), &text, &BTreeSet::new()).ok()?;
        let failed: Vec<&TestId> = r
            .tests
            .iter()
            .filter(|(_, t)| t.outcome.is_failure())
            .map(|(id, _)| id)
            .collect();
        let n = failed.len();
        self.failing.extend(failed.into_iter().cloned());
        Some(n)
    }

    pub fn on_event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Finished { record, done } => {
                let failed = self.note_failures(record);
                let so_far = match self.failing.len() {
                    0 => "no test failing so far".to_string(),
                    1 => "1 test failing so far".to_string(),
                    n => format!("{n} tests failing so far"),
                };
                match &self.bar {
                    Some(bar) => {
                        bar.set_message(so_far);
                        bar.inc(1);
                    }
                    None => eprintln!(
                        "flakegate probe: run {} of {} done ({done}/{}) in {}, {}: {}; {so_far} [elapsed {}]",
                        record.index,
                        self.runs,
                        self.runs,
                        secs(record.duration),
                        record.end.describe(),
                        match failed {
                            Some(n) => format!("{n} failed"),
                            None => "no readable results".into(),
                        },
                        secs(self.started.elapsed())
                    ),
                }
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
