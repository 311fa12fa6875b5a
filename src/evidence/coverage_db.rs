//! The coverage.py data file (`.coverage`, SQLite), read directly with rusqlite.
//!
//! Only the patch's files are queried: every `file.path` is read (cheap) to
//! count the measured files and pick the ones [`PathMatcher`] maps, then
//! `line_bits` (line mode) and `arc` (branch mode) rows are read for those file
//! ids only, along coverage.py's unique indexes, joined to `context` by rowid. SQLite
//! steps those rows on a second thread and hands them over in batches of packed rows
//! (256 KiB each, a few in flight), so memory stays bounded by a few batches whatever
//! the file's size. The file is opened read-only and `immutable`, so SQLite takes no
//! lock and never writes a journal next to the user's file.
//!
//! Schema (coverage.py 5.0–7.x, `coverage_schema.version` 7): `meta(key,
//! value)` with `version` and `has_arcs`, `file(id, path)`, `context(id,
//! context)`, `line_bits(file_id, context_id, numbits)`, `arc(file_id,
//! context_id, fromno, tono)`, `tracer(file_id, tracer)`.
//!
//! The data file lists no statements: `has_statements` is false and
//! `missing`/`excluded` are empty; `executed` is every line any context ran
//! (including non-statement lines such as a module's docstring line 1). The pipeline
//! then gives each file the statements of its head source
//! (`FileCoverage::classify_statements`), as coverage.json would list them.

use crate::gate::coverage::{
    decode_numbits, insert_file, ContextCollector, Coverage, CoverageFormat, FileCoverage, PathMatcher,
};
use anyhow::{bail, Context as _};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The schema version coverage.py 5.0 through 7.x write.
pub(crate) const SCHEMA_VERSION: i64 = 7;

const TABLES: [&str; 6] = ["coverage_schema", "meta", "file", "context", "line_bits", "arc"];

// Every value is read as SQLite stored it (`ValueRef`) and its type checked here, so a
// value of the wrong type is the reader's error, never a silent conversion. Values that
// may be long (paths, context names, bitmaps) are selected only when their `length()`
// is within the reader's cap: SQLite gets a blob's or a string's length from the
// record header without loading it, so an oversized value is refused unread.

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
/// Every measured file, along the rowid (one row per source file: the only table read
/// whole, to count the files and map absolute paths by suffix); a path longer than ?1
/// comes back NULL.
const FILES_QUERY: &str = "SELECT id, iif(length(path) <= ?1, path, NULL) FROM file ORDER BY id";
/// One file's `line_bits` rows, along the `(file_id, context_id)` unique index, with
/// each row's context name (a `LEFT JOIN` by rowid: a row whose context is missing is
/// an error, not dropped) and bitmap.
const LINE_BITS_QUERY: &str = "SELECT lb.context_id, c.id, iif(length(c.context) <= ?2, c.context, NULL), \
     iif(length(lb.numbits) <= ?3, lb.numbits, NULL) \
     FROM line_bits lb LEFT JOIN context c ON c.id = lb.context_id \
     WHERE lb.file_id = ?1 ORDER BY lb.context_id";
/// One file's `arc` rows, along the `(file_id, context_id, fromno, tono)` unique index,
/// with each row's context name.
const ARC_QUERY: &str = "SELECT a.context_id, c.id, iif(length(c.context) <= ?2, c.context, NULL), a.fromno, a.tono \
     FROM arc a LEFT JOIN context c ON c.id = a.context_id \
     WHERE a.file_id = ?1 ORDER BY a.context_id, a.fromno, a.tono";
/// Test-context candidates along the `context` table's rowid (the reader stops at the
/// first test context).
const CONTEXT_QUERY: &str = "SELECT id, context FROM context WHERE length(context) <= ?1 \
     AND instr(context, '::') > 0 AND instr(context, '|') > 0 ORDER BY id";

