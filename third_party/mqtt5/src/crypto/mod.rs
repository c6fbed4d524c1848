mod verifiers;

pub(crate) use verifiers::NoVerification;
