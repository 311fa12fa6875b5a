// The coverage JSON reader before the block scan: serde_json's reader path
// (`from_reader`) over the whole input behind a UTF-8 guard, through the same serde
// visitors as the shipped readers (`json::visit_report`). It gives the same `Coverage`
// as `json::read_json` at about a third of the speed, so it is kept as the oracle the
// tests compare the shipped readers with, and as the benchmark's "previous reader" row.
// Test code, not shipped: the library's unit tests `include!` this file (so no inner
// doc comment here), the `cli` test binary and `examples/coverage_stream.rs` name it
// as a module by `#[path]`. It reaches the library as `flakegate`.

use flakegate::gate::coverage::json::visit_report;
use flakegate::gate::coverage::{Coverage, PathMatcher};
use flakegate::gate::error::{InputError, Location};
use std::io::{self, Read};

/// serde_json pulls one byte at a time; `BufReader` has std's fast path
/// for that, so the buffer only needs to amortise calls into the guard.
const BUF_READER_CAPACITY: usize = 64 * 1024;
/// How much the UTF-8 guard reads from the underlying reader at once.
const GUARD_CHUNK: usize = 1 << 20;

/// Read `coverage json --show-contexts` output as `json::read_json` does, the whole
/// input through serde_json's reader path: the same `Coverage`, and errors at the
/// same line.
pub fn read_json_stream<R: Read>(file: &str, reader: R, matcher: &PathMatcher) -> Result<Coverage, InputError> {
    let mut guard = Utf8Guard::new(reader);
    let result = {
        let buf = io::BufReader::with_capacity(BUF_READER_CAPACITY, &mut guard);
        let mut de = serde_json::Deserializer::from_reader(buf);
        visit_report(&mut de, matcher).and_then(|visited| de.end().map(|()| visited))
    };
    if let Some(bad) = guard.utf8_error() {
        return Err(InputError::new(
            Location::at(file, bad.line, Some(bad.column)),
            "invalid UTF-8 (coverage.py writes UTF-8 JSON)",
        ));
    }
    match result {
        Ok(visited) => visited.finish(file),
        Err(err) => Err(InputError::json(file, &err)),
    }
}

/// Where invalid UTF-8 was found (1-based; columns count bytes, as serde_json's do).
#[derive(Debug, Clone, Copy)]
struct Utf8Position {
    pub line: usize,
    pub column: usize,
}

/// Validates UTF-8 over the whole input. serde_json checks the strings it
/// decodes, but not the ones `IgnoredAny` skips; this guard makes invalid
/// UTF-8 anywhere an error at the right line and column. It hands out only
/// validated bytes, so serde_json reaches any earlier syntax error first.
struct Utf8Guard<R> {
    inner: R,
    buf: Box<[u8]>,
    /// buf[pos..valid] is validated and not yet handed out;
    /// buf[valid..filled] is an incomplete UTF-8 sequence awaiting more input.
    pos: usize,
    valid: usize,
    filled: usize,
    eof: bool,
    /// Line and column of the byte after the last one handed out.
    line: usize,
    column: usize,
    /// Set when buf[valid] starts an invalid sequence (served after buf[..valid]).
    bad: bool,
    error: Option<Utf8Position>,
}

impl<R: Read> Utf8Guard<R> {
    pub fn new(inner: R) -> Self {
        Utf8Guard {
            inner,
            buf: vec![0u8; GUARD_CHUNK].into_boxed_slice(),
            pos: 0,
            valid: 0,
            filled: 0,
            eof: false,
            line: 1,
            column: 1,
            bad: false,
            error: None,
        }
    }

    pub fn utf8_error(&self) -> Option<Utf8Position> {
        self.error
    }

    fn refill(&mut self) -> io::Result<()> {
        // Keep the incomplete tail (at most 3 bytes).
        self.buf.copy_within(self.valid..self.filled, 0);
        self.filled -= self.valid;
        self.pos = 0;
        self.valid = 0;
        while !self.eof && self.valid == 0 && !self.bad {
            let n = match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
            }
            self.filled += n;
            match std::str::from_utf8(&self.buf[..self.filled]) {
                Ok(_) => self.valid = self.filled,
                Err(e) => {
                    self.valid = e.valid_up_to();
                    // An incomplete sequence at the end is fine unless input ended.
                    if e.error_len().is_some() || self.eof {
                        self.bad = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Newlines in `bytes`, counted per 128-byte block with a `u8` sum so that
/// the compiler vectorises it (a plain `filter().count()` does not, well).
fn count_newlines(bytes: &[u8]) -> usize {
    let mut blocks = bytes.chunks_exact(128);
    let mut n = 0usize;
    for block in &mut blocks {
        n += usize::from(block.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>());
    }
    n + blocks.remainder().iter().filter(|&&b| b == b'\n').count()
}

impl<R: Read> Read for Utf8Guard<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.valid {
            if self.bad {
                self.error = Some(Utf8Position {
                    line: self.line,
                    column: self.column,
                });
                return Err(io::Error::new(io::ErrorKind::InvalidData, "invalid UTF-8"));
            }
            if self.eof && self.valid == self.filled {
                return Ok(0);
            }
            self.refill()?;
            if self.pos == self.valid {
                return self.read(out);
            }
        }
        let n = out.len().min(self.valid - self.pos);
        let chunk = &self.buf[self.pos..self.pos + n];
        out[..n].copy_from_slice(chunk);
        // Track the position for an error report. Counting is one
        // vectorised pass; the last newline is searched only when there
        // is one (coverage.py's JSON is a single line unless pretty-printed).
        let newlines = count_newlines(chunk);
        if newlines == 0 {
            self.column += n;
        } else {
            self.line += newlines;
            let last = chunk.iter().rposition(|&b| b == b'\n').unwrap_or(0);
            self.column = n - last;
        }
        self.pos += n;
        Ok(n)
    }
}
