use super::*;
use crate::gate::coverage::json::read_json;
use std::path::PathBuf;

const SHOP: [&str; 5] = [
    "src/shop/__init__.py",
    "src/shop/cart.py",
    "src/shop/pricing.py",
    "src/shop/refunds.py",
    "src/shop/util.py",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn json(path: &Path, matcher: &PathMatcher) -> Coverage {
    let f = std::fs::File::open(path).unwrap();
    read_json(&path.display().to_string(), f, matcher).unwrap()
}

fn db(path: &Path, matcher: &PathMatcher) -> Coverage {
    read_data_file(path, matcher).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The new-side file names of a git diff (`+++ b/…`).
fn changed_files(diff: &Path) -> Vec<String> {
    std::fs::read_to_string(diff)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(|p| p.trim_end_matches(['\r', '\t']).to_string())
        .collect()
}

fn all_lines(fc: &FileCoverage) -> BTreeSet<u32> {
    fc.witnesses
        .keys()
        .chain(&fc.import_time)
        .chain(&fc.executed)
        .copied()
        .collect()
}

/// Same witnesses (test → phases) on every line, and same import-time lines.
fn assert_same_witnesses(what: &str, a: &Coverage, b: &Coverage, paths: &[&str]) {
    for &path in paths {
        let (Some(fa), Some(fb)) = (a.files.get(path), b.files.get(path)) else {
            assert_eq!(
                a.files.contains_key(path),
                b.files.contains_key(path),
                "{what}: {path} present in one only"
            );
            continue;
        };
        for line in all_lines(fa).union(&all_lines(fb)) {
            assert_eq!(
                fa.witnesses.get(line),
                fb.witnesses.get(line),
                "{what}: {path}:{line} witnesses differ"
            );
        }
        assert_eq!(
            fa.import_time, fb.import_time,
            "{what}: {path} import-time lines differ"
        );
    }
}

#[test]
fn json_and_data_file_of_the_same_run_agree_for_every_case() {
    let cases = fixtures().join("cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 13, "fixture cases missing: {names:?}");
    let mut compared_lines = 0;
    for name in names {
        let dir = cases.join(&name);
        let what = name.to_string_lossy().to_string();
        let changed = changed_files(&dir.join("diff.patch"));
        assert!(!changed.is_empty(), "{what}: no changed files");
        let matcher = PathMatcher::new(changed.iter().map(String::as_str));
        let j = json(&dir.join("evidence/coverage.json"), &matcher);
        let d = db(&dir.join("evidence/.coverage"), &matcher);
        assert_eq!(j.format, CoverageFormat::Json);
        assert_eq!(d.format, CoverageFormat::DataFile);
        assert_eq!(
            j.files.keys().collect::<Vec<_>>(),
            d.files.keys().collect::<Vec<_>>(),
            "{what}: selected files"
        );
        let changed: Vec<&str> = changed.iter().map(String::as_str).collect();
        assert_same_witnesses(&what, &j, &d, &changed);
        // The whole package, not only the changed files.
        let all = PathMatcher::new(SHOP);
        assert_same_witnesses(
            &what,
            &json(&dir.join("evidence/coverage.json"), &all),
            &db(&dir.join("evidence/.coverage"), &all),
            &SHOP,
        );

        assert_eq!(j.measured_files, d.measured_files, "{what}: measured files");
        assert!(j.has_test_contexts && d.has_test_contexts, "{what}");
        assert!(j.foreign_contexts.is_empty() && d.foreign_contexts.is_empty(), "{what}");
        assert!(j.mapped_paths.is_empty() && d.mapped_paths.is_empty(), "{what}");
        for (path, fj) in &j.files {
            let fd = &d.files[path];
            assert!(fj.has_statements && !fd.has_statements);
            assert!(fd.missing.is_empty() && fd.excluded.is_empty());
            // Every statement the JSON says ran, the data file ran; the data file's extra
            // lines are non-statements that carry contexts in the JSON too (line 1).
            assert!(fj.executed.is_subset(&fd.executed), "{what}: {path}");
            let ctx_lines: BTreeSet<u32> = fj.witnesses.keys().chain(&fj.import_time).copied().collect();
            assert_eq!(fd.executed, ctx_lines, "{what}: {path}");
            compared_lines += all_lines(fj).len();
        }
    }
    assert!(compared_lines > 100, "compared only {compared_lines} lines");
}

#[test]
fn witnesses_of_the_cases_changed_lines() {
    let dir = fixtures().join("cases/some_frozen/evidence");
    let d = db(&dir.join(".coverage"), &PathMatcher::new(["src/shop/refunds.py"]));
    let w: Vec<&str> = d.files["src/shop/refunds.py"].witnesses[&7]
        .keys()
        .map(|t| t.as_str())
        .collect();
    assert_eq!(
        w,
        [
            "tests/test_refunds.py::test_gateway_retry",
            "tests/test_refunds.py::test_refund_amount",
            "tests/test_refunds.py::test_refund_rounding_broken"
        ]
    );
}

#[test]
fn branch_mode_gives_the_same_witnesses_as_line_mode() {
    let m = PathMatcher::new(SHOP);
    let line_dir = fixtures().join("cases/all_stable/evidence");
    let branch_dir = fixtures().join("coverage-variants/branch");
    let line_db = db(&line_dir.join(".coverage"), &m);
    let branch_db = db(&branch_dir.join(".coverage"), &m);
    let branch_json = json(&branch_dir.join("coverage.json"), &m);
    let line_json = json(&line_dir.join("coverage.json"), &m);
    assert_same_witnesses("branch .coverage vs line .coverage", &line_db, &branch_db, &SHOP);
    assert_same_witnesses("branch json vs branch .coverage", &branch_json, &branch_db, &SHOP);
    assert_same_witnesses("branch json vs line json", &line_json, &branch_json, &SHOP);
    for p in SHOP {
        assert_eq!(line_db.files[p].executed, branch_db.files[p].executed, "{p}");
    }
    assert!(branch_db.has_test_contexts);
    // `(-1, 0)` / `(0, -1)` arcs of the empty __init__.py give no line.
    assert_eq!(branch_db.files["src/shop/__init__.py"], FileCoverage::default());
}

#[test]
fn absolute_paths_map_by_suffix() {
    let m = PathMatcher::new(SHOP);
    let abs = db(&fixtures().join("coverage-variants/absolute/.coverage"), &m);
    let rel = db(&fixtures().join("cases/all_stable/evidence/.coverage"), &m);
    assert_eq!(abs.files.keys().collect::<Vec<_>>(), SHOP.iter().collect::<Vec<_>>());
    let mut mapped = abs.mapped_paths.clone();
    mapped.sort();
    let want: Vec<(String, String)> = SHOP
        .iter()
        .map(|p| (format!("/tmp/flakegate-fixtures/shop/{p}"), p.to_string()))
        .collect();
    assert_eq!(mapped, want);
    assert_same_witnesses("absolute vs relative", &abs, &rel, &SHOP);
    assert_eq!(abs.measured_files, 5);
    // The JSON made from the same data relativises paths to the cwd.
    let j = json(&fixtures().join("coverage-variants/absolute/coverage.json"), &m);
    assert!(j.mapped_paths.is_empty());
    assert_same_witnesses("absolute json vs absolute .coverage", &j, &abs, &SHOP);
}

#[test]
fn static_context_prefix_is_stripped() {
    let m = PathMatcher::new(SHOP);
    let stat = db(&fixtures().join("coverage-variants/static-context/.coverage"), &m);
    let plain = db(&fixtures().join("cases/all_stable/evidence/.coverage"), &m);
    assert_same_witnesses("static-context vs plain", &stat, &plain, &SHOP);
    assert!(stat.foreign_contexts.is_empty(), "{:?}", stat.foreign_contexts);
    assert!(stat.has_test_contexts);
    let j = json(&fixtures().join("coverage-variants/static-context/coverage.json"), &m);
    assert_same_witnesses("static-context json vs .coverage", &j, &stat, &SHOP);
}

#[test]
fn a_file_not_in_the_matcher_is_not_materialised() {
    let d = db(
        &fixtures().join("cases/all_stable/evidence/.coverage"),
        &PathMatcher::new(["src/shop/pricing.py", "README.md"]),
    );
    assert_eq!(d.files.keys().collect::<Vec<_>>(), ["src/shop/pricing.py"]);
    assert_eq!(d.measured_files, 5);
    // Nothing selected: test contexts are still detected from the context table.
    let d = db(
        &fixtures().join("cases/all_stable/evidence/.coverage"),
        &PathMatcher::new(["docs/x.md"]),
    );
    assert!(d.files.is_empty() && d.has_test_contexts);
}

#[test]
fn new_module_has_a_file_row_and_no_lines() {
    let m = PathMatcher::new(["src/shop/loyalty.py", "tools/seed_catalog.py"]);
    let d = db(&fixtures().join("cases/new_module/evidence/.coverage"), &m);
    assert_eq!(d.files.keys().collect::<Vec<_>>(), ["src/shop/loyalty.py"]);
    assert_eq!(d.files["src/shop/loyalty.py"], FileCoverage::default());
}

#[test]
fn reading_writes_nothing_next_to_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".coverage");
    std::fs::copy(fixtures().join("cases/all_stable/evidence/.coverage"), &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    db(&path, &PathMatcher::new(SHOP));
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [".coverage"]);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// The path goes into an SQLite `file:` URI (for `immutable`): characters that are URI
/// syntax in a file or directory name are read as part of the name.
#[test]
fn a_path_with_uri_characters_is_read_as_a_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a dir?x=1#frag%20");
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join("cov?mode=rwc&immutable=0#%41.coverage");
    std::fs::copy(fixtures().join("cases/all_stable/evidence/.coverage"), &path).unwrap();
    let read = db(&path, &PathMatcher::new(SHOP));
    let plain = db(
        &fixtures().join("cases/all_stable/evidence/.coverage"),
        &PathMatcher::new(SHOP),
    );
    assert_eq!(read, plain);
    // Nothing was created beside it (no `-journal`, no file named by a decoded URI).
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [path.file_name().unwrap()]);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

fn err(path: &Path) -> String {
    format!(
        "{:#}",
        read_data_file(path, &PathMatcher::new(SHOP)).expect_err("must fail")
    )
}

fn make_db(path: &Path, sql: &str) {
    Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

const SCHEMA: &str = "CREATE TABLE coverage_schema (version integer);
        CREATE TABLE meta (key text, value text, unique (key));
        CREATE TABLE file (id integer primary key, path text, unique (path));
        CREATE TABLE context (id integer primary key, context text, unique (context));
        CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));
        CREATE TABLE arc (file_id integer, context_id integer, fromno integer, tono integer, unique (file_id, context_id, fromno, tono));
        CREATE TABLE tracer (file_id integer primary key, tracer text);
        INSERT INTO meta VALUES ('version', '9.0.0'), ('has_arcs', '0');";

