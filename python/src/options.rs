//! Connection settings by keyword name (`CONNECT_OPTIONS` of core): Python values to
//! `OptionValue`s. Durations are seconds (`int`/`float`) or `datetime.timedelta`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};
use statestore::ConnectOptions;

use crate::api::{OptionKind, OptionValue, CONNECT_OPTIONS};

/// Applies every `name=value` of `options`; an unknown name or bad value raises.
pub fn apply(connect: &mut ConnectOptions, options: &Bound<'_, PyDict>) -> PyResult<()> {
    for (name, value) in options.iter() {
        let name: String = name.extract()?;
        let kind = CONNECT_OPTIONS
            .iter()
            .find(|spec| spec.name == name || spec.js_name == name)
            .map(|spec| spec.kind);
        // An unknown name is reported as such, whatever the value's type.
        let value = match kind {
            Some(kind) => to_value(&name, Some(kind), &value)?,
            None => OptionValue::None,
        };
        crate::api::set_option(connect, &name, value)
            .map_err(|e| crate::errors::to_py(options.py(), &e))?;
    }
    Ok(())
}

fn to_value(
    name: &str,
    kind: Option<OptionKind>,
    value: &Bound<'_, PyAny>,
) -> PyResult<OptionValue> {
    if value.is_none() {
        return Ok(OptionValue::None);
    }
    if matches!(kind, Some(OptionKind::Duration)) && !value.is_instance_of::<PyString>() {
        return crate::convert::secs(value, name).map(OptionValue::Duration);
    }
    if value.is_instance_of::<PyBool>() {
        return Ok(OptionValue::Bool(value.extract()?));
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(OptionValue::Int(value.extract()?));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(OptionValue::Str(
            crate::convert::text(s, name)?.into_owned(),
        ));
    }
    // Paths (os.PathLike).
    if value.hasattr("__fspath__")? {
        let path = value.call_method0("__fspath__")?;
        if let Ok(s) = path.cast::<PyString>() {
            return Ok(OptionValue::Str(
                crate::convert::text(s, name)?.into_owned(),
            ));
        }
    }
    Err(PyTypeError::new_err(format!(
        "option '{name}': expected str, int, bool, a path or seconds, got {}",
        value.get_type().name()?
    )))
}
