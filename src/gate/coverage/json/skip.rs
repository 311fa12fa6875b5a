//! A validating skipper: where a JSON value ends, with its syntax checked as serde_json's
//! `IgnoredAny` checks it, without decoding anything. It is the fast path for the files a
//! patch does not name (most of a large report); it never decides an error itself: whatever
//! it does not accept outright ([`Skip::Unsure`]) goes to serde_json, whose error is the one
//! reported. So the only property it must have is: when it says [`Skip::Done`]`(n)`, serde_json's
//! `StreamDeserializer::<IgnoredAny>` over the same bytes gives that value and `byte_offset() == n`
//! (a proptest compares them).
//!
//! Strings (the bulk of a report: test context names) are scanned sixteen bytes at a time for
//! `"`, `\` and control characters (SSE2 on x86_64, eight at a time in a `u64` elsewhere and
//! for the tail); structure byte by byte, with a shortcut from one string of an array to the next.

/// What [`skip_value`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// bytes[..n] is one whole, valid value.
    Done(usize),
    /// All the bytes are valid so far, but the value goes on past them (or, for a number or
    /// a literal at the top level, the next byte must be seen to know it ended).
    NeedMore,
    /// Something serde_json must judge: a syntax error, or nesting deeper than 64.
    Unsure,
}

/// Containers deeper than this are left to serde_json (its own `IgnoredAny` has no limit).
const MAX_DEPTH: u32 = 64;

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// The first byte at or after `i` that is `"`, `\` or a control character (< 0x20).
fn string_stop(b: &[u8], i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    let i = match sse2_stop(b, i) {
        Ok(at) => return Some(at),
        Err(rest) => rest,
    };
    swar_stop(b, i)
}

