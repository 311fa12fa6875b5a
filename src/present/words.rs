//! Small pieces every output shares: how a witness's status reads, a name shown without
//! notifying anyone, line numbers as ranges, and text cut to GitHub's limits.

use crate::gate::report::WitnessStatus;

/// Compress line numbers into ranges: `3-5, 9`.
pub(super) fn line_ranges(lines: &[u32]) -> String {
    crate::gate::report::line_list(lines)
}

/// Places as `file:4-7, 9` (or `file` alone), one per file in order of first appearance, the
/// first `max` files; the columns are dropped.
pub(super) fn locations(locs: &[crate::gate::error::Location], max: usize) -> Vec<String> {
    let mut files: Vec<(&str, Vec<u32>, bool)> = Vec::new();
    for l in locs {
        let i = match files.iter().position(|(f, _, _)| *f == l.file) {
            Some(i) => i,
            None => {
                files.push((&l.file, Vec::new(), false));
                files.len() - 1
            }
        };
        match l.line {
            Some(n) => files[i].1.push(n as u32),
            None => files[i].2 = true,
        }
    }
    files
        .into_iter()
        .take(max)
        .map(|(f, mut lines, _)| {
            lines.sort_unstable();
            lines.dedup();
            if lines.is_empty() {
                f.to_string()
            } else {
                format!("{f}:{}", line_ranges(&lines))
            }
        })
        .collect()
}

/// Cut text to at most `limit` bytes on a line boundary, with a note saying so.
pub(super) fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    const NOTE: &str = "\n\n… cut here: the full report is longer than GitHub allows; run `flakegate check --format json` on the evidence for all of it.\n";
    let budget = limit.saturating_sub(NOTE.len());
    let mut cut = budget;
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind('\n').unwrap_or(cut);
    format!("{}{NOTE}", &text[..cut])
}

/// Cut `s` to at most `max` characters at a word, ending with `…` when cut (mid-word only when
/// one word is longer than that).
pub(super) fn cut_at_word(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let kept: String = s.chars().take(max.saturating_sub(1)).collect();
    let at = match kept.rfind(' ') {
        Some(i) if i > 0 => i,
        _ => return cut_chars(s, max),
    };
    format!("{}…", kept[..at].trim_end_matches([',', ';', ':', ' ']))
}

/// Cut `s` to at most `max` characters, ending with `…` when cut.
pub(super) fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

pub(super) fn status_word(s: WitnessStatus) -> &'static str {
    match s {
        WitnessStatus::Stable => "stable",
        WitnessStatus::Frozen => "frozen",
        WitnessStatus::Unstable => "unstable",
        WitnessStatus::FailingOnBase => "fails on base",
        WitnessStatus::Unjoined => "no head result under this id",
        WitnessStatus::HeadFlaky => "flaky on head",
    }
}

pub(super) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A name shown in the comment without notifying anyone: every `@` and `*` dropped (the
/// template shows it bold, as inert text).
pub(super) fn unmentioned(name: &str) -> String {
    let clean: String = name.chars().filter(|&c| c != '@' && c != '*').collect();
    clean.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(line_ranges(&[]), "");
        assert_eq!(line_ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }

    #[test]
    fn locations_are_compacted_per_file() {
        use crate::gate::error::Location;
        let at = |f: &str, l: Option<usize>| Location {
            file: f.into(),
            line: l,
            column: None,
        };
        let locs = [
            at("a.py", Some(5)),
            at("a.py", Some(4)),
            at("b.py", None),
            at("a.py", Some(6)),
            at("a.py", Some(7)),
            at("a.py", Some(9)),
        ];
        assert_eq!(locations(&locs, 5), ["a.py:4-7, 9", "b.py"]);
        assert_eq!(locations(&locs, 1), ["a.py:4-7, 9"]);
    }

    #[test]
    fn truncation_is_on_a_line_and_says_so() {
        let text = "é line\n".repeat(20_000);
        let cut = truncate(&text, crate::github::OUTPUT_MAX_BYTES);
        assert!(cut.len() <= crate::github::OUTPUT_MAX_BYTES);
        assert!(cut.contains("cut here"));
        assert_eq!(truncate("short", 100), "short");
    }
}
