pub mod jwks;
pub mod jwt;
pub mod jwt_federated;
pub mod plain;
pub mod scram;

pub use jwks::{JwkKey, JwksCache, JwksEndpointConfig, JwksError};
pub use jwt::{JwtAuthProvider, JwtClaims, JwtHeader, JwtVerifier};
pub use jwt_federated::FederatedJwtAuthProvider;
pub use plain::{PasswordCredentialStore, PlainAuthProvider};
pub use scram::{
    generate_scram_credential_line, generate_scram_credential_line_with_iterations,
    FileBasedScramCredentialStore, ScramCredentialStore, ScramCredentials, ScramSha256AuthProvider,
};
