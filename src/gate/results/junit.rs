//! JUnit XML (pytest's xunit1 and xunit2, and other writers) → [`TestResults`].

use super::model::{first_line, CollectionError, Outcome, TestResult, TestResults, UnmatchedCase};
use crate::gate::error::{InputError, Location};
use crate::gate::nodeid::{junit_join_keys, JoinKey, Phase, TestId};
use std::collections::{BTreeSet, HashMap};

/// Byte offsets → 1-based line and column (in characters), without rescanning
/// the text for every record.
struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, starts }
    }
    /// The 1-based line of a byte offset: a binary search, whatever the line's length.
    fn line(&self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        self.starts.partition_point(|s| *s <= pos).max(1)
    }
    /// Line and column: the column counts the characters from the line's start, so it is
    /// for errors only — per test case it made reading a one-line file (pytest writes its
    /// XML on one line) quadratic.
    fn line_col(&self, pos: usize) -> (usize, usize) {
        let pos = pos.min(self.text.len());
        let line = self.line(pos);
        let start = self.starts[line - 1];
        let col = String::from_utf8_lossy(&self.text.as_bytes()[start..pos])
            .chars()
            .count()
            + 1;
        (line, col)
    }
}

/// A `<failure>`, `<error>` or `<skipped>` inside a test case.
#[derive(Debug, Default)]
struct Child {
    kind: ChildKind,
    message: Option<String>,
    typ: Option<String>,
    text: String,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChildKind {
    #[default]
    Failure,
    Error,
    Skipped,
}

#[derive(Debug, Default)]
struct Case {
    classname: String,
    name: String,
    file: Option<String>,
    line: usize,
    children: Vec<Child>,
    /// `<flakyFailure>`, `<flakyError>`, `<rerunFailure>`, `<rerunError>` (Surefire, Gradle,
    /// pytest-rerunfailures): failed attempts before this case's outcome.
    reruns: u32,
}

/// What a test case element says.
enum CaseKind {
    Test(Outcome, Option<Phase>, Option<String>),
    CollectionError(Option<String>),
    /// pytest's `collection skipped`: a module skipped at import, no test.
    CollectionSkipped,
}

fn case_kind(c: &Case) -> CaseKind {
    let mut best: Option<(u8, Outcome, Option<Phase>, Option<String>)> = None;
    for ch in &c.children {
        let msg = ch
            .message
            .as_deref()
            .and_then(first_line)
            .or_else(|| first_line(&ch.text));
        let (rank, outcome, phase, msg) = match ch.kind {
            ChildKind::Error => {
                let m = ch.message.as_deref().unwrap_or("");
                if m == "collection failure" || (c.classname.is_empty() && m.starts_with("collection")) {
                    return CaseKind::CollectionError(first_line(&ch.text).or(msg));
                }
                // pytest: `failed on setup with "<reason>"` / `failed on teardown with "<reason>"`.
                let unquote = |rest: &str| {
                    let r = rest.strip_prefix('"').unwrap_or(rest);
                    first_line(r.strip_suffix('"').unwrap_or(r))
                };
                if let Some(rest) = m.strip_prefix("failed on setup with ") {
                    (4, Outcome::Error, Some(Phase::Setup), unquote(rest))
                } else if let Some(rest) = m.strip_prefix("failed on teardown with ") {
                    (2, Outcome::Error, Some(Phase::Teardown), unquote(rest))
                } else {
                    (2, Outcome::Error, None, msg)
                }
            }
            ChildKind::Failure => (3, Outcome::Failed, None, msg),
            ChildKind::Skipped => {
                if c.classname.is_empty() && ch.message.as_deref() == Some("collection skipped") {
                    return CaseKind::CollectionSkipped;
                }
                let xfail = ch.typ.as_deref() == Some("pytest.xfail");
                (1, if xfail { Outcome::XFailed } else { Outcome::Skipped }, None, msg)
            }
        };
        if best.as_ref().is_none_or(|b| rank > b.0) {
            best = Some((rank, outcome, phase, msg));
        }
    }
    match best {
        Some((_, o, p, m)) => CaseKind::Test(o, p, m),
        None => CaseKind::Test(Outcome::Passed, None, None),
    }
}

/// Precedence when several records name one test (pytest writes a teardown
/// error as a second test case after the call's): setup error, then failure,
/// then teardown error, then anything else; as the report-log reader reduces phases.
fn rank(r: &TestResult) -> u8 {
    match (r.outcome, r.phase) {
        (Outcome::Error, Some(Phase::Setup)) => 4,
        (Outcome::Failed, _) => 3,
        (Outcome::Error, _) => 2,
        _ => 1,
    }
}

/// xunit1: the node id from `file`, `classname` and `name`:
/// `tests/sub/test_a.py`, `tests.sub.test_a.TestX.TestY`, `test_y[1]` →
/// `tests/sub/test_a.py::TestX::TestY::test_y[1]`. None when the classname
/// does not start with the file's dotted module path.
fn rebuild_xunit1(file: &str, classname: &str, name: &str) -> Option<String> {
    let file = file.replace('\\', "/");
    let module = file.strip_suffix(".py").unwrap_or(&file).replace('/', ".");
    if name.is_empty() || file.is_empty() {
        return None;
    }
    if classname == module {
        return Some(format!("{file}::{name}"));
    }
    let rest = classname.strip_prefix(module.as_str())?.strip_prefix('.')?;
    if rest.split('.').any(str::is_empty) {
        return None;
    }
    Some(format!("{file}::{}::{name}", rest.replace('.', "::")))
}

/// Parse JUnit XML. xunit1 records carry `file`; their node ids are rebuilt
/// from file + classname + name. xunit2 records are matched against
/// `known` (ids from coverage) by `gate::nodeid::junit_join_keys`:
/// exactly one match or the case is reported unmatched, never guessed.
pub fn parse_junit(file: &str, text: &str, known: &BTreeSet<TestId>) -> Result<TestResults, InputError> {
    let mut recorder = Recorder {
        file,
        known,
        index: None,
        attempted: BTreeSet::new(),
        out: TestResults::default(),
    };
    CaseReader::new(file, text).read(&mut |c| recorder.record(c))?;
    Ok(recorder.out)
}

// ---- reading the XML -------------------------------------------------

/// The XML walk: each test case with its children, handed on when it closes; the
/// errors (malformed XML, no JUnit root, a truncated file) with their line and column.
struct CaseReader<'a> {
    file: &'a str,
    lines: LineIndex<'a>,
    /// The text after a byte-order mark; positions are in it, `bom` bytes on.
    body: &'a str,
    bom: usize,
    /// The open elements.
    stack: Vec<Vec<u8>>,
    saw_root: bool,
    case: Option<Case>,
    child: Option<Child>,
}

