//! Notification decoder: never panics; whatever decodes re-encodes to the same notification.
#![no_main]
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use statestore::protocol::Notification;

fuzz_target!(|data: &[u8]| {
    if let Ok(notification) = Notification::decode(&Bytes::copy_from_slice(data)) {
        assert_eq!(Notification::decode(&notification.encode()).as_ref(), Ok(&notification));
    }
});
