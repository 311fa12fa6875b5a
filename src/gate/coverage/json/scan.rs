//! The block reader behind [`read_json`](super::read_json) and
//! [`read_json_slice`](super::read_json_slice): the input (read in large blocks, or
//! given whole as a slice, e.g. a mapped file) is UTF-8 validated as the scan reaches it
//! and walked by a structural scanner down to the members of the `files` object. Each
//! member's value is delimited by a validating skipper (`skip`) and, when the patch names
//! the file, handed to serde_json as a byte range (`SliceRead`); the other files are only
//! syntax-checked, by the skipper (or, where it is not sure, by serde_json's
//! [`IgnoredAny`], whose error is the one reported). A value too large for the block
//! buffer (a core module's entry can be hundreds of megabytes) is streamed through serde's
//! reader path instead, so memory stays bounded.

use super::skip::{at_end, skip_value, Skip as Skipped};
use super::{FileSeed, FilesSeed, Key, Meta, ScanFile, State};
use crate::gate::error::{InputError, Location};
use serde::de::{DeserializeSeed, IgnoredAny};
use std::io::{self, Read};

/// How much is read from the underlying reader at once.
pub const BLOCK: usize = 4 << 20;
/// How much of a whole input (a slice) is validated at once: the scanner reports its
/// progress ([`SliceFeed`]'s `consumed`) about this often.
pub const SLICE_STEP: usize = 1 << 20;
/// A value larger than this is streamed rather than buffered whole.
pub const BUFFER_AT_MOST: usize = 16 << 20;

/// Where the scanner's bytes come from.
pub trait Feed {
    /// True when [`Feed::buf`] is the whole input from the start and never moves (a slice);
    /// false for a buffer refilled from a reader, whose consumed bytes are dropped.
    const WHOLE: bool;
    fn buf(&self) -> &[u8];
    /// Drop buf[..n], keeping buf[n..end] at the front (never called when `WHOLE`).
    fn shift(&mut self, n: usize, end: usize);
    /// Make bytes available after buf[..end], up to `want` of them; how many (0: the end).
    fn more(&mut self, end: usize, want: usize) -> io::Result<usize>;
    /// The bytes before `pos` will not be read again.
    fn consumed(&mut self, pos: usize);
}

/// A reader, read in blocks into a buffer that grows only for a value cut by a block's end.
pub struct ReaderFeed<R> {
    inner: R,
    buf: Vec<u8>,
}

