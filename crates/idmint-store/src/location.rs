//! Store URLs: which backend, and how to show a URL without its credentials ([`redact`]).

use url::Url;

use crate::{Error, Result};

/// The kinds of store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `sqlite://PATH`
    Sqlite,
    /// `postgres://` or `postgresql://`
    Postgres,
    /// `mysql://` or `mariadb://`
    Mysql,
    /// `redis://` or `rediss://`
    Redis,
}

impl Backend {
    /// The backend's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
            Backend::Mysql => "MySQL",
            Backend::Redis => "Redis",
        }
    }

    /// The cargo feature that enables it.
    pub fn feature(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Redis => "redis",
        }
    }
}

/// A parsed store URL.
#[derive(Clone, PartialEq, Eq)]
pub struct Location {
    /// Which store.
    pub backend: Backend,
    /// The URL as given (with its password): for the driver only.
    pub url: String,
    /// The URL through [`redact`]: for logs, errors and routes.
    pub display: String,
}

impl std::fmt::Debug for Location {
    /// The displayed URL only: a `{:?}` must not print the password either.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Location")
            .field("backend", &self.backend)
            .field("display", &self.display)
            .finish()
    }
}

impl Location {
    /// Parses `url` and picks the backend by its scheme.
    pub fn parse(url: &str) -> Result<Self> {
        let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or("");
        let backend = match scheme {
            "sqlite" => Backend::Sqlite,
            "postgres" | "postgresql" => Backend::Postgres,
            "mysql" | "mariadb" => Backend::Mysql,
            "redis" | "rediss" => Backend::Redis,
            _ => {
                return Err(Error::InvalidArgument {
                    name: "store",
                    reason: format!(
                        "`{}` is not a store URL; use sqlite://PATH, postgres://..., mysql://... or redis://...",
                        redact(url)
                    ),
                })
            }
        };
        match backend {
            Backend::Sqlite => check_sqlite(url)?,
            // The drivers parse these with the same URL parser when connecting: a URL they would
            // refuse is refused here already, before anything is opened, and named as a setting.
            _ => {
                if let Err(error) = Url::parse(url) {
                    return Err(invalid(format!(
                        "`{}` is not a valid URL: {error}",
                        redact(url)
                    )));
                }
            }
        }
        Ok(Self {
            backend,
            url: url.to_owned(),
            display: redact(url),
        })
    }

    /// The file path of a `sqlite://PATH` (or `sqlite:PATH`) URL: the rest of the URL, taken
    /// literally ([`Location::parse`] refused a user, a password or a query string).
    pub fn sqlite_path(&self) -> &str {
        let rest = self.url.strip_prefix("sqlite:").unwrap_or(&self.url);
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        rest.split_once('?').map_or(rest, |(path, _)| path)
    }
}

/// An [`Error::InvalidArgument`] about the store URL.
fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        name: "store",
        reason,
    }
}

/// Refuses a `sqlite:` URL whose path would not be what its writer meant.
///
/// The path is everything after `sqlite://` (or `sqlite:`), taken literally: `sqlite://./x.db`
/// and `sqlite://idmint-data/idmint.db` are relative paths, `sqlite:///var/lib/x.db` is
/// absolute, as docs/stores.md and the `--data-dir` default (`sqlite://<data-dir>/idmint.db`) use
/// them. So in `sqlite://` a first path segment that looks like a host cannot be told from a
/// folder name and is a folder; only the `user[:password]@` form is unambiguous: no folder
/// name is written that way, and taking it as one created a folder literally named
/// `user:pw@` (and wrote a password into the file system). So an `@` in the first segment
/// after `sqlite://` is refused (a folder whose name holds `@` is still reachable as
/// `sqlite://./name@x/...`). `sqlite:PATH`, without `//`, has no authority part and is a path
/// whatever it holds.
///
/// A query string (`?mode=ro`) is refused too: idmint sets the SQLite options itself (created
/// if missing, WAL, `synchronous=FULL`), and silently ignoring a parameter such as `mode=ro`
/// would do the opposite of what it says. An empty path is refused: it would open a temporary
/// database that vanishes with the process.
fn check_sqlite(url: &str) -> Result<()> {
    let rest = url.strip_prefix("sqlite:").unwrap_or(url);
    if let Some(after_slashes) = rest.strip_prefix("//") {
        let first_segment = after_slashes.split('/').next().unwrap_or("");
        if first_segment.contains('@') {
            return Err(invalid(format!(
                "`{}`: a SQLite URL takes no user, password or host, only a file path \
                 (sqlite://relative/path, sqlite:///absolute/path or sqlite:path)",
                redact(url)
            )));
        }
    }
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.contains('?') {
        return Err(invalid(format!(
            "`{}`: a SQLite URL takes no query parameters; idmint opens the file itself \
             (created if missing, WAL, synchronous=FULL)",
            redact(url)
        )));
    }
    if path.is_empty() {
        return Err(invalid(format!(
            "`{}` names no file; use sqlite://PATH",
            redact(url)
        )));
    }
    Ok(())
}

