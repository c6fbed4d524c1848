//! SCAN rules on the engine, driven through payloads as the service drives them: stable
//! paging while keys come and go, every rule of the pattern dialect, binary keys, invalid
//! patterns, page bounds, expiry and malformed tokens.

#[path = "support/wire.rs"]
mod wire;

use std::collections::BTreeSet;

use bytes::Bytes;
use statestore::protocol::{Hlc, Response, ScanPage, ServiceError};
use statestore_server::engine::{Engine, EngineConfig, RequestContext, INVALID_TOKEN};

const NOW: u64 = 1_700_000_000_000;

fn resp(args: &[&[u8]]) -> Bytes {
    Bytes::from(wire::resp(args))
}

struct Store {
    engine: Engine,
    now: u64,
}

impl Store {
    fn new(config: EngineConfig) -> Self {
        Self {
            engine: Engine::new(config),
            now: NOW,
        }
    }

    fn with_page(keys: usize) -> Self {
        Self::new(EngineConfig {
            scan_page_keys: keys,
            ..EngineConfig::default()
        })
    }

    fn apply(&mut self, args: &[&[u8]]) -> Response {
        let ts = Hlc {
            wall_ms: self.now,
            counter: 0,
            node: "c".into(),
        }
        .to_string();
        let ctx = RequestContext {
            client_id: "c",
            timestamp: Some(&ts),
            fencing_token: None,
            persist: false,
            now_ms: self.now,
        };
        self.engine.apply_payload(&resp(args), &ctx).response
    }

    fn set(&mut self, key: &[u8]) {
        assert_eq!(self.apply(&[b"SET", key, b"v"]), Response::Ok);
    }

    fn del(&mut self, key: &[u8]) {
        assert_eq!(self.apply(&[b"DEL", key]), Response::Integer(1));
    }

    /// One page; panics on anything but a page.
    fn page(&mut self, pattern: &[u8], token: Option<&Bytes>) -> ScanPage {
        let response = match token {
            Some(token) => self.apply(&[b"SCAN", pattern, token]),
            None => self.apply(&[b"SCAN", pattern]),
        };
        match response {
            Response::Scan(page) => page,
            other => panic!("SCAN answered {other:?}"),
        }
    }

    /// Every page of a scan, with `between` called after each page that has a successor.
    fn scan_with(
        &mut self,
        pattern: &[u8],
        mut between: impl FnMut(&mut Self, usize),
    ) -> Vec<Bytes> {
        let mut keys = Vec::new();
        let mut token = None;
        for pages in 0.. {
            let page = self.page(pattern, token.as_ref());
            keys.extend(page.keys);
            match page.token {
                Some(next) => token = Some(next),
                None => return keys,
            }
            assert!(pages < 1_000_000, "the scan does not end");
            between(self, pages);
        }
        unreachable!()
    }

    fn scan(&mut self, pattern: &[u8]) -> Vec<Bytes> {
        self.scan_with(pattern, |_, _| {})
    }
}

fn names(keys: &[&str]) -> BTreeSet<Bytes> {
    keys.iter()
        .map(|k| Bytes::copy_from_slice(k.as_bytes()))
        .collect()
}

fn as_set(keys: Vec<Bytes>) -> BTreeSet<Bytes> {
    let count = keys.len();
    let set: BTreeSet<Bytes> = keys.into_iter().collect();
    assert_eq!(set.len(), count, "a key was listed twice");
    set
}