#[test]
fn errors_name_the_file_and_what_was_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("garbage.coverage");
    std::fs::write(&p, b"!coverage.py: This is a private format, don't read it directly!{}").unwrap();
    let e = err(&p);
    assert!(
        e.contains("garbage.coverage") && e.contains("not an SQLite database"),
        "{e}"
    );

    let p = tmp.path().join("empty.coverage");
    std::fs::write(&p, b"").unwrap();
    assert!(err(&p).contains("not an SQLite database"));

    let p = tmp.path().join("nonexistent.coverage");
    let e = err(&p);
    assert!(e.contains("nonexistent.coverage") && e.contains("no such file"), "{e}");

    let p = tmp.path().join("other.sqlite");
    make_db(
        &p,
        "CREATE TABLE jobs (id integer); CREATE TABLE file (id integer, path text);",
    );
    let e = err(&p);
    assert!(
        e.contains("other.sqlite") && e.contains("not a coverage.py data file") && e.contains("coverage_schema"),
        "{e}"
    );
    assert!(
        e.contains("missing tables coverage_schema, meta, context, line_bits, arc ("),
        "{e}"
    );
    assert_eq!(e.matches("other.sqlite").count(), 1, "{e}");

    let p = tmp.path().join("newer.coverage");
    make_db(&p, &format!("{SCHEMA} INSERT INTO coverage_schema VALUES (8);"));
    let e = err(&p);
    assert!(
        e.contains("newer.coverage") && e.contains("schema version 8") && e.contains("newer"),
        "{e}"
    );
    assert!(e.contains("coverage.py 9.0.0"), "{e}");

    let p = tmp.path().join("older.coverage");
    make_db(&p, &format!("{SCHEMA} INSERT INTO coverage_schema VALUES (6);"));
    assert!(err(&p).contains("older"));

    let p = tmp.path().join("noversion.coverage");
    make_db(&p, SCHEMA);
    assert!(err(&p).contains("no version row"));

    // A truncated data file.
    let p = tmp.path().join("truncated.coverage");
    let real = std::fs::read(fixtures().join("cases/all_stable/evidence/.coverage")).unwrap();
    std::fs::write(&p, &real[..real.len() / 3]).unwrap();
    let e = err(&p);
    assert!(
        e.contains("truncated.coverage") && e.contains("truncated or corrupt"),
        "{e}"
    );
}

