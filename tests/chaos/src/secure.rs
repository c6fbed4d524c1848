//! Security fixtures for every binding (`statestore-chaos secure`): a CA and a wrong CA, a
//! valid and an expired server certificate, a client certificate, password files with tight
//! and wide permissions; Mosquitto with one listener per case and a `statestore-server
//! --broker` on its plain listener. Prints one JSON line describing all of it (the language
//! tests read it), serves until stdin is closed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair,
};
use serde_json::{json, Value};

/// The account of the password listener. The password is distinctive so that tests can
/// search for it in every message, log line and representation.
pub const USERNAME: &str = "chaos-user";
/// See [`USERNAME`].
pub const PASSWORD: &str = "S3cret-chaos-Pw-7c1d";

/// The service-account token the `sat` listener accepts (a secret like the password).
pub const SAT_TOKEN: &str = "chaos-sat-token-3f9a-Secret";

type Result<T> = std::result::Result<T, String>;

fn e(error: impl std::fmt::Display) -> String {
    error.to_string()
}

fn write(dir: &Path, name: &str, text: &str, mode: u32) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(e)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(e)?;
    Ok(path)
}

fn ca(name: &str) -> Result<(CertificateParams, KeyPair, String)> {
    let key = KeyPair::generate().map_err(e)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let pem = params.self_signed(&key).map_err(e)?.pem();
    Ok((params, key, pem))
}

/// A leaf certificate signed by `issuer`, valid now unless `expired`.
fn leaf(
    issuer: &Issuer<'_, &KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
    expired: bool,
) -> Result<(String, String)> {
    let key = KeyPair::generate().map_err(e)?;
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .map_err(e)?;
    params.distinguished_name.push(DnType::CommonName, names[0]);
    params.extended_key_usages = vec![usage];
    if expired {
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2020, 1, 2);
    }
    let cert = params.signed_by(&key, issuer).map_err(e)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes every file into `dir` and the Mosquitto configuration; returns the description
/// (without the server, which the caller starts on `ports.plain`).
pub fn prepare(dir: &Path) -> Result<Value> {
    let (ca_params, ca_key, ca_pem) = ca("statestore chaos CA")?;
    let (_, _, wrong_ca_pem) = ca("some other CA")?;
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    let names = ["localhost", "127.0.0.1"];
    let (server_pem, server_key) =
        leaf(&issuer, &names, ExtendedKeyUsagePurpose::ServerAuth, false)?;
    let (expired_pem, expired_key) =
        leaf(&issuer, &names, ExtendedKeyUsagePurpose::ServerAuth, true)?;
    let (client_pem, client_key) = leaf(
        &issuer,
        &["chaos-client"],
        ExtendedKeyUsagePurpose::ClientAuth,
        false,
    )?;
    let ca = write(dir, "ca.pem", &ca_pem, 0o644)?;
    let wrong_ca = write(dir, "wrong-ca.pem", &wrong_ca_pem, 0o644)?;
    let server_cert = write(dir, "server.pem", &server_pem, 0o644)?;
    let server_key = write(dir, "server.key", &server_key, 0o600)?;
    let expired_cert = write(dir, "expired.pem", &expired_pem, 0o644)?;
    let expired_key = write(dir, "expired.key", &expired_key, 0o600)?;
    let client_cert = write(dir, "client.pem", &client_pem, 0o644)?;
    let client_key = write(dir, "client.key", &client_key, 0o600)?;
    let password_file = write(dir, "password", &format!("{PASSWORD}\n"), 0o600)?;
    let password_file_wide = write(dir, "password-wide", &format!("{PASSWORD}\n"), 0o644)?;
    let token_file = write(dir, "sat-token", SAT_TOKEN, 0o600)?;
    let wrong_token_file = write(dir, "sat-token-wrong", "Wrong-sat-token-55e0", 0o600)?;
    // Mosquitto's own password file (hashed by mosquitto_passwd).
    let passwd = dir.join("mosquitto.passwd");
    std::fs::write(&passwd, "").map_err(e)?;
    let status = std::process::Command::new("mosquitto_passwd")
        .args(["-b"])
        .arg(&passwd)
        .args([USERNAME, PASSWORD])
        .status()
        .map_err(|err| format!("mosquitto_passwd: {err}"))?;
    if !status.success() {
        return Err(format!("mosquitto_passwd failed: {status}"));
    }
    // One listener each: the ports must differ.
    let [plain, tls, mtls, expired, password] = statestore_testkit::free_ports(5).map_err(e)?[..]
    else {
        return Err("five free ports".to_owned());
    };
    let ports = json!({
        "plain": plain, "tls": tls, "mtls": mtls, "expired": expired, "password": password,
    });
    let p = |name: &str| ports[name].as_u64().unwrap_or(0);
    let d = |path: &PathBuf| path.display().to_string();
    let config = format!(
        "per_listener_settings true\n\
         user root\n\
         persistence false\n\
         log_dest stdout\n\
         log_type error\n\
         log_type warning\n\
         listener {plain} 127.0.0.1\n\
         allow_anonymous true\n\
         listener {tls} 127.0.0.1\n\
         allow_anonymous true\n\
         certfile {server_cert}\n\
         keyfile {server_key}\n\
         listener {mtls} 127.0.0.1\n\
         allow_anonymous true\n\
         certfile {server_cert}\n\
         keyfile {server_key}\n\
         cafile {ca}\n\
         require_certificate true\n\
         listener {expired} 127.0.0.1\n\
         allow_anonymous true\n\
         certfile {expired_cert}\n\
         keyfile {expired_key}\n\
         listener {password} 127.0.0.1\n\
         allow_anonymous false\n\
         password_file {passwd}\n",
        plain = p("plain"),
        tls = p("tls"),
        mtls = p("mtls"),
        expired = p("expired"),
        password = p("password"),
        server_cert = d(&server_cert),
        server_key = d(&server_key),
        ca = d(&ca),
        expired_cert = d(&expired_cert),
        expired_key = d(&expired_key),
        passwd = d(&passwd),
    );
    std::fs::write(dir.join("mosquitto.conf"), config).map_err(e)?;
    Ok(json!({
        "host": "127.0.0.1",
        "ports": ports,
        "ca_file": d(&ca),
        "wrong_ca_file": d(&wrong_ca),
        "cert_file": d(&client_cert),
        "key_file": d(&client_key),
        "username": USERNAME,
        "password": PASSWORD,
        "password_file": d(&password_file),
        "password_file_wide": d(&password_file_wide),
        "sat_token_file": d(&token_file),
        "sat_token_file_wrong": d(&wrong_token_file),
        "sat_token": SAT_TOKEN,
    }))
}
