//! `--witnesses-of`: the tests whose coverage context executed a patch's
//! changed lines (and, for a pure deletion, the surviving lines around it),
//! so the K-fold cost is paid only on the tests that can witness the patch.

use crate::gate::coverage::Coverage;
use crate::gate::nodeid::TestId;
use crate::gate::patch::Patch;
use std::collections::BTreeSet;

/// Every test that executed a changed line, in any phase.
pub fn witnesses(patch: &Patch, coverage: &Coverage) -> BTreeSet<TestId> {
    let mut out = BTreeSet::new();
    for f in &patch.files {
        let Some(fc) = coverage.files.get(&f.path) else {
            continue;
        };
        let mut lines: BTreeSet<u32> = f.added.iter().map(|l| l.line).collect();
        for d in &f.deletions {
            lines.insert(d.after);
            lines.insert(d.after + 1);
        }
        for line in lines {
            if let Some(ws) = fc.witnesses.get(&line) {
                out.extend(ws.keys().cloned());
            }
        }
    }
    out
}
