//! Checks on call arguments, made before anything is sent: the service's answers to these
//! mistakes are cryptic, and an oversized packet would cost the whole connection.

use std::time::Duration;

use bytes::Bytes;

use crate::{Error, Result};

/// A key must not be empty.
pub(crate) fn key(key: &Bytes) -> Result<()> {
    if key.is_empty() {
        return Err(Error::InvalidArgument("the key is empty".into()));
    }
    Ok(())
}

/// An expiry must be at least 1 ms; returns it in whole milliseconds (`PX`).
pub(crate) fn expiry_ms(expiry: Option<Duration>) -> Result<Option<u64>> {
    let Some(expiry) = expiry else {
        return Ok(None);
    };
    let ms = u64::try_from(expiry.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(Error::InvalidArgument(format!(
            "the expiry must be at least 1 ms, got {expiry:?}"
        )));
    }
    // The service parses PX as a signed 64-bit integer.
    if ms > i64::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "the expiry {expiry:?} is too long"
        )));
    }
    Ok(Some(ms))
}

/// A timeout must be positive.
pub(crate) fn timeout(timeout: Duration) -> Result<Duration> {
    if timeout.is_zero() {
        return Err(Error::InvalidArgument(
            "the timeout must be positive".into(),
        ));
    }
    Ok(timeout)
}

/// A call's own timeout, if it has one, must be positive.
pub(crate) fn optional_timeout(call_timeout: Option<Duration>) -> Result<()> {
    call_timeout.map_or(Ok(()), |t| timeout(t).map(drop))
}

/// A request must fit in the broker's maximum packet size.
pub(crate) fn packet_size(size: usize, broker_max: u32) -> Result<()> {
    if size > broker_max as usize {
        return Err(Error::InvalidArgument(format!(
            "the request is {size} bytes, more than the broker's maximum packet size of \
             {broker_max} bytes: use a shorter key or value"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_key_short_expiry_zero_timeout_and_oversize() {
        assert!(key(&Bytes::new()).is_err());
        assert!(key(&Bytes::from_static(b"\0")).is_ok());
        assert_eq!(expiry_ms(None).unwrap(), None);
        assert!(expiry_ms(Some(Duration::from_micros(999))).is_err());
        assert_eq!(
            expiry_ms(Some(Duration::from_micros(1500))).unwrap(),
            Some(1)
        );
        assert!(expiry_ms(Some(Duration::MAX)).is_err());
        assert!(timeout(Duration::ZERO).is_err());
        assert!(packet_size(101, 100).is_err());
        assert!(packet_size(100, 100).is_ok());
        for err in [
            key(&Bytes::new()).unwrap_err(),
            packet_size(101, 100).unwrap_err(),
        ] {
            assert!(matches!(err, Error::InvalidArgument(_)));
        }
    }

    #[test]
    fn call_options_are_checked_before_the_call() {
        use crate::client::{DeleteOptions, SetOptions};
        let ms = Duration::from_millis;
        assert!(SetOptions::default().validate().is_ok());
        assert!(SetOptions::default()
            .expiry(ms(1))
            .timeout(ms(1))
            .validate()
            .is_ok());
        for bad in [
            SetOptions::default().expiry(Duration::ZERO),
            SetOptions::default().expiry(Duration::MAX),
            SetOptions::default().timeout(Duration::ZERO),
        ] {
            let err = bad.validate().unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err:?}");
        }
        assert!(DeleteOptions::default().timeout(ms(1)).validate().is_ok());
        assert!(matches!(
            DeleteOptions::default().timeout(Duration::ZERO).validate(),
            Err(Error::InvalidArgument(_))
        ));
    }
}