#[test]
fn hand_made_data_file_rows_and_contexts() {
    // Hundreds of rows per file, numbits and arcs, a foreign context.
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join(".coverage");
    let mut sql = format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7);");
    sql.push_str("INSERT INTO file VALUES (1, '/abs/src/a.py'), (2, 'src/b.py'), (3, 'src/c.py');");
    sql.push_str("INSERT INTO context VALUES (1, ''), (2, 'tests.test_x.test_dotted');");
    let n = 300;
    for i in 0..n {
        sql.push_str(&format!(
            "INSERT INTO context VALUES ({}, 'tests/t.py::test_{i}|run');",
            i + 3
        ));
        // line (i % 50) + 1 of a.py, as numbits.
        let line = (i % 50) + 1;
        sql.push_str(&format!(
            "INSERT INTO line_bits VALUES (1, {}, X'{}');",
            i + 3,
            numbits_hex(line / 8 + 1, &[line])
        ));
        sql.push_str(&format!(
            "INSERT INTO arc VALUES (2, {}, -1, {line}), (2, {}, {line}, -1);",
            i + 3,
            i + 3
        ));
    }
    sql.push_str("INSERT INTO line_bits VALUES (1, 1, X'02'), (1, 2, X'04'); COMMIT;");
    make_db(&p, &sql);
    let d = read_data_file(&p, &PathMatcher::new(["src/a.py", "src/b.py"])).unwrap();
    assert_eq!(d.measured_files, 3);
    assert_eq!(d.mapped_paths, [("/abs/src/a.py".to_string(), "src/a.py".to_string())]);
    let a = &d.files["src/a.py"];
    let tests_on_1 = a.witnesses[&1].len();
    assert_eq!(a.witnesses.values().map(|w| w.len()).sum::<usize>(), n);
    assert_eq!(tests_on_1, n.div_ceil(50));
    assert!(a.import_time.contains(&1));
    assert!(a.executed.contains(&2));
    assert_eq!(d.foreign_contexts, ["tests.test_x.test_dotted"]);
    let b = &d.files["src/b.py"];
    assert_eq!(b.witnesses.values().map(|w| w.len()).sum::<usize>(), n);
    assert_eq!(b.executed.len(), 50);
    assert!(d.has_test_contexts);
}

