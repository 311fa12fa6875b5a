//! Where the texts people read link to: a reason code's explanation, the evidence workflow's
//! template, the evidence record's schema — pages of the project's docs that a user can open,
//! never a path in flakegate's own repository.
//!
//! The project's home is Cargo.toml's `repository`; a build for GitHub Enterprise or a fork
//! sets `FLAKEGATE_HOMEPAGE` (the repository's web address) or `FLAKEGATE_DOCS_URL` (the
//! folder the docs are served from) when it is compiled.

use crate::gate::report::ReasonCode;

/// The project's home page (the repository on GitHub).
pub const HOMEPAGE: &str = match option_env!("FLAKEGATE_HOMEPAGE") {
    Some(url) => url,
    None => env!("CARGO_PKG_REPOSITORY"),
};

/// The folder of the project's docs: `FLAKEGATE_DOCS_URL`, else `docs/` of [`HOMEPAGE`].
pub fn docs() -> String {
    match option_env!("FLAKEGATE_DOCS_URL") {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => format!("{}/blob/main/docs", HOMEPAGE.trim_end_matches('/')),
    }
}

/// A page of the docs (`reasons.md`), with an optional anchor.
pub fn doc(page: &str, anchor: Option<&str>) -> String {
    match anchor {
        Some(a) => format!("{}/{page}#{a}", docs()),
        None => format!("{}/{page}", docs()),
    }
}

/// The explanation of a reason code: its heading in `docs/reasons.md`.
pub fn reason(code: ReasonCode) -> String {
    doc("reasons.md", Some(code.as_str()))
}

/// A file of the project's repository (a workflow template), at [`HOMEPAGE`].
pub fn file(path: &str) -> String {
    format!("{}/blob/main/{path}", HOMEPAGE.trim_end_matches('/'))
}

/// The evidence workflow's template, which a repository copies.
pub fn evidence_workflow() -> String {
    file("templates/workflows/flakegate-evidence.yml")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason code has its heading in `docs/reasons.md`, where its link points.
    #[test]
    fn every_reason_code_has_its_explanation() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reasons.md")).unwrap();
        for code in ReasonCode::ALL {
            let heading = format!("\n## `{}`\n", code.as_str());
            assert!(page.contains(&heading), "docs/reasons.md has no heading {heading:?}");
            assert!(reason(*code).ends_with(&format!("/reasons.md#{}", code.as_str())));
        }
        assert!(HOMEPAGE.starts_with("https://"), "{HOMEPAGE}");
        assert!(evidence_workflow().starts_with(HOMEPAGE));
    }
}
