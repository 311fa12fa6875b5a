use super::*;
use crate::gate::attribution::lines_needed;
use crate::gate::patch::parse_patch;

/// The hash of the second thread is the whole input's, whatever the reader
/// consumed, and the reader's result comes back unchanged.
#[test]
fn the_second_thread_hashes_every_byte() {
    use sha2::Digest;
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let want = hex::encode(sha2::Sha256::digest(&data));
    for take in [0usize, 1, 4096, 1 << 20, data.len()] {
        let (got, sha) = hashed_read(&data[..], |r| {
            let mut buf = vec![0u8; take];
            std::io::Read::read_exact(r, &mut buf).map(|()| buf)
        });
        assert_eq!(got.unwrap(), data[..take]);
        assert_eq!(sha.unwrap(), want, "after reading {take} bytes");
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cases/all_stable/evidence/coverage.json");
    let bytes = std::fs::read(&path).unwrap();
    let (cov, digest) = read_coverage(&path, &PathMatcher::new(["src/shop/cart.py"])).unwrap();
    assert_eq!(cov.files.len(), 1);
    assert_eq!(digest.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
    assert_eq!(digest.sha256, sha256_file(&path).unwrap());
}

fn root_fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// A mapped report (hashed in place by the second thread) and the same report read
/// in blocks give the same coverage and the same digest; a failed scan is the error.
#[test]
fn the_mapped_and_the_block_path_agree() {
    use sha2::Digest;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut reports = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.file_name().is_some_and(|n| n == "coverage.json") {
                reports.push(p);
            }
        }
    }
    assert!(reports.len() >= 20, "{reports:?}");
    for path in &reports {
        let name = display(path);
        let bytes = std::fs::read(path).unwrap();
        let m = PathMatcher::new(["src/shop/cart.py", "src/shop/pricing.py"]);
        let (mapped, digest) = match read_coverage(path, &m) {
            Ok((c, d)) => (Ok(c), Some(d.sha256)),
            Err(e) => (Err(e), None),
        };
        let (blocks, sha) = hashed_read(std::fs::File::open(path).unwrap(), |r| {
            crate::gate::coverage::json::read_json(&name, r, &m)
        });
        assert_eq!(mapped, blocks, "{name}");
        if let Some(digest) = digest {
            assert_eq!(digest, sha.unwrap(), "{name}");
            assert_eq!(digest, hex::encode(sha2::Sha256::digest(&bytes)), "{name}");
        }
    }
    // A pipe (not mapped; its first bytes, read to sniff the format, are not lost).
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("coverage.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let report = root_fixture("cases/all_stable/evidence/coverage.json");
    let writer = {
        let (fifo, report) = (fifo.clone(), report.clone());
        std::thread::spawn(move || std::fs::write(fifo, std::fs::read(report).unwrap()).unwrap())
    };
    let m = PathMatcher::new(["src/shop/cart.py"]);
    let (piped, digest) = read_coverage(&fifo, &m).unwrap();
    writer.join().unwrap();
    let (mapped, want) = read_coverage(&report, &m).unwrap();
    assert_eq!(piped, mapped);
    assert_eq!(digest.sha256, want.sha256);

    // Bigger than a hash step and a release step, with an error at the very end.
    let t = tempfile::tempdir().unwrap();
    let big = t.path().join("coverage.json");
    let mut json = String::from("{\"files\": {");
    let mut i = 0;
    while json.len() < 3 * RELEASE_STEP {
        json.push_str(&format!(
            "\"f{i}.py\": {{\"contexts\": {{\"1\": [\"t.py::test_{i}|run\"]}}}}, "
        ));
        i += 1;
    }
    json.push_str("\"src/shop/cart.py\": {\"executed_lines\": [7]}}}");
    std::fs::write(&big, &json).unwrap();
    let m = PathMatcher::new(["src/shop/cart.py"]);
    let (cov, digest) = read_coverage(&big, &m).unwrap();
    assert_eq!(cov.measured_files, i + 1);
    assert!(cov.files["src/shop/cart.py"].executed.contains(&7));
    assert_eq!(digest.sha256, hex::encode(sha2::Sha256::digest(json.as_bytes())));
    json.push(',');
    std::fs::write(&big, &json).unwrap();
    let e = read_coverage(&big, &m).unwrap_err();
    assert!(e.message.contains("trailing characters"), "{e}");
    assert!(e.message.contains(&format!("(byte {})", json.len() - 1)), "{e}");
}

/// However large a changed file's entry, only the witnesses of the lines the gate
/// reads are kept: the same as a full read on those lines, none
/// elsewhere; which lines ran is kept whole.
#[test]
fn only_the_lines_the_gate_reads_keep_their_witnesses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cases");
    for (case, file) in [
        ("some_frozen", "coverage.json"),
        ("some_frozen", ".coverage"),
        ("pure_deletion", "coverage.json"),
    ] {
        let dir = root.join(case);
        let diff = std::fs::read(dir.join("diff.patch")).unwrap();
        let patch = parse_patch("diff.patch", &diff).unwrap();
        let path = dir.join("evidence").join(file);
        let sources = EvidenceSources {
            coverage: Some(path.clone()),
            ..EvidenceSources::default()
        };
        let kept = load_evidence(&sources, &patch, None, &BTreeMap::new())
            .evidence
            .coverage
            .unwrap_or_else(|| panic!("{case}/{file}: no coverage"));
        let (all, _) = read_coverage(&path, &PathMatcher::new(patch.paths())).unwrap();
        let needed = lines_needed(&patch, &BTreeMap::new());
        let pairs = |c: &Coverage| {
            c.files
                .values()
                .flat_map(|f| f.witnesses.values())
                .map(|w| w.len())
                .sum::<usize>()
        };
        assert!(pairs(&kept) > 0, "{case}/{file}: the changed lines have witnesses");
        assert!(
            pairs(&all) > pairs(&kept),
            "{case}/{file}: lines the gate does not read were dropped"
        );
        for (repo, full) in &all.files {
            let k = &kept.files[repo];
            assert_eq!(
                (&k.executed, &k.import_time),
                (&full.executed, &full.import_time),
                "{case}/{file}"
            );
            for line in k.witnesses.keys() {
                assert!(needed[repo].contains(*line), "{case}/{file}: {repo}:{line} kept");
            }
            for line in &needed[repo].lines {
                assert_eq!(
                    k.witnesses.get(line),
                    full.witnesses.get(line),
                    "{case}/{file}: {repo}:{line}"
                );
            }
        }
    }
}

