//! The coverage.py data file (`.coverage`, SQLite), read directly with sqlx.
//!
//! Only the patch's files are queried: every `file.path` is loaded (cheap) to
//! count the measured files and pick the ones [`PathMatcher`] maps, then
//! `line_bits` (line mode) and `arc` (branch mode) rows are read for those file
//! ids only, joined to `context`, a page at a time; SQLite returns each page as one
//! aggregated row (see `PAGE`), because sqlx hands every result row across threads.
//! The file is opened read-only and `immutable`, so SQLite takes no lock and never
//! writes a journal next to the user's file.
//!
//! Schema (coverage.py 5.0–7.x, `coverage_schema.version` 7): `meta(key,
//! value)` with `version` and `has_arcs`, `file(id, path)`, `context(id,
//! context)`, `line_bits(file_id, context_id, numbits)`, `arc(file_id,
//! context_id, fromno, tono)`, `tracer(file_id, tracer)`.
//!
//! The data file lists no statements: `has_statements` is false and
//! `missing`/`excluded` are empty; `executed` is every line any context ran
//! (including non-statement lines such as a module's docstring line 1).

use crate::gate::coverage::{
    decode_numbits, insert_file, ContextCollector, Coverage, CoverageFormat, FileCoverage, PathMatcher,
};
use anyhow::{anyhow, bail, Context as _};
use serde::Deserialize;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, Row};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The schema version coverage.py 5.0 through 7.x write.
pub const SCHEMA_VERSION: i64 = 7;

const TABLES: [&str; 6] = ["coverage_schema", "meta", "file", "context", "line_bits", "arc"];

/// Rows per page of `line_bits` and `arc`. A page comes back as one row (see
/// [`LINE_BITS_QUERY`]), so it must stay under SQLite's 1,000,000,000-byte string
/// limit in the worst case: 256 × (a 2 MiB hex `numbits` + a 64 Ki-character name
/// escaped in JSON) is about 600 MB. Real rows are a few hundred bytes.
const PAGE: i64 = 256;
/// `file` rows per page (a path is at most 4096 characters, 24 KiB in JSON).
const FILE_PAGE: i64 = 1024;

// Each page is aggregated by SQLite into ONE row: `group_concat` of the ids and hex
// bitmaps, `json_group_array` of the names (text needs escaping). sqlx's SQLite driver
// hands every row from its worker thread to the caller through a channel, waking the
// caller each time; at ~27,000 `line_bits` rows for 20 changed files that hand-off,
// not SQLite, was most of the read (docs/performance.md). The aggregates read the
// rows of the LIMITed subquery in its order, so the i-th element of every list is the
// same row's. Every element is non-NULL (`group_concat` skips NULLs): a value that
// does not fit is `x` (wrong type) or `-` (missing or too long) in the lists, `0` or
// `null` in the JSON arrays, and reported with the same error as before.

/// The tables of the database (`sqlite_master`: the schema, a few rows).
const TABLES_QUERY: &str = "SELECT name FROM sqlite_master WHERE type = 'table'";
/// Every table, view and trigger, to refuse a schema that is not coverage.py's.
const OBJECTS_QUERY: &str = "SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'trigger', 'table')";
/// One table's columns, generated and hidden ones included.
const COLUMNS_QUERY: &str = "SELECT name, hidden FROM pragma_table_xinfo(?1)";
/// `coverage_schema` has one row.
const VERSION_QUERY: &str = "SELECT version FROM coverage_schema";
/// Along `meta`'s unique index on `key`.
const META_VERSION_QUERY: &str = "SELECT value FROM meta WHERE key = 'version'";
/// A page of measured files along the rowid (one row per source file: the only table
/// read whole, to count the files and map absolute paths by suffix): the row count,
/// the last id, the ids, and the paths as a JSON array (`null`: missing or longer
/// than ?1; `0`: not text).
const FILES_QUERY: &str = "SELECT count(*), max(id), group_concat(id, ','), \
     json_group_array(CASE WHEN length(path) <= ?1 THEN iif(typeof(path) = 'text', path, 0) END) \
     FROM (SELECT id, path FROM file WHERE id > ?2 ORDER BY id LIMIT ?3)";
/// A page of one file's `line_bits`, along the `(file_id, context_id)` unique index,
/// joined to `context` by rowid: the row count, the context ids, the context names
/// (JSON array) and the bitmaps in hex.
const LINE_BITS_QUERY: &str = "SELECT count(*), group_concat(iif(typeof(cid) = 'integer', cid, 'x'), ','), \
     json_group_array(CASE WHEN length(ctx) <= ?4 THEN iif(typeof(ctx) = 'text', ctx, 0) END), \
     group_concat(CASE WHEN length(nb) <= ?5 THEN iif(typeof(nb) IN ('blob', 'text'), hex(nb), 'x') ELSE '-' END, ',') \
     FROM (SELECT lb.context_id AS cid, c.context AS ctx, lb.numbits AS nb \
     FROM line_bits lb JOIN context c ON c.id = lb.context_id \
     WHERE lb.file_id = ?1 AND lb.context_id > ?2 ORDER BY lb.context_id LIMIT ?3)";
