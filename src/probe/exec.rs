//! Running the test command K times, up to N at once. Every run gets the
//! same command, working directory, environment and seed; only its results
//! path (`FLAKEGATE_RESULTS`, the `{results}` placeholder) and
//! `FLAKEGATE_RUN_INDEX` (1..K) differ. No global state: the plan holds
//! everything a run needs, so `--jobs 2` runs exactly what `--jobs 1` does.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Replaced in every argument by the run's results path.
pub const PLACEHOLDER: &str = "{results}";

/// What to run.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Program and arguments; `{results}` in any argument is replaced.
    pub command: Vec<String>,
    /// Appended to every run's arguments (node ids for `--only`, `--witnesses-of`).
    pub extra_args: Vec<String>,
    pub runs: u32,
    pub jobs: usize,
    pub seed: u32,
    pub timeout: Option<Duration>,
    /// Where run i writes `run-i.<ext>`.
    pub results_dir: PathBuf,
    pub results_ext: String,
    /// Where run i's combined stdout and stderr go (`run-i.log`).
    pub logs_dir: PathBuf,
    /// Working directory of every run (None: flakegate's own).
    pub cwd: Option<PathBuf>,
    /// Extra environment for every run (besides the FLAKEGATE_* variables).
    pub env: Vec<(String, String)>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The command exited: its exit code, or the signal that killed it.
    Exited { code: Option<i32>, signal: Option<i32> },
    /// Killed after `--timeout-per-run`.
    TimedOut { after: Duration },
    /// The command could not be started.
    SpawnFailed(String),
    /// A result file produced elsewhere (`--from`).
    Imported,
}

impl RunEnd {
    pub fn describe(&self) -> String {
        match self {
            RunEnd::Exited { code: Some(c), .. } => format!("exit status {c}"),
            RunEnd::Exited { signal: Some(s), .. } => format!("killed by signal {s}{}", signal_name(*s)),
            RunEnd::Exited { .. } => "ended without an exit status".into(),
            RunEnd::TimedOut { after } => format!("timed out after {}", secs(*after)),
            RunEnd::SpawnFailed(e) => format!("could not start: {e}"),
            RunEnd::Imported => "result file".into(),
        }
    }
    pub fn signal(&self) -> Option<i32> {
        match self {
            RunEnd::Exited { signal, .. } => *signal,
            _ => None,
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// One run as executed.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// 1-based.
    pub index: u32,
    pub results_path: PathBuf,
    pub log_path: Option<PathBuf>,
    pub end: RunEnd,
    pub duration: Duration,
}

/// Progress of the runs, delivered on the calling thread.
#[derive(Debug)]
pub enum Event<'a> {
    Finished { record: &'a RunRecord, done: u32 },
}

impl RunPlan {
    pub fn results_path(&self, index: u32) -> PathBuf {
        self.results_dir.join(format!("run-{index}.{}", self.results_ext))
    }
    pub fn log_path(&self, index: u32) -> PathBuf {
        self.logs_dir.join(format!("run-{index}.log"))
    }
    /// The argument vector of run `index` (program first).
    fn argv(&self, index: u32) -> Vec<String> {
        let results = self.results_path(index).display().to_string();
        self.command
            .iter()
            .chain(self.extra_args.iter())
            .map(|a| a.replace(PLACEHOLDER, &results))
            .collect()
    }
}

/// Guess the results file's extension from the command: JUnit when an
/// argument mentions junit or `.xml`, else a report-log. (The reader sniffs
/// the content anyway; the name only matters for people and `--from`.)
pub fn guess_ext(command: &[String]) -> &'static str {
    let lower: Vec<String> = command.iter().map(|w| w.to_ascii_lowercase()).collect();
    if lower.iter().any(|w| w.contains("junit") || w.contains(".xml")) {
        "xml"
    } else {
        "jsonl"
    }
}

/// Run the plan; returns one record per run, in run order. `on_event` is
/// called on this thread as runs start and finish.
pub fn execute(plan: &RunPlan, on_event: &mut dyn FnMut(Event<'_>)) -> Vec<RunRecord> {
    let jobs = plan.jobs.clamp(1, plan.runs.max(1) as usize);
    let next = AtomicU32::new(1);
    let (tx, rx) = mpsc::channel::<RunRecord>();
    let mut records: Vec<Option<RunRecord>> = vec![None; plan.runs as usize];
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index > plan.runs {
                    break;
                }
                let record = run_one(plan, index);
                if tx.send(record).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (n, record) in rx.into_iter().enumerate() {
            let done = u32::try_from(n + 1).unwrap_or(u32::MAX);
            on_event(Event::Finished { record: &record, done });
            let i = record.index as usize - 1;
            records[i] = Some(record);
        }
    });
    records.into_iter().flatten().collect()
}

fn run_one(plan: &RunPlan, index: u32) -> RunRecord {
    let results_path = plan.results_path(index);
    let log_path = plan.log_path(index);
    // A stale file must never count as this run's results.
    let _ = std::fs::remove_file(&results_path);
    let started = Instant::now();
    let end = match spawn_and_wait(plan, index, &results_path, &log_path) {
        Ok(end) => end,
        Err(e) => RunEnd::SpawnFailed(e),
    };
    RunRecord {
        index,
        results_path,
        log_path: Some(log_path),
        end,
        duration: started.elapsed(),
    }
}