/// [`string_stop`] sixteen bytes at a time (SSE2 is part of every x86_64 CPU): the stop,
/// or where fewer than sixteen bytes are left without one.
#[cfg(target_arch = "x86_64")]
fn sse2_stop(b: &[u8], mut i: usize) -> Result<usize, usize> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    while let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<16>()) {
        // SAFETY: the load reads the 16 bytes of `chunk` (unaligned loads are allowed); the
        // other intrinsics only need SSE2, which x86_64 always has.
        let m = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // max(v, 0x1f) == 0x1f: v <= 0x1f (unsigned).
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        };
        if m != 0 {
            return Ok(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    Err(i)
}

/// [`string_stop`] eight bytes at a time in a `u64` (SWAR), then byte by byte.
fn swar_stop(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = b.get(i..).and_then(|r| r.first_chunk::<8>()) {
        let x = u64::from_le_bytes(*chunk);
        let q = x ^ (LO * u64::from(b'"'));
        let s = x ^ (LO * u64::from(b'\\'));
        // Per byte: zero (q, s) or below 0x20 (x). The lowest flagged bit is exact: a borrow
        // only runs upwards from a byte that matched.
        let m = ((q.wrapping_sub(LO) & !q) | (s.wrapping_sub(LO) & !s) | (x.wrapping_sub(LO * 0x20) & !x)) & HI;
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| i + k)
}

/// A string whose opening quote is at `i - 1`: the index after its closing quote.
fn string(b: &[u8], mut i: usize) -> Result<usize, Skip> {
    loop {
        let j = string_stop(b, i).ok_or(Skip::NeedMore)?;
        match b[j] {
            b'"' => return Ok(j + 1),
            b'\\' => match b.get(j + 1) {
                None => return Err(Skip::NeedMore),
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i = j + 2,
                Some(b'u') => match b.get(j + 2..j + 6) {
                    Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => i = j + 6,
                    Some(_) => return Err(Skip::Unsure),
                    None => return Err(Skip::NeedMore),
                },
                Some(_) => return Err(Skip::Unsure),
            },
            _ => return Err(Skip::Unsure),
        }
    }
}

/// `"key"` then `:` at `i` (after whitespace): the index after the colon.
fn key(b: &[u8], i: usize) -> Result<usize, Skip> {
    let i = skip_ws(b, i);
    match b.get(i) {
        None => return Err(Skip::NeedMore),
        Some(b'"') => {}
        Some(_) => return Err(Skip::Unsure),
    }
    let i = skip_ws(b, string(b, i + 1)?);
    match b.get(i) {
        None => Err(Skip::NeedMore),
        Some(b':') => Ok(i + 1),
        Some(_) => Err(Skip::Unsure),
    }
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// A number at `i`: the index after it. The byte after a number must be seen (more digits
/// could follow), so a number that reaches the end of `b` needs more.
fn number(b: &[u8], i: usize) -> Result<usize, Skip> {
    let mut j = i + usize::from(b[i] == b'-');
    match b.get(j) {
        None => return Err(Skip::NeedMore),
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => j = digits(b, j + 1),
        Some(_) => return Err(Skip::Unsure),
    }
    match b.get(j) {
        None => return Err(Skip::NeedMore),
        // A second leading digit after 0.
        Some(b'0'..=b'9') => return Err(Skip::Unsure),
        Some(b'.') => {
            j += 1;
            match b.get(j) {
                None => return Err(Skip::NeedMore),
                Some(c) if c.is_ascii_digit() => j = digits(b, j),
                Some(_) => return Err(Skip::Unsure),
            }
        }
        Some(_) => {}
    }
    match b.get(j) {
        None => return Err(Skip::NeedMore),
        Some(b'e' | b'E') => {
            j += 1;
            if let Some(b'+' | b'-') = b.get(j) {
                j += 1;
            }
            match b.get(j) {
                None => return Err(Skip::NeedMore),
                Some(c) if c.is_ascii_digit() => j = digits(b, j),
                Some(_) => return Err(Skip::Unsure),
            }
        }
        Some(_) => {}
    }
    if j == b.len() {
        Err(Skip::NeedMore)
    } else {
        Ok(j)
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Result<usize, Skip> {
    let have = &b[i..b.len().min(i + word.len())];
    if have != &word[..have.len()] {
        Err(Skip::Unsure)
    } else if have.len() < word.len() {
        Err(Skip::NeedMore)
    } else {
        Ok(i + word.len())
    }
}

/// Where the value at the start of `b` (no leading whitespace) ends; see [`Skip`].
pub fn skip_value(b: &[u8]) -> Skip {
    match walk(b) {
        Ok(n) => Skip::Done(n),
        Err(s) => s,
    }
}

fn walk(b: &[u8]) -> Result<usize, Skip> {
    let mut i = 0usize;
    // Bit k of `objects` is set when the container at depth k + 1 (from the innermost) is an object.
    let mut objects = 0u64;
    let mut depth = 0u32;
    'value: loop {
        i = skip_ws(b, i);
        let c = *b.get(i).ok_or(Skip::NeedMore)?;
        match c {
            b'"' => i = string(b, i + 1)?,
            b'{' | b'[' => {
                if depth == MAX_DEPTH {
                    return Err(Skip::Unsure);
                }
                depth += 1;
                objects = (objects << 1) | u64::from(c == b'{');
                i = skip_ws(b, i + 1);
                let d = *b.get(i).ok_or(Skip::NeedMore)?;
                // `}` is `{` + 2 and `]` is `[` + 2.
                if d == c + 2 {
                    i += 1;
                    depth -= 1;
                    objects >>= 1;
                } else {
                    if c == b'{' {
                        i = key(b, i)?;
                    }
                    continue 'value;
                }
            }
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            _ => return Err(Skip::Unsure),
        }
        // After a value: a top-level scalar must be followed by what serde_json's stream
        // accepts after one; inside containers, `,` goes on and `}`/`]` close.
        if depth == 0 && !matches!(c, b'"' | b'{' | b'[') {
            return match b.get(i) {
                None => Err(Skip::NeedMore),
                Some(b' ' | b'\n' | b'\t' | b'\r' | b'"' | b'[' | b']' | b'{' | b'}' | b',' | b':') => Ok(i),
                Some(_) => Err(Skip::Unsure),
            };
        }
        loop {
            if depth == 0 {
                return Ok(i);
            }
            // The common case in a report: the next string of an array of context names.
            if objects & 1 == 0 && b.get(i..i + 3) == Some(b", \"") {
                i = string(b, i + 3)?;
                continue;
            }
            i = skip_ws(b, i);
            let object = objects & 1 == 1;
            match (*b.get(i).ok_or(Skip::NeedMore)?, object) {
                (b',', true) => {
                    i = key(b, i + 1)?;
                    continue 'value;
                }
                (b',', false) => {
                    i += 1;
                    continue 'value;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    depth -= 1;
                    objects >>= 1;
                }
                _ => return Err(Skip::Unsure),
            }
        }
    }
}

/// Is serde_json's error `e` at the very end of `slice`?
pub(super) fn at_end(slice: &[u8], e: &serde_json::Error) -> bool {
    let (line, column) = match memchr::memrchr(b'\n', slice) {
        None => (1, slice.len()),
        Some(nl) => (1 + memchr::memchr_iter(b'\n', slice).count(), slice.len() - nl - 1),
    };
    (e.line(), e.column()) == (line, column)
}

#[cfg(test)]
mod tests;
