//! The block reader behind [`read_json`](super::read_json): the input is read in
//! large blocks, UTF-8 validated as it arrives, and walked by a structural scanner
//! down to the members of the `files` object. Each member's value is handed to
//! serde_json as a byte range (`SliceRead`, which skips strings with a bulk scan
//! instead of byte by byte); only the files the patch names are deserialised, the
//! others are only syntax-checked ([`IgnoredAny`]). A value too large for the
//! block buffer (a core module's entry can be hundreds of megabytes) is streamed
//! through serde's reader path instead, so memory stays bounded.

use super::{FileSeed, FilesSeed, Key, Meta, ScanFile, State};
use crate::gate::error::{InputError, Location};
use serde::de::{DeserializeSeed, IgnoredAny};
use std::io::{self, Read};

/// How much is read from the underlying reader at once.
pub const BLOCK: usize = 4 << 20;
/// A value larger than this is streamed rather than buffered whole.
pub const BUFFER_AT_MOST: usize = 16 << 20;

/// Block-buffered, UTF-8-validated input with the line and column of its
/// buffer's first byte (for error positions).
struct Input<R> {
    inner: R,
    buf: Vec<u8>,
    /// buf[..pos] is consumed, buf[..valid] is valid UTF-8, buf[valid..end] is
    /// an incomplete sequence awaiting more input (or, with `bad`, an invalid one).
    pos: usize,
    valid: usize,
    end: usize,
    eof: bool,
    bad: bool,
    block: usize,
    /// Absolute byte offset, line (1-based) and bytes on that line before buf[0].
    base_offset: u64,
    base_line: usize,
    base_col: usize,
}

/// Newlines in `bytes`, counted per 128-byte block with a `u8` sum so that
/// the compiler vectorises it.
fn count_newlines(bytes: &[u8]) -> usize {
    let mut blocks = bytes.chunks_exact(128);
    let mut n = 0usize;
    for block in &mut blocks {
        n += usize::from(block.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>());
    }
    n + blocks.remainder().iter().filter(|&&b| b == b'\n').count()
}

impl<R: Read> Input<R> {
    fn new(inner: R, block: usize) -> Self {
        Input {
            inner,
            buf: Vec::new(),
            pos: 0,
            valid: 0,
            end: 0,
            eof: false,
            bad: false,
            block,
            base_offset: 0,
            base_line: 1,
            base_col: 0,
        }
    }

    /// Read more input (dropping the consumed bytes). Returns false when no more
    /// valid bytes can come: end of input, or invalid UTF-8 at `valid`.
    fn fill(&mut self) -> io::Result<bool> {
        if self.bad || (self.eof && self.valid == self.end) {
            return Ok(false);
        }
        if self.pos > 0 {
            let gone = &self.buf[..self.pos];
            let newlines = count_newlines(gone);
            if newlines == 0 {
                self.base_col += gone.len();
            } else {
                self.base_line += newlines;
                self.base_col = gone.len() - 1 - gone.iter().rposition(|&b| b == b'\n').unwrap_or(0);
            }
            self.base_offset += self.pos as u64;
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.valid -= self.pos;
            self.pos = 0;
        }
        let before = self.valid;
        while self.valid == before && !self.bad && !self.eof {
            if self.buf.len() - self.end < self.block {
                self.buf.resize(self.end + self.block, 0);
            }
            let n = match self.inner.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.eof = n == 0;
            self.end += n;
            match std::str::from_utf8(&self.buf[self.valid..self.end]) {
                Ok(_) => self.valid = self.end,
                Err(e) => {
                    self.valid += e.valid_up_to();
                    // An incomplete sequence at the end is fine unless input ended.
                    if e.error_len().is_some() || self.eof {
                        self.bad = true;
                    }
                }
            }
        }
        Ok(self.valid > before)
    }

    /// (line, column) before buf[i], as serde_json counts them: the column is
    /// the number of bytes on the line up to buf[i] (so a byte's own 1-based
    /// column is `position(i + 1)`).
    fn position(&self, i: usize) -> (usize, usize) {
        let before = &self.buf[..i];
        match memchr::memrchr(b'\n', before) {
            None => (self.base_line, self.base_col + i),
            Some(nl) => (self.base_line + count_newlines(before), i - nl - 1),
        }
    }
}