/// coverage.py's line bitmap (`numbits`) of `len` bytes with `lines` set, in hex.
fn numbits_hex(len: usize, lines: &[usize]) -> String {
    let mut bits = vec![0u8; len];
    for &line in lines {
        bits[line / 8] |= 1 << (line % 8);
    }
    hex::encode(bits)
}

/// Rows of several files, each file's filling several batches of the SQLite thread,
/// are all recorded, each under its own file.
#[test]
fn rows_spanning_many_batches_are_all_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join(".coverage");
    let n = 4000;
    let mut sql = format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7);");
    sql.push_str("INSERT INTO file VALUES (1, 'src/a.py'), (2, 'src/b.py'), (3, 'src/c.py');");
    for i in 1..=n {
        sql.push_str(&format!(
            "INSERT INTO context VALUES ({i}, 'tests/t.py::test_{i}|run');"
        ));
        // File 1: line i % 799 + 1 in a 100-byte bitmap; file 3: line 1 and 700.
        let line = i % 799 + 1;
        sql.push_str(&format!(
            "INSERT INTO line_bits VALUES (1, {i}, X'{}'), (3, {i}, X'{}');",
            numbits_hex(100, &[line]),
            numbits_hex(100, &[1, 700])
        ));
    }
    sql.push_str("INSERT INTO line_bits VALUES (2, 1, X'04'); COMMIT;");
    make_db(&p, &sql);
    let d = read_data_file(&p, &PathMatcher::new(["src/a.py", "src/b.py", "src/c.py"])).unwrap();
    let a = &d.files["src/a.py"];
    assert_eq!(a.executed.len(), 799);
    assert_eq!(a.tests.len(), n);
    assert_eq!(a.witnesses.values().map(|w| w.len()).sum::<usize>(), n);
    assert_eq!(a.witnesses[&1].len(), (1..=n).filter(|i| i % 799 == 0).count());
    let b = &d.files["src/b.py"];
    assert_eq!(b.executed.iter().collect::<Vec<_>>(), [&2]);
    assert_eq!(b.witnesses[&2].len(), 1);
    let c = &d.files["src/c.py"];
    assert_eq!(c.executed.iter().collect::<Vec<_>>(), [&1, &700]);
    assert_eq!(c.witnesses[&1].len(), n);
    assert_eq!(c.witnesses[&700].len(), n);
}

