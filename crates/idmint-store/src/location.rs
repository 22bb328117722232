//! Store URLs: which backend, and how to show the URL without its password.

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Which store.
    pub backend: Backend,
    /// The URL as given (with its password): for the driver only.
    pub url: String,
    /// The URL with its password replaced by `***`: for logs and errors.
    pub display: String,
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
/// absolute, as the README and the `--data-dir` default (`sqlite://<data-dir>/idmint.db`) use
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

/// `url` with any password replaced by `***`, safe to log.
pub fn redact(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // Cannot fail for URLs that already carry a password.
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(_) => url.to_owned(),
        // Unparsable: hide everything between `//` and `@`, in case it holds credentials.
        Err(_) => match (url.find("//"), url.rfind('@')) {
            (Some(start), Some(at)) if at > start => {
                format!("{}//***{}", &url[..start], &url[at..])
            }
            _ => url.to_owned(),
        },
    }
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