/// Streaming reads for a value too large to buffer: serves the validated bytes
/// and refills; invalid UTF-8 is an `InvalidData` error.
impl<R: Read> Read for Input<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.valid && !self.fill()? {
            if self.bad {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "invalid UTF-8"));
            }
            return Ok(0);
        }
        let n = out.len().min(self.valid - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Where a value starting at `pos` ends.
enum Span {
    /// buf[pos..pos + len] is the whole value, syntax-checked.
    Buffered(usize),
    /// The value is larger than the buffer may grow: stream it.
    TooLarge,
    /// buf[pos..valid] holds a syntax error (or ends too soon), relative to pos.
    Broken(serde_json::Error),
}

struct Scanner<'f, R> {
    file: &'f str,
    input: Input<R>,
    buffer_at_most: usize,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

impl<R: Read> Scanner<'_, R> {
    fn io(&self, e: io::Error) -> InputError {
        InputError::new(Location::file(self.file), e.to_string())
    }

    fn utf8_error(&self) -> InputError {
        let (line, column) = self.input.position(self.input.valid + 1);
        InputError::new(
            Location::at(self.file, line, Some(column)),
            format!(
                "invalid UTF-8 at byte {} (coverage.py writes UTF-8 JSON)",
                self.input.base_offset + self.input.valid as u64
            ),
        )
    }

    /// An error at the byte buf[i] (serde_json's wording, with the byte offset).
    fn error_at(&self, i: usize, message: &str) -> InputError {
        let (line, column) = self.input.position(i + 1);
        InputError::new(
            Location::at(self.file, line, Some(column)),
            format!("{message} (byte {})", self.input.base_offset + i as u64),
        )
    }

    /// End of the valid input where more was expected.
    fn eof(&self, message: &str) -> InputError {
        if self.input.bad {
            return self.utf8_error();
        }
        let v = self.input.valid;
        let (line, column) = self.input.position(v);
        InputError::new(
            Location::at(self.file, line, Some(column)),
            format!("{message} (byte {})", self.input.base_offset + v as u64),
        )
    }

    /// A serde_json error inside a value that starts at `start` (line, bytes
    /// before it on that line, offset); its position is relative to that start.
    fn serde_error(&self, start: (usize, usize, u64), err: &serde_json::Error) -> InputError {
        if self.input.bad && (err.is_eof() || err.is_io()) {
            return self.utf8_error();
        }
        let e = InputError::json(self.file, err);
        if err.line() == 0 {
            return e;
        }
        let (sl, sc, _) = start;
        let (line, column) = if err.line() == 1 {
            (sl, sc + err.column())
        } else {
            (sl + err.line() - 1, err.column())
        };
        InputError::new(Location::at(self.file, line, Some(column)), e.message)
    }

    fn start_of(&self, i: usize) -> (usize, usize, u64) {
        let (l, c) = self.input.position(i);
        (l, c, self.input.base_offset + i as u64)
    }

    /// The next byte that is not whitespace (not consumed), or None at the end.
    fn peek(&mut self) -> Result<Option<u8>, InputError> {
        loop {
            while self.input.pos < self.input.valid {
                let b = self.input.buf[self.input.pos];
                if !is_ws(b) {
                    return Ok(Some(b));
                }
                self.input.pos += 1;
            }
            if !self.input.fill().map_err(|e| self.io(e))? {
                return Ok(None);
            }
        }
    }

    fn expect_peek(&mut self, eof_message: &str) -> Result<u8, InputError> {
        self.peek()?.ok_or_else(|| self.eof(eof_message))
    }

    /// The value at `pos`: buffered whole (syntax-checked), or too large.
    fn span(&mut self) -> Result<Span, InputError> {
        loop {
            let rest = &self.input.buf[self.input.pos..self.input.valid];
            let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
            match values.next() {
                Some(Ok(_)) => return Ok(Span::Buffered(values.byte_offset())),
                Some(Err(e)) if e.is_eof() => {
                    if rest.len() >= self.buffer_at_most && !self.input.eof && !self.input.bad {
                        return Ok(Span::TooLarge);
                    }
                    if !self.input.fill().map_err(|e| self.io(e))? {
                        return Ok(Span::Broken(e));
                    }
                }
                // A number cut by the block's end ("1." or "-") is no EOF to serde_json.
                // Past the buffer's bound it is streamed, like a value cut anywhere else.
                Some(Err(e)) if !self.input.eof && !self.input.bad && at_end(rest, &e) => {
                    if rest.len() >= self.buffer_at_most {
                        return Ok(Span::TooLarge);
                    }
                    if !self.input.fill().map_err(|e| self.io(e))? {
                        return Ok(Span::Broken(e));
                    }
                }
                Some(Err(e)) => return Ok(Span::Broken(e)),
                None => return Err(self.eof("EOF while parsing a value")),
            }
        }
    }

    /// Run `seed` over the value at `pos` and consume it.
    fn value<S>(&mut self, seed: S) -> Result<(), InputError>
    where
        S: for<'de> DeserializeSeed<'de, Value = ()>,
    {
        let start = self.start_of(self.input.pos);
        match self.span()? {
            Span::Buffered(len) => {
                let slice = &self.input.buf[self.input.pos..self.input.pos + len];
                let mut de = serde_json::Deserializer::from_slice(slice);
                seed.deserialize(&mut de).map_err(|e| self.serde_error(start, &e))?;
                self.input.pos += len;
                Ok(())
            }
            Span::Broken(e) => {
                // The previous reader met a wrong type before a later syntax error:
                // report whichever comes first.
                let rest = &self.input.buf[self.input.pos..self.input.valid];
                let first = match seed.deserialize(&mut serde_json::Deserializer::from_slice(rest)) {
                    Err(t) if !t.is_eof() && (t.line(), t.column()) <= (e.line(), e.column()) => t,
                    _ => e,
                };
                Err(self.serde_error(start, &first))
            }
            Span::TooLarge => {
                let mut reader = io::BufReader::with_capacity(64 * 1024, &mut self.input);
                let result = {
                    let mut de = serde_json::Deserializer::from_reader(&mut reader);
                    seed.deserialize(&mut de)
                };
                // serde_json reads no further than the value's last byte: give back
                // what the BufReader holds beyond it (still in the input's buffer).
                let unread = reader.buffer().len();
                drop(reader);
                self.input.pos -= unread;
                result.map_err(|e| self.serde_error(start, &e))
            }
        }
    }

    /// A string key at `pos` (which holds `"`), decoded and consumed.
    fn key(&mut self) -> Result<String, InputError> {
        let mut at = self.input.pos + 1;
        let close = loop {
            let hay = &self.input.buf[at..self.input.valid];
            match memchr::memchr2(b'"', b'\\', hay) {
                Some(k) if hay[k] == b'"' => break at + k,
                Some(k) if at + k + 2 <= self.input.valid => {
                    at += k + 2;
                    continue;
                }
                // An escape cut by the block's end: rescan from its backslash.
                Some(k) => at += k,
                None => at = self.input.valid,
            }
            let rel = at - self.input.pos;
            if !self.input.fill().map_err(|e| self.io(e))? {
                return Err(self.eof("EOF while parsing a string"));
            }
            at = self.input.pos + rel;
        };
        let raw = &self.input.buf[self.input.pos + 1..close];
        let key = if raw.iter().all(|&b| b != b'\\' && b >= 0x20) {
            // Validated as UTF-8 when it was read.
            String::from_utf8_lossy(raw).into_owned()
        } else {
            let start = self.start_of(self.input.pos);
            serde_json::from_slice::<String>(&self.input.buf[self.input.pos..=close])
                .map_err(|e| self.serde_error(start, &e))?
        };
        self.input.pos = close + 1;
        Ok(key)
    }

    /// Consume `b` after optional whitespace, or fail with serde_json's message.
    fn expect(&mut self, b: u8, message: &str, eof_message: &str) -> Result<(), InputError> {
        match self.peek()? {
            Some(x) if x == b => {
                self.input.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.error_at(self.input.pos, message)),
            None => Err(self.eof(eof_message)),
        }
    }

    /// Walk an object at `pos` (which holds `{`), calling `member` with each key
    /// once `pos` is at its value.
    fn object(
        &mut self,
        member: &mut dyn FnMut(&mut Self, String) -> Result<(), InputError>,
    ) -> Result<(), InputError> {
        self.input.pos += 1;
        let eof = "EOF while parsing an object";
        if self.expect_peek(eof)? == b'}' {
            self.input.pos += 1;
            return Ok(());
        }
        loop {
            if self.expect_peek(eof)? != b'"' {
                return Err(self.error_at(self.input.pos, "key must be a string"));
            }
            let key = self.key()?;
            self.expect(b':', "expected `:`", eof)?;
            if self.peek()?.is_none() {
                return Err(self.eof("EOF while parsing a value"));
            }
            member(self, key)?;
            match self.expect_peek(eof)? {
                b',' => {
                    self.input.pos += 1;
                    if self.expect_peek(eof)? == b'}' {
                        return Err(self.error_at(self.input.pos, "trailing comma"));
                    }
                }
                b'}' => {
                    self.input.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error_at(self.input.pos, "expected `,` or `}`")),
            }
        }
    }
}