#[test]
fn every_file_row_is_counted_and_the_patch_files_picked() {
    // Thousands of files; the patch names one early, the last and one absent.
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join(".coverage");
    let n = 2051;
    let mut sql = format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7);");
    sql.push_str("INSERT INTO context VALUES (1, 'tests/t.py::test_a|run');");
    for i in 1..=n {
        sql.push_str(&format!("INSERT INTO file VALUES ({i}, '/abs/src/m{i}.py');"));
    }
    let last = format!("src/m{n}.py");
    sql.push_str(&format!(
        "INSERT INTO line_bits VALUES (2, 1, X'02'), ({n}, 1, X'04'); COMMIT;"
    ));
    make_db(&p, &sql);
    let d = read_data_file(&p, &PathMatcher::new(["src/m2.py", last.as_str(), "src/absent.py"])).unwrap();
    assert_eq!(d.measured_files, n);
    assert_eq!(d.files.keys().collect::<Vec<_>>(), ["src/m2.py", last.as_str()]);
    assert_eq!(d.files["src/m2.py"].witnesses.keys().collect::<Vec<_>>(), [&1]);
    assert_eq!(d.files[&last].witnesses.keys().collect::<Vec<_>>(), [&2]);
    assert_eq!(d.mapped_paths.len(), 2);
}

/// A valid schema with `line_bits` declared by `line_bits` (the hostile part).
fn schema_with(line_bits: &str) -> String {
    SCHEMA.replace(
        "CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));",
        line_bits,
    ) + " INSERT INTO coverage_schema VALUES (7); INSERT INTO file VALUES (1, 'src/shop/cart.py');\
               INSERT INTO context VALUES (1, 'tests/t.py::test_a|run');"
}

#[test]
fn schemas_that_are_not_coverage_pys_are_refused_before_a_row_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "generated.coverage",
            schema_with(
                "CREATE TABLE line_bits (file_id integer, context_id integer, \
                     numbits blob GENERATED ALWAYS AS (zeroblob(300000000)) VIRTUAL, unique (file_id, context_id));\
                     INSERT INTO line_bits (file_id, context_id) VALUES (1, 1);",
            ),
            "column line_bits.\"numbits\" is generated or hidden",
        ),
        (
            "view.coverage",
            schema_with(
                "CREATE TABLE real_bits (file_id integer, context_id integer, numbits blob);\
                     CREATE VIEW line_bits AS SELECT file_id, context_id, zeroblob(300000000) AS numbits FROM real_bits;",
            ),
            // The view is not a table: coverage.py's line_bits is missing.
            "missing table line_bits",
        ),
        (
            "trigger.coverage",
            schema_with(
                "CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));\
                     CREATE TRIGGER grow AFTER DELETE ON file BEGIN SELECT zeroblob(300000000); END;",
            ),
            "it has a trigger \"grow\"",
        ),
        (
            "extra_view.coverage",
            schema_with(
                "CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));\
                     CREATE VIEW big AS SELECT zeroblob(300000000);",
            ),
            "it has a view \"big\"",
        ),
        (
            "extra_column.coverage",
            schema_with(
                "CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, padding blob, \
                     unique (file_id, context_id));",
            ),
            "table line_bits has columns [\"file_id\", \"context_id\", \"numbits\", \"padding\"]",
        ),
    ];
    for (file, sql, expected) in cases {
        let p = tmp.path().join(file);
        make_db(&p, &sql);
        let e = err(&p);
        assert!(e.contains(file) && e.contains(expected), "{file}: {e}");
    }
}

