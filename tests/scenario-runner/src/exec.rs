//! The interpreter of steps, written once for both flavours.
//!
//! The async and the blocking API have the same names and shapes; they differ in `async`/
//! `.await` and in the types behind the names `Client`, `Lock`, `Lease` and `Election`. So the
//! interpreter is a macro, expanded in `run_async` (with `wait!(x)` = `x.await`) and in
//! `run_blocking` (with `wait!(x)` = `x`), each of which also provides `Stream`,
//! `next_event` and `lease_lost`.

/// Defines `struct Run` (the handles of one scenario) and its `run`, `exec` and `cleanup`,
/// `async` when invoked as `interpreter!(async)`.
macro_rules! interpreter {
    ($($asyncness:tt)?) => {
        /// The handles of one scenario.
        struct Run {
            server: std::net::SocketAddr,
            ctx: $crate::data::Ctx,
            clients: std::collections::HashMap<String, Client>,
            streams: std::collections::HashMap<String, Stream>,
            guards: std::collections::HashMap<String, LockGuard>,
            leases: std::collections::HashMap<String, Lease>,
            elections: std::collections::HashMap<String, Election>,
        }

        impl Run {
            fn new(server: std::net::SocketAddr, run: &str, name: &str) -> Run {
                Run {
                    server,
                    ctx: $crate::data::Ctx::new(run, name),
                    clients: Default::default(),
                    streams: Default::default(),
                    guards: Default::default(),
                    leases: Default::default(),
                    elections: Default::default(),
                }
            }

            fn connect_options(
                &self,
                options: Option<&serde_json::Value>,
            ) -> Result<statestore::Result<statestore::ConnectOptions>, String> {
                $crate::convert::connect_options(
                    options,
                    &self.server.ip().to_string(),
                    self.server.port(),
                )
            }

            /// Runs the steps; `Err` describes the first failure.
            $($asyncness)? fn run(
                &mut self,
                scenario: &$crate::scenario::Scenario,
                catalogue: &$crate::scenario::Catalogue,
            ) -> Result<(), String> {
                for name in &scenario.clients {
                    let options = self.connect_options(None)?.map_err(|e| e.to_string())?;
                    let client = wait!(Client::connect(options))
                        .map_err(|e| format!("connecting client {name:?}: {e}"))?;
                    self.clients.insert(name.clone(), client);
                }
                for step in &scenario.steps {
                    let outcome = wait!(self.exec(step));
                    $crate::runner::finish_step(step, catalogue, &mut self.ctx, outcome)?;
                }
                Ok(())
            }

            /// Releases what the scenario still holds and closes its clients.
            $($asyncness)? fn cleanup(&mut self) {
                self.streams.clear();
                for (_, guard) in self.guards.drain() {
                    let _ = wait!(guard.release());
                }
                self.leases.clear();
                self.elections.clear();
                for (_, client) in self.clients.drain() {
                    let _ = wait!(client.close());
                }
            }

            $($asyncness)? fn exec(
                &mut self,
                step: &$crate::scenario::Step,
            ) -> $crate::runner::StepOutcome {
                use $crate::convert::{self, UpdateFn};
                use $crate::data::{fields, Args, Val};

                fn handle<'m, T>(
                    map: &'m std::collections::HashMap<String, T>,
                    kind: &str,
                    name: &str,
                ) -> Result<&'m T, String> {
                    map.get(name).ok_or_else(|| format!("no {kind} named {name:?}"))
                }
                fn fresh<T>(
                    map: &std::collections::HashMap<String, T>,
                    kind: &str,
                    name: &str,
                ) -> Result<(), String> {
                    if map.contains_key(name) {
                        return Err(format!("a {kind} named {name:?} exists already"));
                    }
                    Ok(())
                }

                let args = Args { map: &step.args, ctx: &self.ctx };
                let client = || handle(&self.clients, "client", &args.text("client")?);
                let lease = || handle(&self.leases, "lease", &args.text("lease")?);
                let election = || handle(&self.elections, "election", &args.text("election")?);
                let result = match step.op.as_str() {
                    "connect" => {
                        let name = args.text("client")?;
                        fresh(&self.clients, "client", &name)?;
                        let options = call!(self.connect_options(step.args.get("options"))?);
                        let connected = call!(wait!(Client::connect(options)));
                        self.clients.insert(name, connected);
                        convert::empty()
                    }
                    "connect_url" => {
                        let name = args.text("client")?;
                        fresh(&self.clients, "client", &name)?;
                        let options = convert::url_options(
                            &args.text("url")?,
                            step.args.get("options"),
                            self.server,
                        )?;
                        let connected = match options {
                            Ok(options) => wait!(Client::connect(options)),
                            Err(error) => Err(error),
                        };
                        if let Err(error) = &connected {
                            convert::check_message(
                                &error.to_string(),
                                step.args.get("message_has"),
                                step.args.get("message_lacks"),
                            )?;
                        }
                        self.clients.insert(name, call!(connected));
                        convert::empty()
                    }
                    "close" => {
                        call!(wait!(client()?.close()));
                        convert::empty()
                    }
                    "set" => {
                        let set = client()?.set(
                            args.key("key")?,
                            args.bytes("value")?,
                            convert::set_options(&args)?,
                        );
                        convert::set_fields(&call!(wait!(set)))
                    }
                    "get" => {
                        let get = client()?
                            .get_with_timeout(args.key("key")?, args.opt_ms("timeout_ms")?);
                        convert::get_fields(call!(wait!(get)))
                    }
                    "delete" => {
                        let delete =
                            client()?.delete(args.key("key")?, convert::delete_options(&args)?);
                        convert::delete_fields(&call!(wait!(delete)))
                    }
                    "vdel" => {
                        let vdel = client()?.vdel(
                            args.key("key")?,
                            args.bytes("value")?,
                            convert::delete_options(&args)?,
                        );
                        convert::delete_fields(&call!(wait!(vdel)))
                    }
                    "get_many" => {
                        let get = client()?
                            .get_many_with_timeout(args.keys("keys")?, args.opt_ms("timeout_ms")?);
                        convert::get_many_fields(call!(wait!(get)))
                    }
                    "set_many" => {
                        let set =
                            client()?.set_many(args.items("items")?, convert::set_options(&args)?);
                        convert::set_many_fields(call!(wait!(set)))
                    }
                    "delete_many" => {
                        let delete = client()?
                            .delete_many(args.keys("keys")?, convert::delete_options(&args)?);
                        convert::delete_many_fields(call!(wait!(delete)))
                    }
                    "keys" => {
                        let keys = call!(wait!(client()?.keys_all(args.key("pattern")?)));
                        convert::keys_fields(&self.ctx, keys)?
                    }
                    "observe" => {
                        let name = args.text("stream")?;
                        fresh(&self.streams, "stream", &name)?;
                        let observation = call!(wait!(client()?.observe(args.key("key")?)));
                        self.streams.insert(name, Stream::Key(observation));
                        convert::empty()
                    }
                    "unobserve" => {
                        call!(wait!(client()?.unobserve(args.key("key")?)));
                        convert::empty()
                    }
                    "next_event" => {
                        let name = args.text("stream")?;
                        let timeout = args.ms("timeout_ms")?;
                        let stream = self
                            .streams
                            .get_mut(&name)
                            .ok_or_else(|| format!("no stream named {name:?}"))?;
                        return wait!(next_event(stream, timeout, &self.ctx));
                    }
                    "close_stream" => {
                        let name = args.text("stream")?;
                        self.streams
                            .remove(&name)
                            .ok_or_else(|| format!("no stream named {name:?}"))?;
                        convert::empty()
                    }
                    "lock" | "try_lock" => {
                        let name = args.text("guard")?;
                        fresh(&self.guards, "guard", &name)?;
                        let mut lock =
                            call!(Lock::new(client()?, args.key("name")?, args.ms("ttl_ms")?));
                        if let Some(timeout) = args.opt_ms("timeout_ms")? {
                            lock = lock.timeout(timeout);
                        }
                        if let Some(on) = args.opt_bool("auto_renew")? {
                            lock = lock.auto_renew(on);
                        }
                        if step.op == "lock" {
                            let guard = call!(wait!(lock.lock()));
                            let token = Val::hlc(Some(guard.fencing_token()));
                            self.guards.insert(name, guard);
                            fields([("token", token)])
                        } else {
                            match call!(wait!(lock.try_lock())) {
                                Some(guard) => {
                                    let token = Val::hlc(Some(guard.fencing_token()));
                                    self.guards.insert(name, guard);
                                    fields([("acquired", Val::Bool(true)), ("token", token)])
                                }
                                None => {
                                    fields([("acquired", Val::Bool(false)), ("token", Val::Null)])
                                }
                            }
                        }
                    }
                    "unlock" => {
                        let name = args.text("guard")?;
                        let guard = self
                            .guards
                            .remove(&name)
                            .ok_or_else(|| format!("no guard named {name:?}"))?;
                        call!(wait!(guard.release()));
                        convert::empty()
                    }
                    "lock_holder" => {
                        // Only a read: the TTL does not matter.
                        let ttl = std::time::Duration::from_secs(1);
                        let lock = call!(Lock::new(client()?, args.key("name")?, ttl));
                        fields([("holder", Val::opt_bytes(call!(wait!(lock.holder()))))])
                    }
                    "update" => {
                        let mut lock =
                            call!(Lock::new(client()?, args.key("name")?, args.ms("ttl_ms")?));
                        if let Some(timeout) = args.opt_ms("timeout_ms")? {
                            lock = lock.timeout(timeout);
                        }
                        let f = UpdateFn::from_args(&args)?;
                        let key = args.key("key")?;
                        let written = call!(wait!(lock.update(key, |old| f.apply(old))));
                        convert::update_fields(written)
                    }
                    "lease" => {
                        let name = args.text("lease")?;
                        fresh(&self.leases, "lease", &name)?;
                        let lease =
                            call!(Lease::new(client()?, args.key("key")?, args.bytes("holder")?));
                        let lease = lease.auto_renew(args.opt_bool("auto_renew")?.unwrap_or(false));
                        self.leases.insert(name, lease);
                        convert::empty()
                    }
                    "lease_try_acquire" => {
                        let outcome = call!(wait!(lease()?.try_acquire(args.ms("ttl_ms")?)));
                        convert::acquire_fields(outcome)
                    }
                    "lease_acquire" => {
                        let lease = lease()?;
                        let ttl = args.ms("ttl_ms")?;
                        let token = match args.opt_ms("timeout_ms")? {
                            Some(timeout) => call!(wait!(lease.acquire_timeout(ttl, timeout))),
                            None => call!(wait!(lease.acquire(ttl))),
                        };
                        fields([("token", Val::hlc(Some(&token)))])
                    }
                    "lease_renew" => {
                        call!(wait!(lease()?.renew()));
                        convert::empty()
                    }
                    "lease_release" => {
                        let released = call!(wait!(lease()?.release()));
                        fields([("released", Val::Bool(released))])
                    }
                    "lease_holder" => {
                        fields([("holder", Val::opt_bytes(call!(wait!(lease()?.holder()))))])
                    }
                    "lease_state" => convert::lease_state_fields(&lease()?.state()),
                    "lease_lost" => {
                        let timeout = args.ms("timeout_ms")?;
                        call!(wait!(lease_lost(lease()?, timeout)))
                    }
                    "election" => {
                        let name = args.text("election")?;
                        fresh(&self.elections, "election", &name)?;
                        let election = call!(Election::new(
                            client()?,
                            args.key("key")?,
                            args.bytes("candidate")?,
                            args.ms("ttl_ms")?
                        ));
                        self.elections.insert(name, election);
                        convert::empty()
                    }
                    "campaign" => {
                        let election = election()?;
                        let token = match args.opt_ms("timeout_ms")? {
                            Some(timeout) => call!(wait!(election.campaign_timeout(timeout))),
                            None => call!(wait!(election.campaign())),
                        };
                        fields([("token", Val::hlc(Some(&token)))])
                    }
                    "try_campaign" => {
                        convert::acquire_fields(call!(wait!(election()?.try_campaign())))
                    }
                    "resign" => {
                        call!(wait!(election()?.resign()));
                        convert::empty()
                    }
                    "leader" => {
                        fields([("leader", Val::opt_bytes(call!(wait!(election()?.leader()))))])
                    }
                    "observe_leader" => {
                        let name = args.text("stream")?;
                        fresh(&self.streams, "stream", &name)?;
                        let election = election()?;
                        let key = election.name().clone();
                        let observation = call!(wait!(election.observe()));
                        self.streams.insert(name, Stream::Leader(observation, key));
                        convert::empty()
                    }
                    other => return Err(format!("this runner does not know the op {other:?}")),
                };
                Ok(Ok(result))
            }
        }
    };
}

/// A library error as the step's outcome: `call!(result)` is the value, or returns
/// `Ok(Err(error))` from `exec`.
macro_rules! call {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(error) => return Ok(Err(error)),
        }
    };
}

pub(crate) use {call, interpreter};
