//! Handles, arguments and results: the translation between C values and core values.
//!
//! The pointers C passes in are trusted in this module only, each by one unsafe function whose
//! `# Safety` section is the contract the exported functions pass on to C (the header's
//! POINTERS rule): [`bytes`] and [`key`] for `(pointer, length)` pairs, [`string`] and
//! [`token`] for C strings, [`Out::new`] for out-parameters. Handles are ids, never
//! dereferenced ([`Handles`]).

use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use bytes::Bytes;
use statestore_core::bindings::HandleTable;
use statestore_core::client::MQTT_MAX_PACKET_SIZE;
use statestore_core::{Error, Hlc, Result};

/// A table of live handles of one type. C sees a handle as an opaque pointer whose value is
/// the table's id with a type tag in the top byte, so a freed, stale or foreign pointer is
/// an `STATESTORE_ERR_INVALID_ARGUMENT`, never a dereference.
pub(crate) struct Handles<T> {
    table: LazyLock<HandleTable<T>>,
    tag: u64,
    what: &'static str,
}

/// The type tag sits above the table's ids, which never reach these bits.
const TAG_SHIFT: u32 = HandleTable::<()>::ID_BITS;

// Handles are ids with a type tag in the top byte, carried in pointers.
#[cfg(not(target_pointer_width = "64"))]
compile_error!("libstatestore needs 64-bit pointers (handles carry a 64-bit id)");

impl<T: Send + Sync + 'static> Handles<T> {
    pub(crate) const fn new(tag: u8, what: &'static str) -> Self {
        Self {
            table: LazyLock::new(HandleTable::new),
            tag: tag as u64,
            what,
        }
    }

    /// A new handle for `value`, as the C pointer. The pointer is an address without
    /// provenance: nothing may (or does) dereference it.
    pub(crate) fn insert<P>(&self, value: Arc<T>) -> *mut P {
        let id = self.table.insert(value);
        std::ptr::without_provenance_mut((id | (self.tag << TAG_SHIFT)) as usize)
    }

    fn id<P>(&self, pointer: *const P) -> Option<u64> {
        let raw = pointer.addr() as u64;
        (raw >> TAG_SHIFT == self.tag).then_some(raw & ((1 << TAG_SHIFT) - 1))
    }

    /// The live object behind `pointer` (`name` is the argument's name, for the message).
    pub(crate) fn get<P>(&self, pointer: *const P, name: &str) -> Result<Arc<T>> {
        if pointer.is_null() {
            return Err(null(name));
        }
        self.id(pointer)
            .and_then(|id| self.table.get(id))
            .ok_or_else(|| self.stale(name))
    }

    /// Removes the handle; `Ok(None)` for NULL (freeing NULL does nothing).
    pub(crate) fn remove<P>(&self, pointer: *const P, name: &str) -> Result<Option<Arc<T>>> {
        if pointer.is_null() {
            return Ok(None);
        }
        self.id(pointer)
            .and_then(|id| self.table.remove(id))
            .map(Some)
            .ok_or_else(|| self.stale(name))
    }

    /// "N statestore_X" while handles of this type are live.
    pub(crate) fn live(&self) -> Option<String> {
        let count = self.table.len();
        (count > 0).then(|| format!("{count} {}", self.what))
    }

    fn stale(&self, name: &str) -> Error {
        Error::InvalidArgument(format!(
            "{name} is not a live {} (already freed, or not created by this library)",
            self.what
        ))
    }
}

/// The `NULL` argument error.
pub(crate) fn null(name: &str) -> Error {
    Error::InvalidArgument(format!("{name} is NULL"))
}

