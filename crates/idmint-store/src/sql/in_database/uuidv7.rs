//! `<namespace>_uuidv7()`: UUIDv7s made inside PostgreSQL by a PL/pgSQL function a column
//! default can call, in idmint's 128-bit layout (48-bit Unix ms, version 7, a 24-bit counter
//! split 12/12 around the variant, 50 random bits; no node field), strictly increasing in the
//! order one session draws them.
//!
//! # How it works, and why so
//!
//! - **No worker IDs, no store tables.** A UUIDv7 needs no coordination: two sessions can only
//!   collide if the CSPRNG gives both the same 50 bits and the same counter seed in the same
//!   ms. So `install` takes no lease and touches none of the namespace's tables; the function is
//!   only named after the namespace.
//! - **Randomness from `gen_random_uuid()`** (core since PostgreSQL 13, no extension): its
//!   bytes come from `pg_strong_random`, the server's CSPRNG. One call gives 122 random bits per
//!   ID: bytes 0..3 seed the counter of a new ms, bytes 9..16 are the ID's random tail.
//! - **The session's last (ms, counter) is a custom setting** (`set_config(..., false)`), the
//!   only per-session memory PL/pgSQL has without writing to a table. The first ID of a ms
//!   seeds the counter in [0, 2^23); an ID in the same ms, or in an earlier one (the server's
//!   clock stepped back), takes counter + 1 from the last state; past 2^24 - 1 it borrows the
//!   next ms with counter 0. One session cannot come near 2^23 IDs in a ms (PL/pgSQL makes a few
//!   hundred thousand a second), so borrowing never runs ahead of the clock and no call waits.
//! - **What the setting does not cover.** PostgreSQL undoes a setting with the transaction (or
//!   savepoint) that made it: after a rollback the session goes on from its state before that
//!   transaction, so IDs drawn next in the same ms may sort below the rolled-back ones (which
//!   are in no table). `DISCARD ALL` and `RESET ALL` start the session afresh. Uniqueness does
//!   not rest on the setting in either case: that is the 50 random bits and the random seed.
//! - **Plain invoker's function.** It reads and writes nothing but its setting, so it runs with
//!   the caller's rights and every role may call it, as `gen_random_uuid()`. The functions it
//!   calls are qualified with `pg_catalog` rather than pinned with `SET search_path`, which
//!   costs a settings save and restore per call (about a fifth of its time).

use sqlx::{Postgres, Transaction};

use super::{connect, failed, invalid, locked, sql};
use crate::location::Location;
use crate::{Result, StoreOptions};

/// The oldest PostgreSQL the function runs on: `gen_random_uuid()` is core from 13.
pub const MIN_SERVER_VERSION: u32 = 130_000;

/// The first PostgreSQL with a `uuidv7()` of its own.
pub const BUILT_IN_SERVER_VERSION: u32 = 180_000;

/// What `install_uuidv7` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UuidInstalled {
    /// The function, schema-qualified: `public.idmint_uuidv7()`.
    pub function: String,
    /// The server's `server_version_num` (`150004` for 15.4): from 180000 on, PostgreSQL has
    /// `uuidv7()` built in.
    pub server_version: u32,
}

/// The function's name for a namespace: `<namespace>_uuidv7`.
pub fn function_name(namespace: &str) -> String {
    format!("{namespace}_uuidv7")
}

/// Installs `<namespace>_uuidv7()` in the store's schema (the connection's current schema).
/// Refused when it is installed already, or on a server older than PostgreSQL 13.
pub async fn install_uuidv7(location: &Location, options: &StoreOptions) -> Result<UuidInstalled> {
    options.validate()?;
    let pool = connect(location, options).await?;
    let ns = &options.namespace;
    let mut tx = locked(&pool, ns).await?;
    let server_version = server_version(&mut tx).await?;
    if server_version < MIN_SERVER_VERSION {
        return Err(invalid(format!(
            "{}_uuidv7 needs PostgreSQL 13 or later (gen_random_uuid); this server is {}",
            ns,
            shown_version(server_version)
        )));
    }
    let schema = current_schema(&mut tx).await?;
    if installed(&mut tx, &schema, ns).await? {
        return Err(invalid(format!(
            "{ns}_uuidv7 is installed already; `idmint sql uninstall --uuid` first"
        )));
    }
    for statement in function_sql(&super::quote_ident(&schema), ns) {
        sqlx::query(sql(statement))
            .execute(&mut *tx)
            .await
            .map_err(|e| failed("creating the function", e))?;
    }
    tx.commit()
        .await
        .map_err(|e| failed("committing the install", e))?;
    Ok(UuidInstalled {
        function: format!("{schema}.{ns}_uuidv7()"),
        server_version,
    })
}

/// Removes `<namespace>_uuidv7()`; refused while a column default (or anything else) still
/// uses it. Returns the function removed, schema-qualified.
pub async fn uninstall_uuidv7(location: &Location, options: &StoreOptions) -> Result<String> {
    options.validate()?;
    let pool = connect(location, options).await?;
    let ns = &options.namespace;
    let mut tx = locked(&pool, ns).await?;
    let schema = current_schema(&mut tx).await?;
    if !installed(&mut tx, &schema, ns).await? {
        return Err(invalid(format!("{ns}_uuidv7 is not installed")));
    }
    let users = super::users_of(&mut tx, &function_name(ns)).await?;
    if !users.is_empty() {
        return Err(invalid(format!(
            "{ns}_uuidv7 is still used by {}; drop those defaults first (ALTER TABLE ... \
             ALTER COLUMN ... DROP DEFAULT)",
            users.join(", ")
        )));
    }
    sqlx::query(sql(format!(
        "DROP FUNCTION {}.\"{ns}_uuidv7\"()",
        super::quote_ident(&schema)
    )))
    .execute(&mut *tx)
    .await
    .map_err(|e| failed("dropping the function", e))?;
    tx.commit()
        .await
        .map_err(|e| failed("committing the uninstall", e))?;
    Ok(format!("{schema}.{ns}_uuidv7()"))
}