/// Every query the reader issues, with its number of parameters: the test
/// `every_query_searches_the_big_tables_by_index` shows SQLite's plan for each.
#[cfg(test)]
const QUERIES: [(&str, &str, usize); 9] = [
    ("tables", TABLES_QUERY, 0),
    ("objects", OBJECTS_QUERY, 0),
    ("columns", COLUMNS_QUERY, 1),
    ("version", VERSION_QUERY, 0),
    ("meta version", META_VERSION_QUERY, 0),
    ("files", FILES_QUERY, 1),
    ("line_bits", LINE_BITS_QUERY, 3),
    ("arc", ARC_QUERY, 2),
    ("context", CONTEXT_QUERY, 1),
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

/// Read a `.coverage` data file, materialising only the files `matcher` maps. Every
/// error names the file and says what was expected. Synchronous (SQLite reads the file
/// with `pread`, on a scoped thread of its own while this one records the rows): async
/// callers run it where blocking is allowed.
pub fn read_data_file(path: &Path, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
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
    let conn = open(path).with_context(|| format!("{name}: cannot open as SQLite (read-only)"))?;
    read_conn(conn, &name, matcher)
}

/// Open `path` read-only and `immutable` (no lock, no journal, no `-wal`/`-shm` next to
/// it), with `foreign_keys` and `trusted_schema` off: functions in a schema (views,
/// triggers, generated columns, defaults) do not run, and such a schema is refused
/// anyway (`refuse_foreign_schema`).
fn open(path: &Path) -> rusqlite::Result<Connection> {
    // `immutable` is a URI parameter: the path is percent-encoded into a `file:` URI
    // (every byte but ASCII letters and digits, as sqlx does), so no `?`, `#` or `%` in
    // a file name is read as URI syntax.
    let encoded =
        percent_encoding::percent_encode(path.as_os_str().as_encoded_bytes(), percent_encoding::NON_ALPHANUMERIC);
    let uri = format!("file:{encoded}?immutable=1");
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA trusted_schema = OFF;")?;
    Ok(conn)
}

fn read_conn(conn: Connection, name: &str, matcher: &PathMatcher) -> anyhow::Result<Coverage> {
    let corrupt = || format!("{name}: cannot read the SQLite database (truncated or corrupt?)");
    // Is this a coverage.py data file at all?
    let mut tables = BTreeSet::new();
    {
        let mut st = conn.prepare(TABLES_QUERY).with_context(corrupt)?;
        let mut rows = st.query([]).with_context(corrupt)?;
        while let Some(row) = rows.next().with_context(corrupt)? {
            tables.insert(text(row, 0).with_context(corrupt)?.to_string());
        }
    }
    let missing: Vec<&str> = TABLES.iter().copied().filter(|t| !tables.contains(*t)).collect();
    if !missing.is_empty() {
        bail!(
            "{name}: not a coverage.py data file: missing table{} {} (a coverage.py 5.0–7.x data file has tables {})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            TABLES.join(", ")
        );
    }
    refuse_foreign_schema(&conn, name)?;
    let version =
        one_value(&conn, VERSION_QUERY).with_context(|| format!("{name}: cannot read coverage_schema.version"))?;
    let coverage_version = one_value(&conn, META_VERSION_QUERY).with_context(|| format!("{name}: cannot read meta"))?;
    let written_by = match &coverage_version {
        Some(rusqlite::types::Value::Text(v)) => format!(" (written by coverage.py {v})"),
        _ => String::new(),
    };
    match version {
        Some(rusqlite::types::Value::Integer(SCHEMA_VERSION)) => {}
        Some(rusqlite::types::Value::Integer(v)) if v > SCHEMA_VERSION => bail!(
            "{name}: coverage data schema version {v}{written_by} is newer than the version {SCHEMA_VERSION} flakegate reads \
             (coverage.py 5.0–7.x); use `coverage json --show-contexts` and give flakegate coverage.json"
        ),
        Some(rusqlite::types::Value::Integer(v)) => bail!(
            "{name}: coverage data schema version {v}{written_by} is older than the version {SCHEMA_VERSION} flakegate reads \
             (coverage.py 5.0–7.x)"
        ),
        Some(_) => bail!("{name}: coverage_schema.version is not an integer"),
        None => bail!("{name}: not a coverage.py data file: coverage_schema has no version row"),
    }

    // All file paths: count them, pick the patch's.
    let mut measured_files = 0usize;
    let mut selected: BTreeMap<i64, (String, (String, bool))> = BTreeMap::new();
    {
        let cannot = || format!("{name}: cannot read the file table");
        let mut st = conn.prepare(FILES_QUERY).with_context(cannot)?;
        let mut rows = st.query([MAX_PATH]).with_context(cannot)?;
        while let Some(row) = rows.next().with_context(cannot)? {
            measured_files += 1;
            if measured_files > MAX_FILES {
                bail!("{name}: more than {MAX_FILES} measured files in the file table");
            }
            let id = integer(row, 0).with_context(|| format!("{name}: file.id is not an integer"))?;
            let path = match row.get_ref(1).with_context(cannot)? {
                ValueRef::Null => bail!("{name}: file {id}: path missing or longer than {MAX_PATH} bytes"),
                ValueRef::Text(p) => {
                    std::str::from_utf8(p).with_context(|| format!("{name}: file.path is not text"))?
                }
                _ => bail!("{name}: file.path is not text"),
            };
            if let Some(mapped) = matcher.map(path) {
                selected.insert(id, (path.to_string(), mapped));
            }
        }
    }

    // The selected files' lines: SQLite steps the rows on a second thread, this one
    // records them.
    let selected: Vec<(i64, String, (String, bool))> = selected
        .into_iter()
        .map(|(id, (path, mapped))| (id, path, mapped))
        .collect();
    let (conn, per_file, mut ctx) = read_files(conn, name, matcher, &selected)?;

    // Were test contexts recorded at all (in any file)? Only candidates that
    // look like `…::…|…` are read, until the first test context.
    if !ctx.seen_test() {
        let cannot = || format!("{name}: cannot read the context table");
        let mut st = conn.prepare(CONTEXT_QUERY).with_context(cannot)?;
        let mut rows = st.query([MAX_CONTEXT]).with_context(cannot)?;
        while let Some(row) = rows.next().with_context(cannot)? {
            let context = text(row, 1).with_context(|| format!("{name}: context.context is not text"))?;
            if ctx.observe(context) {
                break;
            }
        }
    }

    let mut files = BTreeMap::new();
    let mut mapped_paths = Vec::new();
    for ((_, coverage_path, mapped), fc) in selected.into_iter().zip(per_file) {
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

/// Bytes of packed rows per batch the SQLite thread hands to the reader (a row more
/// when a row is large: at most a 64 KiB name and a 1 MiB bitmap).
const BATCH: usize = 256 * 1024;
/// Batches in flight between the two threads: memory stays a few batches whatever the
/// file's size.
const BATCHES_IN_FLIGHT: usize = 2;

/// What the SQLite thread hands to the reader, in file order.
enum Batch {
    /// Packed `line_bits` rows of the current file (see [`pack_line_bits`]).
    LineBits(Vec<u8>),
    /// Packed `arc` rows of the current file (see [`pack_arc`]).
    Arcs(Vec<u8>),
    /// The current file has no more rows.
    FileDone,
}

/// The coverage of each of `selected` (in its order) and the contexts met. SQLite steps
/// the rows on a second thread (which owns the connection, and gives it back), checking
/// every value's type and length there and packing the rows into batches; this thread
/// records them (`ContextCollector::record_numbits`), so the two halves of the work run
/// at once on two cores. Each row is copied once, into a batch; batches are reused.
/// Errors are the SQLite thread's, met in file and row order, and end the read.
fn read_files(
    conn: Connection,
    name: &str,
    matcher: &PathMatcher,
    selected: &[(i64, String, (String, bool))],
) -> anyhow::Result<(Connection, Vec<FileCoverage>, ContextCollector)> {
    use std::sync::mpsc::{channel, sync_channel};
    let (batches, received) = sync_channel::<anyhow::Result<Batch>>(BATCHES_IN_FLIGHT);
    let (give_back, spare) = channel::<Vec<u8>>();
    std::thread::scope(|s| {
        let sqlite = s.spawn(move || {
            if let Err(e) = step_rows(&conn, name, selected, &batches, &spare) {
                // The reader is waiting for this (or has stopped: nothing to tell).
                let _ = batches.send(Err(e));
            }
            conn
        });
        let recorded = record_rows(received, give_back, matcher, selected);
        let conn = sqlite
            .join()
            .expect("the coverage data file's SQLite thread does not panic");
        recorded.map(|(per_file, ctx)| (conn, per_file, ctx))
    })
}

/// The SQLite thread: every selected file's `line_bits` then `arc` rows, along the
/// tables' unique indexes (file_id, context_id[, fromno, tono]), packed into batches.
fn step_rows(
    conn: &Connection,
    name: &str,
    selected: &[(i64, String, (String, bool))],
    batches: &std::sync::mpsc::SyncSender<anyhow::Result<Batch>>,
    spare: &std::sync::mpsc::Receiver<Vec<u8>>,
) -> anyhow::Result<()> {
    let stopped = || anyhow::anyhow!("{name}: the reader stopped");
    let new_batch = || {
        let mut b = spare.try_recv().unwrap_or_default();
        b.clear();
        b
    };
    let mut line_bits = conn
        .prepare(LINE_BITS_QUERY)
        .with_context(|| format!("{name}: cannot read line_bits"))?;
    let mut arcs = conn
        .prepare(ARC_QUERY)
        .with_context(|| format!("{name}: cannot read arc"))?;
    for (file_id, _, (repo, _)) in selected {
        let mut rows_read = RowBudget(MAX_ROWS_PER_FILE);
        // Line mode: one numbits blob per (file, context).
        let cannot = || format!("{name}: cannot read line_bits");
        let mut batch = new_batch();
        let mut rows = line_bits
            .query((file_id, MAX_CONTEXT, MAX_NUMBITS))
            .with_context(cannot)?;
        while let Some(row) = rows.next().with_context(cannot)? {
            let context_id =
                integer(row, 0).with_context(|| format!("{name}: line_bits.context_id is not an integer"))?;
            rows_read.take(name, repo)?;
            let context = context_name(row, 1, name, context_id)?;
            let numbits = match row.get_ref(3).with_context(cannot)? {
                ValueRef::Blob(b) | ValueRef::Text(b) => b,
                ValueRef::Null => bail!(
                    "{name}: line_bits of {repo}, context {context_id}: numbits missing or longer than {MAX_NUMBITS} bytes"
                ),
                _ => bail!("{name}: line_bits.numbits is not a blob"),
            };
            pack_line_bits(&mut batch, context, numbits);
            if batch.len() >= BATCH {
                let full = std::mem::replace(&mut batch, new_batch());
                batches.send(Ok(Batch::LineBits(full))).map_err(|_| stopped())?;
            }
        }
        if !batch.is_empty() {
            batches.send(Ok(Batch::LineBits(batch))).map_err(|_| stopped())?;
        }
        // Branch mode: `context_id fromno tono` per row.
        let cannot = || format!("{name}: cannot read arc");
        let mut batch = new_batch();
        let mut rows = arcs.query((file_id, MAX_CONTEXT)).with_context(cannot)?;
        while let Some(row) = rows.next().with_context(cannot)? {
            rows_read.take(name, repo)?;
            let context_id = integer(row, 0).with_context(|| format!("{name}: arc.context_id is not an integer"))?;
            let context = context_name(row, 1, name, context_id)?;
            let from = integer(row, 3).with_context(|| format!("{name}: arc.fromno is not an integer"))?;
            let to = integer(row, 4).with_context(|| format!("{name}: arc.tono is not an integer"))?;
            pack_arc(&mut batch, context, from, to);
            if batch.len() >= BATCH {
                let full = std::mem::replace(&mut batch, new_batch());
                batches.send(Ok(Batch::Arcs(full))).map_err(|_| stopped())?;
            }
        }
        if !batch.is_empty() {
            batches.send(Ok(Batch::Arcs(batch))).map_err(|_| stopped())?;
        }
        batches.send(Ok(Batch::FileDone)).map_err(|_| stopped())?;
    }
    Ok(())
}

/// The reader's half: each file's batches recorded into its [`FileCoverage`].
fn record_rows(
    received: std::sync::mpsc::Receiver<anyhow::Result<Batch>>,
    give_back: std::sync::mpsc::Sender<Vec<u8>>,
    matcher: &PathMatcher,
    selected: &[(i64, String, (String, bool))],
) -> anyhow::Result<(Vec<FileCoverage>, ContextCollector)> {
    let mut ctx = ContextCollector::for_matcher(matcher);
    let mut per_file = Vec::with_capacity(selected.len());
    let mut fc = FileCoverage::default();
    // Which lines ran: the OR of the file's bitmaps, decoded once per file.
    let mut ran: Vec<u8> = Vec::new();
    for batch in received {
        let Some((_, _, (repo, _))) = selected.get(per_file.len()) else {
            bail!("the coverage data file's SQLite thread sent rows after the last file");
        };
        match batch? {
            Batch::LineBits(rows) => {
                for (context, numbits) in LineBitsRows(&rows) {
                    if ran.len() < numbits.len() {
                        ran.resize(numbits.len(), 0);
                    }
                    for (r, b) in ran.iter_mut().zip(numbits) {
                        *r |= b;
                    }
                    ctx.record_numbits(repo, &mut fc, numbits, context);
                }
                let _ = give_back.send(rows);
            }
            Batch::Arcs(rows) => {
                // The lines are the positive ends of the arcs (negative numbers are
                // entries and exits of code objects).
                for (context, from, to) in ArcRows(&rows) {
                    for line in [from, to] {
                        if let Ok(line @ 1..) = u32::try_from(line) {
                            fc.executed.insert(line);
                            ctx.record(repo, &mut fc, line, context);
                        }
                    }
                }
                let _ = give_back.send(rows);
            }
            Batch::FileDone => {
                fc.executed.extend(decode_numbits(&ran).into_iter().filter(|&l| l > 0));
                ran.clear();
                per_file.push(std::mem::take(&mut fc));
            }
        }
    }
    if per_file.len() != selected.len() {
        bail!("the coverage data file's SQLite thread stopped before the last file");
    }
    Ok((per_file, ctx))
}

// A batch is rows packed end to end, numbers in native byte order (both threads are this
// process): a `line_bits` row is `name length: u32, name, bitmap length: u32, bitmap`; an
// `arc` row is `name length: u32, name, fromno: i64, tono: i64`. Names were checked to be
// UTF-8 before packing.

fn pack_line_bits(batch: &mut Vec<u8>, context: &str, numbits: &[u8]) {
    pack_bytes(batch, context.as_bytes());
    pack_bytes(batch, numbits);
}

fn pack_arc(batch: &mut Vec<u8>, context: &str, from: i64, to: i64) {
    pack_bytes(batch, context.as_bytes());
    batch.extend_from_slice(&from.to_ne_bytes());
    batch.extend_from_slice(&to.to_ne_bytes());
}

/// A length (`u32`: names and bitmaps are capped far below 4 GiB) and the bytes.
fn pack_bytes(batch: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("names and bitmaps are capped in the query");
    batch.extend_from_slice(&len.to_ne_bytes());
    batch.extend_from_slice(bytes);
}

/// Take `n` bytes off the front of `rest`.
fn unpack<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    head
}

fn unpack_i64(rest: &mut &[u8]) -> i64 {
    i64::from_ne_bytes(unpack(rest, 8).try_into().expect("8 bytes"))
}

fn unpack_bytes<'a>(rest: &mut &'a [u8]) -> &'a [u8] {
    let len = u32::from_ne_bytes(unpack(rest, 4).try_into().expect("4 bytes"));
    unpack(rest, len as usize)
}

