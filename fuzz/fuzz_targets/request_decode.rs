//! Request decoder: never panics; whatever decodes re-encodes to something that decodes the same.
#![no_main]
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use statestore::protocol::Request;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = Request::decode(&Bytes::copy_from_slice(data)) {
        let encoded = request.encode();
        assert_eq!(encoded.len(), request.encoded_len());
        assert_eq!(Request::decode(&encoded).as_ref(), Ok(&request));
    }
});