#[test]
fn oversized_values_are_refused_by_their_length_in_the_query() {
    let tmp = tempfile::tempdir().unwrap();
    let plain =
        "CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));";

    let p = tmp.path().join("numbits.coverage");
    let sql = schema_with(plain) + &format!(" INSERT INTO line_bits VALUES (1, 1, zeroblob({}));", MAX_NUMBITS + 1);
    make_db(&p, &sql);
    let e = err(&p);
    assert!(
        e.contains("numbits.coverage")
            && e.contains("src/shop/cart.py")
            && e.contains("numbits missing or longer than 1048576 bytes"),
        "{e}"
    );

    let p = tmp.path().join("context.coverage");
    let sql = schema_with(plain)
        + &format!(
            " INSERT INTO context VALUES (2, 'tests/t.py::' || hex(zeroblob({})) || '|run');\
                  INSERT INTO line_bits VALUES (1, 2, X'02');",
            MAX_CONTEXT
        );
    make_db(&p, &sql);
    let e = err(&p);
    assert!(e.contains("context 2: name missing or longer than 65536 bytes"), "{e}");

    let p = tmp.path().join("path.coverage");
    let sql = schema_with(plain) + &format!(" INSERT INTO file VALUES (2, hex(zeroblob({})));", MAX_PATH);
    make_db(&p, &sql);
    let e = err(&p);
    assert!(e.contains("file 2: path missing or longer than 4096 bytes"), "{e}");
}

/// Values of the wrong type are the reader's errors, never converted (a NULL arc end,
/// which sqlx once decoded as line 0, included); so is a row naming a context the
/// `context` table does not have (which an inner join once dropped silently).
#[test]
fn values_of_the_wrong_type_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let cart = "INSERT INTO file VALUES (1, 'src/shop/cart.py');";
    let test = "INSERT INTO context VALUES (1, 'tests/t.py::test_a|run');";
    let cases = [
        (
            "integer_numbits",
            format!("{cart} {test} INSERT INTO line_bits VALUES (1, 1, 5);"),
            "line_bits.numbits is not a blob",
        ),
        (
            "blob_context",
            format!("{cart} INSERT INTO context VALUES (1, X'0102'); INSERT INTO line_bits VALUES (1, 1, X'02');"),
            "context.context is not text",
        ),
        (
            "invalid_utf8_context",
            format!(
                "{cart} INSERT INTO context VALUES (1, CAST(X'74657374732F742E70793A3A74FF7C72756E' AS TEXT));\
                     INSERT INTO line_bits VALUES (1, 1, X'02');"
            ),
            "context.context is not text",
        ),
        (
            "blob_path",
            format!("INSERT INTO file VALUES (1, X'00FF'); {test}"),
            "file.path is not text",
        ),
        (
            "null_arc",
            format!("{cart} {test} INSERT INTO arc VALUES (1, 1, NULL, 3);"),
            "arc.fromno is not an integer",
        ),
        (
            "text_arc",
            format!("{cart} {test} INSERT INTO arc VALUES (1, 1, 2, 'x');"),
            "arc.tono is not an integer",
        ),
    ];
    // A bad value after rows filling several batches of the SQLite thread (3000 rows
    // of 200-byte bitmaps), and a row whose context does not exist.
    let rows_then = |bad: &str| {
        format!(
            "{cart} INSERT INTO context SELECT v, 'tests/t.py::test_' || v || '|run' FROM \
                 (WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 2999) SELECT v FROM s);\
                 INSERT INTO line_bits SELECT 1, id, zeroblob(200) FROM context; {bad}"
        )
    };
    let cases = cases.into_iter().chain([
        (
            "integer_numbits_after_many_rows",
            rows_then(
                "INSERT INTO context VALUES (3000, 'tests/t.py::test_last|run'); INSERT INTO line_bits VALUES (1, 3000, 7);",
            ),
            "line_bits.numbits is not a blob",
        ),
        (
            "dangling_context",
            rows_then("INSERT INTO line_bits VALUES (1, 9999, X'02');"),
            "context 9999 is named by a coverage row but is not in the context table",
        ),
        (
            "dangling_arc_context",
            format!("{cart} {test} INSERT INTO arc VALUES (1, 77, 1, 2);"),
            "context 77 is named by a coverage row but is not in the context table",
        ),
    ]);
    for (file, rows, expected) in cases {
        let p = tmp.path().join(format!("{file}.coverage"));
        make_db(
            &p,
            &format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7); {rows} COMMIT;"),
        );
        let e = err(&p);
        assert!(e.contains(&format!("{file}.coverage: {expected}")), "{file}: {e}");
    }
}

