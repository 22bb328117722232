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
        Ok(Self {
            backend,
            url: url.to_owned(),
            display: redact(url),
        })
    }

    /// The file path of a `sqlite://PATH` (or `sqlite:PATH`) URL.
    pub fn sqlite_path(&self) -> &str {
        let rest = self.url.strip_prefix("sqlite:").unwrap_or(&self.url);
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        rest.split_once('?').map_or(rest, |(path, _)| path)
    }
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
        assert_eq!(path("sqlite:rel.db?mode=rwc"), "rel.db");
    }
}
