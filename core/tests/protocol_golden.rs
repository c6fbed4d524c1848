//! Every example payload of the protocol document (and of the protocol facts) as a golden vector.

use bytes::Bytes;
use statestore::protocol::{
    DecodeErrorKind, Hlc, Notification, Request, RequestError, Response, ScanPage, ServiceError,
    SetCondition, SetFlags,
};

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

fn request(payload: &'static [u8]) -> Result<Request, RequestError> {
    Request::decode(&b(payload))
}

#[test]
fn document_request_examples_decode() {
    assert_eq!(
        request(b"*3\r\n$3\r\nset\r\n$7\r\nSETKEY2\r\n$6\r\nVALUE5\r\n"),
        Ok(Request::Set {
            key: b(b"SETKEY2"),
            value: b(b"VALUE5"),
            flags: SetFlags::default()
        })
    );
    assert_eq!(
        request(b"*2\r\n$3\r\nget\r\n$7\r\nSETKEY2\r\n"),
        Ok(Request::Get { key: b(b"SETKEY2") })
    );
    assert_eq!(
        request(b"*2\r\n$3\r\ndel\r\n$7\r\nSETKEY2\r\n"),
        Ok(Request::Del { key: b(b"SETKEY2") })
    );
    assert_eq!(
        request(b"*3\r\n$4\r\nvdel\r\n$7\r\nSETKEY2\r\n$3\r\nABC\r\n"),
        Ok(Request::VDel {
            key: b(b"SETKEY2"),
            value: b(b"ABC")
        })
    );
    assert_eq!(
        request(b"*2\r\n$9\r\nKEYNOTIFY\r\n$7\r\nSOMEKEY\r\n"),
        Ok(Request::KeyNotify {
            key: b(b"SOMEKEY"),
            stop: false
        })
    );
}

#[test]
fn requests_encode_upper_case_as_the_sdks_do() {
    let cases: [(Request, &[u8]); 7] = [
        (
            Request::Set {
                key: b(b"k"),
                value: b(b"v"),
                flags: SetFlags {
                    condition: SetCondition::OnlyIfAbsentOrEqual,
                    expiry_ms: Some(10_000),
                },
            },
            b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$3\r\nNEX\r\n$2\r\nPX\r\n$5\r\n10000\r\n",
        ),
        (
            Request::Set {
                key: b(b"k"),
                value: b(b""),
                flags: SetFlags {
                    condition: SetCondition::OnlyIfAbsent,
                    expiry_ms: None,
                },
            },
            b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$2\r\nNX\r\n",
        ),
        (
            Request::Get { key: b(b"SETKEY2") },
            b"*2\r\n$3\r\nGET\r\n$7\r\nSETKEY2\r\n",
        ),
        (
            Request::Del { key: b(b"SETKEY2") },
            b"*2\r\n$3\r\nDEL\r\n$7\r\nSETKEY2\r\n",
        ),
        (
            Request::VDel {
                key: b(b"SETKEY2"),
                value: b(b"ABC"),
            },
            b"*3\r\n$4\r\nVDEL\r\n$7\r\nSETKEY2\r\n$3\r\nABC\r\n",
        ),
        (
            Request::KeyNotify {
                key: b(b"SOMEKEY"),
                stop: true,
            },
            b"*3\r\n$9\r\nKEYNOTIFY\r\n$7\r\nSOMEKEY\r\n$4\r\nSTOP\r\n",
        ),
        (
            Request::Scan {
                pattern: b(b"key*"),
                token: Some(b(b"1;1;")),
            },
            b"*3\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n$4\r\n1;1;\r\n",
        ),
    ];
    for (request, payload) in cases {
        assert_eq!(&request.encode()[..], payload, "{request:?}");
        assert_eq!(request.encoded_len(), payload.len());
        assert_eq!(Request::decode(&b(payload)), Ok(request));
    }
}

#[test]
fn malformed_requests_map_to_the_service_errors() {
    let cases: [(&[u8], ServiceError); 12] = [
        (
            b"*2\r\n$4\r\nPING\r\n$1\r\nk\r\n",
            ServiceError::UnknownCommand,
        ),
        (b"*1\r\n$3\r\nGET\r\n", ServiceError::WrongNumberOfArguments),
        (
            b"*3\r\n$3\r\nGET\r\n$1\r\nk\r\n$1\r\nk\r\n",
            ServiceError::WrongNumberOfArguments,
        ),
        (
            b"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n",
            ServiceError::WrongNumberOfArguments,
        ),
        (
            b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n",
            ServiceError::KeyLengthZero,
        ),
        (
            b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nXX\r\n",
            ServiceError::SyntaxError,
        ),
        (
            b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$1\r\n0\r\n",
            ServiceError::SyntaxError,
        ),
        (
            b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$2\r\n-5\r\n",
            ServiceError::SyntaxError,
        ),
        (
            b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$20\r\n99999999999999999999\r\n",
            ServiceError::SyntaxError,
        ),
        (
            b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$3\r\nNEX\r\n",
            ServiceError::SyntaxError,
        ),
        (b"*99999999999999999999\r\n", ServiceError::SyntaxError),
        (b"SET k v", ServiceError::SyntaxError),
    ];
    for (payload, expected) in cases {
        let err = request(payload).expect_err(&String::from_utf8_lossy(payload));
        assert_eq!(
            err.service_error(),
            expected,
            "{:?}",
            String::from_utf8_lossy(payload)
        );
    }
}