fn spawn_and_wait(plan: &RunPlan, index: u32, results: &Path, log: &Path) -> Result<RunEnd, String> {
    let argv = plan.argv(index);
    let (program, args) = argv.split_first().ok_or("no command given")?;
    let out = File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let seed = plan.seed.to_string();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .env("FLAKEGATE_RESULTS", results)
        .env("FLAKEGATE_SEED", &seed)
        .env("PYTHONHASHSEED", &seed)
        .env("FLAKEGATE_RUN_INDEX", index.to_string())
        .env("FLAKEGATE_RUNS", plan.runs.to_string());
    for (k, v) in &plan.env {
        cmd.env(k, v);
    }
    if let Some(dir) = &plan.cwd {
        cmd.current_dir(dir);
    }
    // With a timeout each run leads its own process group, so that killing it
    // also ends whatever it started (a wrapper script's pytest).
    #[cfg(unix)]
    if plan.timeout.is_some() {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|e| format!("{program}: {e}"))?;
    let status = match plan.timeout {
        None => child.wait().map_err(|e| e.to_string())?,
        Some(limit) => {
            let start = Instant::now();
            loop {
                if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                    break st;
                }
                let elapsed = start.elapsed();
                if elapsed >= limit {
                    kill_group(&mut child);
                    let _ = child.wait();
                    return Ok(RunEnd::TimedOut { after: limit });
                }
                std::thread::sleep((limit - elapsed).min(Duration::from_millis(20)));
            }
        }
    };
    Ok(end_of(status))
}

fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        // The child leads its own group (see above): signal the whole group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}

fn end_of(status: ExitStatus) -> RunEnd {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    RunEnd::Exited {
        code: status.code(),
        signal,
    }
}

/// The last `n` lines of a run's log, for the report of an unusable run.
pub fn log_tail(path: &Path, n: usize) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    Some(lines[lines.len().saturating_sub(n)..].join("\n"))
}

/// A directory removed when dropped (the runs' results when not `--keep`).
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new() -> std::io::Result<Self> {
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        for attempt in 0..100u32 {
            let p = base.join(format!("flakegate-probe-{}-{nanos:x}-{attempt}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(ScratchDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("could not create a scratch directory"))
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(dir: &Path, script: &str, runs: u32, jobs: usize, timeout: Option<Duration>) -> RunPlan {
        RunPlan {
            command: vec!["sh".into(), "-c".into(), script.into(), "sh".into(), "{results}".into()],
            extra_args: vec![],
            runs,
            jobs,
            seed: 42,
            timeout,
            results_dir: dir.to_path_buf(),
            results_ext: "jsonl".into(),
            logs_dir: dir.to_path_buf(),
            cwd: None,
            env: vec![],
        }
    }

    #[test]
    fn every_run_gets_its_own_path_and_the_same_seed() {
        let tmp = ScratchDir::new().unwrap();
        let p = plan(
            tmp.path(),
            r#"echo "$1 $FLAKEGATE_RESULTS $FLAKEGATE_SEED $PYTHONHASHSEED $FLAKEGATE_RUN_INDEX" > "$1""#,
            3,
            2,
            None,
        );
        let mut events = 0;
        let recs = execute(&p, &mut |_| events += 1);
        assert_eq!(events, 3, "one Finished event per run");
        assert_eq!(recs.iter().map(|r| r.index).collect::<Vec<_>>(), vec![1, 2, 3]);
        for r in &recs {
            assert_eq!(
                r.end,
                RunEnd::Exited {
                    code: Some(0),
                    signal: None
                }
            );
            let got = std::fs::read_to_string(&r.results_path).unwrap();
            let path = r.results_path.display().to_string();
            assert_eq!(got.trim(), format!("{path} {path} 42 42 {}", r.index));
        }
    }

    #[test]
    fn timeouts_kill_the_run() {
        let tmp = ScratchDir::new().unwrap();
        let p = plan(tmp.path(), "sleep 30", 1, 1, Some(Duration::from_millis(300)));
        let t = Instant::now();
        let recs = execute(&p, &mut |_| {});
        assert!(matches!(recs[0].end, RunEnd::TimedOut { .. }), "{:?}", recs[0].end);
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn spawn_failure_is_recorded() {
        let tmp = ScratchDir::new().unwrap();
        let mut p = plan(tmp.path(), "", 1, 1, None);
        p.command = vec!["/nonexistent/flakegate-test-binary".into()];
        let recs = execute(&p, &mut |_| {});
        assert!(matches!(&recs[0].end, RunEnd::SpawnFailed(e) if e.contains("nonexistent")));
    }

    #[test]
    fn ext_guess() {
        assert_eq!(guess_ext(&["pytest".into(), "--junitxml={results}".into()]), "xml");
        assert_eq!(guess_ext(&["pytest".into(), "--report-log={results}".into()]), "jsonl");
    }
}
