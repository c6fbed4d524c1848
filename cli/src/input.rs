//! Values from the command line: the argument's bytes, a file, or stdin (`-`).

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use bytes::Bytes;

use crate::args::ValueSource;
use crate::exit::Failure;

/// The argument that means "read stdin".
const STDIN: &[u8] = b"-";

/// The bytes of a command line argument (keys and values are bytes, not text).
pub fn arg_bytes(arg: &std::ffi::OsStr) -> Bytes {
    Bytes::copy_from_slice(arg.as_bytes())
}

/// The value `source` names, byte for byte.
pub fn read_value(source: &ValueSource) -> Result<Bytes, Failure> {
    match (&source.value, &source.file) {
        (_, Some(path)) if path.as_os_str().as_bytes() == STDIN => read_stdin(),
        (_, Some(path)) => read_file(path),
        (Some(value), None) if value.as_bytes() == STDIN => read_stdin(),
        (Some(value), None) => Ok(arg_bytes(value)),
        // clap requires one of the two.
        (None, None) => Err(Failure::new(
            crate::exit::Status::Usage,
            "no value: give VALUE, --file PATH, or - to read stdin",
        )),
    }
}

fn read_stdin() -> Result<Bytes, Failure> {
    let mut value = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut value)
        .map_err(|e| Failure::other(format!("cannot read the value from stdin: {e}")))?;
    Ok(value.into())
}

fn read_file(path: &Path) -> Result<Bytes, Failure> {
    std::fs::read(path)
        .map(Bytes::from)
        .map_err(|e| Failure::other(format!("cannot read {}: {e}", path.display())))
}