/// What takes the place of a hidden credential.
const HIDDEN: &str = "***";

/// Pieces of a query parameter's name (percent-decoded, lower-cased, letters and digits only)
/// that mark its value as a credential: `password`, `sslpassword`, `passfile`, `pwd`,
/// `secret`, `token`, `auth`, `sslkey`, `api_key`, `credentials`... A file path hidden this way
/// (`sslkey`, `passfile`) costs the reader little; a password shown costs the operator a
/// rotation.
const SECRET_NAMES: [&str; 7] = ["pass", "pwd", "secret", "token", "auth", "key", "cred"];

/// `url` with every credential replaced by `***`: safe to log, to put in an error and to
/// answer on a route. Every store URL idmint shows goes through this one function.
///
/// Hidden, for every kind of store:
/// - the password of `user:password@` (also Redis' `:password@`); the user name, the host,
///   the port and the path stay, so an operator can tell the stores apart;
/// - the value of every query parameter whose name holds `pass`, `pwd`, `secret`, `token`,
///   `auth`, `key` or `cred` (the private `SECRET_NAMES`), in any case and percent-encoded or
///   not (`?password=`, `?sslpassword=`, `?Pass%77ord=`);
/// - a fragment (`#...`): no driver reads one, and it can only hold the rest of a password
///   written with a bare `#`.
///
/// A password written without percent-encoding its `@`, `/`, `?` or `#` ends the URL's
/// authority early, so its rest would seem to be a path, a query or a fragment, and cannot be
/// told from them. So when an `@` shows up past the authority, everything between `//` and the
/// last `@` is hidden; and when that part holds a `=`, the last `@` may have been inside a
/// parameter's value, so nothing after `//` is shown. (A URL with an `@` in a parameter's
/// value, `?application_name=a@b`, is shown that way too: safe, if terse.) Text that is no URL is shown up to its last `@` hidden, as if it
/// were one that lacks its `//`.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = split_scheme(url);
    let mut out = String::with_capacity(url.len() + HIDDEN.len());
    out.push_str(scheme);
    let sqlite = scheme.eq_ignore_ascii_case("sqlite:");
    let Some(after) = rest.strip_prefix("//") else {
        // No authority: `sqlite:PATH` (whose path may hold `@`), or not a store URL at all,
        // where an `@` can only follow credentials written without `//`.
        if sqlite {
            push_tail(&mut out, rest, sqlite);
        } else {
            push_hiding_to_last_at(&mut out, rest);
        }
        return out;
    };
    out.push_str("//");
    let authority_end = if sqlite {
        // As `check_sqlite` reads it: the first path segment.
        after.find('/')
    } else {
        after.find(['/', '?', '#'])
    }
    .unwrap_or(after.len());
    let (authority, tail) = after.split_at(authority_end);
    if !sqlite && tail.contains('@') {
        push_hiding_to_last_at(&mut out, after);
        return out;
    }
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(HIDDEN);
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    push_tail(&mut out, tail, sqlite);
    out
}

/// `url` cut after its scheme's `:` (`("postgres:", "//...")`), or `("", url)` when it starts
/// with no scheme.
fn split_scheme(url: &str) -> (&str, &str) {
    let Some(colon) = url.find(':') else {
        return ("", url);
    };
    let name = &url[..colon];
    let is_scheme = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if is_scheme {
        url.split_at(colon + 1)
    } else {
        ("", url)
    }
}

/// `text` (a network URL after its `//`, or after its scheme when it has no `//`) with
/// everything up to its last `@` hidden; nothing at all when that part holds a `=`: the `@`
/// may then have been inside a parameter's value, the rest of which would show.
fn push_hiding_to_last_at(out: &mut String, text: &str) {
    let rest = match text.rfind('@') {
        Some(at) if text[..at].contains('=') => {
            out.push_str(HIDDEN);
            return;
        }
        Some(at) => {
            out.push_str(HIDDEN);
            out.push('@');
            &text[at + 1..]
        }
        None => text,
    };
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    out.push_str(&rest[..host_end]);
    push_tail(out, &rest[host_end..], false);
}

/// The path as it is, the query with credentials hidden, a fragment hidden (a SQLite path may
/// hold `#`: it is kept there).
fn push_tail(out: &mut String, tail: &str, sqlite: bool) {
    let (before_fragment, fragment) = if sqlite {
        (tail, None)
    } else {
        match tail.split_once('#') {
            Some((before, fragment)) => (before, Some(fragment)),
            None => (tail, None),
        }
    };
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            push_query(out, query);
        }
        None => out.push_str(before_fragment),
    }
    if let Some(fragment) = fragment {
        out.push('#');
        if !fragment.is_empty() {
            out.push_str(HIDDEN);
        }
    }
}

