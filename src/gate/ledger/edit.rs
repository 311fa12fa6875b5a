//! What the patch did to the ledger file: the ledger as the patch found it and as it
//! leaves it, read from the patch's own diff — never the base branch's tip against the
//! head, which would count a renewal landed on the base after the branch was cut (or
//! the other ledger of a branch the pull request was retargeted to) as the patch's edit.
//!
//! The side the patch found is rebuilt from the diff's hunks of the ledger file, taken
//! back out of the head's ledger, rather than read at the merge base: the diff is the
//! patch as judged on both faces (`git diff REV...HEAD`, the pull request's diff, a merge
//! group's compare), so nothing else needs to be fetched or to agree with it — no
//! `git merge-base`, no compare call, no race between a merge base and a diff read at
//! different moments; and `flakegate check --diff` with `--ledger`, which knows no head,
//! gets the same answer by applying the hunks forward.

use super::Ledger;
use crate::gate::patch::{FileChange, FileStatus, Patch};

/// Both sides of the patch's own edit of the ledger file: the ledger as the patch found
/// it (the merge base's, rebuilt from the diff) and as the patch leaves it. The ledger
/// the gate obeys is neither: it is the base's, as the base has it now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerEdit {
    pub before: Ledger,
    pub after: Ledger,
}

/// The ledger file's text on each side of the patch; `None`: no file on that side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerSides {
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What a face knows of the ledger file besides the diff.
#[derive(Debug, Clone, Copy, Default)]
pub struct LedgerTexts<'a> {
    /// The ledger at the head: `None` when the face does not know the head's files,
    /// `Some(None)` when the head has no ledger file.
    pub head: Option<Option<&'a str>>,
    /// Without the head: the ledger the command was given, which the diff may apply to
    /// (the side it found) or have come from (the side it leaves).
    pub given: Option<&'a str>,
}

/// The two sides of the patch's edit of the ledger file at `path`: `Ok(None)` when the
/// patch does not touch it, `Err` (one sentence) when it does and its edit cannot be
/// read — a ledger edit is never passed over in silence.
pub fn ledger_sides(patch: &Patch, path: &str, texts: LedgerTexts<'_>) -> Result<Option<LedgerSides>, String> {
    let path = path.trim_start_matches("./");
    let Some(f) = patch
        .files
        .iter()
        .find(|f| f.path == path || f.old_path.as_deref() == Some(path))
    else {
        return Ok(None);
    };
    let cannot = |why: String| format!("the patch edits the ledger {path}, but {why}, so its edits cannot be judged");
    if f.path != path {
        return Err(cannot(format!("moves it to {}", f.path)));
    }
    // Where the patch adds the file (or moves or copies another onto its path), it found no
    // ledger there; where it deletes it, it leaves none. Such a file's diff shows it whole.
    let found_none = matches!(f.status, FileStatus::Added | FileStatus::Renamed | FileStatus::Copied);
    let whole =
        |side: Result<String, String>| side.map_err(|e| cannot(format!("its diff does not show it whole ({e})")));
    match (f.status, texts.head) {
        (FileStatus::Deleted, _) => Ok(Some(LedgerSides {
            before: Some(whole(f.old_side(""))?),
            after: None,
        })),
        (_, Some(Some(head))) => Ok(Some(LedgerSides {
            before: if found_none {
                None
            } else {
                Some(f.old_side(head).map_err(|e| {
                    cannot(format!(
                        "the diff's hunks of it do not fit the ledger at the head ({e})"
                    ))
                })?)
            },
            after: Some(head.to_owned()),
        })),
        (_, Some(None)) => Err(cannot("the head has no such file".into())),
        (FileStatus::Added, None) => Ok(Some(LedgerSides {
            before: None,
            after: Some(whole(f.new_side(""))?),
        })),
        (_, None) => without_head(f, texts.given, found_none).map(Some).map_err(cannot),
    }
}