/// A page of one file's `arc` rows, along the `(file_id, context_id, fromno, tono)` unique
/// index, joined to `context` by rowid: the row count, `context_id fromno tono` of each
/// row, and the context names (JSON array).
const ARC_QUERY: &str = "SELECT count(*), group_concat(iif(typeof(cid) = 'integer', cid, 'x') || ' ' || \
     iif(typeof(f) = 'integer', f, 'x') || ' ' || iif(typeof(t) = 'integer', t, 'x'), ','), \
     json_group_array(CASE WHEN length(ctx) <= ?6 THEN iif(typeof(ctx) = 'text', ctx, 0) END) \
     FROM (SELECT a.context_id AS cid, c.context AS ctx, a.fromno AS f, a.tono AS t \
     FROM arc a JOIN context c ON c.id = a.context_id \
     WHERE a.file_id = ?1 AND (a.context_id, a.fromno, a.tono) > (?2, ?3, ?4) \
     ORDER BY a.context_id, a.fromno, a.tono LIMIT ?5)";
/// A page of test-context candidates, along the `context` table's rowid (it stops at
/// the first test context).
const CONTEXT_QUERY: &str = "SELECT id, context FROM context WHERE id > ?1 AND length(context) <= ?3 \
     AND instr(context, '::') > 0 AND instr(context, '|') > 0 ORDER BY id LIMIT ?2";

/// Every query the reader issues, with its number of parameters: the test
/// `every_query_searches_the_big_tables_by_index` shows SQLite's plan for each.
#[cfg(test)]
const QUERIES: [(&str, &str, usize); 9] = [
    ("tables", TABLES_QUERY, 0),
    ("objects", OBJECTS_QUERY, 0),
    ("columns", COLUMNS_QUERY, 1),
    ("version", VERSION_QUERY, 0),
    ("meta version", META_VERSION_QUERY, 0),
    ("files", FILES_QUERY, 3),
    ("line_bits", LINE_BITS_QUERY, 5),
    ("arc", ARC_QUERY, 6),
    ("context", CONTEXT_QUERY, 3),
];

/// The columns of each table flakegate reads, as coverage.py creates them. Anything
/// else — a generated or hidden column, an extra column, a view or trigger, a virtual
/// table — is not coverage.py's schema and is refused before a row is read: a 53 KB
/// file whose `numbits` column was `GENERATED ALWAYS AS (zeroblob(300000000))` once
/// took gigabytes to read.
const COLUMNS: [(&str, &[&str]); 7] = [
    ("coverage_schema", &["version"]),
    ("meta", &["key", "value"]),
    ("file", &["id", "path"]),
    ("context", &["id", "context"]),
    ("line_bits", &["file_id", "context_id", "numbits"]),
    ("arc", &["file_id", "context_id", "fromno", "tono"]),
    ("tracer", &["file_id", "tracer"]),
];

/// Longest `numbits` blob read: 1 MiB encodes lines up to about 8.4 million.
const MAX_NUMBITS: i64 = 1 << 20;
/// Longest context name read (a pytest node id and its phase).
const MAX_CONTEXT: i64 = 64 * 1024;
/// Longest measured file path read.
const MAX_PATH: i64 = 4096;
/// Most `file` rows read (every measured file's path is loaded to map the patch's).
const MAX_FILES: usize = 1_000_000;
/// Most `line_bits` and `arc` rows read for one changed file: 20 million
/// (test, line) facts is more than any real suite records for one module.
const MAX_ROWS_PER_FILE: usize = 20_000_000;

/// Read a `.coverage` data file, materialising only the files `matcher` maps.
pub async fn read_data_file(path: &Path, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
    // Every error names the file (and says what was expected).
    read(path, matcher).await
}

/// [`read_data_file`] for synchronous callers: runs it on a current-thread
/// tokio runtime. Called from inside a tokio runtime, it runs on a separate
/// thread instead of panicking (async callers should use `read_data_file`).
pub fn read_data_file_blocking(path: &Path, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
    fn run(path: &Path, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a tokio runtime to read the coverage data file")?;
        rt.block_on(read_data_file(path, matcher))
    }
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| {
            s.spawn(|| run(path, matcher))
                .join()
                .unwrap_or_else(|_| Err(anyhow!("the coverage data file reader panicked")))
        })
    } else {
        run(path, matcher)
    }
}

async fn read(path: &Path, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
    let name = path.display().to_string();
    if !path.is_file() {
        bail!("{name}: no such file");
    }
    // Fail early, with a clear message, on something that is not SQLite.
    let mut head = [0u8; 16];
    {
        use std::io::Read;
        let mut f = std::fs::File::open(path).with_context(|| format!("{name}: cannot open"))?;
        let n = f.read(&mut head).with_context(|| format!("{name}: cannot read"))?;
        if n < 16 || &head != b"SQLite format 3\0" {
            bail!(
                "{name}: not an SQLite database (expected a coverage.py 5.0+ data file `.coverage`; \
                 coverage.py before 5.0 wrote another format, and `coverage json --show-contexts` gives coverage.json)"
            );
        }
    }

    let options = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .immutable(true)
        .create_if_missing(false)
        .foreign_keys(false)
        // Functions in the schema (views, triggers, generated columns, defaults) do
        // not run; such a schema is refused anyway (`refuse_foreign_schema`).
        .pragma("trusted_schema", "OFF");
    let mut conn = SqliteConnection::connect_with(&options)
        .await
        .with_context(|| format!("{name}: cannot open as SQLite (read-only)"))?;
    let result = read_conn(&mut conn, &name, matcher).await;
    let _ = conn.close().await;
    result
}