/// The query string with the value of each parameter that names a credential hidden.
fn push_query(out: &mut String, query: &str) {
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((name, _value)) if names_a_secret(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(HIDDEN);
            }
            // A bare name that decodes to a credential (`password%3Ds3cret`): all of it.
            None if names_a_secret(pair) => out.push_str(HIDDEN),
            _ => out.push_str(pair),
        }
    }
}

/// Whether the parameter name `raw` (as written: `+` and `%XX` decoded here) names a
/// credential: see [`SECRET_NAMES`].
fn names_a_secret(raw: &str) -> bool {
    let decoded: String = url::form_urlencoded::parse(raw.as_bytes())
        .map(|(name, value)| format!("{name}{value}"))
        .collect();
    let folded: String = decoded
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_NAMES.iter().any(|piece| folded.contains(piece))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redact("postgres://u:secret@127.0.0.1:5432/db"),
            "postgres://u:***@127.0.0.1:5432/db"
        );
        assert_eq!(redact("redis://:secret@host/"), "redis://:***@host/");
        assert_eq!(redact("mysql://u@host/db"), "mysql://u@host/db");
        assert_eq!(
            redact("sqlite://./idmint-data/idmint.db"),
            "sqlite://./idmint-data/idmint.db"
        );
    }

    #[test]
    fn backends_are_chosen_by_scheme() {
        let kinds: Vec<Backend> = [
            "sqlite://a.db",
            "postgresql://h/db",
            "mariadb://h/db",
            "rediss://h",
        ]
        .iter()
        .map(|url| Location::parse(url).map(|l| l.backend))
        .collect::<Result<_>>()
        .unwrap_or_default();
        assert_eq!(
            kinds,
            [
                Backend::Sqlite,
                Backend::Postgres,
                Backend::Mysql,
                Backend::Redis
            ]
        );
        let err = Location::parse("mongodb://u:pw@h/db");
        assert!(
            matches!(err, Err(Error::InvalidArgument { reason, .. }) if reason.contains("u:***@h"))
        );
    }

    #[test]
    fn sqlite_paths_come_out_whole() {
        let path = |url: &str| {
            Location::parse(url)
                .map(|l| l.sqlite_path().to_owned())
                .unwrap_or_default()
        };
        assert_eq!(
            path("sqlite://./idmint-data/idmint.db"),
            "./idmint-data/idmint.db"
        );
        assert_eq!(path("sqlite:///var/lib/idmint.db"), "/var/lib/idmint.db");
        assert_eq!(path("sqlite:rel.db"), "rel.db");
        assert_eq!(path("sqlite:./rel.db"), "./rel.db");
        assert_eq!(
            path("sqlite://idmint-data/idmint.db"),
            "idmint-data/idmint.db"
        );
        assert_eq!(path("sqlite://rel.db"), "rel.db");
        assert_eq!(path("sqlite://:memory:"), ":memory:");
        // An `@` past the first segment is part of a folder name, as is one after `sqlite:`.
        assert_eq!(path("sqlite://./at@home/x.db"), "./at@home/x.db");
        assert_eq!(path("sqlite:/srv/a@b/x.db"), "/srv/a@b/x.db");
    }

    /// The reason of a refused URL, or a panic naming what was accepted.
    fn refusal(url: &str) -> String {
        match Location::parse(url) {
            Err(Error::InvalidArgument {
                name: "store",
                reason,
            }) => reason,
            other => panic!("`{url}` was not refused: {other:?}"),
        }
    }

    #[test]
    fn sqlite_urls_with_credentials_are_refused_without_showing_the_password() {
        for url in [
            "sqlite://user:pw@/tmp/x.db",
            "sqlite://user@/tmp/x.db",
            "sqlite://user:pw@localhost/tmp/x.db",
            "sqlite://:pw@/x.db",
        ] {
            let reason = refusal(url);
            assert!(
                reason.contains("no user, password or host"),
                "{url}: {reason}"
            );
            assert!(
                !reason.contains("pw"),
                "{url}: the password shows: {reason}"
            );
        }
    }

    #[test]
    fn sqlite_urls_with_a_query_or_no_path_are_refused() {
        for url in ["sqlite:rel.db?mode=rwc", "sqlite:///tmp/x.db?mode=ro"] {
            assert!(refusal(url).contains("no query parameters"), "{url}");
        }
        for url in ["sqlite:", "sqlite://"] {
            assert!(refusal(url).contains("names no file"), "{url}");
        }
    }

    #[test]
    fn network_urls_that_do_not_parse_are_refused() {
        let reason = refusal("postgres://u:secret@[::1/db");
        assert!(reason.contains("not a valid URL"), "{reason}");
        assert!(!reason.contains("secret"), "{reason}");
        assert!(Location::parse("postgres://u:secret@127.0.0.1:5432/db").is_ok());
        assert!(Location::parse("redis://127.0.0.1:6379/").is_ok());
        assert!(Location::parse("mysql://u@h/db").is_ok());
    }
}
