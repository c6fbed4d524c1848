pub use mqtt5_protocol::session::subscription::*;