/// An out-parameter: NULL, or where the library may write one `T`. Only [`Out::new`] makes
/// one, and its caller vouches for the pointer, so writing through an `Out` is safe. It is
/// neither `Send` nor `Sync`: it stays with the exported function that received it.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Takes the out-parameter `out` of an exported function.
    ///
    /// # Safety
    /// `out` is NULL, or valid for writes of a `T` (aligned, writable, and neither read nor
    /// written by anything else) for as long as the returned `Out` is used. In C terms: NULL,
    /// or a pointer to a variable of the parameter's type that nothing else touches during the
    /// call.
    pub(crate) unsafe fn new(out: *mut T) -> Self {
        Self(out)
    }

    /// No out-parameter: a call whose only result is its status.
    pub(crate) fn none() -> Self {
        Self(std::ptr::null_mut())
    }

    /// Whether the caller passed NULL.
    pub(crate) fn is_null(&self) -> bool {
        self.0.is_null()
    }

    /// Writes `value`, unless the caller passed NULL.
    pub(crate) fn set(&self, value: T) {
        if !self.0.is_null() {
            // SAFETY: not NULL, so valid for a write of a `T`, as the caller of `Out::new`
            // promised.
            unsafe { self.0.write(value) };
        }
    }

    /// Writes `value` to the out-parameter `name`, which may not be NULL.
    pub(crate) fn put(&self, name: &str, value: T) -> Result<()> {
        if self.is_null() {
            return Err(null(name));
        }
        self.set(value);
        Ok(())
    }
}

impl<P> Out<*mut P> {
    /// Checks the out-parameter `name` (which may not be NULL) before any work is done, and
    /// clears it, so that a failed call leaves NULL behind.
    pub(crate) fn clear(&self, name: &str) -> Result<()> {
        self.put(name, std::ptr::null_mut())
    }
}

/// Copies `(data, len)` into `Bytes`. `data` may be NULL only when `len` is 0. Lengths over
/// the largest MQTT packet are refused before the memory is read.
///
/// # Safety
/// `data` is NULL or valid for reads of `len` bytes during the call. In C terms: `data` points
/// to `len` readable bytes, or is NULL when `len` is 0. This is the contract of every
/// `(const uint8_t *, size_t)` pair of the C API.
pub(crate) unsafe fn bytes(data: *const u8, len: usize, name: &str) -> Result<Bytes> {
    if len > MQTT_MAX_PACKET_SIZE as usize {
        return Err(Error::InvalidArgument(format!(
            "{name}_len is {len}, more than the largest MQTT packet ({MQTT_MAX_PACKET_SIZE} bytes)"
        )));
    }
    if len == 0 {
        return Ok(Bytes::new());
    }
    if data.is_null() {
        return Err(null(name));
    }
    // SAFETY: not NULL, so `len` readable bytes (this function's contract), and `len` is at
    // most the largest MQTT packet, far below `isize::MAX`; the bytes are copied before
    // returning.
    let borrowed = unsafe { std::slice::from_raw_parts(data, len) };
    Ok(Bytes::copy_from_slice(borrowed))
}

