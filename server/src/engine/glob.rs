//! SCAN patterns in the real service's dialect, which is the `glob` crate's [`Pattern`]
//! (protocol-facts.md, "SCAN pattern dialect"). Using that crate rather than a matcher of our
//! own makes every corner of the dialect the service's by construction: `[!...]` negates and
//! `[^...]` does not, `[*]` is a literal `*`, `]` first in a class is a member, a backslash is
//! an ordinary character, and an unclosed `[` or a `**` that is not a whole path component
//! (`/`-separated) is an invalid pattern.
//!
//! Choices where the service's behaviour is not documented (docs/server.md, SCAN):
//! - Glob matches text, keys are bytes: a key that is not UTF-8 is matched as its text with
//!   each invalid sequence replaced by U+FFFD, so `*` still lists every key and `?` takes an
//!   invalid sequence as one character.
//! - A pattern that is not UTF-8, or that glob rejects, is an invalid pattern: the request gets
//!   `-ERR invalid pattern "<pattern>": <reason>`.

use glob::{MatchOptions, Pattern};

/// Glob's defaults (`Pattern::matches`), consistent with the service's test cases: matching is
/// case sensitive and `*`, `?` and classes also match `/` and a leading `.`. Spelled out so that
/// a change of the crate's defaults cannot change the dialect unnoticed.
const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: false,
    require_literal_leading_dot: false,
};

/// How much of an invalid pattern its error reply quotes (patterns may be as large as a packet).
const QUOTED_CHARS: usize = 100;

/// A compiled SCAN pattern.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    pattern: Pattern,
    prefix: Vec<u8>,
    shortcut: Shortcut,
}

/// Patterns whose matches the literal prefix alone decides, answered without glob's matcher,
/// which costs about as much per key as the rest of a scan (`examples/engine_ops.rs`). Both
/// give glob's answer (see the test `shortcuts_agree_with_glob`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shortcut {
    /// Glob decides.
    None,
    /// No metacharacter: the key is the prefix.
    Exact,
    /// The prefix then a single `*` (`*` and `user:*`): the key starts with the prefix.
    Prefixed,
}

impl Glob {
    /// Compiles `pattern`, or answers the text of the error reply for an invalid one.
    pub fn compile(pattern: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(pattern)
            .map_err(|_| invalid(&String::from_utf8_lossy(pattern), "not UTF-8 text"))?;
        let compiled = Pattern::new(text).map_err(|error| invalid(text, error.msg))?;
        let prefix = literal_prefix(text);
        // A U+FFFD left in the rest also matches invalid bytes, which the prefix cannot say.
        let shortcut = match &text[prefix.len()..] {
            "" => Shortcut::Exact,
            "*" => Shortcut::Prefixed,
            _ => Shortcut::None,
        };
        Ok(Self {
            pattern: compiled,
            prefix: prefix.as_bytes().to_vec(),
            shortcut,
        })
    }

    /// The bytes every matching key starts with, so a scan only needs to visit that range of
    /// the ordered keys.
    pub fn literal_prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// Whether the whole of `key` matches. Only for keys that start with
    /// [`Glob::literal_prefix`] (no other key can match, and a scan visits no other): the
    /// shortcuts do not compare the prefix again, which cost as much as the rest of a `*` scan.
    pub fn matches(&self, key: &[u8]) -> bool {
        debug_assert!(key.starts_with(&self.prefix));
        match self.shortcut {
            Shortcut::Exact => key.len() == self.prefix.len(),
            Shortcut::Prefixed => true,
            Shortcut::None => {
                // Borrowed, not copied, when the key is UTF-8.
                let text = String::from_utf8_lossy(key);
                self.pattern.matches_with(&text, OPTIONS)
            }
        }
    }
}

/// The pattern's leading literal characters. It stops before U+FFFD, which also matches the
/// replaced invalid bytes of a key, and those keys do not start with its UTF-8 bytes.
fn literal_prefix(pattern: &str) -> &str {
    let end = pattern
        .find(['*', '?', '[', char::REPLACEMENT_CHARACTER])
        .unwrap_or(pattern.len());
    &pattern[..end]
}