/// The session setting that holds the last `ms:counter` a session drew.
pub fn setting_name(namespace: &str) -> String {
    // After the dot a name must start as an identifier does; a namespace may start with a digit.
    format!("idmint.uuidv7_{namespace}")
}

/// The statements that create the function, in `schema` (quoted already).
fn function_sql(schema: &str, ns: &str) -> Vec<String> {
    let setting = setting_name(ns);
    // Byte offsets are get_byte's and set_byte's (from 0); `substr(r, 9)` is bytes 8..16.
    let body = format!(
        r#"
DECLARE
  -- 122 CSPRNG bits: bytes 0..3 seed a new ms's counter, bytes 9..16 give the random tail.
  r bytea := pg_catalog.uuid_send(pg_catalog.gen_random_uuid());
  -- Whole microseconds first (a float8 of the epoch is exact to well under 1 us), then ms.
  now_ms bigint := (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000000)::bigint / 1000;
  last text := pg_catalog.current_setting('{setting}', true);
  ms bigint := NULLIF(pg_catalog.split_part(last, ':', 1), '')::bigint;
  counter bigint;
BEGIN
  IF ms IS NULL OR now_ms > ms THEN
    -- The session's first ID of this ms: a counter in [0, 2^23).
    ms := now_ms;
    counter := (pg_catalog.get_byte(r, 0) << 15) | (pg_catalog.get_byte(r, 1) << 7)
      | (pg_catalog.get_byte(r, 2) >> 1);
  ELSE
    -- The same ms, or the clock is behind the last ID: count on from it.
    counter := pg_catalog.split_part(last, ':', 2)::bigint + 1;
    IF counter > 16777215 THEN
      ms := ms + 1;
      counter := 0;
    END IF;
  END IF;
  PERFORM pg_catalog.set_config('{setting}', ms || ':' || counter, false);
  -- Bytes 0..8: ms, version 7, counter bits 23..12. Byte 8: variant 10, counter bits 11..6.
  -- Byte 9: counter bits 5..0, then 2 random bits; bytes 10..16 random (50 in all).
  RETURN pg_catalog.encode(
    pg_catalog.int8send((ms << 16) | 28672 | (counter >> 12))
      || pg_catalog.set_byte(
           pg_catalog.set_byte(pg_catalog.substr(r, 9), 0, (128 | ((counter >> 6) & 63))::int),
           1, ((counter & 63) << 2)::int | (pg_catalog.get_byte(r, 9) & 3)),
    'hex')::uuid;
END
"#
    );
    vec![
        format!(
            "CREATE FUNCTION {schema}.\"{ns}_uuidv7\"() RETURNS uuid LANGUAGE plpgsql VOLATILE \
             PARALLEL UNSAFE AS $idmint${body}$idmint$"
        ),
        format!(
            "COMMENT ON FUNCTION {schema}.\"{ns}_uuidv7\"() IS 'idmint: a UUIDv7 (48-bit ms, \
             24-bit counter, 50 random bits), strictly increasing per session (its state is the \
             setting {setting}); made by idmint sql install --uuid, removed by idmint sql \
             uninstall --uuid'"
        ),
    ]
}

/// `server_version_num`, as a number.
async fn server_version(tx: &mut Transaction<'_, Postgres>) -> Result<u32> {
    let text: String = sqlx::query_scalar("SELECT current_setting('server_version_num')")
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| failed("reading the server's version", e))?;
    text.trim()
        .parse()
        .map_err(|_| invalid(format!("the server's version `{text}` is not a number")))
}

/// `150004` as `15.4`.
fn shown_version(version: u32) -> String {
    format!("{}.{}", version / 10_000, version % 10_000)
}

async fn current_schema(tx: &mut Transaction<'_, Postgres>) -> Result<String> {
    sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| failed("reading the schema", e))
}

/// Whether `<schema>.<ns>_uuidv7()` exists.
async fn installed(tx: &mut Transaction<'_, Postgres>, schema: &str, ns: &str) -> Result<bool> {
    sqlx::query_scalar("SELECT to_regprocedure($1) IS NOT NULL")
        .bind(format!("{}.\"{ns}_uuidv7\"()", super::quote_ident(schema)))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| failed("looking for the function", e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_function_keeps_its_state_in_a_setting_of_its_namespace() {
        let sql = function_sql("\"public\"", "9ns");
        let body = &sql[0];
        assert!(body.starts_with("CREATE FUNCTION \"public\".\"9ns_uuidv7\"() RETURNS uuid"));
        assert!(
            body.contains("current_setting('idmint.uuidv7_9ns', true)"),
            "{body}"
        );
        assert!(body.contains("set_config('idmint.uuidv7_9ns', ms || ':' || counter, false)"));
        // Invoker's rights, no pinned search_path (a settings save and restore per call).
        assert!(!body.contains("SECURITY DEFINER") && !body.contains("SET search_path"));
        // The version nibble and the counter's bound.
        assert!(body.contains("| 28672 |") && body.contains("counter > 16777215"));
        assert!(sql[1].contains("COMMENT ON FUNCTION \"public\".\"9ns_uuidv7\"()"));
    }

    #[test]
    fn versions_read_as_postgresql_shows_them() {
        assert_eq!(shown_version(120_017), "12.17");
        assert_eq!(shown_version(180_000), "18.0");
    }
}
