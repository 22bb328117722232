//! Properties of `redact`, the one function through which idmint shows a store URL: over
//! every form a store URL takes (a password in `user:password@` or Redis' `:password@`, in a
//! query parameter under any name that says so, percent-encoded or not, in a URL that does
//! not parse), the secret never shows, and what is no secret (user, host, port, database,
//! other parameters) stays as written.

use idmint_store::redact;
use proptest::prelude::*;

/// Marks both ends of every secret: no other part of a generated URL holds capitals, so
/// either marker in the output is a piece of a secret.
const START: &str = "ZQX";
const END: &str = "XQZ";

/// `text` with every byte but the unreserved ones as `%XX`: how a URL carries any secret.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn schemes() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "postgres",
        "postgresql",
        "mysql",
        "mariadb",
        "redis",
        "rediss",
    ])
}

/// A secret of any characters, markers at both ends.
fn secrets() -> impl Strategy<Value = String> {
    "[ -~\u{e9}\u{4e2d}]{0,24}".prop_map(|middle| format!("{START}{middle}{END}"))
}

fn hosts() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9-]{0,12}",
        Just("127.0.0.1".to_owned()),
        Just("[::1]".to_owned()),
    ]
}

/// `host[:port]/database`, all of it no secret.
fn places() -> impl Strategy<Value = String> {
    (hosts(), prop::option::of(1u16..), "[a-z0-9_]{0,10}").prop_map(|(host, port, db)| {
        let port = port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("{host}{port}/{db}")
    })
}

/// Parameters that are no secret.
fn plain_params() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            prop::sample::select(vec![
                "sslmode",
                "application_name",
                "connect_timeout",
                "protocol",
                "charset",
                "statement_cache_capacity",
                "target_session_attrs",
            ]),
            "[a-z0-9.]{0,8}",
        )
            .prop_map(|(name, value)| format!("{name}={value}")),
        0..4,
    )
}

/// Names of parameters that hold a credential, as a user may spell them.
fn secret_names() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "password",
        "sslpassword",
        "Password",
        "PASSWORD",
        "pass%77ord",
        "pass+word",
        "passwd",
        "pwd",
        "auth",
        "token",
        "auth_token",
        "secret",
        "client_secret",
        "api_key",
        "ssl-key",
        "credentials",
    ])
}

/// A URL holding `secret` in one of the well-formed ways, and the parts that must stay.
fn well_formed() -> impl Strategy<Value = (String, String, Vec<String>)> {
    (
        schemes(),
        prop::option::of("[a-z][a-z0-9_]{0,8}"),
        secrets(),
        places(),
        plain_params(),
        secret_names(),
        0..4u8,
    )
        .prop_map(|(scheme, user, secret, place, params, name, form)| {
            let user = user.unwrap_or_default();
            let in_userinfo = form != 1;
            let in_query = form >= 1;
            let mut query = params.clone();
            if in_query {
                let at = params.len() / 2;
                query.insert(at, format!("{name}={}", encoded(&secret)));
            }
            let userinfo = match (in_userinfo, form) {
                // Redis' form: a password and no user.
                (true, 3) => format!(":{}@", encoded(&secret)),
                (true, _) => format!("{user}:{}@", encoded(&secret)),
                (false, _) if user.is_empty() => String::new(),
                (false, _) => format!("{user}@"),
            };
            let query = if query.is_empty() {
                String::new()
            } else {
                format!("?{}", query.join("&"))
            };
            let url = format!("{scheme}://{userinfo}{place}{query}");
            let mut kept = vec![format!("{scheme}://"), place];
            if !user.is_empty() && form != 3 {
                kept.push(user);
            }
            kept.extend(params);
            (url, secret, kept)
        })
}

/// A URL whose password was written without percent-encoding, so that it may not parse or
/// may read as a port, a path, a query or a fragment.
fn malformed() -> impl Strategy<Value = (String, String)> {
    (
        schemes(),
        "[a-z]{1,8}",
        "[0-9]{0,4}",
        "[a-zA-Z0-9/?#:=&@+ \\[\\]%]{0,16}",
        places(),
        plain_params(),
    )
        .prop_map(|(scheme, user, digits, raw, place, params)| {
            // Digits first, as a port would be read; the markers stay at both ends.
            let secret = format!("{START}{digits}{raw}{END}");
            let secret = if digits.is_empty() {
                secret
            } else {
                format!("{digits}{raw}{START}{END}")
            };
            let query = if params.is_empty() {
                String::new()
            } else {
                format!("?{}", params.join("&"))
            };
            (format!("{scheme}://{user}:{secret}@{place}{query}"), secret)
        })
}

