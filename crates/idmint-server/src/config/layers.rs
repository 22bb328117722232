//! One layer of settings read from a TOML file (`--config FILE`), and layers merged one over
//! another: how the layers are combined, apart from what each setting is
//! (`definitions.rs`) and from resolving the result (`resolve.rs`). Errors of a file never
//! quote it: its lines may hold a token or a store password.

use std::path::Path;

use serde_json::Value;

use super::PartialConfig;
use crate::error::{without_quoted_values, ServerError};

impl PartialConfig {
    /// Reads a TOML file. An error names the file, the line and the setting, and never quotes
    /// the file: its lines may hold a token or a store password.
    pub fn from_file(path: &Path) -> Result<Self, ServerError> {
        let error = |reason: String| ServerError::Config {
            setting: "config".into(),
            reason: format!("{}: {reason}", path.display()),
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
        Self::from_toml(&text, path)
    }

    /// Parses the TOML text of the file at `path` (named in errors), as [`Self::from_file`].
    pub(super) fn from_toml(text: &str, path: &Path) -> Result<Self, ServerError> {
        let error = |reason: String| ServerError::Config {
            setting: "config".into(),
            reason: format!("{}: {reason}", path.display()),
        };
        toml::from_str(text).map_err(|e| {
            let Some(span) = e.span() else {
                return error(e.message().to_owned());
            };
            let line_start = text[..span.start].rfind('\n').map_or(0, |at| at + 1);
            let line = text[..span.start].matches('\n').count() + 1;
            // The key of the line, when it looks like one (a bare TOML key, not a value).
            let key = text[line_start..]
                .split(['=', '\n'])
                .next()
                .map(str::trim)
                .filter(|key| {
                    (1..=64).contains(&key.len())
                        && key
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                });
            // Setting names and the values a setting may take (`text`, `json`, `switch`...)
            // are the format's words, not secrets: an error keeps them.
            let words = Self::format_words();
            let message = without_quoted_values(e.message(), |quoted| {
                words.iter().any(|word| word == quoted)
            });
            match key {
                // A value of a known setting: the error names that setting, and says the file.
                Some(key) if Self::setting_names().any(|name| name == key) => ServerError::Config {
                    setting: key.replace('_', "-"),
                    reason: format!("{}: line {line}, `{key}`: {message}", path.display()),
                },
                Some(key) => error(format!("line {line}, `{key}`: {message}")),
                None => error(format!("line {line}: {message}")),
            }
        })
    }

    /// Each field from `self`, else from `lower`: both as JSON objects, merged key by key.
    pub(super) fn over(self, lower: Self) -> Result<Self, ServerError> {
        let merge_error = |e: serde_json::Error| ServerError::Config {
            setting: "config".into(),
            reason: format!("combining the settings: {e}"),
        };
        let (Value::Object(mut upper), Value::Object(lower)) = (
            serde_json::to_value(self).map_err(merge_error)?,
            serde_json::to_value(lower).map_err(merge_error)?,
        ) else {
            return Err(merge_error(serde::ser::Error::custom("not a table")));
        };
        for (key, value) in lower {
            if upper.get(&key).is_none_or(Value::is_null) {
                upper.insert(key, value);
            }
        }
        serde_json::from_value(Value::Object(upper)).map_err(merge_error)
    }

    /// The settings this layer gives a value, by flag name without dashes (`max-count`): to
    /// say where a refused value came from.
    pub fn given(&self) -> Vec<String> {
        match serde_json::to_value(self) {
            Ok(Value::Object(fields)) => fields
                .into_iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, _)| key.replace('_', "-"))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The TOML keys, which are the flags' names with underscores.
    pub(super) fn setting_names() -> impl Iterator<Item = String> {
        let command = <Self as clap::Args>::augment_args(clap::Command::new("serve"));
        let names: Vec<String> = command
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .map(|long| long.replace('-', "_"))
            .collect();
        names.into_iter()
    }

    /// The TOML keys and every value a setting of a fixed set of values may take, as clap
    /// lists them or its value name spells them out (`text|json`, `wait|switch|fail`, `true`).
    fn format_words() -> Vec<String> {
        let command = <Self as clap::Args>::augment_args(clap::Command::new("serve"));
        let mut words: Vec<String> = Self::setting_names().collect();
        for arg in command.get_arguments() {
            words.extend(
                arg.get_possible_values()
                    .iter()
                    .map(|value| value.get_name().to_owned()),
            );
            for name in arg.get_value_names().into_iter().flatten() {
                if name.contains('|') {
                    words.extend(name.split('|').map(str::to_owned));
                }
            }
        }
        words
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// A TOML file may hold a token or a store password: errors never quote its lines.
    #[test]
    fn file_errors_never_quote_the_file() {
        let secrets = "admin_token = \"s3cret\"\nstore = \"postgres://u:pw@db/x\"\n";
        for broken in [
            "admin_token = \"s3cret\" x",
            "oops s3cret",
            "http = \"s3cret\"",
            "clock_policy = \"s3cret\"",
            "max_tags = \"s3cret\"",
        ] {
            let text = format!("{secrets}{broken}\n");
            let Err(ServerError::Config { reason, .. }) =
                PartialConfig::from_toml(&text, Path::new("ids.toml"))
            else {
                panic!("{text:?} was accepted");
            };
            assert!(reason.contains("line 3"), "{reason}");
            assert!(
                !reason.contains("s3cret") && !reason.contains(":pw@"),
                "{reason}"
            );
        }
        // The values a setting may take are the format's words: named, so the fix is plain.
        for (broken, named) in [
            ("clock_policy = \"s3cret\"", "`wait`, `switch`, `fail`"),
            ("log_format = \"s3cret\"", "`text` or `json`"),
        ] {
            let Err(ServerError::Config { reason, .. }) =
                PartialConfig::from_toml(broken, Path::new("ids.toml"))
            else {
                panic!("{broken:?} was accepted");
            };
            assert!(
                reason.contains(named) && !reason.contains("s3cret"),
                "{reason}"
            );
        }
    }
}