impl<'a> CaseReader<'a> {
    fn new(file: &'a str, text: &'a str) -> Self {
        let bom = if text.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        CaseReader {
            file,
            lines: LineIndex::new(text),
            body: &text[bom..],
            bom,
            stack: Vec::new(),
            saw_root: false,
            case: None,
            child: None,
        }
    }

    /// Line and column (in the whole text) of a position in the body.
    fn line_col(&self, pos: u64) -> (usize, usize) {
        self.lines.line_col(self.offset(pos))
    }

    /// The line (in the whole text) of a position in the body.
    fn line(&self, pos: u64) -> usize {
        self.lines.line(self.offset(pos))
    }

    fn offset(&self, pos: u64) -> usize {
        usize::try_from(pos).unwrap_or(usize::MAX).saturating_add(self.bom)
    }

    fn at_pos(&self, pos: u64) -> Location {
        let (line, col) = self.line_col(pos);
        Location::at(self.file, line, Some(col))
    }

    fn read(mut self, finished: &mut dyn FnMut(Case)) -> Result<(), InputError> {
        use quick_xml::events::Event;
        let mut reader = quick_xml::Reader::from_str(self.body);
        loop {
            let start = reader.buffer_position();
            let ev = reader
                .read_event()
                .map_err(|e| InputError::new(self.at_pos(reader.error_position()), format!("malformed XML: {e}")))?;
            match ev {
                Event::Start(e) => self.start(&e, false, start, finished)?,
                Event::Empty(e) => self.start(&e, true, start, finished)?,
                Event::End(e) => self.end(e.local_name().as_ref(), finished),
                // A child's text, up to 4 KiB of it; text elsewhere is not read.
                Event::Text(t) if self.child.as_ref().is_some_and(|ch| ch.text.len() < 4096) => {
                    let s = t
                        .unescape()
                        .map_err(|e| InputError::new(self.at_pos(start), format!("malformed XML text: {e}")))?;
                    if let Some(ch) = self.child.as_mut() {
                        ch.text.push_str(&s);
                    }
                }
                Event::CData(t) => {
                    if let Some(ch) = self.child.as_mut().filter(|ch| ch.text.len() < 4096) {
                        ch.text.push_str(&String::from_utf8_lossy(&t));
                    }
                }
                Event::Eof => break,
                _ => {} // other text, declaration, comments, processing instructions, doctype
            }
        }
        if let Some(open) = self.stack.last() {
            return Err(InputError::new(
                self.at_pos(self.body.len() as u64),
                format!(
                    "unexpected end of file: <{}> is not closed (the file looks truncated)",
                    String::from_utf8_lossy(open)
                ),
            ));
        }
        if !self.saw_root {
            return Err(InputError::new(
                self.at_pos(0),
                "no <testsuites> or <testsuite> element: expected JUnit XML",
            ));
        }
        Ok(())
    }

