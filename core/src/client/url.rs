//! [`ConnectOptions`] from a connection URL, `mqtt://[user[:password]@]host[:port][?option=value&...]`
//! or `mqtts://…`, as redis clients take them. Query options are the names of the table of
//! connect options (`CONNECT_OPTIONS`) and go through
//! [`ConnectOptions::set_option`], the code every binding's setters use, so a URL option means
//! exactly what the same option means anywhere else.

use std::str::FromStr;

use percent_encoding::percent_decode_str;
use url::Url;

use super::options::ConnectOptions;
use crate::options_by_name::{OptionSpec, OptionValue};
use crate::{Error, Result};

/// Port of `mqtt://` URLs without one (the MQTT port).
const MQTT_PORT: u16 = 1883;
/// Port of `mqtts://` URLs without one (MQTT over TLS), as [`ConnectOptions::from_env`] uses.
const MQTTS_PORT: u16 = 8883;
/// What a secret is shown as.
const REDACTED: &str = "***";

impl ConnectOptions {
    /// Settings from a connection URL:
    /// `mqtt://[user[:password]@]host[:port][?option=value&...]`, or `mqtts://…` for TLS.
    ///
    /// - The port defaults to 1883 (`mqtt`) or 8883 (`mqtts`); an IPv6 host is written in
    ///   brackets (`mqtt://[::1]:1883`).
    /// - User and password are percent-decoded (`%40` for `@`, `%3A` for `:`).
    /// - Every connect option is a query option under its snake_case name (the table
    ///   `statestore::bindings::CONNECT_OPTIONS`, listed in the guides), with the same meaning
    ///   and checks as [`ConnectOptions::set_option`]:
    ///   `?client_id=app&keep_alive=30s&ca_file=/ca.pem`.
    ///   Durations are written with a unit (`10s`, `250ms`). Options apply in order after the
    ///   URL's host, port and credentials, so a query `port=` overrides the URL's port.
    ///
    /// Any malformed part (scheme, host, port, percent-encoding, an unknown option or a bad
    /// value) is an [`Error::InvalidArgument`] naming the part and showing the URL with its
    /// password replaced by `***`; the password never appears in errors or in `Debug` output.
    ///
    /// ```
    /// use statestore::ConnectOptions;
    ///
    /// let options = ConnectOptions::from_url("mqtts://app:s%40cret@broker:8884?client_id=app-1")?;
    /// assert_eq!((options.host.as_str(), options.port), ("broker", 8884));
    /// assert!(options.tls.is_some());
    /// assert!(!format!("{options:?}").contains("s@cret"));
    /// let error = ConnectOptions::from_url("mqtt://app:s%40cret@broker?colour=red").unwrap_err();
    /// assert!(error.to_string().contains("colour") && !error.to_string().contains("cret"));
    /// # Ok::<(), statestore::Error>(())
    /// ```
    pub fn from_url(url: &str) -> Result<Self> {
        Self::default().with_url(url)
    }