async fn read_conn(conn: &mut SqliteConnection, name: &str, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
    // Is this a coverage.py data file at all?
    let tables: BTreeSet<String> = sqlx::query_scalar(TABLES_QUERY)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("{name}: cannot read the SQLite database (truncated or corrupt?)"))?
        .into_iter()
        .collect();
    let missing: Vec<&str> = TABLES.iter().copied().filter(|t| !tables.contains(*t)).collect();
    if !missing.is_empty() {
        bail!(
            "{name}: not a coverage.py data file: missing table{} {} (a coverage.py 5.0–7.x data file has tables {})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            TABLES.join(", ")
        );
    }
    refuse_foreign_schema(conn, name).await?;
    let version: Option<i64> = sqlx::query_scalar(VERSION_QUERY)
        .fetch_optional(&mut *conn)
        .await
        .with_context(|| format!("{name}: cannot read coverage_schema.version"))?;
    let coverage_version: Option<String> = sqlx::query_scalar(META_VERSION_QUERY)
        .fetch_optional(&mut *conn)
        .await
        .with_context(|| format!("{name}: cannot read meta"))?;
    let written_by = coverage_version
        .map(|v| format!(" (written by coverage.py {v})"))
        .unwrap_or_default();
    match version {
        Some(SCHEMA_VERSION) => {}
        Some(v) if v > SCHEMA_VERSION => bail!(
            "{name}: coverage data schema version {v}{written_by} is newer than the version {SCHEMA_VERSION} flakegate reads \
             (coverage.py 5.0–7.x); use `coverage json --show-contexts` and give flakegate coverage.json"
        ),
        Some(v) => bail!(
            "{name}: coverage data schema version {v}{written_by} is older than the version {SCHEMA_VERSION} flakegate reads \
             (coverage.py 5.0–7.x)"
        ),
        None => bail!("{name}: not a coverage.py data file: coverage_schema has no version row"),
    }

    // All file paths, a page at a time: count them, pick the patch's.
    let mut measured_files = 0usize;
    let mut selected: BTreeMap<i64, (String, (String, bool))> = BTreeMap::new();
    let mut after = i64::MIN;
    loop {
        let (count, last, ids, paths): (i64, Option<i64>, Option<String>, Vec<u8>) = sqlx::query_as(FILES_QUERY)
            .bind(MAX_PATH)
            .bind(after)
            .bind(FILE_PAGE)
            .fetch_one(&mut *conn)
            .await
            .with_context(|| format!("{name}: cannot read the file table"))?;
        let paths: Vec<Cell<'_>> =
            serde_json::from_slice(&paths).with_context(|| format!("{name}: file.path is not text"))?;
        let ids = split_list(ids.as_deref(), count, paths.len(), name, "file")?;
        for (id, path) in ids.zip(paths) {
            let id: i64 = id
                .parse()
                .with_context(|| format!("{name}: file.id is not an integer"))?;
            let path = match path {
                Cell::Text(p) => p,
                Cell::Missing => bail!("{name}: file {id}: path missing or longer than {MAX_PATH} bytes"),
                Cell::NotText => bail!("{name}: file.path is not text"),
            };
            if let Some(mapped) = matcher.map(&path) {
                selected.insert(id, (path.into_owned(), mapped));
            }
        }
        measured_files += count as usize;
        if measured_files > MAX_FILES {
            bail!("{name}: more than {MAX_FILES} measured files in the file table");
        }
        match last {
            Some(last) if count == FILE_PAGE => after = last,
            _ => break,
        }
    }

    // The selected files' lines, a page at a time along the tables' unique
    // indexes (file_id, context_id[, fromno, tono]), so memory stays bounded
    // by a page even for a module that every test runs.
    let mut ctx = ContextCollector::for_matcher(matcher);
    let mut per_id: BTreeMap<i64, FileCoverage> = BTreeMap::new();
    let mut numbits: Vec<u8> = Vec::new();
    for (&file_id, (_, (repo, _))) in &selected {
        let fc = per_id.entry(file_id).or_default();
        let mut rows_read = RowBudget(MAX_ROWS_PER_FILE);
        let mut ran: Vec<u8> = Vec::new();
        // Line mode: one numbits blob per (file, context).
        let mut decode = |(count, ids, contexts, bits): LineBitsPage| -> anyhow::Result<()> {
            let contexts: Vec<Cell<'_>> =
                serde_json::from_slice(&contexts).with_context(|| format!("{name}: context.context is not text"))?;
            let ids = split_list(ids.as_deref(), count, contexts.len(), name, "line_bits")?;
            let bits = split_list(bits.as_deref(), count, contexts.len(), name, "line_bits")?;
            for ((id, context), hex_bits) in ids.zip(contexts).zip(bits) {
                let context_id: i64 = id
                    .parse()
                    .with_context(|| format!("{name}: line_bits.context_id is not an integer"))?;
                rows_read.take(name, repo)?;
                let context = context.into_name(name, context_id)?;
                match hex_bits {
                    "-" => bail!(
                        "{name}: line_bits of {repo}, context {context_id}: numbits missing or longer than {MAX_NUMBITS} bytes"
                    ),
                    "x" => bail!("{name}: line_bits.numbits is not a blob"),
                    _ => {}
                }
                decode_hex(hex_bits, &mut numbits)
                    .with_context(|| format!("{name}: line_bits.numbits is not a blob"))?;
                // Which lines ran: the OR of the file's bitmaps, decoded once below.
                if ran.len() < numbits.len() {
                    ran.resize(numbits.len(), 0);
                }
                for (r, b) in ran.iter_mut().zip(&numbits) {
                    *r |= b;
                }
                ctx.record_numbits(repo, fc, &numbits, &context);
            }
            Ok(())
        };
        // While one page is decoded, SQLite (on sqlx's worker thread) already reads the
        // next, so the two threads work at once instead of in turn. The next page starts
        // after this one's last context id, the last of its list (pages are in `context_id`
        // order); a full page whose last id does not parse fails to decode on that id.
        let mut page = line_bits_page(&mut *conn, file_id, i64::MIN)
            .await
            .with_context(|| format!("{name}: cannot read line_bits"))?;
        loop {
            let last_id = page
                .1
                .as_deref()
                .and_then(|l| l.rsplit(',').next()?.parse::<i64>().ok());
            let Some(last) = last_id.filter(|_| page.0 == PAGE) else {
                decode(page)?;
                break;
            };
            // `join` polls the query first (which sends it to the worker), then decodes this
            // page; an error of this page's still comes first.
            let (next, decoded) =
                futures_util::future::join(line_bits_page(&mut *conn, file_id, last), async { decode(page) }).await;
            decoded?;
            page = next.with_context(|| format!("{name}: cannot read line_bits"))?;
        }
        fc.executed.extend(decode_numbits(&ran).into_iter().filter(|&l| l > 0));
        // Branch mode: the lines are the positive ends of the arcs
        // (negative numbers are entries and exits of code objects).
        let mut after = (i64::MIN, i64::MIN, i64::MIN);
        loop {
            let (count, arcs, contexts): (i64, Option<String>, Vec<u8>) = sqlx::query_as(ARC_QUERY)
                .bind(file_id)
                .bind(after.0)
                .bind(after.1)
                .bind(after.2)
                .bind(PAGE)
                .bind(MAX_CONTEXT)
                .fetch_one(&mut *conn)
                .await
                .with_context(|| format!("{name}: cannot read arc"))?;
            let contexts: Vec<Cell<'_>> =
                serde_json::from_slice(&contexts).with_context(|| format!("{name}: context.context is not text"))?;
            let arcs = split_list(arcs.as_deref(), count, contexts.len(), name, "arc")?;
            for (arc, context) in arcs.zip(contexts) {
                rows_read.take(name, repo)?;
                let mut numbers = arc.splitn(3, ' ');
                let mut number = |column: &str| -> anyhow::Result<i64> {
                    numbers
                        .next()
                        .and_then(|n| n.parse().ok())
                        .with_context(|| format!("{name}: arc.{column} is not an integer"))
                };
                let context_id = number("context_id")?;
                let context = context.into_name(name, context_id)?;
                let from = number("fromno")?;
                let to = number("tono")?;
                after = after.max((context_id, from, to));
                for line in [from, to] {
                    if let Ok(line @ 1..) = u32::try_from(line) {
                        fc.executed.insert(line);
                        ctx.record(repo, fc, line, &context);
                    }
                }
            }
            if count < PAGE {
                break;
            }
        }
    }
    // Were test contexts recorded at all (in any file)? Only candidates that
    // look like `…::…|…` are fetched, a page at a time.
    let mut after = i64::MIN;
    while !ctx.seen_test() {
        let rows = sqlx::query(CONTEXT_QUERY)
            .bind(after)
            .bind(PAGE)
            .bind(MAX_CONTEXT)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("{name}: cannot read the context table"))?;
        for row in &rows {
            after = row
                .try_get(0)
                .with_context(|| format!("{name}: context.id is not an integer"))?;
            let context: String = row
                .try_get(1)
                .with_context(|| format!("{name}: context.context is not text"))?;
            if ctx.observe(&context) {
                break;
            }
        }
        if rows.len() < PAGE as usize {
            break;
        }
    }

    let mut files = BTreeMap::new();
    let mut mapped_paths = Vec::new();
    for (id, fc) in per_id {
        let (coverage_path, mapped) = selected.remove(&id).expect("selected id");
        insert_file(&mut files, &mut mapped_paths, &coverage_path, mapped, fc);
    }
    let (foreign_contexts, has_test_contexts) = ctx.finish(&mut files);
    Ok(Coverage {
        format: CoverageFormat::DataFile,
        files,
        measured_files,
        mapped_paths,
        foreign_contexts,
        has_test_contexts,
    })
}