#[test]
fn stable_keys_are_listed_exactly_once_while_keys_come_and_go() {
    let mut store = Store::with_page(97);
    let mut rng = fastrand::Rng::with_seed(8);
    let key = |i: u32| Bytes::from(format!("key:{i:05}"));
    for i in 0..10_000 {
        store.set(&key(i));
    }
    // Deleted before the scan starts: never listed.
    let deleted_before: BTreeSet<Bytes> = (0..10_000).step_by(7).map(key).collect();
    for k in &deleted_before {
        store.del(k);
    }
    // Volatile keys are deleted, re-created or added during the scan; all others are stable.
    let volatile: BTreeSet<Bytes> = (1..10_000)
        .filter(|i| i % 7 != 0 && i % 11 == 0)
        .map(key)
        .collect();
    let mut present: BTreeSet<Bytes> = volatile.clone();
    let mut added = 0u32;
    let listed = store.scan_with(b"*", |store, _| {
        for _ in 0..20 {
            // New keys anywhere in the order, including right around the scan's position.
            let fresh = Bytes::from(format!("key:{:05}+{added}", rng.u32(0..10_000)));
            added += 1;
            store.set(&fresh);
            let victim = volatile.iter().nth(rng.usize(..volatile.len())).cloned();
            if let Some(victim) = victim {
                if present.remove(&victim) {
                    store.del(&victim);
                } else {
                    store.set(&victim);
                    present.insert(victim);
                }
            }
            // Overwriting a stable key does not move it.
            let stable = key(rng.u32(0..10_000));
            if !deleted_before.contains(&stable) && !volatile.contains(&stable) {
                store.set(&stable);
            }
        }
    });
    assert!(added > 1_000, "the scan had {added} additions only");
    let listed = as_set(listed);
    let stable: BTreeSet<Bytes> = (0..10_000)
        .map(key)
        .filter(|k| !deleted_before.contains(k) && !volatile.contains(k))
        .collect();
    let missing: Vec<_> = stable.difference(&listed).collect();
    assert!(missing.is_empty(), "stable keys not listed: {missing:?}");
    let resurrected: Vec<_> = deleted_before.intersection(&listed).collect();
    assert!(
        resurrected.is_empty(),
        "deleted keys listed: {resurrected:?}"
    );
}

#[test]
fn a_scan_without_changes_lists_every_key_in_byte_order() {
    let mut store = Store::with_page(3);
    let keys = names(&["b", "a", "ab", "c", "aa", "ba", "z", "y", "x", "\u{e9}"]);
    for k in &keys {
        store.set(k);
    }
    let listed = store.scan(b"*");
    assert_eq!(listed, keys.into_iter().collect::<Vec<_>>());
}

#[test]
fn every_rule_of_the_pattern_dialect() {
    let mut store = Store::with_page(4);
    let keys = [
        "user:1", "user:2", "user:10", "user:a", "users", "usr:1", "hello", "hallo", "hxllo",
        "hllo", "heeello", "a*b", "a?b", "axb", "[x]", "x", "a\\b", "-", "]",
    ];
    for k in keys {
        store.set(k.as_bytes());
    }
    let cases: &[(&str, &[&str])] = &[
        ("*", &keys),
        ("user:*", &["user:1", "user:2", "user:10", "user:a"]),
        ("user:?", &["user:1", "user:2", "user:a"]),
        ("user:[0-9]", &["user:1", "user:2"]),
        ("user:[0-9]*", &["user:1", "user:2", "user:10"]),
        ("user:[!0-9]", &["user:a"]),
        ("user:[^0-9]", &["user:1", "user:2"]),
        ("user:[9-0]", &[]),
        (
            "us*",
            &["user:1", "user:2", "user:10", "user:a", "users", "usr:1"],
        ),
        ("h?llo", &["hello", "hallo", "hxllo"]),
        ("h*llo", &["hello", "hallo", "hxllo", "hllo", "heeello"]),
        ("h[ae]llo", &["hello", "hallo"]),
        ("h[!e]llo", &["hallo", "hxllo"]),
        ("h[a-b]llo", &["hallo"]),
        ("a[*]b", &["a*b"]),
        ("a[?]b", &["a?b"]),
        ("a\\*b", &["a\\b"]),
        ("a\\?b", &[]),
        ("a?b", &["a*b", "a?b", "axb", "a\\b"]),
        ("\\[x\\]", &[]),
        ("[[]x]", &["[x]"]),
        ("[[]x[]]", &["[x]"]),
        ("a\\b", &["a\\b"]),
        ("[\\-]", &["-"]),
        ("[]]", &["]"]),
        ("[\\]]", &[]),
        ("*1*", &["user:1", "user:10", "usr:1"]),
        ("nothing*", &[]),
        ("", &[]),
    ];
    for (pattern, expected) in cases {
        let listed = as_set(store.scan(pattern.as_bytes()));
        assert_eq!(listed, names(expected), "pattern {pattern:?}");
    }
}

