//! The blocking [`Election`]: the same operations as [`crate::lease::Election`], for plain
//! threads.

use std::time::Duration;

use bytes::Bytes;

use super::Client;
use crate::lease::{AcquireOutcome, LeaderObservation, LeaseState, Loss};
use crate::protocol::Hlc;
use crate::Result;

/// One candidate in a leader election, for plain threads; see [`crate::lease::Election`].
/// Leadership changes come from [`Election::observe`], read with
/// [`LeaderObservation::next_timeout`].
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::blocking::{Client, Election};
/// use statestore::ConnectOptions;
///
/// let client = Client::connect(ConnectOptions::new("localhost", 1883))?;
/// let election = Election::new(&client, "leader/jobs", "node-a", Duration::from_secs(5))?;
/// election.campaign()?;
/// // ... lead, checking election.is_leader() ...
/// election.resign()?;
/// # Ok::<(), statestore::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    election: crate::lease::Election,
    client: Client,
}

impl Election {
    /// The candidate `candidate` in the election `name`; see
    /// [`crate::lease::Election::new`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::{Client, Election};
    /// # fn demo(client: &Client) -> statestore::Result<()> {
    /// let election = Election::new(client, "leader/jobs", "node-a", Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn new(
        client: &Client,
        name: impl Into<Bytes>,
        candidate: impl Into<Bytes>,
        ttl: Duration,
    ) -> Result<Election> {
        Ok(Election {
            election: crate::lease::Election::new(client.as_async(), name, candidate, ttl)?,
            client: client.clone(),
        })
    }

    /// The async election behind this one.
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.as_async().state()); }
    /// ```
    pub fn as_async(&self) -> &crate::lease::Election {
        &self.election
    }

    /// The election's key.
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.name()); }
    /// ```
    pub fn name(&self) -> &Bytes {
        self.election.name()
    }

    /// This candidate's name.
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.candidate()); }
    /// ```
    pub fn candidate(&self) -> &Bytes {
        self.election.candidate()
    }

    /// Blocks until elected; see [`crate::lease::Election::campaign`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// let term = election.campaign()?;
    /// # Ok(()) }
    /// ```
    pub fn campaign(&self) -> Result<Hlc> {
        self.client.run(self.election.campaign())
    }

    /// Blocks until elected or `timeout` passed; see
    /// [`crate::lease::Election::campaign_timeout`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// let term = election.campaign_timeout(Duration::from_secs(60))?;
    /// # Ok(()) }
    /// ```
    pub fn campaign_timeout(&self, timeout: Duration) -> Result<Hlc> {
        self.client.run(self.election.campaign_timeout(timeout))
    }

    /// One attempt; see [`crate::lease::Election::try_campaign`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// println!("{:?}", election.try_campaign()?);
    /// # Ok(()) }
    /// ```
    pub fn try_campaign(&self) -> Result<AcquireOutcome> {
        self.client.run(self.election.try_campaign())
    }

    /// Gives up leadership; see [`crate::lease::Election::resign`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// election.resign()?;
    /// # Ok(()) }
    /// ```
    pub fn resign(&self) -> Result<()> {
        self.client.run(self.election.resign())
    }

    /// The current leader's name; see [`crate::lease::Election::leader`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// println!("{:?}", election.leader()?);
    /// # Ok(()) }
    /// ```
    pub fn leader(&self) -> Result<Option<Bytes>> {
        self.client.run(self.election.leader())
    }

    /// Observes the leadership; read it with [`LeaderObservation::next_timeout`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// let mut changes = election.observe()?;
    /// while let Some(event) = changes.next_timeout(Duration::from_secs(5))? {
    ///     println!("{event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn observe(&self) -> Result<LeaderObservation> {
        self.client.run(self.election.observe())
    }

    /// Whether this candidate is the leader.
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) { println!("{}", election.is_leader()); }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    /// The candidacy's state.
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.state()); }
    /// ```
    pub fn state(&self) -> LeaseState {
        self.election.state()
    }

    /// The fencing token of the current term, while leader.
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) { println!("{:?}", election.fencing_token()); }
    /// ```
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.election.fencing_token()
    }

    /// Blocks until this candidate is not the leader; see [`crate::lease::Election::lost`].
    ///
    /// ```no_run
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// if let Some(loss) = election.lost()? {
    ///     eprintln!("lost leadership: {loss}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> Result<Option<Loss>> {
        super::lease::lost(&self.client, self.election.lease())
    }

    /// Blocks until this candidate is not the leader or `timeout` passed; returns the state
    /// then ([`LeaseState::Held`] if the timeout passed first).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use statestore::blocking::Election;
    /// # fn demo(election: Election) -> statestore::Result<()> {
    /// println!("{:?}", election.lost_timeout(Duration::from_secs(1))?);
    /// # Ok(()) }
    /// ```
    pub fn lost_timeout(&self, timeout: Duration) -> Result<LeaseState> {
        super::lease::lost_timeout(&self.client, self.election.lease(), timeout)
    }
}