fn invalid(pattern: &str, reason: &str) -> String {
    let mut chars = pattern.chars();
    let quoted: String = chars.by_ref().take(QUOTED_CHARS).collect();
    // Debug quoting escapes CR, LF and other control characters, which an error line cannot hold.
    let ellipsis = if chars.next().is_some() { "..." } else { "" };
    format!("invalid pattern {quoted:?}{ellipsis}: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As a scan decides: a key outside the prefix's range is never matched.
    fn matches(pattern: &str, key: &str) -> bool {
        scan_matches(
            &Glob::compile(pattern.as_bytes()).unwrap_or_else(|error| panic!("{error}")),
            key.as_bytes(),
        )
    }

    fn scan_matches(glob: &Glob, key: &[u8]) -> bool {
        key.starts_with(glob.literal_prefix()) && glob.matches(key)
    }

    fn error(pattern: &[u8]) -> String {
        Glob::compile(pattern).expect_err("an invalid pattern")
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("*", ""));
        assert!(matches("*", "anything"));
        assert!(matches("a*", "a"));
        assert!(matches("a*c", "abbbc"));
        assert!(!matches("a*c", "abbbd"));
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(!matches("?", ""));
        assert!(matches("*?", "x"));
        assert!(!matches("", "x"));
        assert!(matches("", ""));
    }

    #[test]
    fn separators_and_dots_are_ordinary_characters() {
        assert!(matches("a*", "a/b/c"));
        assert!(matches("a?b", "a/b"));
        assert!(matches("a[/]b", "a/b"));
        assert!(matches("*", ".hidden"));
        assert!(matches("?x", ".x"));
        assert!(!matches("A*", "abc"), "case sensitive");
    }

    #[test]
    fn the_service_integration_test_cases() {
        let keys = [
            "sspat",
            "sspata",
            "sspatb",
            "sspatc",
            "sspat1",
            "sspat2",
            "sspatab",
            "sspatabc",
            "sspat.x",
            "sspat*lit",
        ];
        let listed = |pattern: &str| -> Vec<&str> {
            keys.iter()
                .copied()
                .filter(|key| matches(pattern, key))
                .collect()
        };
        assert_eq!(listed("sspat[!0-9]"), ["sspata", "sspatb", "sspatc"]);
        assert_eq!(listed("sspat[^0-9]"), ["sspat1", "sspat2"]);
        assert_eq!(listed("sspat[*]lit"), ["sspat*lit"]);
    }

    #[test]
    fn classes_negate_with_an_exclamation_mark_only() {
        assert!(matches("[abc]", "b"));
        assert!(!matches("[abc]", "d"));
        assert!(matches("[a-c]x", "bx"));
        assert!(matches("[!a-c]", "d"));
        assert!(!matches("[!a-c]", "b"));
        assert!(matches("[^a-c]", "b"), "`^` is a member, not a negation");
        assert!(matches("[^a-c]", "^"));
        assert!(!matches("[^a-c]", "d"));
        assert!(matches("[!!]", "x"));
        assert!(!matches("[!!]", "!"));
    }

    #[test]
    fn class_members_are_literal() {
        assert!(matches("[]]", "]"), "`]` first is a member");
        assert!(matches("[]a]", "a"));
        assert!(matches("[!]]", "x"));
        assert!(!matches("[!]]", "]"));
        assert!(matches("[a-]", "-"), "a trailing `-` is a member");
        assert!(matches("[-a]", "-"));
        assert!(!matches("[a-]", "_"));
        assert!(matches("[*]", "*"));
        assert!(!matches("[*]", "x"));
        assert!(matches("[?]", "?"));
        assert!(matches("[[]", "["));
        assert!(
            !matches("[c-a]", "b"),
            "a reversed range is empty, not swapped"
        );
    }

    #[test]
    fn a_backslash_is_no_escape() {
        assert!(matches("a\\*", "a\\"));
        assert!(matches("a\\*", "a\\bc"));
        assert!(!matches("a\\*", "a*"));
        assert!(matches("a\\", "a\\"));
        assert!(matches("[\\]", "\\"));
        assert!(
            matches("[\\]]", "\\]"),
            "the class is `[\\]`, then a literal `]`"
        );
    }

    #[test]
    fn classes_and_question_marks_take_characters_not_bytes() {
        assert!(matches("caf?", "café"));
        assert!(matches("caf[é]", "café"));
        assert!(matches("[α-ω]", "λ"));
        assert!(!matches("caf??", "café"));
    }

    #[test]
    fn double_stars_are_path_components() {
        assert!(matches("**", "a/b"));
        assert!(matches("a/**", "a/b/c"));
        assert!(matches("a/**/b", "a/x/y/b"));
        assert!(matches("a/**/b", "a/b"));
        assert!(!matches("a/**/b", "a/xb"), "`**` resumes only after a `/`");
    }

    #[test]
    fn invalid_patterns_are_errors_naming_the_pattern() {
        assert_eq!(
            error(b"a**"),
            "invalid pattern \"a**\": recursive wildcards must form a single path component"
        );
        assert_eq!(
            error(b"**a"),
            "invalid pattern \"**a\": recursive wildcards must form a single path component"
        );
        assert_eq!(
            error(b"a***"),
            "invalid pattern \"a***\": wildcards are either regular `*` or recursive `**`"
        );
        for unclosed in [&b"["[..], b"a[b", b"[]", b"[!]", b"[!a"] {
            assert!(
                error(unclosed).ends_with(": invalid range pattern"),
                "{}",
                error(unclosed)
            );
        }
        assert_eq!(
            error(b"a\xffb"),
            "invalid pattern \"a\u{fffd}b\": not UTF-8 text"
        );
    }

    #[test]
    fn error_texts_fit_an_error_line() {
        let text = error(b"\r\n\"[");
        assert_eq!(
            text,
            "invalid pattern \"\\r\\n\\\"[\": invalid range pattern"
        );
        let long = format!("{}[", "x".repeat(1_000));
        let text = error(long.as_bytes());
        assert!(text.len() < 200, "{text}");
        assert!(text.starts_with(&format!("invalid pattern \"{}\"...: ", "x".repeat(100))));
    }

    #[test]
    fn keys_that_are_not_utf8_are_matched_with_replacement_characters() {
        let matches = |pattern: &str, key: &[u8]| {
            scan_matches(&Glob::compile(pattern.as_bytes()).unwrap(), key)
        };
        assert!(matches("*", b"\xff\xfe"));
        assert!(matches("bin*", b"bin\xff\x00"));
        assert!(matches("bin?", b"bin\xff"));
        assert!(matches("bin\u{fffd}", b"bin\xff"));
        assert!(matches("bin[\u{fffd}]x", b"bin\x80x"));
        assert!(matches("\0*", b"\x00\x80\r\n\xff"));
        assert!(!matches("bin", b"bin\xff"));
    }

    #[test]
    fn literal_prefixes() {
        let prefix = |pattern: &str| Glob::compile(pattern.as_bytes()).unwrap().prefix;
        assert_eq!(prefix("user:*"), b"user:");
        assert_eq!(prefix("a\\b?"), b"a\\b");
        assert_eq!(prefix("ab[c]"), b"ab");
        assert_eq!(prefix("*"), b"");
        assert_eq!(prefix("é?"), "é".as_bytes());
        assert_eq!(
            prefix("x\u{fffd}y"),
            b"x",
            "U+FFFD also stands for invalid bytes"
        );
        assert_eq!(prefix("plain"), b"plain");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// Patterns and keys over a small alphabet with every metacharacter, U+FFFD and
        /// invalid bytes, so that shortcuts, prefixes and glob meet often.
        #[test]
        fn shortcuts_agree_with_glob(
            pattern in "[ab*?\\[\\]!^/\u{fffd}-]{0,6}",
            key in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'b', b'*', b'/', b'[', 0xff, 0xef, 0xbf, 0xbd]),
                0..7,
            ),
        ) {
            if let Ok(glob) = Glob::compile(pattern.as_bytes()) {
                let text = String::from_utf8_lossy(&key);
                let expected = Pattern::new(&pattern).unwrap().matches_with(&text, OPTIONS);
                proptest::prop_assert_eq!(scan_matches(&glob, &key), expected);
            }
        }
    }

    #[test]
    fn hostile_patterns_end() {
        let key = "a".repeat(5_000);
        let pattern = format!("{}b", "*a".repeat(50));
        assert!(!matches(&pattern, &key));
    }
}