/// Like [`bytes`], for keys: empty keys are refused here, naming the argument.
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn key(data: *const u8, len: usize, name: &str) -> Result<Bytes> {
    if len == 0 {
        return Err(Error::InvalidArgument(format!(
            "{name}_len is 0: keys may not be empty"
        )));
    }
    // SAFETY: this function's contract is that of `bytes`.
    unsafe { bytes(data, len, name) }
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `text` is NULL or points to a NUL-terminated string, readable during the call. This is the
/// contract of every `const char *` argument of the C API.
pub(crate) unsafe fn string(text: *const c_char, name: &str) -> Result<String> {
    if text.is_null() {
        return Err(null(name));
    }
    // SAFETY: not NULL, so a NUL-terminated string (this function's contract); it is copied
    // before returning.
    let borrowed = unsafe { CStr::from_ptr(text) };
    borrowed
        .to_str()
        .map(str::to_owned)
        .map_err(|_| Error::InvalidArgument(format!("{name} is not valid UTF-8")))
}

/// An optional fencing token (a version string as the library gives them out).
///
/// # Safety
/// As [`string`].
pub(crate) unsafe fn token(text: *const c_char, name: &str) -> Result<Option<Hlc>> {
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: this function's contract is that of `string`.
    let text = unsafe { string(text, name) }?;
    statestore_core::bindings::version(&text, name).map(Some)
}

/// A required positive duration in milliseconds.
pub(crate) fn positive_millis(ms: u64, name: &str) -> Result<Duration> {
    if ms == 0 {
        return Err(Error::InvalidArgument(format!("{name} must be positive")));
    }
    Ok(Duration::from_millis(ms))
}

/// A NUL-terminated string inside a result struct given to C (a version, a loss message).
/// Its bytes are held in a `Vec`, not a `CString`: a result's owner is moved after its view
/// takes the pointer (into the owner, then onto the heap), and moving a `CString`, which is
/// a `Box`, asserts unique access to its bytes, which invalidates the pointer C was given
/// (undefined behaviour that Miri reports); moving a `Vec` leaves its buffer untouched.
pub(crate) struct CText(Vec<u8>);

impl CText {
    /// `text` as a C string (interior NULs become `?`, as in every message).
    pub(crate) fn new(text: impl Into<Vec<u8>>) -> Self {
        Self(crate::status::c_string(text).into_bytes_with_nul())
    }

    /// The pointer of an optional string (NULL for `None`), valid while the `CText` lives.
    pub(crate) fn ptr(text: &Option<CText>) -> *const c_char {
        text.as_ref()
            .map_or(std::ptr::null(), |s| s.0.as_ptr().cast())
    }
}

/// A version as a string inside a result.
pub(crate) fn version_string(version: Option<&Hlc>) -> Option<CText> {
    version.map(|v| CText::new(v.to_string()))
}

/// `user_data`, carried to the thread that runs the callback.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the library never dereferences user data; the caller promised, by passing it with
// a callback that runs on a library thread, that it may be used from there.
unsafe impl Send for UserData {}
// SAFETY: as for `Send`: the library only copies the pointer, and the caller promised that
// its callbacks may use it from library threads, also from several at once where the
// function's description says so (log callbacks).
unsafe impl Sync for UserData {}

impl UserData {
    /// The pointer. A closure that calls this captures the whole `UserData` (which is
    /// `Send`), where naming the field would capture the bare pointer (which is not).
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use super::*;

    /// A live value's handle, the way C holds it.
    struct Probe;

    #[test]
    fn handles_are_checked_ids_never_dereferenced() {
        let first: Handles<u32> = Handles::new(1, "first_thing");
        let second: Handles<u32> = Handles::new(2, "second_thing");
        let handle: *mut Probe = first.insert(Arc::new(7));
        assert_eq!(*first.get(handle, "h").unwrap(), 7);
        assert_eq!(first.live().as_deref(), Some("1 first_thing"));
        let foreign = second.get(handle, "h").unwrap_err().to_string();
        assert!(
            foreign.contains("h is not a live second_thing"),
            "{foreign}"
        );
        // A pointer to real memory is no handle of either table, and is not read.
        let memory = 7u32;
        let pointer: *const u32 = &memory;
        assert!(first.get(pointer, "h").is_err() && second.remove(pointer, "h").is_err());
        assert!(first
            .get(std::ptr::null::<Probe>(), "h")
            .unwrap_err()
            .to_string()
            .contains("h is NULL"));
        assert!(first
            .remove(std::ptr::null::<Probe>(), "h")
            .unwrap()
            .is_none());
        assert_eq!(first.remove(handle, "h").unwrap().as_deref(), Some(&7));
        let stale = first.remove(handle, "h").unwrap_err().to_string();
        assert!(stale.contains("already freed"), "{stale}");
        assert!(first.get(handle, "h").is_err());
        assert!(first.live().is_none());
    }

    #[test]
    fn handles_work_from_several_threads_at_once() {
        static SHARED: Handles<usize> = Handles::new(9, "shared_thing");
        let workers: Vec<_> = (0..4)
            .map(|worker| {
                std::thread::spawn(move || {
                    for round in 0..8 {
                        let value = worker * 100 + round;
                        let handle: *mut Probe = SHARED.insert(Arc::new(value));
                        assert_eq!(*SHARED.get(handle, "h").unwrap(), value);
                        assert_eq!(*SHARED.remove(handle, "h").unwrap().unwrap(), value);
                        assert!(SHARED.get(handle, "h").is_err());
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert!(SHARED.live().is_none());
    }

    #[test]
    fn byte_arguments_are_copied_and_refused_before_any_read() {
        let mut data = *b"abcd";
        // SAFETY: `data` is 4 readable bytes.
        let copied = unsafe { bytes(data.as_ptr(), 3, "value") }.unwrap();
        data[0] = b'z';
        assert_eq!(
            &copied[..],
            b"abc",
            "a copy, not a view of the caller's memory"
        );
        // SAFETY: a length of 0 reads nothing, so NULL is allowed.
        assert!(unsafe { bytes(std::ptr::null(), 0, "value") }
            .unwrap()
            .is_empty());
        // SAFETY: NULL with a length is refused before anything is read.
        let error = unsafe { bytes(std::ptr::null(), 3, "value") }.unwrap_err();
        assert!(error.to_string().contains("value is NULL"), "{error}");
        // A length over the largest packet is refused before the (dangling) pointer is read:
        // Miri reports any read of it.
        let huge = MQTT_MAX_PACKET_SIZE as usize + 1;
        let dangling = std::ptr::NonNull::<u8>::dangling().as_ptr();
        // SAFETY: the length is refused before the pointer is used.
        let error = unsafe { bytes(dangling, huge, "value") }.unwrap_err();
        assert!(error.to_string().contains("value_len is"), "{error}");
        // SAFETY: as above.
        let error = unsafe { key(dangling, 0, "key") }.unwrap_err();
        assert!(
            error.to_string().contains("keys may not be empty"),
            "{error}"
        );
        // SAFETY: `data` is 4 readable bytes.
        let read = unsafe { key(data.as_ptr(), 4, "key") }.unwrap();
        assert_eq!(&read[..], b"zbcd");
    }

    #[test]
    fn strings_and_tokens_are_read_up_to_their_nul() {
        // SAFETY: a NUL-terminated literal.
        assert_eq!(unsafe { string(c"host".as_ptr(), "host") }.unwrap(), "host");
        // SAFETY: NULL is refused before any read.
        let error = unsafe { string(std::ptr::null(), "host") }.unwrap_err();
        assert!(error.to_string().contains("host is NULL"), "{error}");
        let latin1 = [0xe9u8, 0];
        // SAFETY: NUL-terminated.
        let error = unsafe { string(latin1.as_ptr().cast(), "host") }.unwrap_err();
        assert!(error.to_string().contains("not valid UTF-8"), "{error}");
        // SAFETY: NULL is no token.
        assert!(unsafe { token(std::ptr::null(), "t") }.unwrap().is_none());
        let version = Hlc {
            wall_ms: 1_700_000_000_000,
            counter: 3,
            node: "node".into(),
        };
        let text = CString::new(version.to_string()).unwrap();
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { token(text.as_ptr(), "t") }.unwrap(), Some(version));
        // SAFETY: NUL-terminated.
        let error = unsafe { token(c"soon".as_ptr(), "t") }.unwrap_err();
        assert!(
            error.to_string().contains("t: \"soon\" is not a version"),
            "{error}"
        );
    }

    #[test]
    fn out_parameters_are_written_or_refused_when_null() {
        let mut number = 0usize;
        // SAFETY: a local that nothing else touches while `out` is used.
        let out = unsafe { Out::new(&mut number) };
        out.put("n", 5).unwrap();
        assert_eq!(number, 5);
        // SAFETY: NULL is allowed.
        let none = unsafe { Out::new(std::ptr::null_mut::<usize>()) };
        let error = none.put("n", 5).unwrap_err();
        assert!(error.to_string().contains("n is NULL"), "{error}");
        none.set(6);
        Out::none().set(6usize);
        let mut pointer: *mut Probe = std::ptr::NonNull::dangling().as_ptr();
        // SAFETY: a local that nothing else touches while `out` is used.
        let out = unsafe { Out::new(&mut pointer) };
        out.clear("p").unwrap();
        assert!(
            pointer.is_null(),
            "cleared, so that a failed call leaves NULL"
        );
    }

    #[test]
    fn result_strings_stay_put_when_their_owner_moves() {
        let text = Some(CText::new("a\0b"));
        let pointer = CText::ptr(&text);
        let moved = Box::new((text, 1u8));
        // SAFETY: the string lives in `moved`; moving its owner did not move its bytes.
        let read = unsafe { CStr::from_ptr(pointer) };
        assert_eq!(read.to_str().unwrap(), "a?b", "interior NULs become ?");
        assert!(CText::ptr(&None).is_null());
        drop(moved);
    }
}
