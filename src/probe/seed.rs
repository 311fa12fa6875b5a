//! The seed every run of one probe shares, and the replay line that
//! reproduces a failure with it.

use chrono::{Datelike, NaiveDate};
use sha2::Digest;

/// How the probe's seed is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedChoice {
    /// `--seed N`.
    Fixed(u32),
    /// `--seed-rotation daily`: one seed per UTC date.
    Daily,
    /// `--seed-rotation weekly`: one seed per ISO week.
    Weekly,
    /// Neither flag: a fresh seed for this probe (chosen by the caller), recorded.
    Fresh(u32),
}

/// The seed and a description of where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    pub value: u32,
    pub source: String,
}

/// Resolve the choice for `today`. Rotated seeds are a hash of the date (or
/// ISO week) label, so every machine probing on the same day uses the same seed.
pub fn resolve(choice: SeedChoice, today: NaiveDate) -> Seed {
    match choice {
        SeedChoice::Fixed(v) => Seed {
            value: v,
            source: "--seed".into(),
        },
        SeedChoice::Fresh(v) => Seed {
            value: v,
            source: "fresh for this probe (fix it with --seed)".into(),
        },
        SeedChoice::Daily => {
            let label = today.format("%Y-%m-%d").to_string();
            Seed {
                value: hash_label("daily", &label),
                source: format!("daily rotation ({label})"),
            }
        }
        SeedChoice::Weekly => {
            let w = today.iso_week();
            let label = format!("{}-W{:02}", w.year(), w.week());
            Seed {
                value: hash_label("weekly", &label),
                source: format!("weekly rotation ({label})"),
            }
        }
    }
}

fn hash_label(kind: &str, label: &str) -> u32 {
    let h = sha2::Sha256::digest(format!("flakegate-seed {kind} {label}").as_bytes());
    u32::from_be_bytes([h[0], h[1], h[2], h[3]])
}

/// Quote a word for a POSIX shell: bare when it is plainly safe, else in single quotes.
fn sh_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '=' | '@' | '%' | '+' | ',')
        });
    if safe {
        s.to_string()
    } else {
        always_quote(s)
    }
}

/// Single-quote a word whatever it holds (node ids are always quoted in replay lines).
fn always_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Is this command pytest (`pytest`, `py.test`, `python -m pytest`)?
fn is_pytest(command: &[String]) -> bool {
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    command.iter().enumerate().any(|(i, w)| {
        let b = base(w);
        b == "pytest" || b == "py.test" || (w == "pytest" && i > 0 && command[i - 1] == "-m")
    })
}

/// The command without its results arguments: words holding `{results}` are
/// dropped, and so is a bare option directly before one (`--junitxml {results}`).
fn without_results_args(command: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in command {
        if w.contains(crate::probe::exec::PLACEHOLDER) {
            // A standalone `{results}` is the value of the bare option before it.
            let standalone = !w.starts_with('-');
            if standalone && out.len() > 1 && out.last().is_some_and(|p| p.starts_with('-') && !p.contains('=')) {
                out.pop();
            }
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// `replay: FLAKEGATE_SEED=… PYTHONHASHSEED=… CMD 'nodeid'`. For pytest the
/// node id is appended; for another command it is named in a trailing comment.
/// Without a known command (a probe read from files) the command is `pytest`.
pub fn replay_line(seed: Option<u32>, command: Option<&[String]>, test: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    if let Some(s) = seed {
        words.push(format!("FLAKEGATE_SEED={s}"));
        words.push(format!("PYTHONHASHSEED={s}"));
    }
    let cmd = match command {
        Some(c) if !c.is_empty() => without_results_args(c),
        _ => vec!["pytest".to_string()],
    };
    let pytest = is_pytest(&cmd);
    words.extend(cmd.iter().map(|w| sh_quote(w)));
    if pytest {
        words.push(always_quote(test));
    } else {
        words.push(format!("# {test}"));
    }
    format!("replay: {}", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn rotation_is_stable_within_its_period() {
        let a = resolve(SeedChoice::Daily, d("2026-11-20"));
        assert_eq!(a, resolve(SeedChoice::Daily, d("2026-11-20")));
        assert_ne!(a.value, resolve(SeedChoice::Daily, d("2026-11-21")).value);
        assert_eq!(a.source, "daily rotation (2026-11-20)");
        // 2026-11-16 is a Monday, 2026-11-22 the Sunday of the same ISO week.
        let w = resolve(SeedChoice::Weekly, d("2026-11-16"));
        assert_eq!(w.value, resolve(SeedChoice::Weekly, d("2026-11-22")).value);
        assert_ne!(w.value, resolve(SeedChoice::Weekly, d("2026-11-23")).value);
        assert_eq!(w.source, "weekly rotation (2026-W47)");
        assert_eq!(resolve(SeedChoice::Fixed(7), d("2026-11-20")).value, 7);
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("python"), "python");
        assert_eq!(sh_quote("-p"), "-p");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(always_quote("t.py::test_p[a|b]"), "'t.py::test_p[a|b]'");
    }

    #[test]
    fn replay_lines() {
        let cmd: Vec<String> = [
            "python",
            "-m",
            "pytest",
            "-q",
            "--report-log={results}",
            "--junitxml",
            "{results}",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            replay_line(Some(7), Some(&cmd), "tests/a.py::test_x[1 2]"),
            "replay: FLAKEGATE_SEED=7 PYTHONHASHSEED=7 python -m pytest -q 'tests/a.py::test_x[1 2]'"
        );
        let other: Vec<String> = ["./run.sh", "{results}"].map(String::from).into();
        assert_eq!(
            replay_line(Some(1), Some(&other), "a.py::t"),
            "replay: FLAKEGATE_SEED=1 PYTHONHASHSEED=1 ./run.sh # a.py::t"
        );
        assert_eq!(replay_line(None, None, "a.py::t"), "replay: pytest 'a.py::t'");
        assert!(is_pytest(&["/venv/bin/pytest".to_string()]));
        assert!(!is_pytest(&["python".to_string(), "run_pytest.py".to_string()]));
    }
}
