//! The server's request path: arbitrary sequences of payloads, timestamps, fencing tokens,
//! clients and clock jumps through the engine. It must never panic, must answer every request,
//! and every version it reports must be a valid HLC that was not issued before.
#![no_main]
use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use statestore::protocol::{Hlc, Response};
use statestore_server::engine::{Engine, EngineConfig, RequestContext};

#[derive(Debug, Arbitrary)]
struct Step {
    payload: Vec<u8>,
    timestamp: Option<String>,
    fencing_token: Option<String>,
    client: u8,
    advance_ms: u16,
    drop_client: bool,
}

const BASE_MS: u64 = 1_700_000_000_000;

fuzz_target!(|steps: Vec<Step>| {
    let mut engine = Engine::new(EngineConfig {
        max_keys: Some(16),
        ..EngineConfig::default()
    });
    let mut now_ms = BASE_MS;
    let clients = ["a", "b", "c", "d"];
    for step in steps {
        now_ms += u64::from(step.advance_ms);
        let client_id = clients[usize::from(step.client) % clients.len()];
        if step.drop_client {
            engine.drop_client(client_id);
        }
        let ctx = RequestContext {
            client_id,
            timestamp: step.timestamp.as_deref(),
            fencing_token: step.fencing_token.as_deref(),
            persist: false,
            now_ms,
        };
        let outcome = engine.apply_payload(&Bytes::from(step.payload), &ctx);
        let encoded = outcome.response.encode();
        assert_eq!(Response::decode(&encoded).as_ref(), Ok(&outcome.response));
        if let Some(version) = &outcome.version {
            assert_eq!(version.to_string().parse::<Hlc>().as_ref(), Ok(version));
        }
        for notice in engine.expire(now_ms) {
            assert!(clients.contains(&&*notice.client_id));
        }
    }
});
