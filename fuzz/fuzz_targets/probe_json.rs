//! The probe summary JSON (`--probe FILE`).
#![no_main]

use flakegate::gate::error::text_of;
use flakegate::gate::probe::parse_probe_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = text_of("probe.json", data) else { return };
    let _ = parse_probe_json("probe.json", &text);
});