/// The command line without `--base`: the hunks applied to the ledger it was given (the
/// side the patch found), else taken out of it (it is the side the patch leaves).
fn without_head(f: &FileChange, given: Option<&str>, found_none: bool) -> Result<LedgerSides, String> {
    let Some(given) = given else {
        return Err(
            "neither the head's ledger (--base REV) nor the ledger the diff was made against (--ledger FILE) was given"
                .into(),
        );
    };
    if !found_none {
        if let Ok(after) = f.new_side(given) {
            return Ok(LedgerSides {
                before: Some(given.to_owned()),
                after: Some(after),
            });
        }
    }
    match f.old_side(given) {
        Ok(before) => Ok(LedgerSides {
            before: (!found_none).then_some(before),
            after: Some(given.to_owned()),
        }),
        Err(e) => Err(format!(
            "the diff's hunks of it fit neither side of the ledger given ({e})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::patch::parse_unified;

    const PATH: &str = ".github/flake-ledger.json";

    fn ledger(entries: &[(&str, &str)]) -> String {
        let items: Vec<String> = entries
            .iter()
            .map(|(t, exp)| {
                format!(
                    "    {{\n      \"test\": \"{t}\",\n      \"owner\": \"@o\",\n      \"expires\": \"{exp}\"\n    }}"
                )
            })
            .collect();
        format!("{{\n  \"frozen\": [\n{}\n  ]\n}}\n", items.join(",\n"))
    }

    /// A one-hunk diff of two texts of the ledger: the common head and tail as context, the
    /// middle removed and added (what `git diff -U<large>` gives for a single edit).
    fn diff(old: Option<&str>, new: Option<&str>) -> String {
        let (o, n): (Vec<&str>, Vec<&str>) = (old.unwrap_or("").lines().collect(), new.unwrap_or("").lines().collect());
        let pre = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
        let post = o[pre..]
            .iter()
            .rev()
            .zip(n[pre..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let mut hunk = String::new();
        for l in &o[..pre] {
            hunk.push_str(&format!(" {l}\n"));
        }
        for l in &o[pre..o.len() - post] {
            hunk.push_str(&format!("-{l}\n"));
        }
        for l in &n[pre..n.len() - post] {
            hunk.push_str(&format!("+{l}\n"));
        }
        for l in &o[o.len() - post..] {
            hunk.push_str(&format!(" {l}\n"));
        }
        let range = |len: usize| {
            if len == 0 {
                "0,0".to_string()
            } else {
                format!("1,{len}")
            }
        };
        let (mode, from, to) = match (old, new) {
            (None, _) => ("new file mode 100644\n", "/dev/null".to_string(), format!("b/{PATH}")),
            (_, None) => (
                "deleted file mode 100644\n",
                format!("a/{PATH}"),
                "/dev/null".to_string(),
            ),
            _ => ("", format!("a/{PATH}"), format!("b/{PATH}")),
        };
        format!(
            "diff --git a/{PATH} b/{PATH}\n{mode}--- {from}\n+++ {to}\n@@ -{} +{} @@\n{hunk}",
            range(o.len()),
            range(n.len())
        )
    }

    fn sides(d: &str, texts: LedgerTexts<'_>) -> Result<Option<LedgerSides>, String> {
        ledger_sides(&parse_unified("d", d).unwrap(), PATH, texts)
    }

    #[test]
    fn the_patch_found_its_merge_base_not_the_base_tip() {
        let found = ledger(&[("t.py::a", "2026-12-01"), ("t.py::b", "2026-12-01")]);
        let leaves = ledger(&[
            ("t.py::a", "2026-12-01"),
            ("t.py::b", "2026-12-01"),
            ("t.py::c", "2026-12-24"),
        ]);
        let d = diff(Some(&found), Some(&leaves));
        let head = Some(Some(leaves.as_str()));
        let got = sides(&d, LedgerTexts { head, given: None }).unwrap().unwrap();
        assert_eq!(got.before.as_deref(), Some(found.as_str()));
        assert_eq!(got.after.as_deref(), Some(leaves.as_str()));
        // The command line without a head: the hunks applied to the ledger it found, or taken
        // out of the one it leaves.
        for given in [&found, &leaves] {
            let got = sides(
                &d,
                LedgerTexts {
                    head: None,
                    given: Some(given),
                },
            )
            .unwrap()
            .unwrap();
            assert_eq!(
                (got.before.as_deref(), got.after.as_deref()),
                (Some(found.as_str()), Some(leaves.as_str()))
            );
        }
    }

    #[test]
    fn untouched_added_and_deleted() {
        let l = ledger(&[("t.py::a", "2026-12-01")]);
        let other = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(sides(other, LedgerTexts::default()), Ok(None));
        let added = diff(None, Some(&l));
        for texts in [
            LedgerTexts::default(),
            LedgerTexts {
                head: Some(Some(&l)),
                given: None,
            },
        ] {
            let got = sides(&added, texts).unwrap().unwrap();
            assert_eq!((got.before, got.after.as_deref()), (None, Some(l.as_str())));
        }
        let deleted = diff(Some(&l), None);
        for texts in [
            LedgerTexts::default(),
            LedgerTexts {
                head: Some(None),
                given: None,
            },
        ] {
            let got = sides(&deleted, texts).unwrap().unwrap();
            assert_eq!((got.before.as_deref(), got.after), (Some(l.as_str()), None));
        }
    }

    #[test]
    fn an_edit_that_cannot_be_read_says_so() {
        let found = ledger(&[("t.py::a", "2026-12-01"), ("t.py::b", "2026-12-01")]);
        let leaves = ledger(&[("t.py::a", "2027-03-01"), ("t.py::b", "2026-12-01")]);
        let d = diff(Some(&found), Some(&leaves));
        let e = sides(&d, LedgerTexts::default()).unwrap_err();
        assert!(
            e.starts_with("the patch edits the ledger .github/flake-ledger.json"),
            "{e}"
        );
        assert!(e.contains("--base REV") && e.contains("cannot be judged"), "{e}");
        // A head the hunks do not fit (the diff is of another head).
        let other = ledger(&[("t.py::z", "2026-12-01")]);
        let e = sides(
            &d,
            LedgerTexts {
                head: Some(Some(&other)),
                given: None,
            },
        )
        .unwrap_err();
        assert!(e.contains("do not fit the ledger at the head"), "{e}");
        let e = sides(
            &d,
            LedgerTexts {
                head: None,
                given: Some(&other),
            },
        )
        .unwrap_err();
        assert!(e.contains("fit neither side"), "{e}");
        // GitHub's listing without the file's lines.
        let mut p = parse_unified("d", &d).unwrap();
        p.files[0].lines_known = false;
        let e = ledger_sides(
            &p,
            PATH,
            LedgerTexts {
                head: Some(Some(&leaves)),
                given: None,
            },
        )
        .unwrap_err();
        assert!(e.contains("does not show its lines"), "{e}");
    }
}
