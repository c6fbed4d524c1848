//! `NativeKeys`: the lazy SCAN pager behind `client.keys(pattern)`.

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::bindings::Pending;
use crate::bridge::{self, buffer, Call, JsBuffer, Returned};

#[napi]
pub struct NativeKeys {
    // One page request at a time: the pager holds SCAN's continuation state.
    keys: Arc<tokio::sync::Mutex<statestore::Keys>>,
}

impl NativeKeys {
    pub(crate) fn new(keys: statestore::Keys) -> NativeKeys {
        NativeKeys {
            keys: Arc::new(tokio::sync::Mutex::new(keys)),
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
        bridge::run(env, call, pending, |_, keys| {
            Ok(keys.map(|keys| keys.iter().map(buffer).collect()))
        })
    }
}
