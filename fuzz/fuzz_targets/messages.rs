#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tls13lab_fuzz::messages(data));