impl<R: Read> Feed for ReaderFeed<R> {
    const WHOLE: bool = false;
    fn buf(&self) -> &[u8] {
        &self.buf
    }
    fn shift(&mut self, n: usize, end: usize) {
        self.buf.copy_within(n..end, 0);
    }
    fn more(&mut self, end: usize, want: usize) -> io::Result<usize> {
        if self.buf.len() - end < want {
            self.buf.resize(end + want, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[end..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
    fn consumed(&mut self, _: usize) {}
}

/// The whole input in memory (a mapped file): nothing is copied. `consumed` hears how far
/// the scan has gone, so that the owner can release what is behind it.
pub struct SliceFeed<'s> {
    bytes: &'s [u8],
    consumed: &'s mut dyn FnMut(usize),
}

impl Feed for SliceFeed<'_> {
    const WHOLE: bool = true;
    fn buf(&self) -> &[u8] {
        self.bytes
    }
    fn shift(&mut self, _: usize, _: usize) {}
    fn more(&mut self, end: usize, want: usize) -> io::Result<usize> {
        let len = self.bytes.len();
        let mut to = end.saturating_add(want).min(len);
        // End the step on a character's first byte, so that validation need not redo it.
        for _ in 0..3 {
            if to < len && to > end + 1 && self.bytes[to] & 0xc0 == 0x80 {
                to -= 1;
            }
        }
        Ok(to - end)
    }
    fn consumed(&mut self, pos: usize) {
        (self.consumed)(pos);
    }
}

/// UTF-8-validated input with the line and column of its byte buf[base] (for error positions).
struct Input<F> {
    feed: F,
    /// buf[..pos] is consumed, buf[..valid] is valid UTF-8, buf[valid..end] is an
    /// incomplete sequence awaiting more input (or, with `bad`, an invalid one).
    pos: usize,
    valid: usize,
    end: usize,
    eof: bool,
    bad: bool,
    block: usize,
    /// The byte whose position is (base_line, base_col) below; bytes before it are not read again.
    base: usize,
    /// Absolute byte offset of buf[0], line (1-based) and bytes on that line before buf[base].
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

impl<F: Feed> Input<F> {
    fn new(feed: F, block: usize) -> Self {
        Input {
            feed,
            pos: 0,
            valid: 0,
            end: 0,
            eof: false,
            bad: false,
            block,
            base: 0,
            base_offset: 0,
            base_line: 1,
            base_col: 0,
        }
    }

    fn buf(&self) -> &[u8] {
        self.feed.buf()
    }

    fn fill(&mut self) -> io::Result<bool> {
        self.fill_want(self.block)
    }

    /// Make more valid input available (dropping or releasing the consumed bytes), at least
    /// a block's worth or `want` bytes where the input has them. Returns false when no more
    /// valid bytes can come: end of input, or invalid UTF-8 at `valid`.
    fn fill_want(&mut self, want: usize) -> io::Result<bool> {
        if self.bad || (self.eof && self.valid == self.end) {
            return Ok(false);
        }
        if self.pos > self.base {
            let gone = &self.feed.buf()[self.base..self.pos];
            let newlines = count_newlines(gone);
            if newlines == 0 {
                self.base_col += gone.len();
            } else {
                self.base_line += newlines;
                self.base_col = gone.len() - 1 - gone.iter().rposition(|&b| b == b'\n').unwrap_or(0);
            }
            if F::WHOLE {
                self.base = self.pos;
                self.feed.consumed(self.pos);
            } else {
                self.base_offset += self.pos as u64;
                self.feed.shift(self.pos, self.end);
                self.end -= self.pos;
                self.valid -= self.pos;
                self.pos = 0;
            }
        }
        let before = self.valid;
        let want = want.max(self.block);
        while self.valid == before && !self.bad && !self.eof {
            let n = self.feed.more(self.end, want)?;
            self.eof = n == 0;
            self.end += n;
            let fresh = &self.feed.buf()[self.valid..self.end];
            // simdutf8's fast check first; its `compat` flavour locates an error.
            if simdutf8::basic::from_utf8(fresh).is_ok() {
                self.valid = self.end;
                continue;
            }
            if let Err(e) = simdutf8::compat::from_utf8(fresh) {
                self.valid += e.valid_up_to();
                // An incomplete sequence at the end is fine unless input ended.
                if e.error_len().is_some() || self.eof {
                    self.bad = true;
                }
            }
        }
        Ok(self.valid > before)
    }

    /// (line, column) before buf[i] (i >= base), as serde_json counts them: the column is
    /// the number of bytes on the line up to buf[i] (so a byte's own 1-based column is
    /// `position(i + 1)`).
    fn position(&self, i: usize) -> (usize, usize) {
        let before = &self.buf()[self.base..i];
        match memchr::memrchr(b'\n', before) {
            None => (self.base_line, self.base_col + before.len()),
            Some(nl) => (self.base_line + count_newlines(before), before.len() - nl - 1),
        }
    }
}

/// Streaming reads for a value too large to buffer: serves the validated bytes
/// and refills; invalid UTF-8 is an `InvalidData` error.
impl<F: Feed> Read for Input<F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.valid && !self.fill()? {
            if self.bad {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "invalid UTF-8"));
            }
            return Ok(0);
        }
        let n = out.len().min(self.valid - self.pos);
        out[..n].copy_from_slice(&self.buf()[self.pos..self.pos + n]);
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

struct Scanner<'f, F> {
    file: &'f str,
    input: Input<F>,
    buffer_at_most: usize,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

impl<F: Feed> Scanner<'_, F> {
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

