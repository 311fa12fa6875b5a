use super::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// A face whose only evidence file is `meta`; everything else is absent.
struct OneFile {
    meta: std::path::PathBuf,
}

impl Sources for OneFile {
    type Error = std::convert::Infallible;
    async fn config(&self) -> Result<Option<Named>, Self::Error> {
        Ok(None)
    }
    async fn patch(&self) -> Result<Named, Self::Error> {
        let diff = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
        Ok(Named::new("test diff", diff.as_bytes().to_vec()))
    }
    async fn base_ledger(&self, _path: &str) -> Result<Result<Named, String>, Self::Error> {
        Ok(Err("no ledger in this test".into()))
    }
    async fn evidence(&self) -> Result<EvidenceSources, Self::Error> {
        Ok(EvidenceSources {
            meta: Some(self.meta.clone()),
            ..EvidenceSources::default()
        })
    }
    async fn head_ledger(&self, _path: &str) -> Result<Option<Named>, Self::Error> {
        Ok(None)
    }
    async fn base_file(&self, _path: &str) -> Result<Option<Named>, Self::Error> {
        Ok(None)
    }
    async fn head_file(&self, _path: &str) -> Result<Option<Named>, Self::Error> {
        Ok(None)
    }
}

const META: &str = r#"{"base_sha": "b", "head_sha": "h", "k": 5}"#;

fn feed(path: &std::path::Path) {
    use std::io::Write as _;
    // Opening a FIFO for writing waits for its reader.
    let mut w = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    w.write_all(META.as_bytes()).unwrap();
}

/// Reading the evidence waits on a FIFO that only a task of the same one-thread
/// runtime writes: had the evidence been read on the runtime, that task could never
/// run. A watchdog thread feeds the FIFO after a minute so a regression fails
/// rather than hangs (a hang guard, not a timing assertion).
#[test]
fn the_runtime_keeps_running_while_evidence_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("meta.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");

    let done = Arc::new(AtomicBool::new(false));
    let by_watchdog = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (fifo, done, by_watchdog) = (fifo.clone(), done.clone(), by_watchdog.clone());
        std::thread::spawn(move || {
            for _ in 0..600 {
                if done.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            by_watchdog.store(true, Ordering::SeqCst);
            feed(&fifo);
        })
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let report = runtime.block_on(async {
        // A task of this runtime's one thread writes the FIFO once its reader is there
        // (opening the writing end without a reader fails at once: it never blocks).
        let fifo_ = fifo.clone();
        tokio::spawn(async move {
            loop {
                match tokio::net::unix::pipe::OpenOptions::new().open_sender(&fifo_) {
                    Ok(mut tx) => {
                        tokio::io::AsyncWriteExt::write_all(&mut tx, META.as_bytes())
                            .await
                            .unwrap();
                        return;
                    }
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                }
            }
        });
        let judging = Judging {
            today: NaiveDate::from_ymd_opt(2026, 12, 2).unwrap(),
            base_sha: Some("b".into()),
            head_sha: Some("h".into()),
            workflow: None,
            history: None,
        };
        let src = OneFile { meta: fifo.clone() };
        evaluate(&src, &ConfigRead::default(), judging).await.unwrap()
    });
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();

    assert!(
        !by_watchdog.load(Ordering::SeqCst),
        "the evidence was read on the runtime: the runtime's own task never ran"
    );
    let meta = report.inputs.iter().find(|d| d.role == "meta").expect("meta digested");
    let expected = InputDigest::of("meta", "x", META.as_bytes());
    assert_eq!(
        meta.sha256, expected.sha256,
        "the meta read is what the runtime's task wrote"
    );
}

#[test]
fn a_panic_off_the_runtime_is_resumed_in_the_caller() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(off_the_runtime(|| -> u8 { panic!("boom") }))
    }));
    let payload = caught.expect_err("the panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
}

/// A data file's files are classified with their sources; one that does not parse (newer
/// syntax), or whose source was not read, keeps the data file's lines, and a note says so.
#[test]
fn data_file_statements_fall_back_with_a_note() {
    use crate::gate::coverage::FileCoverage;
    let ran = FileCoverage {
        executed: [1, 3].into(),
        ..FileCoverage::default()
    };
    let mut cov = Coverage {
        format: CoverageFormat::DataFile,
        files: ["src/ok.py", "src/new.py", "src/unread.py"]
            .into_iter()
            .map(|p| (p.to_string(), ran.clone()))
            .collect(),
        measured_files: 3,
        mapped_paths: Vec::new(),
        foreign_contexts: Vec::new(),
        has_test_contexts: true,
    };
    let texts: BTreeMap<String, String> = [
        ("src/ok.py", "\"\"\"Doc\nstring.\"\"\"\nx = (1,\n     2)\ny = 3\n"),
        ("src/new.py", "name = 1\ns = t\"hello {name}\"\n"),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    let unread: BTreeMap<String, String> =
        [("src/unread.py".to_string(), "src/unread.py (5000000 bytes)".to_string())].into();
    let mut notes = Vec::new();
    classify_statements(&mut cov, &texts, &unread, &mut notes);
    let ok = &cov.files["src/ok.py"];
    assert!(ok.has_statements);
    assert_eq!(ok.executed, [3].into(), "the docstring's line 1 is no statement");
    assert_eq!(ok.missing, [5].into());
    for path in ["src/new.py", "src/unread.py"] {
        assert_eq!(cov.files[path], ran, "{path} keeps the data file's lines");
    }
    assert_eq!(notes.len(), 2, "{notes:#?}");
    assert!(
        notes[0].contains("src/new.py (line 2: cannot parse as Python"),
        "{}",
        notes[0]
    );
    assert!(notes[0].contains("counts as unexecuted code"), "{}", notes[0]);
    assert!(
        notes[1].contains("src/unread.py (5000000 bytes) was not read"),
        "{}",
        notes[1]
    );
}
