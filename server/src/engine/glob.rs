//! SCAN patterns: glob matching over bytes with the rules of Redis' `stringmatchlen`.
//!
//! - `*` matches any run of bytes (also none), `?` exactly one byte;
//! - `[abc]` one byte of the set, `[a-z]` a range (reversed ends are swapped), `[^...]` the
//!   complement; inside brackets `\x` is the byte `x`; a missing `]` closes at the end;
//! - `\x` anywhere else is the byte `x`; a trailing lone `\` is itself.
//!
//! Patterns are compiled once per request; matching is iterative (one backtrack point per
//! `*`, as every other element is one byte), so a hostile pattern costs at most
//! pattern × key steps and never recursion.

/// One element of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Element {
    /// This byte.
    Byte(u8),
    /// `?`.
    AnyByte,
    /// `*`.
    Star,
    /// `[...]`: inclusive byte ranges (a single byte is a range of one).
    Class {
        negated: bool,
        ranges: Vec<(u8, u8)>,
    },
}

impl Element {
    fn matches(&self, byte: u8) -> bool {
        match self {
            Self::Byte(expected) => *expected == byte,
            Self::AnyByte => true,
            Self::Star => false,
            Self::Class { negated, ranges } => {
                let inside = ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&byte));
                inside != *negated
            }
        }
    }
}

/// A compiled SCAN pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    elements: Vec<Element>,
}

impl Glob {
    /// Compiles `pattern`. Every byte string is a valid pattern.
    pub fn compile(pattern: &[u8]) -> Self {
        let mut elements = Vec::new();
        let mut rest = pattern;
        while let Some((&byte, tail)) = rest.split_first() {
            rest = tail;
            let element = match byte {
                // Consecutive stars are one star.
                b'*' if elements.last() == Some(&Element::Star) => continue,
                b'*' => Element::Star,
                b'?' => Element::AnyByte,
                b'[' => {
                    let (class, tail) = compile_class(rest);
                    rest = tail;
                    class
                }
                b'\\' => match rest.split_first() {
                    Some((&escaped, tail)) => {
                        rest = tail;
                        Element::Byte(escaped)
                    }
                    None => Element::Byte(b'\\'),
                },
                other => Element::Byte(other),
            };
            elements.push(element);
        }
        Self { elements }
    }

    /// The bytes every matching key starts with (the pattern's leading literal bytes), so a
    /// scan only needs to visit that range of the ordered keys.
    pub fn literal_prefix(&self) -> Vec<u8> {
        self.elements
            .iter()
            .map_while(|element| match element {
                Element::Byte(byte) => Some(*byte),
                _ => None,
            })
            .collect()
    }

    /// Whether the whole of `key` matches.
    pub fn matches(&self, key: &[u8]) -> bool {
        let elements = &self.elements;
        let (mut e, mut k) = (0, 0);
        // The last star seen and the key position its match currently ends at: on a mismatch
        // the star swallows one more byte and matching resumes after it.
        let mut backtrack: Option<(usize, usize)> = None;
        while let Some(&byte) = key.get(k) {
            match elements.get(e) {
                Some(Element::Star) => {
                    backtrack = Some((e, k));
                    e += 1;
                    continue;
                }
                Some(element) if element.matches(byte) => {
                    e += 1;
                    k += 1;
                    continue;
                }
                _ => {}
            }
            match backtrack {
                Some((star, end)) => {
                    backtrack = Some((star, end + 1));
                    e = star + 1;
                    k = end + 1;
                }
                None => return false,
            }
        }
        elements
            .get(e..)
            .unwrap_or_default()
            .iter()
            .all(|element| *element == Element::Star)
    }
}

/// Compiles a class after its `[`; returns the class and what follows its `]`.
fn compile_class(mut rest: &[u8]) -> (Element, &[u8]) {
    let negated = rest.first() == Some(&b'^');
    if negated {
        rest = &rest[1..];
    }
    let mut ranges = Vec::new();
    loop {
        match rest {
            [] => break,
            [b']', tail @ ..] => {
                rest = tail;
                break;
            }
            [b'\\', escaped, tail @ ..] => {
                ranges.push((*escaped, *escaped));
                rest = tail;
            }
            [start, b'-', end, tail @ ..] => {
                ranges.push((*start.min(end), *start.max(end)));
                rest = tail;
            }
            [byte, tail @ ..] => {
                ranges.push((*byte, *byte));
                rest = tail;
            }
        }
    }
    (Element::Class { negated, ranges }, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, key: &str) -> bool {
        Glob::compile(pattern.as_bytes()).matches(key.as_bytes())
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("*", ""));
        assert!(matches("*", "anything"));
        assert!(matches("a*", "a"));
        assert!(matches("a*c", "abbbc"));
        assert!(!matches("a*c", "abbbd"));
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(matches("a**b", "ab"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(!matches("?", ""));
        assert!(matches("*?", "x"));
        assert!(!matches("", "x"));
        assert!(matches("", ""));
    }

    #[test]
    fn classes() {
        assert!(matches("[abc]", "b"));
        assert!(!matches("[abc]", "d"));
        assert!(matches("[a-c]x", "bx"));
        assert!(matches("[c-a]", "b"), "reversed range ends are swapped");
        assert!(!matches("[^a-c]", "b"));
        assert!(matches("[^a-c]", "d"));
        assert!(matches("[\\]]", "]"));
        assert!(matches("[\\-a]", "-"));
        assert!(matches("[a-]", "_"), "as in Redis, `a-]` is the range ]..a");
        assert!(matches("[ab", "b"), "a missing ] closes at the end");
        assert!(!matches("[]", "]"), "[] is an empty class");
        assert!(matches("[^]", "x"));
        assert!(!matches("[", "["));
    }

    #[test]
    fn escapes() {
        assert!(matches("a\\*", "a*"));
        assert!(!matches("a\\*", "ab"));
        assert!(matches("\\?", "?"));
        assert!(matches("\\[x]", "[x]"));
        assert!(matches("a\\", "a\\"), "a trailing backslash is itself");
    }

    #[test]
    fn binary_keys() {
        let glob = Glob::compile(b"\x00*\xff");
        assert!(glob.matches(b"\x00\x80\r\n\xff"));
        assert!(!glob.matches(b"\x00\x80"));
        assert!(Glob::compile(b"[\x80-\xff]").matches(b"\x90"));
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(Glob::compile(b"user:*").literal_prefix(), b"user:");
        assert_eq!(Glob::compile(b"a\\*b?").literal_prefix(), b"a*b");
        assert_eq!(Glob::compile(b"*").literal_prefix(), b"");
        assert_eq!(Glob::compile(b"[a]x").literal_prefix(), b"");
    }

    #[test]
    fn backtracking_stays_linear_per_star() {
        let key = "a".repeat(5_000);
        let pattern = format!("{}b", "*a".repeat(50));
        assert!(!matches(&pattern, &key));
    }
}
