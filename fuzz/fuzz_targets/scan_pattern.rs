//! SCAN patterns: any pattern over any keys, paged through the engine with small pages. It must
//! never panic, and must list exactly the keys the `glob` crate's `Pattern` matches (keys that
//! are not UTF-8 as their text with U+FFFD), answering an error exactly for the patterns glob
//! rejects or that are not UTF-8.
#![no_main]
use std::collections::BTreeSet;

use arbitrary::Arbitrary;
use bytes::Bytes;
use glob::{MatchOptions, Pattern};
use libfuzzer_sys::fuzz_target;
use statestore::protocol::{Hlc, Response};
use statestore_server::engine::{Engine, EngineConfig, RequestContext};

#[derive(Debug, Arbitrary)]
struct Input {
    pattern: Vec<u8>,
    keys: Vec<Vec<u8>>,
    page_keys: u8,
}

const NOW_MS: u64 = 1_700_000_000_000;

fn resp(args: &[&[u8]]) -> Bytes {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    Bytes::from(out)
}

fuzz_target!(|input: Input| {
    let mut engine = Engine::new(EngineConfig {
        scan_page_keys: usize::from(input.page_keys % 8) + 1,
        ..EngineConfig::default()
    });
    let ts = Hlc::new(NOW_MS, "fuzz").to_string();
    let ctx = RequestContext {
        client_id: "fuzz",
        timestamp: Some(&ts),
        fencing_token: None,
        persist: false,
        now_ms: NOW_MS,
    };
    let keys: BTreeSet<Vec<u8>> = input.keys.into_iter().filter(|k| !k.is_empty()).collect();
    for key in &keys {
        let outcome = engine.apply_payload(&resp(&[b"SET", key, b"v"]), &ctx);
        assert_eq!(outcome.response, Response::Ok);
    }
    let oracle = std::str::from_utf8(&input.pattern)
        .ok()
        .and_then(|text| Pattern::new(text).ok());
    let mut listed = Vec::new();
    let mut token: Option<Bytes> = None;
    let mut ended = false;
    // Every page examines at least one key, so a scan has at most one page per key.
    for _ in 0..keys.len().max(1) {
        let payload = match &token {
            Some(token) => resp(&[b"SCAN", &input.pattern, token]),
            None => resp(&[b"SCAN", &input.pattern]),
        };
        let response = engine.apply_payload(&payload, &ctx).response;
        assert_eq!(Response::decode(&response.encode()).as_ref(), Ok(&response));
        let page = match response {
            Response::Scan(page) => page,
            Response::Error(error) => {
                assert!(oracle.is_none(), "valid pattern refused: {error:?}");
                return;
            }
            other => panic!("SCAN answered {other:?}"),
        };
        listed.extend(page.keys.iter().map(|k| k.to_vec()));
        match page.token {
            Some(next) => token = Some(next),
            None => {
                ended = true;
                break;
            }
        }
    }
    assert!(ended, "the scan did not end");
    let oracle = oracle.expect("an invalid pattern was answered with keys");
    let options = MatchOptions {
        case_sensitive: true,
        require_literal_separator: false,
        require_literal_leading_dot: false,
    };
    let expected: Vec<Vec<u8>> = keys
        .into_iter()
        .filter(|key| oracle.matches_with(&String::from_utf8_lossy(key), options))
        .collect();
    assert_eq!(listed, expected);
});