/// Refuse a database whose schema is not coverage.py's: views, triggers, virtual
/// tables, and any table flakegate reads whose columns are not exactly coverage.py's
/// (`PRAGMA table_xinfo` also lists generated and hidden columns).
/// A page of `line_bits` ([`LINE_BITS_QUERY`]): the row count, the context ids, the context
/// names (JSON array) and the bitmaps in hex.
type LineBitsPage = (i64, Option<String>, Vec<u8>, Option<String>);

/// The page of `file_id`'s `line_bits` rows after context id `after`.
async fn line_bits_page(conn: &mut SqliteConnection, file_id: i64, after: i64) -> sqlx::Result<LineBitsPage> {
    sqlx::query_as(LINE_BITS_QUERY)
        .bind(file_id)
        .bind(after)
        .bind(PAGE)
        .bind(MAX_CONTEXT)
        .bind(MAX_NUMBITS)
        .fetch_one(conn)
        .await
}

async fn refuse_foreign_schema(conn: &mut SqliteConnection, name: &str) -> anyhow::Result<()> {
    let objects: Vec<(String, String, Option<String>)> = sqlx::query_as(OBJECTS_QUERY)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("{name}: cannot read the SQLite schema (truncated or corrupt?)"))?;
    for (kind, object, sql) in &objects {
        let is_virtual = sql
            .as_deref()
            .is_some_and(|s| s.trim_start().to_ascii_uppercase().starts_with("CREATE VIRTUAL"));
        if kind != "table" || is_virtual {
            let kind = if is_virtual { "virtual table" } else { kind.as_str() };
            bail!(
                "{name}: not a coverage.py data file: it has a {kind} {object:?} (coverage.py's schema has only plain tables)"
            );
        }
    }
    for (table, expected) in COLUMNS {
        let columns: Vec<(String, i64)> = sqlx::query_as(COLUMNS_QUERY)
            .bind(table)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("{name}: cannot read the columns of table {table}"))?;
        if columns.is_empty() && !TABLES.contains(&table) {
            // `tracer` is not read; a file without it is still coverage.py's.
            continue;
        }
        if let Some((column, _)) = columns.iter().find(|(_, hidden)| *hidden != 0) {
            bail!(
                "{name}: not a coverage.py data file: column {table}.{column:?} is generated or hidden \
                 (coverage.py's columns are plain)"
            );
        }
        let found: Vec<&str> = columns.iter().map(|(c, _)| c.as_str()).collect();
        if found != expected {
            bail!("{name}: not a coverage.py data file: table {table} has columns {found:?}, expected {expected:?}");
        }
    }
    Ok(())
}

