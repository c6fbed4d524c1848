//! Response decoder: never panics; whatever decodes re-encodes to something that decodes the same.
#![no_main]
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use statestore::protocol::Response;

fuzz_target!(|data: &[u8]| {
    if let Ok(response) = Response::decode(&Bytes::copy_from_slice(data)) {
        assert_eq!(Response::decode(&response.encode()).as_ref(), Ok(&response));
    }
});