#[test]
fn binary_keys_are_matched_and_listed_byte_for_byte() {
    let mut store = Store::with_page(2);
    let keys: [&[u8]; 6] = [
        b"\x00",
        b"\x00\x01",
        b"bin\r\n\x00",
        b"bin\xff\xfe",
        b"bin*",
        b"\xff",
    ];
    for k in keys {
        store.set(k);
    }
    let set = |keys: &[&[u8]]| -> BTreeSet<Bytes> {
        keys.iter().map(|k| Bytes::copy_from_slice(k)).collect()
    };
    assert_eq!(as_set(store.scan(b"*")), set(&keys));
    assert_eq!(
        as_set(store.scan(b"bin*")),
        set(&[b"bin\r\n\x00", b"bin\xff\xfe", b"bin*"])
    );
    assert_eq!(as_set(store.scan(b"bin[*]")), set(&[b"bin*"]));
    assert_eq!(as_set(store.scan(b"\x00?")), set(&[b"\x00\x01"]));
    // A key that is not UTF-8 is matched as its text with U+FFFD for each invalid sequence.
    assert_eq!(as_set(store.scan(b"bin??")), set(&[b"bin\xff\xfe"]));
    assert_eq!(as_set(store.scan("\u{fffd}*".as_bytes())), set(&[b"\xff"]));
    assert_eq!(
        as_set(store.scan("*[\r\u{fffd}]*".as_bytes())),
        set(&[b"bin\r\n\x00", b"bin\xff\xfe", b"\xff"])
    );
}

#[test]
fn pages_are_bounded_by_keys_and_bytes() {
    let mut store = Store::new(EngineConfig {
        scan_page_keys: 50,
        scan_page_bytes: 600,
        ..EngineConfig::default()
    });
    let mut all = BTreeSet::new();
    for i in 0..500 {
        let key = Bytes::from(format!("k{i:03}{}", "x".repeat(i % 40)));
        store.set(&key);
        all.insert(key);
    }
    let mut token = None;
    let mut listed = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.page(b"*", token.as_ref());
        pages += 1;
        assert!(page.keys.len() <= 50, "{} keys on a page", page.keys.len());
        let encoded = Response::Scan(page.clone()).encode();
        assert!(encoded.len() <= 600, "a page of {} bytes", encoded.len());
        assert!(
            !page.keys.is_empty(),
            "a page of `*` with keys left is never empty"
        );
        listed.extend(page.keys);
        match page.token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert!(pages > 10, "only {pages} pages");
    assert_eq!(as_set(listed), all);
}

