//! Durations that host languages pass as plain numbers (seconds in Python, milliseconds in Node
//! and C), read by one rule in every language:
//!
//! - a negative number, `-inf` or NaN is refused with [`Error::InvalidArgument`] naming the
//!   argument (it is a mistake, not a wish);
//! - `+inf`, and any number too large for [`Duration`], is [`Duration::MAX`]: for a wait
//!   (a timeout) that means no limit, as `None` does; for a time sent to the service (an expiry,
//!   a TTL) it is refused by the call's own check, which names the service's limit;
//! - a deadline that the clock cannot represent ([`deadline`] returns `None`) is no limit, so
//!   `Instant + Duration` can never overflow in a binding.

use std::time::{Duration, Instant};

use crate::{Error, Result};

/// `value` seconds as a duration (see the module's rule), `name` naming the argument in the error.
///
/// ```
/// use std::time::Duration;
/// use statestore::bindings::duration;
///
/// assert_eq!(duration::seconds("timeout", 1.5).unwrap(), Duration::from_millis(1500));
/// assert_eq!(duration::seconds("timeout", f64::INFINITY).unwrap(), Duration::MAX);
/// assert_eq!(duration::seconds("timeout", 1.8e22).unwrap(), Duration::MAX);
/// assert!(duration::seconds("timeout", -1.0).is_err());
/// assert!(duration::seconds("timeout", f64::NAN).is_err());
/// ```
pub fn seconds(name: &str, value: f64) -> Result<Duration> {
    from_number(name, value, 1.0, "seconds")
}

/// `value` milliseconds as a duration (see the module's rule), `name` naming the argument in the
/// error.
///
/// ```
/// use std::time::Duration;
/// use statestore::bindings::duration;
///
/// assert_eq!(duration::millis("timeout", 250.0).unwrap(), Duration::from_millis(250));
/// assert_eq!(duration::millis("timeout", 1e308).unwrap(), Duration::MAX);
/// assert!(duration::millis("timeout", f64::NEG_INFINITY).is_err());
/// ```
pub fn millis(name: &str, value: f64) -> Result<Duration> {
    from_number(name, value, 1e-3, "ms")
}

fn from_number(name: &str, value: f64, unit_secs: f64, unit: &str) -> Result<Duration> {
    if value.is_nan() || value < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "{name}: {value} {unit} is not a duration: it must be a number >= 0 \
             (no value means no limit or the default)"
        )));
    }
    Ok(Duration::try_from_secs_f64(value * unit_secs).unwrap_or(Duration::MAX))
}

/// The instant `timeout` from now; `None` if the clock cannot represent it, which callers treat
/// as no limit (nothing waits for hundreds of years).
///
/// ```
/// use std::time::Duration;
/// use statestore::bindings::duration;
///
/// assert!(duration::deadline(Duration::from_secs(1)).is_some());
/// assert!(duration::deadline(Duration::MAX).is_none());
/// ```
pub fn deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values the bindings are tested with, and what each must become.
    #[test]
    fn every_number_is_a_duration_or_a_named_error() {
        for value in [0.0, 0.5, 1.0, 2f64.powi(63), 1e308, 1.8e22, f64::INFINITY] {
            let span = seconds("timeout", value).unwrap();
            assert!(
                value > 1e10 || span == Duration::from_secs_f64(value),
                "{value}"
            );
            assert!(value < 1e12 || span == Duration::MAX, "{value}");
            let _ = deadline(span);
        }
        for value in [-1.0, -0.5, f64::NEG_INFINITY, f64::NAN] {
            let error = millis("ttl", value).unwrap_err().to_string();
            assert!(error.contains("ttl") && error.contains(">= 0"), "{error}");
        }
    }
}