fn assert_hidden(out: &str, url: &str, secret: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        !out.contains(START) && !out.contains(END),
        "a piece of the secret shows: {url} -> {out}"
    );
    prop_assert!(!out.contains(secret), "{url} -> {out}");
    prop_assert!(!out.contains(&encoded(secret)), "{url} -> {out}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn secrets_never_show_and_the_rest_stays((url, secret, kept) in well_formed()) {
        let out = redact(&url);
        assert_hidden(&out, &url, &secret)?;
        for part in &kept {
            prop_assert!(out.contains(part.as_str()), "`{part}` lost: {url} -> {out}");
        }
        prop_assert_eq!(redact(&out), out.clone(), "not stable: {}", url);
    }

    #[test]
    fn passwords_written_without_encoding_never_show((url, secret) in malformed()) {
        let out = redact(&url);
        assert_hidden(&out, &url, &secret)?;
        prop_assert_eq!(redact(&out), out.clone(), "not stable: {}", url);
    }

    #[test]
    fn urls_without_secrets_are_shown_as_written(
        scheme in schemes(),
        user in prop::option::of("[a-z][a-z0-9_]{0,8}"),
        place in places(),
        params in plain_params(),
    ) {
        let user = user.map(|u| format!("{u}@")).unwrap_or_default();
        let query = if params.is_empty() { String::new() } else { format!("?{}", params.join("&")) };
        let url = format!("{scheme}://{user}{place}{query}");
        prop_assert_eq!(redact(&url), url);
    }

    #[test]
    fn sqlite_paths_are_shown_as_written(path in "[a-z0-9_./@# -]{1,30}") {
        for url in [format!("sqlite:///{path}"), format!("sqlite://./{path}"), format!("sqlite:{path}")] {
            prop_assert_eq!(redact(&url), url);
        }
    }
}

/// The forms the issue names, spelled out: what an operator reads in the log.
#[test]
fn each_store_kind_shows_its_url_without_credentials() {
    for (url, shown) in [
        (
            "postgres://u@h/db?password=s3cret",
            "postgres://u@h/db?password=***",
        ),
        (
            "postgres://u:s3cret@h:5432/db?sslmode=require&sslpassword=s3cret",
            "postgres://u:***@h:5432/db?sslmode=require&sslpassword=***",
        ),
        (
            "postgresql://u:p%40ss%2Fw0rd@h/db",
            "postgresql://u:***@h/db",
        ),
        ("mysql://u:s3cret@h:3306/ids", "mysql://u:***@h:3306/ids"),
        (
            "mariadb://u@h/ids?password=s3cret",
            "mariadb://u@h/ids?password=***",
        ),
        ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
        ("rediss://user:s3cret@h/", "rediss://user:***@h/"),
        ("redis://h/?Pass%77ord=s3cret", "redis://h/?Pass%77ord=***"),
        ("redis://h:6379/0", "redis://h:6379/0"),
        (
            "sqlite://./idmint-data/idmint.db",
            "sqlite://./idmint-data/idmint.db",
        ),
        // Unencoded `/`, `#` and `?` in a password: the authority ends early.
        ("postgres://u:12/s3cret@h/db", "postgres://***@h/db"),
        ("postgres://u:12#s3cret@h/db", "postgres://***@h/db"),
        ("postgres://u:12?x=s3cret@h/db", "postgres://***"),
        ("postgres://u:s3cret@[::1/db", "postgres://u:***@[::1/db"),
        (
            "postgres://u:pw@h/db?application_name=a@b",
            "postgres://***",
        ),
        // A store URL without its `//`, and no URL at all.
        ("postgres:u:s3cret@h/db", "postgres:***@h/db"),
        ("mongodb://u:s3cret@h/db", "mongodb://u:***@h/db"),
    ] {
        assert_eq!(redact(url), shown, "{url}");
    }
}
