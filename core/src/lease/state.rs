//! What a lease is doing, why it was lost, and what an acquisition attempt found.

use bytes::Bytes;

use crate::protocol::Hlc;
use crate::Error;

/// The state of a [`Lease`](super::Lease) (also of a lock guard and of a candidate in an
/// election), as its holder sees it.
///
/// ```
/// use statestore::lease::LeaseState;
///
/// let state = LeaseState::NotHeld;
/// assert!(!state.is_held());
/// assert_eq!(state.fencing_token(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// Never acquired, or released.
    NotHeld,
    /// Held; writes to the keys it protects carry `token`.
    Held {
        /// The fencing token: the lease key's version when this holding began.
        token: Hlc,
    },
    /// Was held, and is no more (see [`Loss`]). Acquire again to hold it.
    Lost(Loss),
}

impl LeaseState {
    /// The state's name as the bindings spell it, `(snake_case, camelCase)`: Python and the C
    /// documentation say `not_held`, JavaScript `notHeld`; one place, so they cannot drift.
    ///
    /// ```
    /// # use statestore::lease::LeaseState;
    /// assert_eq!(LeaseState::NotHeld.names(), ("not_held", "notHeld"));
    /// ```
    pub fn names(&self) -> (&'static str, &'static str) {
        Self::NAMES[match self {
            Self::NotHeld => 0,
            Self::Held { .. } => 1,
            Self::Lost(_) => 2,
        }]
    }

    /// Every state's [`names`](Self::names): not held, held, lost.
    pub const NAMES: [(&'static str, &'static str); 3] =
        [("not_held", "notHeld"), ("held", "held"), ("lost", "lost")];

    /// Whether the lease is held.
    ///
    /// ```
    /// # use statestore::lease::LeaseState;
    /// # use statestore::Hlc;
    /// assert!(LeaseState::Held { token: Hlc::new(1, "n") }.is_held());
    /// ```
    pub fn is_held(&self) -> bool {
        matches!(self, Self::Held { .. })
    }

    /// The fencing token while held.
    ///
    /// ```
    /// # use statestore::lease::LeaseState;
    /// # use statestore::Hlc;
    /// let token = Hlc::new(1, "n");
    /// assert_eq!(LeaseState::Held { token: token.clone() }.fencing_token(), Some(&token));
    /// ```
    pub fn fencing_token(&self) -> Option<&Hlc> {
        match self {
            Self::Held { token } => Some(token),
            _ => None,
        }
    }

    /// The loss, if the lease was lost.
    ///
    /// ```
    /// # use statestore::lease::{LeaseState, Loss, LossReason};
    /// let state = LeaseState::Lost(Loss::new(LossReason::Expired));
    /// assert_eq!(state.loss().map(|l| l.reason), Some(LossReason::Expired));
    /// ```
    pub fn loss(&self) -> Option<&Loss> {
        match self {
            Self::Lost(loss) => Some(loss),
            _ => None,
        }
    }
}

/// Why a held lease was lost.
///
/// ```
/// use statestore::lease::LossReason;
///
/// assert_eq!(LossReason::Expired as i32, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum LossReason {
    /// No renewal succeeded within the TTL after the last successful one, so the lease may have
    /// expired on the service: it is declared lost at that moment, never later.
    Expired = 1,
    /// A renewal or acquisition found the key held by another holder.
    TakenOver = 2,
    /// The client was closed.
    ClientClosed = 3,
}

impl LossReason {
    /// Every reason, in the order of their codes.
    pub const ALL: [LossReason; 3] = [Self::Expired, Self::TakenOver, Self::ClientClosed];

    /// The reason's name as the bindings spell it, `(snake_case, camelCase)`: Python says
    /// `taken_over`, JavaScript `takenOver`; one place, so they cannot drift.
    ///
    /// ```
    /// use statestore::lease::LossReason;
    /// assert_eq!(LossReason::ClientClosed.names(), ("client_closed", "clientClosed"));
    /// ```
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::Expired => ("expired", "expired"),
            Self::TakenOver => ("taken_over", "takenOver"),
            Self::ClientClosed => ("client_closed", "clientClosed"),
        }
    }
}

/// How a held lease was lost: the reason, and what is known about it.
///
/// ```
/// use statestore::lease::{Loss, LossReason};
///
/// let loss = Loss::new(LossReason::TakenOver);
/// assert_eq!(loss.holder, None);
/// assert!(loss.to_string().contains("another holder"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// Why.
    pub reason: LossReason,
    /// The key's holder when the loss was found ([`LossReason::TakenOver`]), if known. It is
    /// read after the loss is declared (so that reading cannot delay the loss): the state
    /// first reports the loss without it, then again with it once the read answers.
    pub holder: Option<Bytes>,
    /// The error of the last failed renewal ([`LossReason::Expired`]), if there was one.
    pub error: Option<Error>,
}

impl Loss {
    /// A loss with nothing more known than its reason.
    pub fn new(reason: LossReason) -> Self {
        Self {
            reason,
            holder: None,
            error: None,
        }
    }
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason {
            LossReason::Expired => {
                write!(f, "no renewal succeeded within the TTL")?;
                if let Some(error) = &self.error {
                    write!(f, " (last error: {error})")?;
                }
                Ok(())
            }
            LossReason::TakenOver => match &self.holder {
                Some(holder) => write!(
                    f,
                    "taken over by another holder ({})",
                    String::from_utf8_lossy(holder)
                ),
                None => write!(f, "taken over by another holder"),
            },
            LossReason::ClientClosed => write!(f, "the client was closed"),
        }
    }
}

/// The result of one acquisition attempt ([`Lease::try_acquire`](super::Lease::try_acquire)).
///
/// "Held by another holder" is an ordinary outcome of a try, not an error, hence this enum.
///
/// ```
/// use statestore::lease::AcquireOutcome;
///
/// let busy = AcquireOutcome::HeldBy { holder: Some("bob".into()) };
/// assert!(!busy.is_acquired());
/// assert_eq!(busy.token(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireOutcome {
    /// Acquired (or already held by this lease, then renewed).
    Acquired {
        /// The fencing token.
        token: Hlc,
    },
    /// Another holder has it.
    HeldBy {
        /// Its name, read right after the attempt (`None` if the key vanished meanwhile or
        /// could not be read).
        holder: Option<Bytes>,
    },
}

impl AcquireOutcome {
    /// Whether the lease was acquired.
    pub fn is_acquired(&self) -> bool {
        matches!(self, Self::Acquired { .. })
    }

    /// The fencing token, if acquired.
    pub fn token(&self) -> Option<&Hlc> {
        match self {
            Self::Acquired { token } => Some(token),
            Self::HeldBy { .. } => None,
        }
    }
}