/// Fill `state` from the report in `reader` (see [`read_json`](super::read_json)).
pub fn scan<R: Read>(
    file: &str,
    reader: R,
    state: &mut State<'_>,
    block: usize,
    buffer_at_most: usize,
) -> Result<(), InputError> {
    let mut sc = Scanner {
        file,
        input: Input::new(reader, block.max(1)),
        buffer_at_most: buffer_at_most.max(1),
    };
    match sc.peek()? {
        None => return Err(sc.eof("EOF while parsing a value")),
        Some(b'{') => {}
        // Not an object: serde_json's own error for the value ("invalid type: …").
        Some(_) => return sc.value(&mut *state),
    }
    sc.object(&mut |sc, key| match key_of(&key) {
        Key::Meta => sc.value(MetaSeed(&mut state.meta)),
        Key::Files => {
            state.saw_files = true;
            if sc.peek()? != Some(b'{') {
                return sc.value(FilesSeed(&mut *state));
            }
            sc.object(&mut |sc, name| {
                state.measured_files += 1;
                match state.matcher.map(&name) {
                    Some(mapped) => {
                        let mut fc = super::FileCoverage {
                            has_statements: true,
                            ..Default::default()
                        };
                        sc.value(FileSeed {
                            repo: &mapped.0,
                            fc: &mut fc,
                            ctx: &mut state.ctx,
                        })?;
                        super::insert_file(&mut state.files, &mut state.mapped_paths, &name, mapped, fc);
                        Ok(())
                    }
                    None if !state.ctx.seen_test() => sc.value(ScanFile { ctx: &mut state.ctx }),
                    None => sc.value(Skip),
                }
            })
        }
        _ => sc.value(Skip),
    })?;
    match sc.peek()? {
        None if sc.input.bad => Err(sc.utf8_error()),
        None => Ok(()),
        Some(_) => Err(sc.error_at(sc.input.pos, "trailing characters")),
    }
}

/// Is serde_json's error `e` at the very end of `slice`?
fn at_end(slice: &[u8], e: &serde_json::Error) -> bool {
    let (line, column) = match memchr::memrchr(b'\n', slice) {
        None => (1, slice.len()),
        Some(nl) => (1 + count_newlines(slice), slice.len() - nl - 1),
    };
    (e.line(), e.column()) == (line, column)
}

fn key_of(s: &str) -> Key {
    use serde::de::IntoDeserializer;
    let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
    serde::Deserialize::deserialize(de).unwrap_or(Key::Other)
}

/// Skip a value (syntax-checked).
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        <IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| ())
    }
}

struct MetaSeed<'a>(&'a mut Option<Meta>);

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        *self.0 = Some(serde::Deserialize::deserialize(d)?);
        Ok(())
    }
}
