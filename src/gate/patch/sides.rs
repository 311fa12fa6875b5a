//! A file's text on one side of the patch, rebuilt from its text on the other side and
//! the file's own hunks: what the patch itself did to a file, whatever else changed on
//! the branch it targets since it was cut.

use super::model::FileChange;

impl FileChange {
    /// The file as the patch found it (old side), from its text as the patch leaves it:
    /// the added lines taken out, the removed lines put back. `Err` says why the hunks do
    /// not fit `new_text` (another version of the file, or lines the diff does not show).
    pub fn old_side(&self, new_text: &str) -> Result<String, String> {
        self.readable()?;
        let added: Vec<(u32, &str)> = self.added.iter().map(|l| (l.line, l.text.as_str())).collect();
        let removed: Vec<(u32, &str)> = self.removed.iter().map(|l| (l.line, l.text.as_str())).collect();
        let context: Vec<(u32, u32, &str)> = self
            .context
            .iter()
            .map(|c| (c.line, c.old_line, c.text.as_str()))
            .collect();
        other_side(new_text, &added, &removed, &context, ("new", "old"))
    }

    /// The file as the patch leaves it (new side), from its text as the patch found it.
    pub fn new_side(&self, old_text: &str) -> Result<String, String> {
        self.readable()?;
        let added: Vec<(u32, &str)> = self.added.iter().map(|l| (l.line, l.text.as_str())).collect();
        let removed: Vec<(u32, &str)> = self.removed.iter().map(|l| (l.line, l.text.as_str())).collect();
        let context: Vec<(u32, u32, &str)> = self
            .context
            .iter()
            .map(|c| (c.old_line, c.line, c.text.as_str()))
            .collect();
        other_side(old_text, &removed, &added, &context, ("old", "new"))
    }

    fn readable(&self) -> Result<(), String> {
        if self.binary {
            Err("the diff shows it as binary".into())
        } else if !self.lines_known {
            Err("the diff does not show its lines".into())
        } else if let Some(why) = &self.unreadable {
            Err(why.clone())
        } else {
            Ok(())
        }
    }
}

/// `this` is one side's text; `gone` are the lines only this side has, `come` those only
/// the other side has, `context` the lines both have (this side's number, the other's).
/// Every line of `this` not in `gone` is unchanged, and the unchanged lines keep their
/// order, so the other side is them with `come` put in at its numbers.
fn other_side(
    this: &str,
    gone: &[(u32, &str)],
    come: &[(u32, &str)],
    context: &[(u32, u32, &str)],
    sides: (&str, &str),
) -> Result<String, String> {
    let lines: Vec<&str> = this.lines().collect();
    let same = |a: &str, b: &str| a.trim_end_matches('\r') == b.trim_end_matches('\r');
    let check = |n: u32, want: &str, side: &str, lines: &[&str]| -> Result<(), String> {
        match lines.get((n as usize).wrapping_sub(1)) {
            Some(got) if same(got, want) => Ok(()),
            Some(_) => Err(format!("its line {n} on the {side} side is not what the diff shows")),
            None => Err(format!("it has no line {n} on the {side} side")),
        }
    };
    for &(n, text) in gone {
        check(n, text, sides.0, &lines)?;
    }
    for &(n, _, text) in context {
        check(n, text, sides.0, &lines)?;
    }
    let gone_at: std::collections::BTreeSet<u32> = gone.iter().map(|(n, _)| *n).collect();
    let come_at: std::collections::BTreeMap<u32, &str> = come.iter().map(|(n, t)| (*n, *t)).collect();
    let mut kept = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone_at.contains(&(*i as u32 + 1)))
        .map(|(_, l)| *l);
    let len = lines.len() - gone_at.len() + come_at.len();
    let mut other: Vec<&str> = Vec::with_capacity(len);
    for n in 1..=len as u32 {
        match come_at.get(&n) {
            Some(t) => other.push(t),
            None => other.push(
                kept.next()
                    .ok_or_else(|| format!("the diff's line numbers do not fit its {} side", sides.0))?,
            ),
        }
    }
    if kept.next().is_some() || come_at.keys().any(|n| *n as usize > len) {
        return Err(format!("the diff's line numbers do not fit its {} side", sides.0));
    }
    for &(_, n, text) in context {
        check(n, text, sides.1, &other)?;
    }
    let mut out = other.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::gate::patch::parse_unified;

    const OLD: &str = "a\nb\nc\nd\ne\nf\ng\n";
    const NEW: &str = "a\nb\nC\nd\ne\nf\ng\nh\n";
    const DIFF: &str = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n@@ -7 +7,2 @@\n g\n+h\n";

    #[test]
    fn both_sides_from_either() {
        let p = parse_unified("d", DIFF).unwrap();
        let f = &p.files[0];
        assert_eq!(f.old_side(NEW).unwrap(), OLD);
        assert_eq!(f.new_side(OLD).unwrap(), NEW);
        // CRLF text is read, and rebuilt with `\n`.
        assert_eq!(f.old_side(&NEW.replace('\n', "\r\n")).unwrap(), OLD);
    }

    #[test]
    fn hunks_that_do_not_fit_are_refused() {
        let p = parse_unified("d", DIFF).unwrap();
        let f = &p.files[0];
        // The other side given where one side is expected.
        assert!(f.old_side(OLD).is_err());
        assert!(f.new_side(NEW).is_err());
        // A file edited elsewhere still fits as long as the hunks' lines are where they say.
        assert_eq!(f.old_side("a\nb\nC\nd\nE\nf\ng\nh\n").unwrap(), "a\nb\nc\nd\nE\nf\ng\n");
        // Shifted lines do not.
        let e = f.old_side("z\na\nb\nC\nd\ne\nf\ng\nh\n").unwrap_err();
        assert!(e.contains("line"), "{e}");
        assert!(f.old_side("").is_err());
    }

    #[test]
    fn a_new_or_deleted_file_is_all_in_the_diff() {
        let added = parse_unified(
            "d",
            "diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n",
        )
        .unwrap();
        assert_eq!(added.files[0].new_side("").unwrap(), "a\nb\n");
        assert_eq!(added.files[0].old_side("a\nb\n").unwrap(), "");
        let deleted = parse_unified(
            "d",
            "diff --git a/x b/x\ndeleted file mode 100644\n--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
        )
        .unwrap();
        assert_eq!(deleted.files[0].old_side("").unwrap(), "a\nb\n");
    }
}
