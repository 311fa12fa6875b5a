//! Freezes that have expired, or expire soon, on a repository's default branch: what the
//! App's expired-freezes issue lists, computed without any I/O (`today` is passed in).
//!
//! An entry is listed when it is past its `expires` date or expires within the config's
//! `policy.expiry_warning_days`. Each owner is mapped through the config's `owners` to a
//! GitHub handle; every handle is mentioned once however many entries it owns, and a name
//! that is not a handle is never mentioned.

use crate::gate::config::{handle_for, is_handle, Config};
use crate::gate::ledger::Ledger;
use chrono::NaiveDate;
use serde::Serialize;
use std::collections::BTreeSet;

/// One listed ledger entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpiringFreeze {
    /// The node id (or prefix) as the ledger names it.
    pub test: String,
    /// The owner as the ledger names it.
    pub owner: String,
    /// The handle to mention for the owner, when it is or maps to one.
    pub handle: Option<String>,
    pub expires: NaiveDate,
    /// Past its expiry date (on that day it still holds).
    pub expired: bool,
    /// Days since `expires` when expired, else 0.
    pub days_past: i64,
    /// Days until `expires` when not expired (0: it expires today), else 0.
    pub days_left: i64,
    /// 1-based line of the entry in the ledger.
    pub line: usize,
}

/// What the expired-freezes issue says about one repository on one day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpiryNotice {
    /// Expired entries first (longest past first), then those expiring soonest; ties by test.
    pub entries: Vec<ExpiringFreeze>,
    /// Every owner handle once, sorted case-insensitively.
    pub mentions: Vec<String>,
    /// The config's `expiry_warning_days`.
    pub warning_days: u32,
}

impl ExpiryNotice {
    /// Nothing expired and nothing expiring: the issue is closed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What decides whether the issue must be edited: the entries, their owners and whether
    /// each has expired — not the day counters, which change daily while the list does not.
    pub fn change_key(&self) -> String {
        let mut key = format!("warning_days={}\n", self.warning_days);
        for e in &self.entries {
            key.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\n",
                e.test,
                e.owner,
                e.handle.as_deref().unwrap_or(""),
                e.expires,
                if e.expired { "expired" } else { "expiring" }
            ));
        }
        key
    }
}

/// The entries of `ledger` expired on `today` or expiring within the config's warning days.
pub fn expiry_notice(ledger: &Ledger, config: &Config, today: NaiveDate) -> ExpiryNotice {
    let warning_days = config.policy.expiry_warning_days;
    let mut entries: Vec<ExpiringFreeze> = ledger
        .expiring(today, warning_days)
        .into_iter()
        .map(|(e, days)| {
            let expired = e.is_expired(today);
            ExpiringFreeze {
                test: e.test.clone(),
                owner: e.owner.clone(),
                handle: handle_for(&e.owner, config).filter(|h| is_handle(h)),
                expires: e.expires,
                expired,
                days_past: if expired { -days } else { 0 },
                days_left: if expired { 0 } else { days },
                line: e.line,
            }
        })
        .collect();
    entries.sort_by(|a, b| {
        b.expired
            .cmp(&a.expired)
            .then(a.expires.cmp(&b.expires))
            .then_with(|| a.test.cmp(&b.test))
    });
    let mut seen = BTreeSet::new();
    let mut mentions: Vec<String> = entries
        .iter()
        .filter_map(|e| e.handle.clone())
        .filter(|h| seen.insert(h.to_lowercase()))
        .collect();
    mentions.sort_by_key(|h| h.to_lowercase());
    ExpiryNotice {
        entries,
        mentions,
        warning_days,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::config::parse_config;
    use crate::gate::ledger::parse_ledger;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn entry(test: &str, owner: &str, expires: &str) -> String {
        format!(r#"{{"test": "{test}", "owner": "{owner}", "expires": "{expires}"}}"#)
    }

    fn ledger(entries: &[String]) -> Ledger {
        parse_ledger(
            "ledger.json",
            &format!(r#"{{"frozen": [{}]}}"#, entries.join(",")),
            None,
        )
        .unwrap()
    }

    #[test]
    fn expired_and_expiring_entries_are_listed_in_order() {
        let config = parse_config("c.yml", "owners:\n  billing-oncall: '@acme/billing'\n").unwrap();
        let l = ledger(&[
            entry("tests/a.py::test_later", "@alice", "2026-12-30"),
            entry("tests/a.py::test_soon", "billing-oncall", "2026-11-25"),
            entry("tests/a.py::test_today", "@alice", "2026-11-20"),
            entry("tests/a.py::test_old", "@Alice", "2026-11-01"),
            entry("tests/a.py::test_past", "Jane Doe", "2026-11-19"),
        ]);
        let n = expiry_notice(&l, &config, day("2026-11-20"));
        let got: Vec<(&str, bool, i64, i64)> = n
            .entries
            .iter()
            .map(|e| (e.test.as_str(), e.expired, e.days_past, e.days_left))
            .collect();
        assert_eq!(
            got,
            [
                ("tests/a.py::test_old", true, 19, 0),
                ("tests/a.py::test_past", true, 1, 0),
                ("tests/a.py::test_today", false, 0, 0),
                ("tests/a.py::test_soon", false, 0, 5),
            ]
        );
        // Each handle once (GitHub handles are case-insensitive); "Jane Doe" is no handle.
        assert_eq!(n.mentions, ["@acme/billing", "@Alice"]);
        assert_eq!(n.entries[1].handle, None);
        assert_eq!(n.entries[3].handle.as_deref(), Some("@acme/billing"));
    }

    #[test]
    fn the_warning_window_comes_from_the_config() {
        let l = ledger(&[entry("tests/a.py::test_x", "@alice", "2026-11-25")]);
        let none = parse_config("c.yml", "policy:\n  expiry_warning_days: 3\n").unwrap();
        assert!(expiry_notice(&l, &none, day("2026-11-20")).is_empty());
        let default = Config::default();
        let n = expiry_notice(&l, &default, day("2026-11-20"));
        assert_eq!(n.entries.len(), 1);
        assert_eq!(n.warning_days, 7);
        assert!(expiry_notice(&Ledger::default(), &default, day("2026-11-20")).is_empty());
    }

    #[test]
    fn the_change_key_ignores_the_day_counters_but_not_the_list() {
        let config = Config::default();
        let l = ledger(&[entry("tests/a.py::test_x", "@alice", "2026-11-10")]);
        let a = expiry_notice(&l, &config, day("2026-11-20"));
        let b = expiry_notice(&l, &config, day("2026-11-21"));
        assert_ne!(a, b);
        assert_eq!(a.change_key(), b.change_key());
        let renewed = ledger(&[entry("tests/a.py::test_x", "@alice", "2026-11-24")]);
        let c = expiry_notice(&renewed, &config, day("2026-11-20"));
        assert_ne!(a.change_key(), c.change_key());
        let other_owner = ledger(&[entry("tests/a.py::test_x", "@bob", "2026-11-10")]);
        assert_ne!(
            a.change_key(),
            expiry_notice(&other_owner, &config, day("2026-11-20")).change_key()
        );
    }
}
