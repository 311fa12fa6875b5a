pub mod coverage_db;