#[test]
fn verbs_and_options_are_case_insensitive() {
    assert_eq!(
        request(b"*6\r\n$3\r\nsEt\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\npx\r\n$2\r\n10\r\n$2\r\nnx\r\n"),
        Ok(Request::Set {
            key: b(b"k"),
            value: b(b"v"),
            flags: SetFlags {
                condition: SetCondition::OnlyIfAbsent,
                expiry_ms: Some(10)
            }
        })
    );
}

#[test]
fn document_response_examples_decode() {
    let cases: [(&[u8], Response); 12] = [
        (b"+OK\r\n", Response::Ok),
        (b"-1\r\n", Response::Integer(-1)),
        (b":-1\r\n", Response::Integer(-1)),
        (b":1\r\n", Response::Integer(1)),
        (b":0\r\n", Response::Integer(0)),
        (b"$-1\r\n", Response::Nil),
        (b"$4\r\n1234\r\n", Response::Value(b(b"1234"))),
        (b"$4\r\n1234", Response::Value(b(b"1234"))),
        (b"$0\r\n\r\n", Response::Value(b(b""))),
        (b"-ERR syntax error", Response::Error(ServiceError::SyntaxError)),
        (b"-ERR: not authorized\r\n", Response::Error(ServiceError::NotAuthorized)),
        (
            b"-ERR the request fencing token is a lower version that the fencing token protecting the resource\r\n",
            Response::Error(ServiceError::FencingTokenLowerVersion),
        ),
    ];
    for (payload, expected) in cases {
        assert_eq!(
            Response::decode(&b(payload)),
            Ok(expected),
            "{:?}",
            String::from_utf8_lossy(payload)
        );
    }
    assert_eq!(
        Response::decode(&b(b"-ERR brand new failure\r\n")),
        Ok(Response::Error(ServiceError::Unknown(
            "brand new failure".into()
        )))
    );
}

#[test]
fn scan_pages_decode_and_encode() {
    let last = b(b"*1\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n");
    let more = b(b"*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\n1;1;\r\n");
    let keys = vec![b(b"key1"), b(b"key2")];
    let last_page = Response::Scan(ScanPage {
        keys: keys.clone(),
        token: None,
    });
    let more_page = Response::Scan(ScanPage {
        keys,
        token: Some(b(b"1;1;")),
    });
    assert_eq!(Response::decode(&last), Ok(last_page.clone()));
    assert_eq!(Response::decode(&more), Ok(more_page.clone()));
    assert_eq!(last_page.encode(), last);
    assert_eq!(more_page.encode(), more);
}

#[test]
fn responses_encode_like_the_real_service() {
    assert_eq!(&Response::Integer(-1).encode()[..], b":-1\r\n");
    assert_eq!(&Response::Nil.encode()[..], b"$-1\r\n");
    assert_eq!(&Response::Ok.encode()[..], b"+OK\r\n");
    assert_eq!(
        &Response::Value(b(b"a\r\nb")).encode()[..],
        b"$4\r\na\r\nb\r\n"
    );
    assert_eq!(
        &Response::Error(ServiceError::MissingTimestamp).encode()[..],
        b"-ERR missing timestamp\r\n"
    );
}

#[test]
fn a_dash_line_other_than_an_error_or_minus_one_is_rejected() {
    for payload in [
        &b"-garbage"[..],
        b"-garbage\r\n",
        b"-\r\n",
        b"-",
        b"-ERRATIC\r\n",
        b"-1x\r\n",
        b"-ERR two\r\nlines\r\n",
        b"-\x00\xff\x10",
    ] {
        let error = Response::decode(&b(payload)).expect_err(&format!("{payload:?} accepted"));
        assert!(
            matches!(error.kind, DecodeErrorKind::Unexpected(_)),
            "{payload:?}: {error:?}"
        );
    }
    assert_eq!(
        Response::decode(&b(b"-ERR\r\n")),
        Ok(Response::Error(ServiceError::Unknown(String::new())))
    );
}

#[test]
fn document_notification_examples_decode() {
    assert_eq!(
        Notification::decode(&b(
            b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nabc\r\n"
        )),
        Ok(Notification::Set { value: b(b"abc") })
    );
    assert_eq!(
        Notification::decode(&b(b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n")),
        Ok(Notification::Delete)
    );
    assert_eq!(
        Notification::decode(&b(b"*2\r\n$6\r\nNOTIFY\r\n$3\r\nDEL\r\n")),
        Ok(Notification::Delete)
    );
    assert_eq!(
        &Notification::Set { value: b(b"abc") }.encode()[..],
        b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nabc\r\n"
    );
    assert_eq!(
        &Notification::Delete.encode()[..],
        b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"
    );
    assert!(Notification::decode(&b(b"*2\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n")).is_err());
}

#[test]
fn document_hlc_examples() {
    let request_ts = Hlc {
        wall_ms: 1_696_374_425_000,
        counter: 0,
        node: "CLIENT".into(),
    };
    let version: Hlc = "1696374425000:1:StateStore".parse().unwrap();
    assert!(version > request_ts);
    assert_eq!(version.to_string(), "001696374425000:00001:StateStore");
}
