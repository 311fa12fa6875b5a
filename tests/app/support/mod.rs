pub mod app_harness;
pub mod browser;
pub mod fake_github;
pub mod fake_issues;
pub mod fake_manifest;
pub mod fake_repo;
pub mod postgres;
pub mod serve_process;