    /// These settings with those of a connection URL on top (see
    /// [`ConnectOptions::from_url`]): its host, its port (or the scheme's), TLS on for
    /// `mqtts` and off for `mqtt` (unless a query option such as `ca_file` turns it on), its
    /// user and password if it has them, then its query options. What the URL does not say
    /// stays as it is here, so a program can give its own defaults:
    ///
    /// ```
    /// use std::time::Duration;
    /// use statestore::ConnectOptions;
    ///
    /// let defaults = ConnectOptions::default().default_timeout(Duration::from_secs(3));
    /// let options = defaults.with_url("mqtt://broker?client_id=app")?;
    /// assert_eq!(options.default_timeout, Duration::from_secs(3));
    /// # Ok::<(), statestore::Error>(())
    /// ```
    pub fn with_url(mut self, url: &str) -> Result<Self> {
        let fail = |what: String| {
            Error::InvalidArgument(format!("connection URL {}: {what}", redact_url(url)))
        };
        let parsed = Url::parse(url).map_err(|e| fail(parse_error(e)))?;
        let (tls, default_port) = match parsed.scheme() {
            "mqtt" => (false, MQTT_PORT),
            "mqtts" => (true, MQTTS_PORT),
            other => {
                return Err(fail(format!(
                    "the scheme {other:?} is not mqtt or mqtts (write mqtt://host:port, or \
                     mqtts:// for TLS)"
                )))
            }
        };
        let host = match parsed.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            Some(url::Host::Ipv4(address)) => address.to_string(),
            Some(url::Host::Domain(domain)) if !domain.is_empty() => {
                decode(domain, "host").map_err(fail)?
            }
            _ => return Err(fail("the host is missing (write mqtt://host:port)".into())),
        };
        if !matches!(parsed.path(), "" | "/") {
            return Err(fail(format!(
                "the path {:?} has no meaning here: options go in the query (?option=value)",
                parsed.path()
            )));
        }
        if parsed.fragment().is_some() {
            return Err(fail(
                "a fragment (#...) has no meaning here: options go in the query (?option=value)"
                    .into(),
            ));
        }
        let options = &mut self;
        options.host = host;
        options.port = default_port;
        options.tls = if tls {
            Some(options.tls.take().unwrap_or_default())
        } else {
            None
        };
        let set = |options: &mut ConnectOptions, name: &str, value: OptionValue| {
            options.set_option(name, value).map_err(|e| match e {
                Error::InvalidArgument(text) => fail(text),
                other => other,
            })
        };
        if let Some(port) = parsed.port() {
            set(options, "port", OptionValue::Int(port.into()))?;
        }
        if !parsed.username().is_empty() {
            let user = decode(parsed.username(), "user").map_err(fail)?;
            set(options, "username", OptionValue::Str(user))?;
        }
        if let Some(password) = parsed.password() {
            // The decoding error must not quote the password.
            let password = decode(password, "password")
                .map_err(|_| fail("the password is not valid percent-encoded UTF-8".into()))?;
            set(options, "password", OptionValue::Str(password))?;
        }
        if let Some(query) = parsed.query() {
            check_escapes(query, "query").map_err(fail)?;
            for (name, value) in parsed.query_pairs() {
                let spec = OptionSpec::find(&name).filter(|spec| spec.name == name);
                if spec.is_none() {
                    return Err(fail(format!(
                        "unknown option {name:?}{}",
                        suggestion(&name)
                    )));
                }
                set(options, &name, OptionValue::Str(value.into_owned()))?;
            }
        }
        if tls && options.tls.is_none() {
            return Err(fail(
                "tls=false contradicts the mqtts scheme: use mqtt:// for plain TCP".into(),
            ));
        }
        Ok(self)
    }
}

impl FromStr for ConnectOptions {
    type Err = Error;

    /// [`ConnectOptions::from_url`].
    fn from_str(url: &str) -> Result<Self> {
        Self::from_url(url)
    }
}

/// The `url` crate's reason, as the part of the URL at fault.
fn parse_error(error: url::ParseError) -> String {
    use url::ParseError as E;
    match error {
        E::RelativeUrlWithoutBase => {
            "not a URL: write mqtt://host:port (or mqtts:// for TLS)".into()
        }
        E::EmptyHost => "the host is missing (write mqtt://host:port)".into(),
        E::InvalidPort => "the port must be a number from 1 to 65535".into(),
        E::InvalidIpv6Address => {
            "the host is not a valid IPv6 address (write it in brackets: mqtt://[::1]:1883)".into()
        }
        E::InvalidIpv4Address | E::InvalidDomainCharacter | E::IdnaError => {
            format!("the host is not valid ({error})")
        }
        other => other.to_string(),
    }
}

/// A `%` must start a two-digit hex escape: the `url` crate keeps a stray one as it is, which
/// would silently become part of a user name or an option value.
fn check_escapes(text: &str, part: &str) -> std::result::Result<(), String> {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices('%') {
        let escape = bytes.get(at + 1..at + 3);
        if !escape.is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit)) {
            return Err(format!(
                "bad percent-encoding in the {part}: '%' must be followed by two hex digits \
                 (write %25 for a literal '%')"
            ));
        }
    }
    Ok(())
}

