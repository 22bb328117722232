//! What only SQLite can show here: its schema version and durability settings are reachable
//! from the test, so refusing a newer schema and a non-durable database is checked directly.

use crate::common;

use idmint_core::Error;
use idmint_store::StoreOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AssertSqlSafe, ConnectOptions};

#[tokio::test]
async fn a_schema_newer_than_this_binary_is_refused() {
    let url = common::sqlite_url();
    let (_, namespace) = common::open(&url).await;
    let path = url.strip_prefix("sqlite://").unwrap();
    let mut raw = SqliteConnectOptions::new()
        .filename(path)
        .connect()
        .await
        .unwrap();
    let bump = format!("UPDATE {namespace}_schema SET version = 99");
    sqlx::query(AssertSqlSafe(bump))
        .execute(&mut raw)
        .await
        .unwrap();
    let err = idmint_store::open(&url, &common::options(&namespace))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("version 99") && m.contains("newer")),
        "{err}"
    );
}

#[tokio::test]
async fn a_database_that_cannot_be_durable_is_refused_unless_allowed() {
    // An in-memory database has no WAL: a crash would lose every allocation.
    let err = idmint_store::open("sqlite://:memory:", &StoreOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("journal_mode=memory")),
        "{err}"
    );
    let allowed = StoreOptions {
        allow_non_durable: true,
        ..StoreOptions::default()
    };
    assert!(idmint_store::open("sqlite://:memory:", &allowed)
        .await
        .is_ok());
}

#[tokio::test]
async fn an_unreachable_file_is_reported_with_its_url() {
    let err = idmint_store::open("sqlite:///proc/idmint/no/such.db", &StoreOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreUnavailable { message: m, .. } if m.contains("sqlite:///proc/idmint/no/such.db")),
        "{err}"
    );
}

#[tokio::test]
async fn bad_urls_and_namespaces_are_refused_before_connecting() {
    let err = idmint_store::open("mongodb://u:secret@h/db", &StoreOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("u:***@h") && !reason.contains("secret"))
    );
    let bad = StoreOptions {
        namespace: "Drop Table".into(),
        ..StoreOptions::default()
    };
    let err = idmint_store::open(&common::sqlite_url(), &bad)
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidArgument {
            name: "namespace",
            ..
        }
    ));
}
