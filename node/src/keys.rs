//! `NativeKeys`: the lazy SCAN pager behind `client.keys(pattern)`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use napi::Env;
use napi_derive::napi;

use crate::bridge::{self, Call, JsBuffer, Out, Returned};
use statestore::bindings::Pending;

#[napi]
pub struct NativeKeys {
    // One page request at a time: the pager holds SCAN's continuation state.
    keys: Arc<tokio::sync::Mutex<statestore::Keys>>,
    // The keys of the last page not handed out yet.
    page: Arc<Mutex<VecDeque<Bytes>>>,
    out: Out,
}

impl NativeKeys {
    pub(crate) fn new(keys: statestore::Keys, out: Out) -> NativeKeys {
        NativeKeys {
            keys: Arc::new(tokio::sync::Mutex::new(keys)),
            page: Arc::default(),
            out,
        }
    }
}

fn pop(page: &Mutex<VecDeque<Bytes>>) -> Option<Bytes> {
    page.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
}

#[napi]
impl NativeKeys {
    /// The next key, or `null` past the last (`call`: see `NativeCall`): from the page
    /// fetched last, at once, or from the next page SCAN gives.
    #[napi(
        ts_return_type = "Buffer | null | Promise<Buffer | null>",
        catch_unwind
    )]
    pub fn next<'e>(
        &self,
        env: &'e Env,
        call: Call,
    ) -> napi::Result<Returned<'e, Option<JsBuffer>>> {
        let pending = match pop(&self.page) {
            Some(key) => Pending::ready(Ok(Some(key))),
            None => {
                let (keys, page) = (self.keys.clone(), self.page.clone());
                Pending::spawn(async move {
                    let mut keys = keys.lock().await;
                    loop {
                        if let Some(key) = pop(&page) {
                            return Ok(Some(key));
                        }
                        match keys.next_page().await? {
                            Some(keys) => {
                                page.lock().unwrap_or_else(|e| e.into_inner()).extend(keys)
                            }
                            None => return Ok(None),
                        }
                    }
                })
            }
        };
        let out = self.out;
        bridge::run(env, call, pending, move |_, key| {
            Ok(key.map(|key| out.bytes(&key)))
        })
    }
}
