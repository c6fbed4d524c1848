//! Human durations on the command line (`10s`, `500ms`, `1m30s`).

use std::time::Duration;

/// Parses a duration with a unit; a bare number is refused rather than guessed.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{text:?} has no unit: write e.g. {text}s or {text}ms"
        ));
    }
    humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 10s, 500ms, 1m30s)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_required() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("10").unwrap_err().contains("10ms"));
        assert!(parse_duration("soon").is_err());
    }
}