/// `text` percent-decoded as UTF-8.
fn decode(text: &str, part: &str) -> std::result::Result<String, String> {
    check_escapes(text, part)?;
    percent_decode_str(text)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| format!("bad percent-encoding in the {part}: it decodes to invalid UTF-8"))
}

/// ` (did you mean NAME?)`, or the list of settings, after an unknown query option `name`.
fn suggestion(name: &str) -> String {
    format!(" ({})", crate::options_by_name::OptionSpec::hint(name))
}

/// `url` with the password of its user info and any `password=` query value replaced by
/// `***`. Works on text that is no valid URL, since errors about such text quote it.
fn redact_url(url: &str) -> String {
    let authority_start = url.find("://").map_or(0, |at| at + 3);
    let rest = &url[authority_start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let mut out = url[..authority_start].to_owned();
    let authority = &rest[..authority_len];
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..=colon]);
                    out.push_str(REDACTED);
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_len..];
    match tail.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let (query, fragment) = match query.split_once('#') {
                Some((query, fragment)) => (query, Some(fragment)),
                None => (query, None),
            };
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if name == "password" => format!("{name}={REDACTED}"),
                    _ => pair.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
            if let Some(fragment) = fragment {
                out.push('#');
                out.push_str(fragment);
            }
        }
        None => out.push_str(tail),
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Authentication;

    fn refusal(url: &str) -> String {
        match ConnectOptions::from_url(url) {
            Err(Error::InvalidArgument(text)) => text,
            other => panic!("{url}: expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn scheme_sets_tls_and_the_default_port() {
        let plain = ConnectOptions::from_url("mqtt://broker").unwrap();
        assert_eq!((plain.host.as_str(), plain.port), ("broker", 1883));
        assert_eq!(plain.tls, None);
        let secure = ConnectOptions::from_url("mqtts://broker").unwrap();
        assert_eq!(secure.port, 8883);
        assert_eq!(secure.tls, Some(crate::TlsOptions::default()));
        let explicit: ConnectOptions = "mqtts://broker:1884/".parse().unwrap();
        assert_eq!(explicit.port, 1884);
    }

    #[test]
    fn ipv6_and_ipv4_hosts() {
        let v6 = ConnectOptions::from_url("mqtt://[::1]:2000").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 2000));
        let v4 = ConnectOptions::from_url("mqtt://127.0.0.1").unwrap();
        assert_eq!(v4.host, "127.0.0.1");
    }

    #[test]
    fn credentials_are_percent_decoded() {
        let o = ConnectOptions::from_url("mqtt://ann%40corp:p%3Aw%2Fd%20%C3%A9@h").unwrap();
        assert_eq!(
            o.auth,
            Authentication::Password {
                username: "ann@corp".into(),
                password: "p:w/d é".into()
            }
        );
        let user_only = ConnectOptions::from_url("mqtt://ann@h").unwrap();
        assert_eq!(
            user_only.auth,
            Authentication::Password {
                username: "ann".into(),
                password: String::new()
            }
        );
    }

    #[test]
    fn query_options_use_the_table_and_its_parsing() {
        let o = ConnectOptions::from_url(
            "mqtts://h?client_id=app%2F1&keep_alive=30s&clean_start=false&ca_file=/etc/ca.pem\
             &default_timeout=2500ms&max_packet_size=4096&port=9000",
        )
        .unwrap();
        assert_eq!(o.client_id.as_deref(), Some("app/1"));
        assert_eq!(o.keep_alive, Duration::from_secs(30));
        assert!(!o.clean_start);
        assert_eq!(
            o.tls.and_then(|tls| tls.ca_file),
            Some("/etc/ca.pem".into())
        );
        assert_eq!(o.default_timeout, Duration::from_millis(2500));
        assert_eq!(o.max_packet_size, 4096);
        assert_eq!(o.port, 9000);
        // Every option of the table is accepted under its snake_case name.
        for spec in crate::options_by_name::CONNECT_OPTIONS {
            let value = match spec.kind {
                crate::options_by_name::OptionKind::Bool => "true",
                crate::options_by_name::OptionKind::Duration => "30s",
                crate::options_by_name::OptionKind::Port
                | crate::options_by_name::OptionKind::Int => "4096",
                _ => "x",
            };
            let prefix = if spec.name == "sat_check_interval" {
                "sat_token_file=t&"
            } else {
                ""
            };
            let url = format!("mqtt://h?{prefix}{}={value}", spec.name);
            ConnectOptions::from_url(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
        }
        // ca_file implies TLS on mqtt:// as well, as the setter does.
        let ca = ConnectOptions::from_url("mqtt://h?ca_file=/ca.pem").unwrap();
        assert!(ca.tls.is_some());
    }

    #[test]
    fn with_url_keeps_what_the_url_does_not_say() {
        let base = ConnectOptions::new("old", 1)
            .session_expiry(Duration::ZERO)
            .tls(crate::TlsOptions::new().ca_file("/ca.pem"));
        let secure = base.clone().with_url("mqtts://new").unwrap();
        assert_eq!((secure.host.as_str(), secure.port), ("new", 8883));
        assert_eq!(secure.session_expiry, Duration::ZERO);
        assert_eq!(secure.tls.and_then(|t| t.ca_file), Some("/ca.pem".into()));
        // The scheme decides TLS.
        assert_eq!(base.with_url("mqtt://new").unwrap().tls, None);
    }

    #[test]
    fn each_malformed_part_is_named() {
        for (url, part) in [
            ("http://h", "scheme \"http\""),
            ("localhost:1883", "scheme"),
            ("broker", "not a URL"),
            ("mqtt://", "host is missing"),
            ("mqtt://:1883", "host is missing"),
            ("mqtt://[::1", "IPv6"),
            ("mqtt://h:99999", "port"),
            ("mqtt://h:12ab", "port"),
            ("mqtt://h:0", "port"),
            ("mqtt://a%zzb@h", "percent-encoding in the user"),
            ("mqtt://a%FFb@h", "percent-encoding in the user"),
            ("mqtt://h?client_id=a%g1", "percent-encoding in the query"),
            ("mqtt://h/db0", "path"),
            ("mqtt://h#x", "fragment"),
            ("mqtt://h?colour=red", "unknown option \"colour\""),
            ("mqtt://h?keep_alive=soon", "keep_alive"),
            ("mqtt://h?clean_start=maybe", "clean_start"),
            ("mqtts://h?tls=false", "tls=false"),
        ] {
            let text = refusal(url);
            assert!(text.contains(part), "{url}: {text}");
            assert!(text.starts_with("connection URL "), "{url}: {text}");
        }
    }

    #[test]
    fn an_unknown_option_suggests_the_nearest_name() {
        assert!(refusal("mqtt://h?keepalive=30s").contains("did you mean keep_alive?"));
        assert!(refusal("mqtt://h?clientId=a").contains("did you mean client_id?"));
        assert!(refusal("mqtt://h?zzzzzzzz=1")
            .contains("(the settings are host, port, client_id, keep_alive"));
    }

    #[test]
    fn the_password_never_shows() {
        let secret = "Do-Not-Print-Me";
        for url in [
            format!("mqtt://ann:{secret}@h:99999"),
            format!("mqtt://ann:{secret}@h?colour=red"),
            format!("mqtt://ann:{secret}%zz@h"),
            format!("mqtt://ann:{secret}@h/path"),
            format!("mqtt://h?password={secret}&keep_alive=soon"),
            format!("ftp://ann:{secret}@h"),
        ] {
            let text = refusal(&url);
            assert!(!text.contains(secret), "{text}");
            assert!(text.contains("***"), "{text}");
        }
        let options = ConnectOptions::from_url(&format!("mqtt://ann:{secret}@h")).unwrap();
        assert!(!format!("{options:?}").contains(secret));
    }

    #[test]
    fn redaction_keeps_everything_else() {
        assert_eq!(
            redact_url("mqtt://a:b@c:1/?password=x&port=2#f"),
            "mqtt://a:***@c:1/?password=***&port=2#f"
        );
        assert_eq!(redact_url("mqtt://a@c"), "mqtt://a@c");
        assert_eq!(redact_url("not a url"), "not a url");
    }
}