#[test]
fn the_row_budget_stops_at_its_limit() {
    let mut b = RowBudget(2);
    assert!(b.take("x.coverage", "src/a.py").is_ok());
    assert!(b.take("x.coverage", "src/a.py").is_ok());
    let e = format!("{:#}", b.take("x.coverage", "src/a.py").unwrap_err());
    assert!(
        e.contains("x.coverage") && e.contains("src/a.py") && e.contains("rows"),
        "{e}"
    );
}

/// SQLite's plan for `query` (its `detail` column, one string per step).
fn plan(conn: &Connection, query: &str, params: usize) -> Vec<String> {
    let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {query}")).unwrap();
    let params = vec![1i64; params];
    st.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap()
}

/// Tables a query may read whole: the schema, `coverage_schema` (one row) and
/// `file` (one row per measured source file; every path is needed to map them).
const SMALL: [&str; 5] = [
    "sqlite_master",
    "sqlite_schema",
    "coverage_schema",
    "file",
    "pragma_table_xinfo",
];

/// Every step of every query in [`QUERIES`] either scans a small table or is a
/// `SEARCH` through an index or the rowid; nothing is sorted in a temporary b-tree
/// (which would read every matching row before the first). The one exception is the
/// test-context check, which walks `context` along its rowid and stops at the first
/// test context (it runs only when no changed file's rows had one).
fn assert_no_big_scans(what: &str, plans: &[(&str, Vec<String>)]) {
    for (query, plan) in plans {
        assert!(!plan.is_empty(), "{what}: {query}: no plan");
        for step in plan {
            let ok = if let Some(rest) = step.strip_prefix("SCAN ") {
                SMALL.iter().any(|t| rest == *t || rest.starts_with(&format!("{t} ")))
                    || (*query == "context" && rest == "context")
            } else if step.starts_with("SEARCH ") {
                step.contains(" USING INDEX ")
                    || step.contains(" USING COVERING INDEX ")
                    || step.contains(" USING INTEGER PRIMARY KEY ")
            } else {
                false
            };
            assert!(ok, "{what}: {query}: step {step:?} is not an indexed search: {plan:?}");
        }
    }
}

fn all_plans(conn: &Connection) -> Vec<(&'static str, Vec<String>)> {
    QUERIES
        .iter()
        .map(|&(what, query, params)| (what, plan(conn, query, params)))
        .collect()
}

/// Every query the reader issues, planned on data files coverage.py wrote (line
/// mode and branch mode), and on one of them grown to 200,000 `line_bits` rows,
/// 40,000 `arc` rows and 20,000 contexts with `ANALYZE` statistics, so that the
/// planner knows which tables are big: `line_bits`, `arc` and `context` are
/// only ever searched by index or rowid.
#[test]
fn every_query_searches_the_big_tables_by_index() {
    for fixture in [
        "cases/all_stable/evidence/.coverage",
        "coverage-variants/branch/.coverage",
    ] {
        let conn = open(&fixtures().join(fixture)).unwrap();
        // coverage.py's own schema: its unique constraints are the indexes searched.
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            indexes,
            [
                "sqlite_autoindex_arc_1",
                "sqlite_autoindex_context_1",
                "sqlite_autoindex_file_1",
                "sqlite_autoindex_line_bits_1",
                "sqlite_autoindex_meta_1"
            ],
            "{fixture}"
        );
        assert_no_big_scans(fixture, &all_plans(&conn));
    }

    // Grown, with statistics.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".coverage");
    std::fs::copy(fixtures().join("cases/all_stable/evidence/.coverage"), &path).unwrap();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "BEGIN;
             CREATE TEMP TABLE n AS WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 20000)
                 SELECT v FROM s;
             INSERT INTO file (path) SELECT 'src/gen/m' || v || '.py' FROM n WHERE v <= 200;
             INSERT INTO context (context) SELECT 'tests/t.py::test_' || v || '|run' FROM n;
             INSERT OR IGNORE INTO line_bits SELECT f.id, c.id, X'FF' FROM file f, context c WHERE f.id % 20 = c.id % 20;
             INSERT OR IGNORE INTO arc SELECT f.id, c.id, -1, 1 FROM file f, context c WHERE f.id % 100 = c.id % 100;
             COMMIT; ANALYZE;",
    )
    .unwrap();
    let counts: (i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM line_bits), (SELECT count(*) FROM arc), (SELECT count(*) FROM context)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(
        counts.0 >= 200_000 && counts.1 >= 40_000 && counts.2 >= 20_000,
        "{counts:?}"
    );
    drop(conn);
    // As the reader opens it (read-only, immutable, mapped).
    assert_no_big_scans("grown with ANALYZE", &all_plans(&open(&path).unwrap()));
}

