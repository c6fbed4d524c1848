//! `NativeKeys`: the lazy SCAN pager behind `client.keys(pattern)`.

use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;

use crate::bindings::Pending;
use crate::bridge::{self, buffer};

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

    fn page_pending(&self) -> Pending<Option<Vec<bytes::Bytes>>> {
        let keys = self.keys.clone();
        Pending::spawn(async move { keys.lock().await.next_page().await })
    }
}

fn page(keys: Option<Vec<bytes::Bytes>>) -> Option<Vec<Buffer>> {
    keys.map(|keys| keys.iter().map(buffer).collect())
}

#[napi]
impl NativeKeys {
    /// The next page of keys, or `null` when there are no more.
    #[napi]
    pub fn next_page<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        bridge::promise(env, self.page_pending(), |_, keys| Ok(page(keys)))
    }

    #[napi]
    pub fn next_page_sync(&self, env: &Env) -> napi::Result<Option<Vec<Buffer>>> {
        bridge::wait(env, self.page_pending()).map(page)
    }
}
