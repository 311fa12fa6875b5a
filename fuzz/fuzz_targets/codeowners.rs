//! CODEOWNERS: parsed (bad lines skipped with a reason), then asked about a few paths.
#![no_main]

use flakegate::gate::codeowners::CodeOwners;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let owners = CodeOwners::parse(text);
    for path in [
        "src/shop/cart.py",
        "docs/pricing.md",
        "README.md",
        ".github/CODEOWNERS",
        "a/b/c/d.py",
    ] {
        let _ = owners.owners_of(path);
    }
    // Every skipped line is a real line of the file.
    let lines = text.lines().count();
    for (line, _) in &owners.skipped {
        assert!(*line >= 1 && *line <= lines, "skipped line {line} of {lines}");
    }
});
