//! HLC parser: never panics; whatever parses formats to text that parses to the same value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use statestore::protocol::Hlc;

fuzz_target!(|data: &[u8]| {
    if let Ok(hlc) = String::from_utf8_lossy(data).parse::<Hlc>() {
        assert_eq!(hlc.to_string().parse::<Hlc>().as_ref(), Ok(&hlc));
    }
});
