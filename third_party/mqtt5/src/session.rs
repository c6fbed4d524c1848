pub mod flow_control;
pub mod limits;
pub mod queue;
#[cfg(not(target_arch = "wasm32"))]
pub mod quic_flow;
pub mod state;
pub mod subscription;

pub use flow_control::{
    FlowControlConfig, FlowControlManager, FlowControlStats, TopicAliasManager,
};
pub use limits::{ExpiringMessage, LimitsConfig, LimitsManager};
pub use queue::{MessageQueue, QueueResult, QueueStats, QueuedMessage};
#[cfg(not(target_arch = "wasm32"))]
pub use quic_flow::{FlowRegistry, FlowState, FlowType};
pub use state::{SessionConfig, SessionState, SessionStats};
pub use subscription::{Subscription, SubscriptionManager};
