//! Reading a PostgreSQL URL without the driver logging its secrets: sqlx warns of each query
//! parameter it does not know with the parameter's value (`?sslpassword=...` is one it does
//! not know), straight into idmint's log. [`without_driver_log`] runs the parse with a
//! subscriber of its own, which keeps only the names of those parameters, so idmint can say
//! which ones were ignored without their values.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Dispatch, Event, Metadata, Subscriber};

/// What `parse` returns, and the `key` field of every event the driver raised meanwhile.
pub(crate) fn without_driver_log<T>(parse: impl FnOnce() -> T) -> (T, Vec<String>) {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let dispatch = Dispatch::new(KeysOnly(Arc::clone(&keys)));
    let parsed = tracing::dispatcher::with_default(&dispatch, parse);
    let keys = std::mem::take(&mut *keys.lock().unwrap_or_else(PoisonError::into_inner));
    (parsed, keys)
}

/// A subscriber that writes nothing and keeps each event's `key` field.
struct KeysOnly(Arc<Mutex<Vec<String>>>);

impl Subscriber for KeysOnly {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        struct Key(Option<String>);
        impl Visit for Key {
            fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
                if field.name() == "key" {
                    self.0 = Some(format!("{value:?}"));
                }
            }
            fn record_str(&mut self, field: &Field, value: &str) {
                if field.name() == "key" {
                    self.0 = Some(value.to_owned());
                }
            }
        }
        let mut key = Key(None);
        event.record(&mut key);
        if let Some(key) = key.0 {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(key);
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use std::str::FromStr;

    use sqlx::postgres::PgConnectOptions;

    use super::*;

    #[test]
    fn unknown_parameters_are_named_without_their_values() {
        let (parsed, keys) = without_driver_log(|| {
            PgConnectOptions::from_str("postgres://u@h/db?sslpassword=s3cret&sslmode=disable")
        });
        assert!(parsed.is_ok());
        assert_eq!(keys, ["sslpassword"]);
    }
}