#[test]
fn a_selective_pattern_on_a_large_store_gets_empty_pages_that_move_on() {
    let mut store = Store::with_page(5);
    for i in 0..1_000 {
        store.set(format!("{i:04}").as_bytes());
    }
    let mut token = None;
    let mut empty_pages = 0;
    let mut listed = Vec::new();
    loop {
        let page = store.page(b"*99", token.as_ref());
        empty_pages += usize::from(page.keys.is_empty());
        listed.extend(page.keys);
        match page.token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert!(empty_pages > 0);
    assert_eq!(listed.len(), 10);
}

#[test]
fn expired_keys_are_never_listed() {
    let mut store = Store::with_page(10);
    store.set(b"stays");
    assert_eq!(
        store.apply(&[b"SET", b"goes", b"v", b"PX", b"100"]),
        Response::Ok
    );
    assert_eq!(as_set(store.scan(b"*")), names(&["goes", "stays"]));
    store.now += 100;
    assert_eq!(as_set(store.scan(b"*")), names(&["stays"]));
}

#[test]
fn invalid_patterns_get_an_error_naming_them() {
    let mut store = Store::with_page(10);
    store.set(b"k1");
    let invalid = |text: &str| Response::Error(ServiceError::Unknown(text.to_owned()));
    let cases: [(&[u8], &str); 5] = [
        (b"k[1", "invalid pattern \"k[1\": invalid range pattern"),
        (
            b"k**",
            "invalid pattern \"k**\": recursive wildcards must form a single path component",
        ),
        (
            b"***",
            "invalid pattern \"***\": wildcards are either regular `*` or recursive `**`",
        ),
        (
            b"[\x80-\xff]*",
            "invalid pattern \"[\u{fffd}-\u{fffd}]*\": not UTF-8 text",
        ),
        (
            b"\r\n[",
            "invalid pattern \"\\r\\n[\": invalid range pattern",
        ),
    ];
    for (pattern, text) in cases {
        let answer = store.apply(&[b"SCAN", pattern]);
        assert_eq!(answer, invalid(text), "pattern {pattern:?}");
        assert_eq!(Response::decode(&answer.encode()), Ok(answer));
        // With a token too: the pattern is checked first.
        assert_eq!(store.apply(&[b"SCAN", pattern, b"1:6b"]), invalid(text));
    }
    assert_eq!(
        invalid("invalid pattern \"k[1\": invalid range pattern").encode(),
        Bytes::from_static(b"-ERR invalid pattern \"k[1\": invalid range pattern\r\n")
    );
    assert_eq!(as_set(store.scan(b"k[1]")), names(&["k1"]));
}

#[test]
fn malformed_tokens_get_a_clear_error() {
    let mut store = Store::with_page(1);
    store.set(b"a");
    store.set(b"b");
    let invalid = Response::Error(ServiceError::Unknown(INVALID_TOKEN.to_owned()));
    for bad in [
        &b"garbage"[..],
        b"1:",
        b"1:xyz",
        b"1:0",
        b"2:61",
        b"\xff\x00",
    ] {
        assert_eq!(store.apply(&[b"SCAN", b"*", bad]), invalid, "token {bad:?}");
    }
    assert_eq!(
        invalid.encode(),
        Bytes::from_static(b"-ERR invalid continuation token\r\n")
    );
    assert_eq!(
        store.apply(&[b"SCAN"]),
        Response::Error(ServiceError::WrongNumberOfArguments)
    );
    assert_eq!(
        store.apply(&[b"SCAN", b"*", b"1:61", b"extra"]),
        Response::Error(ServiceError::WrongNumberOfArguments)
    );
}

#[test]
fn a_token_resumes_after_its_position_even_if_that_key_is_gone() {
    let mut store = Store::with_page(1);
    for k in ["a", "b", "c"] {
        store.set(k.as_bytes());
    }
    let first = store.page(b"*", None);
    assert_eq!(first.keys, vec![Bytes::from_static(b"a")]);
    store.del(b"a");
    store.del(b"b");
    let second = store.page(b"*", first.token.as_ref());
    assert_eq!(second.keys, vec![Bytes::from_static(b"c")]);
    assert_eq!(second.token, None);
}

#[test]
fn a_prefix_scan_visits_only_its_range() {
    // With a page of one key, a prefix scan over keys around the prefix must not stop early
    // or wander outside it.
    let mut store = Store::with_page(1);
    let keys: [&[u8]; 8] = [b"p", b"pa", b"pb", b"pc", b"q", b"o", b"p\x00", b"p\xff"];
    for k in keys {
        store.set(k);
    }
    let expected: BTreeSet<Bytes> = [&b"pa"[..], b"pb", b"pc", b"p\x00", b"p\xff"]
        .iter()
        .map(|k| Bytes::copy_from_slice(k))
        .collect();
    assert_eq!(as_set(store.scan(b"p?")), expected);
    assert_eq!(as_set(store.scan(b"p")), names(&["p"]));
    let mut pages = 0;
    store.scan_with(b"pb*", |_, _| pages += 1);
    assert_eq!(pages, 0, "a one-key range is one page");
}

mod properties {
    use std::collections::BTreeSet;

    use bytes::Bytes;
    use proptest::prelude::*;
    use statestore::protocol::Response;
    use statestore_server::engine::EngineConfig;

    use super::Store;

    /// Short keys over a tiny alphabet, so keys share prefixes and tokens fall between them.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), Just(0xff)],
            1..5,
        )
    }

    /// Patterns, each with what it means spelled out independently of the server's matcher.
    type Matcher = fn(&[u8]) -> bool;
    const PATTERNS: [(&[u8], Matcher); 5] = [
        (b"*", |_| true),
        (b"a*", |k| k.first() == Some(&b'a')),
        (b"*b", |k| k.last() == Some(&b'b')),
        (b"?\x00*", |k| k.get(1) == Some(&0)),
        (b"[!a]*", |k| k.first().is_some_and(|&b| b != b'a')),
    ];

    #[derive(Debug, Clone)]
    enum Change {
        Set(Vec<u8>),
        Del(Vec<u8>),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![key().prop_map(Change::Set), key().prop_map(Change::Del)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever changes happen between pages, and whatever the page limits: no key is
        /// listed twice, every listed key matches and existed when its page was cut, and
        /// every key present for the whole scan is listed.
        #[test]
        fn scans_are_exact_under_any_interleaving(
            initial in proptest::collection::vec(key(), 0..40),
            between in proptest::collection::vec(proptest::collection::vec(change(), 0..4), 0..40),
            page_keys in 1usize..6,
            page_bytes in 40usize..200,
            pattern in 0..PATTERNS.len(),
        ) {
            let (pattern, matches) = PATTERNS[pattern];
            let mut store = Store::new(EngineConfig {
                scan_page_keys: page_keys,
                scan_page_bytes: page_bytes,
                ..EngineConfig::default()
            });
            let mut present: BTreeSet<Vec<u8>> = BTreeSet::new();
            for k in &initial {
                store.set(k);
                present.insert(k.clone());
            }
            let mut stable = present.clone();
            let mut listed = Vec::new();
            let mut token: Option<Bytes> = None;
            let mut step = 0;
            loop {
                let response = match &token {
                    Some(t) => store.apply(&[b"SCAN", pattern, t]),
                    None => store.apply(&[b"SCAN", pattern]),
                };
                let Response::Scan(page) = response else {
                    panic!("SCAN answered {response:?}");
                };
                for k in &page.keys {
                    prop_assert!(present.contains(&k[..]), "listed a key that is not there");
                    prop_assert!(matches(k), "listed a key that does not match");
                }
                listed.extend(page.keys);
                let Some(next) = page.token else { break };
                token = Some(next);
                for change in between.get(step).into_iter().flatten() {
                    match change {
                        Change::Set(k) => {
                            store.set(k);
                            present.insert(k.clone());
                        }
                        Change::Del(k) => {
                            if present.remove(k) {
                                store.del(k);
                            }
                            stable.remove(k);
                        }
                    }
                }
                step += 1;
                prop_assert!(step < 10_000, "the scan does not end");
            }
            let count = listed.len();
            let listed: BTreeSet<Vec<u8>> = listed.into_iter().map(|k| k.to_vec()).collect();
            prop_assert_eq!(listed.len(), count, "a key was listed twice");
            for k in stable.iter().filter(|k| matches(k)) {
                prop_assert!(listed.contains(k), "stable key {:?} not listed", k);
            }
        }
    }
}
