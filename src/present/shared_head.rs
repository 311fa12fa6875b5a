//! The table a check run shows when several open pull requests share its head: each pull
//! request's base and verdict, in the summary of the worst (after its headline and actions).

use super::words::truncate;
use crate::gate::inert;
use crate::github::{CheckRunFields, OUTPUT_MAX_BYTES};

/// One pull request's line in the table of a head several open pull requests share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedHeadLine<'a> {
    pub pr: u64,
    /// The base branch (a ref name: may hold backticks or `<`, never newlines).
    pub base_ref: &'a str,
    pub base_sha: &'a str,
    pub verdict: &'a str,
}

/// The check run of a head that several open pull requests share: `decisive`'s fields (the
/// worst verdict among them, which the check run shows), with every pull request's verdict
/// and base listed first. One pull request: `fields` unchanged.
pub fn shared_head(mut fields: CheckRunFields, lines: &[SharedHeadLine<'_>], decisive: u64) -> CheckRunFields {
    if lines.len() <= 1 {
        return fields;
    }
    let mut table = format!(
        "**{} open pull requests share this head commit.** The check shows the worst of their verdicts, that of \
         #{decisive}; each pull request's comment is about that pull request only.\n\n\
         | pull request | base | verdict |\n| --- | --- | --- |\n",
        lines.len()
    );
    for l in lines {
        let short: String = l.base_sha.chars().take(12).collect();
        table.push_str(&format!(
            "| #{} | {} {} | {} |\n",
            l.pr,
            inert::code_cell(l.base_ref),
            inert::code_cell(&short),
            inert::code_cell(l.verdict)
        ));
    }
    table.push('\n');
    if let Some(out) = &mut fields.output {
        // After the headline and who must act (which lead every summary), before the reasons.
        let joined = match out.summary.find("\n### Reasons") {
            Some(at) => format!("{}\n{table}{}", &out.summary[..at], &out.summary[at..]),
            None => format!("{table}{}", out.summary),
        };
        out.summary = truncate(&joined, OUTPUT_MAX_BYTES);
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::check_run::inconclusive;

    #[test]
    fn a_shared_head_lists_every_pull_request_with_inert_base_names() {
        let mut f = inconclusive("abc", "why");
        let hostile = "x``y|z<img src=a>\n## PASS";
        let lines = [
            SharedHeadLine {
                pr: 3,
                base_ref: "main",
                base_sha: "0123456789abcdef",
                verdict: "INCONCLUSIVE",
            },
            SharedHeadLine {
                pr: 4,
                base_ref: hostile,
                base_sha: "fedcba9876543210",
                verdict: "PASS",
            },
        ];
        let title = f.output.as_ref().unwrap().title.clone();
        f = shared_head(f, &lines, 3);
        let out = f.output.unwrap();
        assert_eq!(out.title, title, "the title is the decisive verdict's");
        let table: Vec<&str> = out.summary.lines().filter(|l| l.starts_with("| #")).collect();
        assert_eq!(table.len(), 2, "{}", out.summary);
        assert_eq!(table[0], "| #3 | `main` `0123456789ab` | `INCONCLUSIVE` |");
        // One line, the backticks fenced by a longer run, the pipe escaped.
        assert_eq!(
            table[1],
            "| #4 | ```x``y\\|z<img src=a>⏎## PASS``` `fedcba987654` | `PASS` |"
        );
        assert!(out.summary.contains("that of #3"));
        // One pull request: unchanged.
        let one = inconclusive("abc", "why");
        assert_eq!(shared_head(one.clone(), &lines[..1], 3), one);
    }
}
