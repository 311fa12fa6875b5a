//! What the fuzz targets share: where the fixtures are, a fixed `today`, a scratch directory.
#![allow(dead_code)]

use std::path::PathBuf;

/// A file under `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(rel)
}

pub fn read_fixture(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap_or_else(|e| panic!("fixture {rel}: {e}"))
}

pub fn today() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(2026, 11, 20).unwrap()
}

/// The fixture project's paths: what a fuzzed patch or coverage file is matched against.
pub const PROJECT_PATHS: &[&str] = &[
    "src/shop/__init__.py",
    "src/shop/cart.py",
    "src/shop/pricing.py",
    "src/shop/refunds.py",
    "src/shop/util.py",
    "tests/conftest.py",
    "tests/test_cart.py",
    "tests/test_pricing.py",
    "tests/test_refunds.py",
    "tests/test_util.py",
];

/// One scratch directory per fuzzing process (removed when the process exits normally).
pub fn scratch() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::Builder::new().prefix("flakegate-fuzz").tempdir().unwrap())
        .path()
}