fn unpack_str<'a>(rest: &mut &'a [u8]) -> &'a str {
    std::str::from_utf8(unpack_bytes(rest)).expect("names are checked to be UTF-8 before packing")
}

/// The (context name, bitmap) of each packed `line_bits` row.
struct LineBitsRows<'a>(&'a [u8]);

impl<'a> Iterator for LineBitsRows<'a> {
    type Item = (&'a str, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let context = unpack_str(&mut self.0);
        Some((context, unpack_bytes(&mut self.0)))
    }
}

/// The (context name, fromno, tono) of each packed `arc` row.
struct ArcRows<'a>(&'a [u8]);

impl<'a> Iterator for ArcRows<'a> {
    type Item = (&'a str, i64, i64);
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let context = unpack_str(&mut self.0);
        Some((context, unpack_i64(&mut self.0), unpack_i64(&mut self.0)))
    }
}

/// Column `i` of `row` as an integer (SQLite's own type: no conversion).
fn integer(row: &Row<'_>, i: usize) -> anyhow::Result<i64> {
    match row.get_ref(i)? {
        ValueRef::Integer(v) => Ok(v),
        other => bail!("found {}", other.data_type()),
    }
}

/// Column `i` of `row` as text, borrowed from the row (valid UTF-8, or an error).
fn text<'r>(row: &'r Row<'_>, i: usize) -> anyhow::Result<&'r str> {
    match row.get_ref(i)? {
        ValueRef::Text(t) => Ok(std::str::from_utf8(t)?),
        other => bail!("found {}", other.data_type()),
    }
}