    /// Where buf[i] is (only called on the way to an error, or before streaming a value:
    /// it counts the lines from the last refill).
    fn start_of(&self, i: usize) -> (usize, usize, u64) {
        let (l, c) = self.input.position(i);
        (l, c, self.input.base_offset + i as u64)
    }

    /// The next byte that is not whitespace (not consumed), or None at the end.
    fn peek(&mut self) -> Result<Option<u8>, InputError> {
        loop {
            let (buf, mut pos, valid) = (self.input.feed.buf(), self.input.pos, self.input.valid);
            while pos < valid && is_ws(buf[pos]) {
                pos += 1;
            }
            self.input.pos = pos;
            if pos < valid {
                return Ok(Some(buf[pos]));
            }
            if !self.input.fill().map_err(|e| self.io(e))? {
                return Ok(None);
            }
        }
    }

    fn expect_peek(&mut self, eof_message: &str) -> Result<u8, InputError> {
        self.peek()?.ok_or_else(|| self.eof(eof_message))
    }

    /// Is buf[..to] valid (validating up to it as needed)?
    fn ensure_valid(&mut self, to: usize) -> Result<bool, InputError> {
        while self.input.valid < to {
            let want = to.saturating_sub(self.input.end);
            if !self.input.fill_want(want).map_err(|e| self.io(e))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The value at `pos`: buffered whole (syntax-checked), or too large.
    fn span(&mut self) -> Result<Span, InputError> {
        // A number is never streamed: serde_json's reader path reads the byte after it to
        // know it ended, and that byte would be lost to the scanner.
        let number = matches!(self.input.buf().get(self.input.pos), Some(b'-' | b'0'..=b'9'));
        // The fast path: the skipper over the bytes at hand; for a whole input, all of
        // them up to the buffer's bound, validated afterwards up to the value's end.
        loop {
            let (buf, pos) = (self.input.buf(), self.input.pos);
            let limit = if F::WHOLE {
                buf.len().min(pos.saturating_add(self.buffer_at_most))
            } else {
                self.input.valid
            };
            let at_hand = limit - pos;
            match skip_value(&buf[pos..limit]) {
                Skipped::Done(len) => {
                    if self.ensure_valid(pos + len)? {
                        return Ok(Span::Buffered(len));
                    }
                    // Invalid UTF-8 inside: the careful path finds what comes first.
                    break;
                }
                Skipped::NeedMore => {
                    let at_end = if F::WHOLE {
                        limit == buf.len()
                    } else {
                        self.input.eof || self.input.bad
                    };
                    if at_hand >= self.buffer_at_most && !at_end && !number {
                        return Ok(Span::TooLarge);
                    }
                    if F::WHOLE || !self.input.fill_want(at_hand).map_err(|e| self.io(e))? {
                        break;
                    }
                }
                Skipped::Unsure => break,
            }
        }
        // The careful path: serde_json over the validated bytes; its error is the one reported.
        loop {
            let rest = &self.input.buf()[self.input.pos..self.input.valid];
            let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
            match values.next() {
                Some(Ok(_)) => {
                    let len = values.byte_offset();
                    // A number that ends where the bytes at hand do may go on past them.
                    let open = len == rest.len()
                        && matches!(rest.first(), Some(b'-' | b'0'..=b'9'))
                        && !self.input.eof
                        && !self.input.bad;
                    if !open {
                        return Ok(Span::Buffered(len));
                    }
                    if !self.input.fill_want(rest.len()).map_err(|e| self.io(e))? {
                        return Ok(Span::Buffered(len));
                    }
                }
                Some(Err(e)) if e.is_eof() => {
                    if rest.len() >= self.buffer_at_most && !self.input.eof && !self.input.bad && !number {
                        return Ok(Span::TooLarge);
                    }
                    if !self.input.fill_want(rest.len()).map_err(|e| self.io(e))? {
                        return Ok(Span::Broken(e));
                    }
                }
                // A number cut by the block's end ("1." or "-") is no EOF to serde_json.
                Some(Err(e)) if !self.input.eof && !self.input.bad && at_end(rest, &e) => {
                    if !self.input.fill_want(rest.len()).map_err(|e| self.io(e))? {
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
        self.value_or_skip(Some(seed))
    }

    /// Consume the value at `pos`, syntax-checked only: once delimited it needs no second pass.
    fn skip(&mut self) -> Result<(), InputError> {
        self.value_or_skip(None::<Skip>)
    }

    fn value_or_skip<S>(&mut self, seed: Option<S>) -> Result<(), InputError>
    where
        S: for<'de> DeserializeSeed<'de, Value = ()>,
    {
        match (self.span()?, seed) {
            (Span::Buffered(len), None) => {
                self.input.pos += len;
                Ok(())
            }
            (Span::Buffered(len), Some(seed)) => {
                let pos = self.input.pos;
                let slice = &self.input.buf()[pos..pos + len];
                let mut de = serde_json::Deserializer::from_slice(slice);
                seed.deserialize(&mut de)
                    .map_err(|e| self.serde_error(self.start_of(pos), &e))?;
                self.input.pos += len;
                Ok(())
            }
            (Span::Broken(e), seed) => {
                // The previous reader met a wrong type before a later syntax error:
                // report whichever comes first.
                let pos = self.input.pos;
                let rest = &self.input.buf()[pos..self.input.valid];
                let typed = match seed {
                    Some(seed) => seed.deserialize(&mut serde_json::Deserializer::from_slice(rest)),
                    None => Skip.deserialize(&mut serde_json::Deserializer::from_slice(rest)),
                };
                let first = match typed {
                    Err(t) if !t.is_eof() && (t.line(), t.column()) <= (e.line(), e.column()) => t,
                    _ => e,
                };
                Err(self.serde_error(self.start_of(pos), &first))
            }
            (Span::TooLarge, seed) => {
                let start = self.start_of(self.input.pos);
                let mut reader = io::BufReader::with_capacity(64 * 1024, &mut self.input);
                let result = {
                    let mut de = serde_json::Deserializer::from_reader(&mut reader);
                    match seed {
                        Some(seed) => seed.deserialize(&mut de),
                        None => Skip.deserialize(&mut de),
                    }
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
            let hay = &self.input.buf()[at..self.input.valid];
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
        let pos = self.input.pos;
        let raw = &self.input.buf()[pos + 1..close];
        let key = if raw.iter().all(|&b| b != b'\\' && b >= 0x20) {
            // Validated as UTF-8 when it was read.
            String::from_utf8_lossy(raw).into_owned()
        } else {
            serde_json::from_slice::<String>(&self.input.buf()[pos..=close])
                .map_err(|e| self.serde_error(self.start_of(pos), &e))?
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
    let feed = ReaderFeed {
        inner: reader,
        buf: Vec::new(),
    };
    run(file, feed, state, block, buffer_at_most)
}

/// Fill `state` from the whole report in `bytes` (see [`read_json_slice`](super::read_json_slice)).
pub fn scan_slice(
    file: &str,
    bytes: &[u8],
    consumed: &mut dyn FnMut(usize),
    state: &mut State<'_>,
    step: usize,
    buffer_at_most: usize,
) -> Result<(), InputError> {
    run(file, SliceFeed { bytes, consumed }, state, step, buffer_at_most)
}

fn run<F: Feed>(
    file: &str,
    feed: F,
    state: &mut State<'_>,
    block: usize,
    buffer_at_most: usize,
) -> Result<(), InputError> {
    let mut sc = Scanner {
        file,
        input: Input::new(feed, block.max(1)),
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
                        state.add(&name, mapped, fc);
                        Ok(())
                    }
                    None if !state.ctx.seen_test() => sc.value(ScanFile { ctx: &mut state.ctx }),
                    None => sc.skip(),
                }
            })
        }
        _ => sc.skip(),
    })?;
    match sc.peek()? {
        None if sc.input.bad => Err(sc.utf8_error()),
        None => Ok(()),
        Some(_) => Err(sc.error_at(sc.input.pos, "trailing characters")),
    }
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
