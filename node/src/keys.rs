//! `NativeKeys`: the lazy SCAN pager behind `client.keys(pattern)`.

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::bridge::{self, Call, JsBuffer, Out, Returned};
use statestore::bindings::Pending;

#[napi]
pub struct NativeKeys {
    // One page request at a time: the pager holds SCAN's continuation state.
    keys: Arc<tokio::sync::Mutex<statestore::Keys>>,
    out: Out,
}

impl NativeKeys {
    pub(crate) fn new(keys: statestore::Keys, out: Out) -> NativeKeys {
        NativeKeys {
            keys: Arc::new(tokio::sync::Mutex::new(keys)),
            out,
        }
    }
}

#[napi]
impl NativeKeys {
    /// The next page of keys, or `null` when there are no more (`call`: see `NativeCall`).
    #[napi(
        ts_return_type = "Buffer[] | null | Promise<Buffer[] | null>",
        catch_unwind
    )]
    pub fn next_page<'e>(
        &self,
        env: &'e Env,
        call: Call,
    ) -> napi::Result<Returned<'e, Option<Vec<JsBuffer>>>> {
        let keys = self.keys.clone();
        let pending = Pending::spawn(async move { keys.lock().await.next_page().await });
        let out = self.out;
        bridge::run(env, call, pending, move |_, keys| {
            Ok(keys.map(|keys| keys.iter().map(|key| out.bytes(key)).collect()))
        })
    }
}