    /// An element opens (`empty`: and closes): the root, a test case, or one of its children.
    fn start(
        &mut self,
        e: &quick_xml::events::BytesStart,
        empty: bool,
        start: u64,
        finished: &mut dyn FnMut(Case),
    ) -> Result<(), InputError> {
        let name = e.local_name().as_ref().to_vec();
        if !self.saw_root {
            if name != b"testsuites" && name != b"testsuite" {
                return Err(InputError::new(
                    self.at_pos(start),
                    format!(
                        "expected <testsuites> or <testsuite> as the root element of JUnit XML, found <{}>",
                        String::from_utf8_lossy(&name)
                    ),
                ));
            }
            self.saw_root = true;
        }
        match name.as_slice() {
            b"testcase" => {
                if self.case.is_some() {
                    return Err(InputError::new(
                        self.at_pos(start),
                        "<testcase> inside <testcase>: expected them side by side",
                    ));
                }
                let a = self.attrs(e, start)?;
                let c = Case {
                    classname: attr(&a, b"classname").unwrap_or_default(),
                    name: attr(&a, b"name").unwrap_or_default(),
                    file: attr(&a, b"file"),
                    line: self.line(start),
                    children: Vec::new(),
                    reruns: 0,
                };
                if empty {
                    finished(c);
                } else {
                    self.case = Some(c);
                }
            }
            b"flakyFailure" | b"flakyError" | b"rerunFailure" | b"rerunError" if self.child.is_none() => {
                if let Some(c) = self.case.as_mut() {
                    c.reruns = c.reruns.saturating_add(1);
                }
            }
            b"failure" | b"error" | b"skipped" if self.case.is_some() && self.child.is_none() => {
                let a = self.attrs(e, start)?;
                let kind = match name.as_slice() {
                    b"failure" => ChildKind::Failure,
                    b"error" => ChildKind::Error,
                    _ => ChildKind::Skipped,
                };
                let ch = Child {
                    kind,
                    message: attr(&a, b"message"),
                    typ: attr(&a, b"type"),
                    text: String::new(),
                };
                if empty {
                    if let Some(c) = self.case.as_mut() {
                        c.children.push(ch);
                    }
                } else {
                    self.child = Some(ch);
                }
            }
            _ => {}
        }
        if !empty {
            self.stack.push(name);
        }
        Ok(())
    }

    /// An element closes: a test case is finished, a child joins its case.
    fn end(&mut self, name: &[u8], finished: &mut dyn FnMut(Case)) {
        self.stack.pop();
        match name {
            b"testcase" => {
                if let Some(c) = self.case.take() {
                    finished(c);
                }
            }
            b"failure" | b"error" | b"skipped" => {
                if let (Some(ch), Some(c)) = (self.child.take(), self.case.as_mut()) {
                    c.children.push(ch);
                }
            }
            _ => {}
        }
    }

    /// An element's attributes, local name → unescaped value.
    fn attrs(&self, e: &quick_xml::events::BytesStart, pos: u64) -> Result<Vec<(Vec<u8>, String)>, InputError> {
        let mut v = Vec::new();
        for a in e.attributes() {
            let a = a.map_err(|err| InputError::new(self.at_pos(pos), format!("malformed XML attribute: {err}")))?;
            let value = a
                .unescape_value()
                .map_err(|err| InputError::new(self.at_pos(pos), format!("malformed XML attribute value: {err}")))?;
            v.push((a.key.local_name().as_ref().to_vec(), value.into_owned()));
        }
        Ok(v)
    }
}

fn attr(v: &[(Vec<u8>, String)], k: &[u8]) -> Option<String> {
    v.iter().find(|(n, _)| n == k).map(|(_, s)| s.clone())
}

