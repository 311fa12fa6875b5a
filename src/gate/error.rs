//! Where an input is bad and why: [`InputError`] with its [`Location`], the one
//! error every reader in `gate` returns, so the command line and the App report
//! bad input alike (file, line, column, what was expected).

/// Where in an input file something is: the file's display name, and a
/// 1-based line and column where the format has them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
}

impl Location {
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            line: None,
            column: None,
        }
    }
    pub fn at(file: impl Into<String>, line: usize, column: Option<usize>) -> Self {
        Location {
            file: file.into(),
            line: Some(line),
            column,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        Ok(())
    }
}

/// A bad input: which file, where, and what was expected. Every reader in
/// `gate` returns this, so the command line and the App report it alike.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{location}: {message}")]
pub struct InputError {
    pub location: Location,
    pub message: String,
}

impl InputError {
    pub fn new(location: Location, message: impl Into<String>) -> Self {
        InputError {
            location,
            message: message.into(),
        }
    }

    /// Wrap a serde_json error, keeping its line and column.
    pub fn json(file: &str, err: &serde_json::Error) -> Self {
        let location = if err.line() > 0 {
            Location::at(file, err.line(), Some(err.column()))
        } else {
            Location::file(file)
        };
        // serde_json appends " at line X column Y"; we carry that in Location.
        let msg = err.to_string();
        let msg = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        InputError::new(location, msg)
    }
}

/// Bytes → UTF-8 text, or an error naming the line and column of the first bad byte.
pub fn text_of(name: &str, bytes: &[u8]) -> Result<String, InputError> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let col = good.len() - good.iter().rposition(|&b| b == b'\n').map(|i| i + 1).unwrap_or(0) + 1;
            Err(InputError::new(Location::at(name, line, Some(col)), "not UTF-8 text"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_of_names_the_first_bad_byte() {
        assert_eq!(text_of("a", b"one\ntwo").unwrap(), "one\ntwo");
        let e = text_of("a.diff", b"one\nt\xC3\xA9\xFFx").unwrap_err();
        // The column counts bytes, as the command line has always reported it.
        assert_eq!(e.location, Location::at("a.diff", 2, Some(4)));
        assert_eq!(e.to_string(), "a.diff:2:4: not UTF-8 text");
    }
}