/// The context name of a `line_bits` or `arc` row: column `i` is the joined
/// `context.id` (NULL: no such context), `i + 1` its name (NULL: missing or too long).
fn context_name<'r>(row: &'r Row<'_>, i: usize, name: &str, context_id: i64) -> anyhow::Result<&'r str> {
    if let ValueRef::Null = row.get_ref(i)? {
        bail!("{name}: context {context_id} is named by a coverage row but is not in the context table");
    }
    match row.get_ref(i + 1)? {
        ValueRef::Null => bail!("{name}: context {context_id}: name missing or longer than {MAX_CONTEXT} bytes"),
        ValueRef::Text(t) => std::str::from_utf8(t).with_context(|| format!("{name}: context.context is not text")),
        _ => bail!("{name}: context.context is not text"),
    }
}

/// The first column of the first row of `query` (`None`: no row).
fn one_value(conn: &Connection, query: &str) -> rusqlite::Result<Option<rusqlite::types::Value>> {
    let mut st = conn.prepare(query)?;
    let mut rows = st.query([])?;
    rows.next()?.map(|r| r.get::<_, rusqlite::types::Value>(0)).transpose()
}

/// Refuse a database whose schema is not coverage.py's: views, triggers, virtual
/// tables, and any table flakegate reads whose columns are not exactly coverage.py's
/// (`PRAGMA table_xinfo` also lists generated and hidden columns).
fn refuse_foreign_schema(conn: &Connection, name: &str) -> anyhow::Result<()> {
    let cannot = || format!("{name}: cannot read the SQLite schema (truncated or corrupt?)");
    let mut st = conn.prepare(OBJECTS_QUERY).with_context(cannot)?;
    let objects = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .with_context(cannot)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .with_context(cannot)?;
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
    let mut st = conn.prepare(COLUMNS_QUERY).with_context(cannot)?;
    for (table, expected) in COLUMNS {
        let columns = st
            .query_map([table], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
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
mod statements;
#[cfg(test)]
mod tests;
