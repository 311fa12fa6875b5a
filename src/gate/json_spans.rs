//! A JSON reader that keeps positions. The text is validated by serde_json
//! first (whose errors carry line and column); this reader then walks the
//! same, now known-valid, text recording the 1-based line and column (in
//! characters) of every value and key. Nesting is bounded by serde_json's
//! recursion limit, which is checked first.

use crate::gate::error::{InputError, Location};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum JVal {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<Member>),
}

impl JVal {
    pub fn kind(&self) -> &'static str {
        match self {
            JVal::Null => "null",
            JVal::Bool(_) => "a boolean",
            JVal::Num(_) => "a number",
            JVal::Str(_) => "a string",
            JVal::Arr(_) => "an array",
            JVal::Obj(_) => "an object",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub val: JVal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

/// Parse `text` (a leading BOM is allowed) into a positioned tree.
pub fn parse(file: &str, text: &str) -> Result<Node, InputError> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Err(e) = serde_json::from_str::<serde_json::Value>(body) {
        return Err(InputError::json(file, &e));
    }
    let mut r = Reader {
        s: body,
        i: 0,
        line: 1,
        col: 1,
    };
    r.ws();
    match r.value() {
        Some(n) => Ok(n),
        // serde_json accepted it, so this is a bug in this reader; say so instead of panicking.
        None => Err(InputError::new(
            Location::at(file, r.line, Some(r.col)),
            "could not locate this JSON value (internal reader disagreement); please report this file",
        )),
    }
}

/// Reject fields not in `allowed`, and duplicate fields; each error names the field.
pub fn check_fields(file: &str, members: &[Member], allowed: &[&str], what: &str, errors: &mut Vec<InputError>) {
    let list = allowed.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ");
    let mut seen = std::collections::HashSet::new();
    for m in members {
        let at = Location::at(file, m.key_pos.line, Some(m.key_pos.col));
        if !allowed.contains(&m.key.as_str()) {
            errors.push(InputError::new(
                at,
                format!("unknown field {:?} in {what}: expected one of {list}", m.key),
            ));
        } else if !seen.insert(m.key.as_str()) {
            errors.push(InputError::new(
                at,
                format!("field {:?} appears twice in {what}", m.key),
            ));
        }
    }
}

struct Reader<'a> {
    s: &'a str,
    i: usize,
    line: usize,
    col: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.s.get(self.i..)?.chars().next()?;
        self.i += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.bump();
        }
    }
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.bump();
            Some(())
        } else {
            None
        }
    }
    fn lit(&mut self, word: &str) -> Option<()> {
        if self.s.get(self.i..)?.starts_with(word) {
            for _ in 0..word.len() {
                self.bump();
            }
            Some(())
        } else {
            None
        }
    }
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            match self.bump()? {
                '\\' => {
                    self.bump()?;
                }
                '"' => break,
                _ => {}
            }
        }
        serde_json::from_str::<String>(self.s.get(start..self.i)?).ok()
    }
    fn value(&mut self) -> Option<Node> {
        let pos = self.pos();
        let val = match self.peek()? {
            b'{' => {
                self.bump();
                let mut members = Vec::new();
                self.ws();
                if self.eat(b'}').is_none() {
                    loop {
                        self.ws();
                        let key_pos = self.pos();
                        let key = self.string()?;
                        self.ws();
                        self.eat(b':')?;
                        self.ws();
                        let value = self.value()?;
                        members.push(Member { key, key_pos, value });
                        self.ws();
                        if self.eat(b',').is_some() {
                            continue;
                        }
                        self.eat(b'}')?;
                        break;
                    }
                }
                JVal::Obj(members)
            }
            b'[' => {
                self.bump();
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']').is_none() {
                    loop {
                        self.ws();
                        items.push(self.value()?);
                        self.ws();
                        if self.eat(b',').is_some() {
                            continue;
                        }
                        self.eat(b']')?;
                        break;
                    }
                }
                JVal::Arr(items)
            }
            b'"' => JVal::Str(self.string()?),
            b't' => self.lit("true").map(|_| JVal::Bool(true))?,
            b'f' => self.lit("false").map(|_| JVal::Bool(false))?,
            b'n' => self.lit("null").map(|_| JVal::Null)?,
            _ => {
                let start = self.i;
                while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
                    self.bump();
                }
                let raw = self.s.get(start..self.i)?;
                JVal::Num(raw.parse::<serde_json::Number>().ok()?)
            }
        };
        Some(Node { pos, val })
    }
}
