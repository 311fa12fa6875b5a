//! The sticky comment's body on real fixture cases: snapshots, who is mentioned and who is
//! not, when there is nothing to say, and when an edit is due.

use super::*;
use crate::gate::report::BlindOwner;
use crate::gate::TestId;
use crate::present::test_cases::{case, case_with, fixtures, report_of};

fn snapshot_comment(name: &str, body: &str) {
    insta::with_settings!({snapshot_path => "../../../tests/snapshots", prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(name.to_string(), body);
    });
}

#[test]
fn comment_snapshots() {
    for name in ["some_frozen", "frozen_only", "expired"] {
        let body = comment_body(&case(name), &Config::default(), None, None).expect(name);
        assert!(body.starts_with(COMMENT_MARKER), "{name}");
        snapshot_comment(&format!("comment_{name}"), &body);
    }
}

/// A patch that weakens its tests or changes what produced its evidence gets a comment even
/// when no owner is blind: the agent author must undo it, or a reviewer accept it.
#[test]
fn the_comment_names_what_the_patch_did_to_its_own_evidence() {
    for name in ["adv_sleep", "adv_workflow_edited"] {
        let r = report_of(&fixtures().join("corpus").join(name), &Config::default());
        assert!(r.blind_owners.is_empty(), "{name}");
        let body = comment_body(&r, &Config::default(), None, None).expect(name);
        snapshot_comment(&format!("comment_{name}"), &body);
    }
    let body = comment_body(
        &report_of(&fixtures().join("corpus/adv_sleep"), &Config::default()),
        &Config::default(),
        None,
        None,
    )
    .unwrap();
    assert!(body.contains("`weakened_test`](https://"), "{body}");
    assert!(body.contains(") at `tests/test_pricing.py:13`"), "{body}");
    assert!(body.contains("does not block merge"), "{body}");
    // An honest patch: nothing to say, no comment.
    let r = report_of(&fixtures().join("corpus/honest_bug_fix"), &Config::default());
    assert_eq!(r.verdict, Verdict::Pass);
    assert!(comment_body(&r, &Config::default(), None, None).is_none());
}

#[test]
fn a_name_that_is_not_a_handle_is_never_mentioned() {
    let always = Config {
        mentions: crate::gate::config::Mentions::Always,
        ..Config::default()
    };
    let r = case("some_frozen");
    let body = comment_body(&r, &always, None, None).unwrap();
    assert!(body.contains("@shop/payments"), "{body}");
    assert!(body.contains("**qa-oncall**"), "{body}");
    assert!(!body.contains("@qa-oncall"), "{body}");

    // A handle the report got wrong, or an owner that looks like a handle
    // but was not accepted as one, is shown without its `@`.
    let mut r = r;
    r.blind_owners = vec![BlindOwner {
        owner: "@not a handle".into(),
        handle: Some("@not a handle".into()),
        tests: vec![TestId::new("tests/t.py::t")],
        why: vec!["w".into()],
        actions: vec!["fix".into()],
    }];
    let body = comment_body(&r, &always, None, None).unwrap();
    assert!(!body.contains("@not"), "{body}");
    assert!(body.contains("**not a handle**"), "{body}");

    // A mapped owner is mentioned by its handle.
    let mut config = always.clone();
    config.owners.insert("qa-oncall".into(), "@acme/qa".into());
    let r = case_with("some_frozen", &config);
    let body = comment_body(&r, &config, None, None).unwrap();
    assert!(body.contains("@acme/qa"), "{body}");
}

#[test]
fn the_comment_says_the_blind_spot_is_gone_after_a_pass() {
    let r = case("all_stable");
    assert_eq!(r.verdict, Verdict::Pass);
    assert!(r.blind_owners.is_empty() && r.expired.is_empty());
    assert_eq!(comment_body(&r, &Config::default(), None, None), None);
    let previous = comment_body(&case("some_frozen"), &Config::default(), None, None).unwrap();
    let body = comment_body(&r, &Config::default(), Some(&previous), None).unwrap();
    assert!(body.starts_with(COMMENT_MARKER));
    assert!(body.contains("the blind spot is gone"), "{body}");
    assert!(!body.contains('@'), "{body}");
    assert!(comment_changed(&previous, &body));
    snapshot_comment("comment_gone", &body);
}

#[test]
fn nothing_to_say_means_no_comment() {
    let r = case("uncovered");
    assert!(r.blind_owners.is_empty() && r.expired.is_empty());
    assert_eq!(comment_body(&r, &Config::default(), None, None), None);
    let body = comment_body(&r, &Config::default(), Some("old"), None).unwrap();
    assert!(body.contains("no owner is blind"), "{body}");
    assert!(!body.contains('@'), "{body}");
    assert_eq!(comment_body(&case("docs_only"), &Config::default(), None, None), None);
}

#[test]
fn comments_are_deterministic_and_compared_without_trailing_space() {
    let mut r = case("some_frozen");
    let a = comment_body(&r, &Config::default(), None, None).unwrap();
    r.blind_owners.reverse();
    for o in &mut r.blind_owners {
        o.tests.reverse();
        o.actions.reverse();
    }
    let b = comment_body(&r, &Config::default(), None, None).unwrap();
    assert_eq!(a, b);
    assert!(!comment_changed(&a, &format!("{a}  \n\n")));
    assert!(!comment_changed("x  \ny\n", "x\ny"));
    assert!(comment_changed(&a, &a.replace("fix", "renew")));
}