/// One element of a `json_group_array` column: a name or path (borrowed from the
/// page when it needs no unescaping), `null` (missing, or longer than the query's
/// cap) or `0` (a value that is not text).
enum Cell<'a> {
    Text(Cow<'a, str>),
    Missing,
    NotText,
}

impl<'de> Deserialize<'de> for Cell<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Cell<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string, null or 0")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cell<'de>, E> {
                Ok(Cell::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Cell<'de>, E> {
                Ok(Cell::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E>(self) -> Result<Cell<'de>, E> {
                Ok(Cell::Missing)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Cell<'de>, E> {
                Ok(Cell::NotText)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Cell<'de>, E> {
                Ok(Cell::NotText)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'a> Cell<'a> {
    /// The context name of `context_id`, or the error the reader gives for it.
    fn into_name(self, name: &str, context_id: i64) -> anyhow::Result<Cow<'a, str>> {
        match self {
            Cell::Text(c) => Ok(c),
            Cell::Missing => bail!("{name}: context {context_id}: name missing or longer than {MAX_CONTEXT} bytes"),
            Cell::NotText => bail!("{name}: context.context is not text"),
        }
    }
}

/// The elements of a page's `group_concat(…, ',')` column (`None`: no rows), which
/// must be as many as the page's `count(*)` and its JSON array's elements.
fn split_list<'a>(
    list: Option<&'a str>,
    count: i64,
    json_len: usize,
    name: &str,
    table: &str,
) -> anyhow::Result<impl Iterator<Item = &'a str>> {
    let elements = list.map_or(0, |l| l.bytes().filter(|&b| b == b',').count() + 1);
    if usize::try_from(count).ok() != Some(elements) || elements != json_len {
        bail!(
            "{name}: a page of table {table} came back inconsistent ({count} rows, {elements} and {json_len} values)"
        );
    }
    Ok(list.into_iter().flat_map(|l| l.split(',')))
}

/// Decode SQLite's `hex()` (upper case; lower case accepted too) into `out`. By
/// hand rather than `hex::decode_to_slice`, which checks and converts one digit at a
/// time and took a tenth of the whole read; a table lookup per digit is enough.
fn decode_hex(hex: &str, out: &mut Vec<u8>) -> anyhow::Result<()> {
    const INVALID: u8 = 0xFF;
    const DIGITS: [u8; 256] = {
        let mut t = [INVALID; 256];
        let mut i = 0;
        while i < 10 {
            t[b'0' as usize + i] = i as u8;
            i += 1;
        }
        let mut i = 0;
        while i < 6 {
            t[b'A' as usize + i] = 10 + i as u8;
            t[b'a' as usize + i] = 10 + i as u8;
            i += 1;
        }
        t
    };
    let hex = hex.as_bytes();
    if hex.len() % 2 != 0 {
        bail!("odd number of hex digits ({})", hex.len());
    }
    out.clear();
    out.reserve(hex.len() / 2);
    let mut invalid = 0u8;
    for pair in hex.chunks_exact(2) {
        let (hi, lo) = (DIGITS[pair[0] as usize], DIGITS[pair[1] as usize]);
        // An invalid digit is 0xFF: OR-ing keeps its top bits set for the check below.
        invalid |= hi | lo;
        out.push(hi << 4 | lo);
    }
    if invalid & 0xF0 != 0 {
        bail!("not hex digits");
    }
    Ok(())
}

/// Rows left to read for one file.
struct RowBudget(usize);

