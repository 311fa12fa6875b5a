//! pytest-reportlog `.jsonl` (UTF-8 checked as the evidence loader does).
#![no_main]

use flakegate::gate::error::text_of;
use flakegate::gate::results::parse_reportlog;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = text_of("report-log.jsonl", data) else {
        return;
    };
    let _ = parse_reportlog("report-log.jsonl", &text);
});
