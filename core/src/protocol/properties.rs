//! Names and values of the MQTT 5 user properties and other request/response properties.

/// The sender's (request) or key's (response, notification) HLC.
pub const TIMESTAMP: &str = "__ts";
/// The fencing token on SET, DEL and VDEL.
pub const FENCING_TOKEN: &str = "__ft";
/// The MQTT client id of the sender.
pub const SOURCE_ID: &str = "__srcId";
/// The protocol version.
pub const PROTOCOL_VERSION: &str = "__protVer";
/// The HTTP-style status of a response.
pub const STATUS: &str = "__stat";
/// The status message of an RPC-level failure.
pub const STATUS_MESSAGE: &str = "__stMsg";
/// Whether an RPC-level failure is an application error.
pub const APPLICATION_ERROR: &str = "__apErr";
/// The name of the property an RPC-level failure is about.
pub const PROPERTY_NAME: &str = "__propName";
/// The value of the property an RPC-level failure is about.
pub const PROPERTY_VALUE: &str = "__propVal";
/// The protocol major versions the service supports (on a version mismatch).
pub const SUPPORTED_MAJOR_VERSIONS: &str = "__supProtMajVer";
/// Asks the service to persist a key (`true`).
pub const PERSISTENCE: &str = "aio-persistence";
/// The publisher's client id, stamped by the embedded broker.
pub const BROKER_CLIENT_ID: &str = "x-mqtt-client-id";

/// The protocol version we speak.
pub const PROTOCOL_VERSION_VALUE: &str = "1.0";
/// `__stat` of a successful response.
pub const STATUS_OK: &str = "200";
/// Content type of requests and responses.
pub const CONTENT_TYPE: &str = "application/octet-stream";