// ---- recording the cases ---------------------------------------------

/// Each finished test case into the results: a collection error, an unmatched case, or
/// a test's result under its node id (rebuilt from an xunit1 record, or matched among
/// coverage's), merged with the other records of that test.
struct Recorder<'k> {
    file: &'k str,
    known: &'k BTreeSet<TestId>,
    /// `known` by join key, built for the first case that needs it.
    index: Option<HashMap<JoinKey, Vec<&'k TestId>>>,
    /// Tests already seen with an attempt of their own in this file (see [`Recorder::add`]).
    attempted: BTreeSet<TestId>,
    out: TestResults,
}

impl Recorder<'_> {
    fn record(&mut self, c: Case) {
        let source = format!("{}:{}", self.file, c.line);
        let (outcome, phase, message) = match case_kind(&c) {
            CaseKind::CollectionSkipped => return,
            CaseKind::CollectionError(message) => {
                let nodeid = self.collection_error_file(&c);
                self.out.collection_errors.push(CollectionError {
                    nodeid,
                    message,
                    source,
                });
                return;
            }
            CaseKind::Test(o, p, m) => (o, p, m),
        };
        match self.node_id(&c) {
            Ok(id) => self.add(
                id,
                TestResult {
                    outcome,
                    phase,
                    message,
                    source,
                    reruns: c.reruns,
                },
            ),
            Err(why) => self.out.unmatched.push(UnmatchedCase {
                source,
                classname: c.classname,
                name: c.name,
                why,
                outcome,
                message,
            }),
        }
    }

    /// What a collection error is about: the case's file, else the known test file whose
    /// dotted module path the case names, else that name.
    fn collection_error_file(&self, c: &Case) -> String {
        match &c.file {
            Some(f) if !f.is_empty() => f.replace('\\', "/"),
            _ => {
                let dotted = c.name.as_str();
                self.known
                    .iter()
                    .map(TestId::file)
                    .find(|f| f.strip_suffix(".py").unwrap_or(f).replace(['/', '\\'], ".") == dotted)
                    .map(str::to_string)
                    .unwrap_or_else(|| dotted.to_string())
            }
        }
    }

    /// The case's node id, or why it has none.
    fn node_id(&mut self, c: &Case) -> Result<TestId, String> {
        let mut why_prefix = String::new();
        if let Some(f) = c.file.as_deref().filter(|f| !f.is_empty()) {
            match rebuild_xunit1(f, &c.classname, &c.name) {
                Some(id) => return Ok(TestId::new(id)),
                None => why_prefix = format!("file {f:?} does not match classname {:?}; ", c.classname),
            }
        }
        let known = self.known;
        let idx = self.index.get_or_insert_with(|| {
            let mut m: HashMap<JoinKey, Vec<&TestId>> = HashMap::new();
            for t in known {
                for k in junit_join_keys(t) {
                    m.entry(k).or_default().push(t);
                }
            }
            m
        });
        // By classname and name (pytest, JUnit ids), or by name alone (LCOV, Bazel).
        let mut found: Vec<&TestId> = [Some(c.classname.clone()), None]
            .into_iter()
            .flat_map(|cn| idx.get(&(cn, c.name.clone())).into_iter().flatten().copied())
            .collect();
        found.sort();
        found.dedup();
        match found.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(format!("{why_prefix}no node id from coverage matches")),
            many => Err(format!(
                "{why_prefix}ambiguous: {}",
                many.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// A test's record, merged with the ones before it.
    fn add(&mut self, id: TestId, mut result: TestResult) {
        // pytest writes a teardown error as a second case of the same test: not an attempt.
        let is_attempt = !(result.outcome == Outcome::Error && result.phase == Some(Phase::Teardown));
        match self.out.tests.get_mut(&id) {
            // The same test again in one file: a rerun (pytest-rerunfailures writes every
            // attempt as a case; Gradle's retry the same). The last attempt decides its
            // outcome; the earlier ones count as reruns — an earlier case was only ever
            // rerun because it failed, whatever pytest wrote for it.
            Some(old) if is_attempt && self.attempted.contains(&id) => {
                result.reruns = result.reruns.saturating_add(old.reruns).saturating_add(1);
                *old = result;
            }
            Some(old) if rank(old) >= rank(&result) => {}
            _ => {
                self.out.tests.insert(id.clone(), result);
            }
        }
        if is_attempt {
            self.attempted.insert(id);
        }
    }
}

#[cfg(test)]
mod tests;
