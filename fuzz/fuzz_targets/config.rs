//! `.github/flakegate.yml`, then the globs and owner map it yields put to use.
#![no_main]

use flakegate::gate::config::{handle_for, parse_config, PathGlobs};
use flakegate::gate::error::text_of;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = text_of("flakegate.yml", data) else {
        return;
    };
    let Ok(config) = parse_config(".github/flakegate.yml", &text) else {
        return;
    };
    let globs = PathGlobs::new(&config.policy.no_evidence_paths).expect("parse_config checked the globs");
    for path in ["docs/a.md", "src/shop/cart.py", ".github/workflows/ci.yml", "README"] {
        let _ = globs.is_match(path);
    }
    for owner in config.owners.keys() {
        let handle = handle_for(owner, &config);
        assert!(handle.is_some(), "owner {owner:?} has a checked handle");
    }
    let _ = handle_for("billing-oncall", &config);
});