impl RowBudget {
    fn take(&mut self, name: &str, repo: &str) -> anyhow::Result<()> {
        match self.0.checked_sub(1) {
            Some(left) => {
                self.0 = left;
                Ok(())
            }
            None => bail!("{name}: more than {MAX_ROWS_PER_FILE} line_bits and arc rows for {repo}"),
        }
    }
}

#[cfg(test)]
mod tests {
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
        read_data_file_blocking(path, matcher).unwrap_or_else(|e| panic!("{e:#}"))
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

    #[tokio::test]
    async fn async_and_blocking_inside_a_runtime() {
        let path = fixtures().join("cases/all_stable/evidence/.coverage");
        let m = PathMatcher::new(SHOP);
        let a = read_data_file(&path, &m).await.unwrap();
        // The blocking wrapper must not panic inside a runtime.
        let b = read_data_file_blocking(&path, &m).unwrap();
        assert_eq!(a, b);
    }

    fn err(path: &Path) -> String {
        format!(
            "{:#}",
            read_data_file_blocking(path, &PathMatcher::new(SHOP)).expect_err("must fail")
        )
    }

    async fn make_db(path: &Path, sql: &str) {
        let opts = SqliteConnectOptions::new().filename(path).create_if_missing(true);
        let mut c = SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut c).await.unwrap();
        c.close().await.unwrap();
    }

    const SCHEMA: &str = "CREATE TABLE coverage_schema (version integer);
        CREATE TABLE meta (key text, value text, unique (key));
        CREATE TABLE file (id integer primary key, path text, unique (path));
        CREATE TABLE context (id integer primary key, context text, unique (context));
        CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));
        CREATE TABLE arc (file_id integer, context_id integer, fromno integer, tono integer, unique (file_id, context_id, fromno, tono));
        CREATE TABLE tracer (file_id integer primary key, tracer text);
        INSERT INTO meta VALUES ('version', '9.0.0'), ('has_arcs', '0');";

    #[tokio::test]
    async fn errors_name_the_file_and_what_was_expected() {
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
        )
        .await;
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
        make_db(&p, &format!("{SCHEMA} INSERT INTO coverage_schema VALUES (8);")).await;
        let e = err(&p);
        assert!(
            e.contains("newer.coverage") && e.contains("schema version 8") && e.contains("newer"),
            "{e}"
        );
        assert!(e.contains("coverage.py 9.0.0"), "{e}");

        let p = tmp.path().join("older.coverage");
        make_db(&p, &format!("{SCHEMA} INSERT INTO coverage_schema VALUES (6);")).await;
        assert!(err(&p).contains("older"));

        let p = tmp.path().join("noversion.coverage");
        make_db(&p, SCHEMA).await;
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

    #[tokio::test]
    async fn hand_made_data_file_paging_and_contexts() {
        // More rows than one page, numbits and arcs, a foreign context.
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".coverage");
        let mut sql = format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7);");
        sql.push_str("INSERT INTO file VALUES (1, '/abs/src/a.py'), (2, 'src/b.py'), (3, 'src/c.py');");
        sql.push_str("INSERT INTO context VALUES (1, ''), (2, 'tests.test_x.test_dotted');");
        let n = PAGE as usize + 10;
        for i in 0..n {
            sql.push_str(&format!(
                "INSERT INTO context VALUES ({}, 'tests/t.py::test_{i}|run');",
                i + 3
            ));
            // line (i % 50) + 1 of a.py, as numbits.
            let line = (i % 50) + 1;
            let mut bits = vec![0u8; line / 8 + 1];
            bits[line / 8] |= 1 << (line % 8);
            sql.push_str(&format!(
                "INSERT INTO line_bits VALUES (1, {}, X'{}');",
                i + 3,
                hex::encode(&bits)
            ));
            sql.push_str(&format!(
                "INSERT INTO arc VALUES (2, {}, -1, {line}), (2, {}, {line}, -1);",
                i + 3,
                i + 3
            ));
        }
        sql.push_str("INSERT INTO line_bits VALUES (1, 1, X'02'), (1, 2, X'04'); COMMIT;");
        make_db(&p, &sql).await;
        let d = read_data_file(&p, &PathMatcher::new(["src/a.py", "src/b.py"]))
            .await
            .unwrap();
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

    #[tokio::test]
    async fn the_file_table_is_read_in_pages() {
        // More files than one page; the patch names one in each page and one absent.
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".coverage");
        let n = FILE_PAGE as usize * 2 + 3;
        let mut sql = format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7);");
        sql.push_str("INSERT INTO context VALUES (1, 'tests/t.py::test_a|run');");
        for i in 1..=n {
            sql.push_str(&format!("INSERT INTO file VALUES ({i}, '/abs/src/m{i}.py');"));
        }
        let last = format!("src/m{n}.py");
        sql.push_str(&format!(
            "INSERT INTO line_bits VALUES (2, 1, X'02'), ({n}, 1, X'04'); COMMIT;"
        ));
        make_db(&p, &sql).await;
        let d = read_data_file(&p, &PathMatcher::new(["src/m2.py", last.as_str(), "src/absent.py"]))
            .await
            .unwrap();
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

    #[tokio::test]
    async fn schemas_that_are_not_coverage_pys_are_refused_before_a_row_is_read() {
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
            make_db(&p, &sql).await;
            let e = err(&p);
            assert!(e.contains(file) && e.contains(expected), "{file}: {e}");
        }
    }

    #[tokio::test]
    async fn oversized_values_are_refused_by_their_length_in_the_query() {
        let tmp = tempfile::tempdir().unwrap();
        let plain =
            "CREATE TABLE line_bits (file_id integer, context_id integer, numbits blob, unique (file_id, context_id));";

        let p = tmp.path().join("numbits.coverage");
        let sql = schema_with(plain) + &format!(" INSERT INTO line_bits VALUES (1, 1, zeroblob({}));", MAX_NUMBITS + 1);
        make_db(&p, &sql).await;
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
        make_db(&p, &sql).await;
        let e = err(&p);
        assert!(e.contains("context 2: name missing or longer than 65536 bytes"), "{e}");

        let p = tmp.path().join("path.coverage");
        let sql = schema_with(plain) + &format!(" INSERT INTO file VALUES (2, hex(zeroblob({})));", MAX_PATH);
        make_db(&p, &sql).await;
        let e = err(&p);
        assert!(e.contains("file 2: path missing or longer than 4096 bytes"), "{e}");
    }

    /// Values of the wrong type come back from the aggregated pages as markers and give
    /// the reader's errors (a NULL arc end, which sqlx once decoded as line 0, included).
    #[tokio::test]
    async fn values_of_the_wrong_type_are_errors() {
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
        // A full page of line_bits (the next one is being read while it is decoded) with a
        // bad value in it.
        let page_of = |bad: &str| {
            let mut rows = String::from(cart);
            for i in 1..PAGE {
                rows.push_str(&format!(
                    "INSERT INTO context VALUES ({i}, 'tests/t.py::test_{i}|run'); INSERT INTO line_bits VALUES (1, {i}, X'02');"
                ));
            }
            rows + bad
        };
        let cases = cases.into_iter().chain([
            (
                "integer_numbits_in_a_full_page",
                page_of(&format!(
                    "INSERT INTO context VALUES ({PAGE}, 'tests/t.py::test_last|run'); INSERT INTO line_bits VALUES (1, {PAGE}, 7);"
                )),
                "line_bits.numbits is not a blob",
            ),
        ]);
        for (file, rows, expected) in cases {
            let p = tmp.path().join(format!("{file}.coverage"));
            make_db(
                &p,
                &format!("BEGIN; {SCHEMA} INSERT INTO coverage_schema VALUES (7); {rows} COMMIT;"),
            )
            .await;
            let e = err(&p);
            assert!(e.contains(&format!("{file}.coverage: {expected}")), "{file}: {e}");
        }
    }

    #[test]
    fn hex_decodes_as_the_hex_crate_does() {
        let mut out = Vec::new();
        for bytes in [
            &[][..],
            &[0u8],
            &[0xFF, 0x00, 0xA5, 0x5A, 0x10],
            &(0..=255).collect::<Vec<u8>>(),
        ] {
            decode_hex(&hex::encode_upper(bytes), &mut out).unwrap();
            assert_eq!(out, bytes);
            decode_hex(&hex::encode(bytes), &mut out).unwrap();
            assert_eq!(out, bytes);
        }
        for bad in ["0", "0G", "G0", "x", "-", "0 ", "é0"] {
            assert!(decode_hex(bad, &mut out).is_err(), "{bad:?}");
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
    async fn plan(conn: &mut SqliteConnection, query: &str, params: usize) -> Vec<String> {
        let sql = format!("EXPLAIN QUERY PLAN {query}");
        let mut q = sqlx::query_as::<_, (i64, i64, i64, String)>(&sql);
        for _ in 0..params {
            q = q.bind(1i64);
        }
        q.fetch_all(&mut *conn)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.3)
            .collect()
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
    /// (which would read every matching row before the first page).
    fn assert_no_big_scans(what: &str, plans: &[(&str, Vec<String>)]) {
        for (query, plan) in plans {
            assert!(!plan.is_empty(), "{what}: {query}: no plan");
            for step in plan {
                let ok = if let Some(rest) = step.strip_prefix("SCAN ") {
                    SMALL.iter().any(|t| rest == *t || rest.starts_with(&format!("{t} "))) || is_page(rest)
                } else if step.starts_with("CO-ROUTINE ") {
                    // The LIMITed subquery a page aggregates (its own steps are checked too).
                    true
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

    /// The LIMITed subquery whose rows a page query aggregates (`SCAN (subquery-1)`):
    /// reading it is reading one page, whose own steps are checked separately.
    fn is_page(scanned: &str) -> bool {
        scanned.starts_with("(subquery-")
    }

    /// The steps of `plan` that read tables (a page's `CO-ROUTINE` and the scan of the
    /// subquery are the aggregation around them).
    fn table_steps(plan: &[String]) -> Vec<&String> {
        plan.iter()
            .filter(|s| !s.starts_with("CO-ROUTINE ") && !s.strip_prefix("SCAN ").is_some_and(is_page))
            .collect()
    }

    async fn all_plans(conn: &mut SqliteConnection) -> Vec<(&'static str, Vec<String>)> {
        let mut plans = Vec::new();
        for (what, query, params) in QUERIES {
            plans.push((what, plan(conn, query, params).await));
        }
        plans
    }

    /// Every query the reader issues, planned on data files coverage.py wrote (line
    /// mode and branch mode), and on one of them grown to 200,000 `line_bits` rows,
    /// 40,000 `arc` rows and 20,000 contexts with `ANALYZE` statistics, so that the
    /// planner knows which tables are big: `line_bits`, `arc` and `context` are
    /// only ever searched by index or rowid.
    #[tokio::test]
    async fn every_query_searches_the_big_tables_by_index() {
        for fixture in [
            "cases/all_stable/evidence/.coverage",
            "coverage-variants/branch/.coverage",
        ] {
            let path = fixtures().join(fixture);
            let options = SqliteConnectOptions::new()
                .filename(&path)
                .read_only(true)
                .immutable(true);
            let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
            // coverage.py's own schema: its unique constraints are the indexes searched.
            let indexes: Vec<String> =
                sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name")
                    .fetch_all(&mut conn)
                    .await
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
            let plans = all_plans(&mut conn).await;
            assert_no_big_scans(fixture, &plans);
            conn.close().await.unwrap();
        }

        // Grown, with statistics.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(".coverage");
        std::fs::copy(fixtures().join("cases/all_stable/evidence/.coverage"), &path).unwrap();
        let options = SqliteConnectOptions::new().filename(&path);
        let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
        sqlx::raw_sql(
            "BEGIN;
             CREATE TEMP TABLE n AS WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 20000)
                 SELECT v FROM s;
             INSERT INTO file (path) SELECT 'src/gen/m' || v || '.py' FROM n WHERE v <= 200;
             INSERT INTO context (context) SELECT 'tests/t.py::test_' || v || '|run' FROM n;
             INSERT OR IGNORE INTO line_bits SELECT f.id, c.id, X'FF' FROM file f, context c WHERE f.id % 20 = c.id % 20;
             INSERT OR IGNORE INTO arc SELECT f.id, c.id, -1, 1 FROM file f, context c WHERE f.id % 100 = c.id % 100;
             COMMIT; ANALYZE;",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let counts: (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM line_bits), (SELECT count(*) FROM arc), (SELECT count(*) FROM context)",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        assert!(
            counts.0 >= 200_000 && counts.1 >= 40_000 && counts.2 >= 20_000,
            "{counts:?}"
        );
        let plans = all_plans(&mut conn).await;
        assert_no_big_scans("grown with ANALYZE", &plans);
        conn.close().await.unwrap();
    }

    /// The plans SQLite makes for the reader's queries on a data file coverage.py wrote:
    /// each selected file's rows are found through an index (or the rowid), never by
    /// scanning `line_bits`, `arc` or `context`; the `file` table (one row per measured
    /// source file) is the only one read whole, a page at a time along its rowid.
    #[tokio::test]
    async fn the_queries_use_indexes_not_scans() {
        let path = fixtures().join("cases/all_stable/evidence/.coverage");
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .read_only(true)
            .immutable(true);
        let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
        let mut plans = Vec::new();
        for (query, params) in [
            (FILES_QUERY, 3),
            (LINE_BITS_QUERY, 5),
            (ARC_QUERY, 6),
            (CONTEXT_QUERY, 3),
        ] {
            let sql = format!("EXPLAIN QUERY PLAN {query}");
            let mut q = sqlx::query_as::<_, (i64, i64, i64, String)>(&sql);
            for _ in 0..params {
                q = q.bind(1i64);
            }
            let plan: Vec<String> = q.fetch_all(&mut conn).await.unwrap().into_iter().map(|r| r.3).collect();
            plans.push(plan);
        }
        let [files, line_bits, arc, context] = <[Vec<String>; 4]>::try_from(plans).unwrap();
        // The pages are one aggregated row each: a subquery (co-routine) read whole.
        for (what, plan) in [("files", &files), ("line_bits", &line_bits), ("arc", &arc)] {
            assert!(plan[0].starts_with("CO-ROUTINE "), "{what}: {plan:?}");
            assert!(
                plan.iter().any(|s| s.strip_prefix("SCAN ").is_some_and(is_page)),
                "{what}: {plan:?}"
            );
        }
        let (files, line_bits, arc) = (table_steps(&files), table_steps(&line_bits), table_steps(&arc));
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(
            files[0].starts_with("SEARCH file USING INTEGER PRIMARY KEY (rowid>?)"),
            "{files:?}"
        );
        for (what, plan) in [("line_bits", &line_bits), ("arc", &arc)] {
            assert!(
                plan.iter().all(|step| step.starts_with("SEARCH ")),
                "{what}: every step must be an index or rowid search: {plan:?}"
            );
        }
        assert!(
            context.iter().all(|step| step.starts_with("SEARCH ")),
            "context: every step must be an index or rowid search: {context:?}"
        );
        assert!(
            line_bits[0].contains("lb USING INDEX sqlite_autoindex_line_bits_1 (file_id=? AND context_id>?)"),
            "{line_bits:?}"
        );
        assert!(
            line_bits[1].contains("c USING INTEGER PRIMARY KEY (rowid=?)"),
            "{line_bits:?}"
        );
        assert!(
            arc[0].contains("INDEX sqlite_autoindex_arc_1 (file_id=? AND (context_id,fromno,tono)>(?,?,?))"),
            "{arc:?}"
        );
        assert!(arc[1].contains("c USING INTEGER PRIMARY KEY (rowid=?)"), "{arc:?}");
        assert!(
            context[0].contains("context USING INTEGER PRIMARY KEY (rowid>?)"),
            "{context:?}"
        );
        conn.close().await.unwrap();
    }
}