/// Patches judged with one evidence directory share its reading: the same patch (and ledger)
/// is served what was read for the first, to the digest; another patch is read for itself.
#[test]
fn one_evidence_directory_is_read_once_for_the_patches_that_need_the_same() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cases");
    let patch_of = |case: &str| {
        let diff = std::fs::read(root.join(case).join("diff.patch")).unwrap();
        parse_patch("diff.patch", &diff).unwrap()
    };
    let once = std::sync::Arc::new(ReadOnce::default());
    let sources = EvidenceSources {
        dir: Some(root.join("some_frozen/evidence")),
        read_once: Some(once.clone()),
        ..EvidenceSources::default()
    };
    let patch = patch_of("some_frozen");
    let alone = load_evidence(
        &EvidenceSources {
            read_once: None,
            ..sources.clone()
        },
        &patch,
        None,
        &BTreeMap::new(),
    );
    let first = load_evidence(&sources, &patch, None, &BTreeMap::new());
    let second = load_evidence(&sources, &patch, None, &BTreeMap::new());
    assert_eq!(once.reads(), 1);
    for l in [&first, &second] {
        assert_eq!(l.digests, alone.digests);
        assert_eq!(l.evidence.coverage, alone.evidence.coverage);
        assert_eq!(l.evidence.results, alone.evidence.results);
        assert!(l.evidence.problems.is_empty(), "{:?}", l.evidence.problems);
    }
    // Another patch needs other lines: read for itself, and what it gets is its own.
    let other = patch_of("all_stable");
    let theirs = load_evidence(&sources, &other, None, &BTreeMap::new());
    assert_eq!(once.reads(), 2);
    let own = load_evidence(
        &EvidenceSources {
            read_once: None,
            ..sources.clone()
        },
        &other,
        None,
        &BTreeMap::new(),
    );
    assert_eq!(theirs.evidence.coverage, own.evidence.coverage);
}
