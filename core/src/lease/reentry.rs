//! The locks whose update function is running on this thread. A blocking wait for one of them
//! from inside that function (a nested update, or taking the lock again) could only end when
//! the function returns, which it never would: such a wait fails at once instead.

use std::cell::RefCell;

use bytes::Bytes;

use crate::{Error, Result};

thread_local! {
    /// (client id, lock name) of each update function running on this thread, innermost last.
    static RUNNING: RefCell<Vec<(String, Bytes)>> = const { RefCell::new(Vec::new()) };
}

/// While alive, the update function of the lock `name` on the client `client_id` runs on this
/// thread. Not `Send`: it must end on the thread it began on.
#[derive(Debug)]
#[must_use = "the scope ends when dropped"]
pub struct CallbackScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

pub(super) fn enter(client_id: &str, name: &Bytes) -> CallbackScope {
    RUNNING.with(|running| {
        running
            .borrow_mut()
            .push((client_id.to_owned(), name.clone()))
    });
    CallbackScope {
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        RUNNING.with(|running| running.borrow_mut().pop());
    }
}

/// Fails if the update function of the lock `name` on the client `client_id` is running on
/// this thread.
pub(super) fn check(client_id: &str, name: &Bytes) -> Result<()> {
    let inside = RUNNING.with(|running| {
        running
            .borrow()
            .iter()
            .any(|(client, lock)| client == client_id && lock == name)
    });
    if inside {
        return Err(Error::InvalidArgument(format!(
            "the lock {:?} is held by the update whose function is running: waiting for it \
             from inside that function would wait for itself forever (finish the update \
             first, or use another lock)",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_running_function_s_own_lock_on_its_own_thread_is_refused() {
        let name = Bytes::from_static(b"lock");
        assert!(check("c1", &name).is_ok());
        {
            let _outer = enter("c1", &name);
            assert!(check("c1", &name).is_err());
            assert!(check("c2", &name).is_ok());
            assert!(check("c1", &Bytes::from_static(b"other")).is_ok());
            let refused = std::thread::spawn(move || check("c1", &Bytes::from_static(b"lock")));
            assert!(refused.join().unwrap().is_ok());
        }
        assert!(check("c1", &name).is_ok());
    }
}
