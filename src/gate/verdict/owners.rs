//! Who cannot see a patch's effect: the blind owners the decision names, and the
//! note about unstable witnesses nobody owns.

use super::{blind_owner, push_action, short_list, Decision};
use crate::gate::probe::Stability;
use crate::gate::report::{line_list, FileEvidence, WitnessStatus};

impl Decision<'_> {
    /// Who cannot see this patch's effect (besides the owners of expired
    /// entries, row 4): the owners of frozen or unstable witnesses, and through
    /// CODEOWNERS the owners of changed lines no stable test witnesses. An
    /// unstable witness nobody owns is a note.
    pub(super) fn blind_owners(&mut self) {
        let (input, ev, ledger) = (self.input, self.ev, &self.ledger);
        let blind = &mut self.blind;
        for (test, status) in &self.att.union {
            match status {
                WitnessStatus::Frozen => {
                    for e in ledger.entries_for(test) {
                        let bo = blind_owner(blind, &e.owner, input.config);
                        if !bo.tests.contains(test) {
                            bo.tests.push(test.clone());
                        }
                        let by = if e.test == test.as_str() {
                            String::new()
                        } else {
                            format!(" (by the entry {})", e.test)
                        };
                        bo.why.push(format!("{test} is frozen{by} and executes changed lines"));
                        let broken = ev
                            .probe
                            .as_ref()
                            .is_some_and(|p| p.stability(test) == Some(Stability::BrokenOnBase));
                        push_action(bo, if broken { "fix" } else { "re-probe" });
                    }
                }
                WitnessStatus::Unstable => {
                    if ledger.is_frozen(test) {
                        for e in ledger.entries_for(test) {
                            let bo = blind_owner(blind, &e.owner, input.config);
                            if !bo.tests.contains(test) {
                                bo.tests.push(test.clone());
                            }
                            bo.why
                                .push(format!("{test} is unstable on base and executes changed lines"));
                            push_action(bo, "fix");
                        }
                    } else {
                        self.unowned_unstable.push(test.clone());
                    }
                }
                _ => {}
            }
        }
        // CODEOWNERS: the owners of changed lines that no stable test witnesses.
        if let Some(co) = &ev.codeowners {
            for f in self.att.files.iter().filter(|f| f.is_blind()) {
                let owners = co.owners_of(&f.path);
                if owners.is_empty() {
                    continue;
                }
                let what = if f.evidence == FileEvidence::Blind {
                    format!(
                        "{} is blind ({})",
                        f.path,
                        f.blind_reason.as_deref().unwrap_or("no stable witness")
                    )
                } else {
                    let mut lines: Vec<u32> = f
                        .uncovered_lines
                        .iter()
                        .chain(&f.frozen_only_lines)
                        .chain(&f.excluded_lines)
                        .copied()
                        .collect();
                    lines.sort();
                    format!("{} lines {} have no stable witness", f.path, line_list(&lines))
                };
                for owner in owners {
                    let bo = blind_owner(blind, owner, input.config);
                    bo.why.push(format!("CODEOWNERS: {what}"));
                    push_action(bo, "add-test");
                }
            }
        }
        if !self.unowned_unstable.is_empty() {
            self.notes.push(format!(
                "unstable on base but not in the ledger, so nobody owns them: {} (freeze them with an owner, or fix them)",
                short_list(&self.unowned_unstable, 5)
            ));
        }
    }
}