/// The plans SQLite makes for the reader's queries on a data file coverage.py wrote:
/// each selected file's rows are found through an index (or the rowid), never by
/// scanning `line_bits` or `arc`, and never sorted; the `file` table (one row per
/// measured source file) is the only one read whole, along its rowid.
#[test]
fn the_queries_use_indexes_not_scans() {
    let conn = open(&fixtures().join("cases/all_stable/evidence/.coverage")).unwrap();
    let files = plan(&conn, FILES_QUERY, 1);
    let line_bits = plan(&conn, LINE_BITS_QUERY, 3);
    let arc = plan(&conn, ARC_QUERY, 2);
    let context = plan(&conn, CONTEXT_QUERY, 1);
    assert_eq!(files, ["SCAN file"]);
    assert_eq!(
        line_bits,
        [
            "SEARCH lb USING INDEX sqlite_autoindex_line_bits_1 (file_id=?)",
            "SEARCH c USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN"
        ]
    );
    assert_eq!(
        arc,
        [
            "SEARCH a USING COVERING INDEX sqlite_autoindex_arc_1 (file_id=?)",
            "SEARCH c USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN"
        ]
    );
    assert_eq!(context, ["SCAN context"]);
}

/// Rows are stepped on one thread and recorded on another; the error reported is the
/// first bad file's (in file id order), every time.
#[test]
fn the_first_bad_file_is_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join(".coverage");
    let mut sql = format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7);");
    sql.push_str("INSERT INTO context VALUES (1, 'tests/t.py::test_a|run');");
    let paths: Vec<String> = (1..=12).map(|i| format!("src/m{i}.py")).collect();
    for (i, path) in paths.iter().enumerate() {
        let id = i + 1;
        sql.push_str(&format!("INSERT INTO file VALUES ({id}, '{path}');"));
        // Files 5 and 9 are bad in different ways; the others are fine.
        let numbits = match id {
            5 => "'text but not a blob' + 1".to_string(),
            9 => format!("zeroblob({})", MAX_NUMBITS + 1),
            _ => "X'02'".to_string(),
        };
        sql.push_str(&format!("INSERT INTO line_bits VALUES ({id}, 1, {numbits});"));
    }
    sql.push_str("COMMIT;");
    make_db(&p, &sql);
    let all = PathMatcher::new(paths.iter().map(String::as_str));
    for _ in 0..20 {
        let e = format!("{:#}", read_data_file(&p, &all).unwrap_err());
        assert!(e.ends_with(": line_bits.numbits is not a blob"), "{e}");
    }
    let from_six = PathMatcher::new(paths[5..].iter().map(String::as_str));
    for _ in 0..20 {
        let e = format!("{:#}", read_data_file(&p, &from_six).unwrap_err());
        assert!(
            e.contains("src/m9.py, context 1: numbits missing or longer than"),
            "{e}"
        );
    }
    let good = PathMatcher::new(
        paths
            .iter()
            .enumerate()
            .filter(|(i, _)| ![4, 8].contains(i))
            .map(|(_, p)| p.as_str()),
    );
    let d = read_data_file(&p, &good).unwrap();
    assert_eq!(d.files.len(), 10);
    assert!(d.files.values().all(|f| f.witnesses.keys().eq([&1])));
}
