//! The refusals of the server backends at open: a server that cannot be reached, and against
//! the real servers a schema newer than this binary and (PostgreSQL, where a database of its
//! own can be made non-durable without touching the shared server) a store that cannot promise
//! durability.

use crate::common;

#[cfg(any(feature = "postgres", feature = "mysql"))]
use idmint_core::Error;

/// Opens `url` in a fresh namespace, sets the stored schema version to 99 with `bump` (SQL run
/// on a raw connection), and checks that opening again is refused, naming the version.
#[cfg(any(feature = "postgres", feature = "mysql"))]
async fn newer_schema_is_refused<F, Fut>(url: &str, bump: F)
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (_, namespace) = common::open(url).await;
    bump(format!("UPDATE {namespace}_schema SET version = 99")).await;
    let err = idmint_store::open(url, &common::options(&namespace))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("99") && m.contains("newer")),
        "{err}"
    );
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_refuses_a_newer_schema() {
    use sqlx::{AssertSqlSafe, Connection, PgConnection};
    let url = common::server_url("IDMINT_TEST_POSTGRES_URL");
    newer_schema_is_refused(&url, |sql| async {
        let mut raw = PgConnection::connect(&url).await.unwrap();
        sqlx::query(AssertSqlSafe(sql))
            .execute(&mut raw)
            .await
            .unwrap();
    })
    .await;
}

#[cfg(feature = "mysql")]
#[tokio::test]
async fn mysql_refuses_a_newer_schema() {
    use sqlx::{AssertSqlSafe, Connection, MySqlConnection};
    let url = common::server_url("IDMINT_TEST_MYSQL_URL");
    newer_schema_is_refused(&url, |sql| async {
        let mut raw = MySqlConnection::connect(&url).await.unwrap();
        sqlx::query(AssertSqlSafe(sql))
            .execute(&mut raw)
            .await
            .unwrap();
    })
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_refuses_a_database_without_synchronous_commit_unless_allowed() {
    use sqlx::{AssertSqlSafe, Connection, PgConnection};
    let url = common::server_url("IDMINT_TEST_POSTGRES_URL");
    let database = common::fresh_namespace();
    let mut admin = PgConnection::connect(&url).await.unwrap();
    for sql in [
        format!("CREATE DATABASE {database}"),
        format!("ALTER DATABASE {database} SET synchronous_commit = off"),
    ] {
        sqlx::query(AssertSqlSafe(sql))
            .execute(&mut admin)
            .await
            .unwrap();
    }
    let (base, _) = url.rsplit_once('/').unwrap();
    let lax_url = format!("{base}/{database}");
    let err = idmint_store::open(&lax_url, &common::options("idmint"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StoreInvalid { message: m, .. } if m.contains("synchronous_commit=off") && m.contains(":***@")),
        "{err}"
    );
    let allowed = idmint_store::StoreOptions {
        allow_non_durable: true,
        ..common::options("idmint")
    };
    let store = idmint_store::open(&lax_url, &allowed).await.unwrap();
    drop(store);
}

/// A port nothing listens on: bound, then released.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server that cannot be reached at start is an error naming its URL, password hidden.
#[cfg(any(feature = "postgres", feature = "mysql"))]
async fn unreachable_server_is_named_without_its_password(scheme: &str) {
    let port = closed_port();
    let url = format!("{scheme}://idmint:secret@127.0.0.1:{port}/ids");
    let err = idmint_store::open(&url, &common::options("unreachable"))
        .await
        .unwrap_err();
    let shown = format!("{scheme}://idmint:***@127.0.0.1:{port}/ids");
    assert!(
        matches!(&err, Error::StoreUnavailable { message: m, .. } if m.contains(&shown) && !m.contains("secret")),
        "{err}"
    );
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn an_unreachable_postgres_is_named_without_its_password() {
    unreachable_server_is_named_without_its_password("postgres").await;
}

#[cfg(feature = "mysql")]
#[tokio::test]
async fn an_unreachable_mysql_is_named_without_its_password() {
    unreachable_server_is_named_without_its_password("mysql").await;
}
