//! The Redis-protocol front end against a real SQLite store, driven by the `redis` crate, by
//! raw TCP (malformed frames, inline commands) and by the real `redis-cli` and
//! `redis-benchmark` (installed by `scripts/with-stores`, under which the tests run).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use idmint_core::Tag;
use idmint_core::{Clock, Layout, SnowflakeConfig, SystemClock};
use idmint_server::auth::{Auth, Grant, Scope, Tokens};
use idmint_server::config::ConnectionLimits;
use idmint_server::ids::{Ids, IdsConfig};
use idmint_server::resp::{serve, RespOptions};
use idmint_store::StoreOptions;
use redis::aio::MultiplexedConnection;
use redis::{RedisError, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::common::{ids_config, prometheus, sqlite_url};

mod ranges;

/// A layout with a shard field, so `SHARD k` can be checked in decoded IDs.
const LAYOUT: &str = "time:41@1ms,worker:6,shard:4,seq:12";

const TOKEN: &str = "s3cret-token";

/// A running server: the ID service on a fresh SQLite file and `serve` on a loopback port.
struct Server {
    port: u16,
    ids: Arc<Ids>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(options: RespOptions) -> Server {
        Server::start_with(ids_config(LAYOUT, "resp-test"), options).await
    }

    async fn start_with(config: IdsConfig, options: RespOptions) -> Server {
        let store = idmint_store::open(&sqlite_url("resp"), &StoreOptions::default())
            .await
            .unwrap();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let ids = Ids::start(config, store, clock).await.unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, Arc::clone(&ids), options, async move {
            let _ = stopped.await;
        }));
        Server {
            port,
            ids,
            stop: Some(stop),
            task,
        }
    }

    async fn open() -> Server {
        Server::start(RespOptions::default()).await
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    async fn client(&self) -> MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    async fn raw(&self) -> TcpStream {
        TcpStream::connect(("127.0.0.1", self.port)).await.unwrap()
    }

    /// Stops the listener (checking it returns promptly), then the ID service.
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("serve did not return after shutdown")
            .unwrap()
            .unwrap();
        self.ids.shutdown().await.unwrap();
    }
}

async fn query<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> redis::RedisResult<T> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(con).await
}

async fn ok<T: redis::FromRedisValue>(con: &mut MultiplexedConnection, args: &[&str]) -> T {
    match query(con, args).await {
        Ok(value) => value,
        Err(error) => panic!("{args:?}: {error}"),
    }
}

/// The server error a command gets: (code, full message).
async fn server_error(con: &mut MultiplexedConnection, args: &[&str]) -> (String, String) {
    match query::<Value>(con, args).await {
        Ok(value) => panic!("{args:?} succeeded with {value:?}"),
        Err(error) => (describe(&error).0, describe(&error).1),
    }
}

fn describe(error: &RedisError) -> (String, String) {
    (
        error.code().unwrap_or("<none>").to_owned(),
        error.to_string(),
    )
}

/// Everything the server sends on `stream` until it closes the connection.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut all))
        .await
        .expect("the server did not close the connection")
        .unwrap();
    String::from_utf8_lossy(&all).into_owned()
}

/// Reads until `expected` bytes arrived (or times out).
async fn read_exact_text(stream: &mut TcpStream, len: usize) -> String {
    let mut buf = vec![0u8; len];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut buf))
        .await
        .expect("reply did not arrive")
        .unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

fn increasing(ids: &[i64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incr_and_incrby_mint_segment_ids() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let mut seen = Vec::new();
    for i in 0..1_500 {
        let name = if i % 2 == 0 { "INCR" } else { "incr" };
        seen.push(ok::<i64>(&mut con, &[name, "orders"]).await);
    }
    assert!(increasing(&seen), "INCR not strictly increasing");
    let before = *seen.last().unwrap();
    // INCRBY returns the last of a contiguous run: last - 99 ..= last are ours.
    let last: i64 = ok(&mut con, &["INCRBY", "orders", "100"]).await;
    assert!(
        last - 99 > before,
        "run {}..={last} overlaps {before}",
        last - 99
    );
    let after: i64 = ok(&mut con, &["INCR", "orders"]).await;
    assert!(after > last);
    // A run larger than what the segment has left still comes back contiguous.
    let big: i64 = ok(&mut con, &["INCRBY", "orders", "10000"]).await;
    assert!(big - 9_999 > after);
    assert!(ok::<i64>(&mut con, &["INCR", "orders"]).await > big);
    // Tags are independent sequences.
    let other: i64 = ok(&mut con, &["INCR", "invoices"]).await;
    assert!(other >= 1);

    for (args, code, text) in [
        (
            &["INCRBY", "orders", "0"][..],
            "ERR",
            "increment must be between 1 and 10000",
        ),
        (
            &["INCRBY", "orders", "10001"],
            "ERR",
            "increment must be between 1 and 10000",
        ),
        (
            &["INCRBY", "orders", "-5"],
            "ERR",
            "increment must be between 1 and 10000",
        ),
        (
            &["INCRBY", "orders", "abc"],
            "ERR",
            "value is not an integer or out of range",
        ),
        (&["INCR", "bad\ttag"], "ERR", "invalid tag"),
        (
            &["INCR"],
            "ERR",
            "wrong number of arguments for 'incr' command",
        ),
        (
            &["INCR", "a", "b"],
            "ERR",
            "wrong number of arguments for 'incr' command",
        ),
    ] {
        let (got_code, message) = server_error(&mut con, args).await;
        assert_eq!(got_code, code, "{args:?}: {message}");
        assert!(message.contains(text), "{args:?}: {message}");
    }
    // The connection is still fine after errors.
    assert!(ok::<i64>(&mut con, &["INCR", "orders"]).await > big);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflakes_next_and_decode() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let worker = server.ids.keeper().lease().worker_id.to_string();

    let one: i64 = ok(&mut con, &["IDMINT.SNOWFLAKE"]).await;
    assert!(one > 0);
    let batch: Vec<i64> = ok(&mut con, &["idmint.snowflake", "COUNT", "50"]).await;
    assert_eq!(batch.len(), 50);
    assert!(increasing(&batch));
    assert!(batch[0] > one);
    let single: Vec<i64> = ok(&mut con, &["IDMINT.SNOWFLAKE", "count", "1"]).await;
    assert_eq!(single.len(), 1, "COUNT 1 is still an array");

    let sharded: Vec<i64> = ok(&mut con, &["IDMINT.SNOWFLAKE", "SHARD", "5", "COUNT", "3"]).await;
    assert_eq!(sharded.len(), 3);
    for id in &sharded {
        let fields: HashMap<String, String> =
            ok(&mut con, &["IDMINT.DECODE", &id.to_string()]).await;
        assert_eq!(fields["shard"], "5", "{fields:?}");
        assert_eq!(fields["worker"], worker, "{fields:?}");
        assert_eq!(fields["id"], id.to_string());
        assert!(fields.contains_key("time") && fields.contains_key("seq"));
        assert!(fields["layout"].contains("shard:4"), "{fields:?}");
    }
    let lone: i64 = ok(&mut con, &["IDMINT.SNOWFLAKE", "SHARD", "15"]).await;
    let fields: HashMap<String, String> = ok(&mut con, &["IDMINT.DECODE", &lone.to_string()]).await;
    assert_eq!(fields["shard"], "15");
    let unix_ms: u64 = fields["unix_ms"].parse().unwrap();
    let now = SystemClock::new().now_ms();
    assert!(
        unix_ms <= now + 2_000 && unix_ms + 60_000 > now,
        "{unix_ms} vs {now}"
    );

    let next: i64 = ok(&mut con, &["IDMINT.NEXT", "users"]).await;
    let many: Vec<i64> = ok(&mut con, &["IDMINT.NEXT", "users", "COUNT", "25"]).await;
    assert_eq!(many.len(), 25);
    assert!(increasing(&many) && many[0] > next);
    let incr: i64 = ok(&mut con, &["INCR", "users"]).await;
    assert!(
        incr > many[24],
        "INCR and IDMINT.NEXT share the tag's sequence"
    );

    for (args, text) in [
        (
            &["IDMINT.SNOWFLAKE", "COUNT", "0"][..],
            "COUNT must be between 1 and 10000",
        ),
        (
            &["IDMINT.SNOWFLAKE", "COUNT", "10001"],
            "COUNT must be between 1 and 10000",
        ),
        (&["IDMINT.SNOWFLAKE", "COUNT"], "syntax error"),
        (&["IDMINT.SNOWFLAKE", "BOGUS", "1"], "syntax error"),
        (
            &["IDMINT.SNOWFLAKE", "SHARD", "x"],
            "value is not an integer",
        ),
        (&["IDMINT.SNOWFLAKE", "SHARD", "16"], "shard"),
        (
            &["IDMINT.NEXT", "users", "COUNT", "x"],
            "value is not an integer",
        ),
        (&["IDMINT.NEXT", "users", "LIMIT", "3"], "syntax error"),
        (
            &["IDMINT.NEXT"],
            "wrong number of arguments for 'idmint.next' command",
        ),
        (&["IDMINT.DECODE", "abc"], "value is not an integer"),
        (&["IDMINT.DECODE", "-1"], "value is not an integer"),
    ] {
        let (code, message) = server_error(&mut con, args).await;
        assert_eq!(code, "ERR", "{args:?}: {message}");
        assert!(message.contains(text), "{args:?}: {message}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_and_server_commands() {
    let server = Server::open().await;
    let mut con = server.client().await;

    assert_eq!(ok::<String>(&mut con, &["PING"]).await, "PONG");
    assert_eq!(
        ok::<String>(&mut con, &["ping", "hello there"]).await,
        "hello there"
    );
    assert_eq!(ok::<String>(&mut con, &["ECHO", "x\r\ny"]).await, "x\r\ny");

    // HELLO (and HELLO 2) answer RESP2 server info (HELLO 3 is checked over raw TCP, in
    // `resp3_replies_per_connection`); a protocol that does not exist is refused and the
    // connection goes on in RESP2.
    for args in [
        &["HELLO"][..],
        &["HELLO", "2"],
        &["HELLO", "2", "SETNAME", "hello-name"],
    ] {
        let info: HashMap<String, Value> = ok(&mut con, args).await;
        assert_eq!(
            info["server"],
            Value::BulkString(b"idmint".to_vec()),
            "{info:?}"
        );
        assert_eq!(info["proto"], Value::Int(2));
        assert_eq!(info["mode"], Value::BulkString(b"standalone".to_vec()));
        assert_eq!(info["role"], Value::BulkString(b"master".to_vec()));
        assert_eq!(info["modules"], Value::Array(vec![]));
        assert!(matches!(info["id"], Value::Int(_)));
    }
    assert_eq!(
        ok::<String>(&mut con, &["CLIENT", "GETNAME"]).await,
        "hello-name"
    );
    let (code, _) = server_error(&mut con, &["HELLO", "4"]).await;
    assert_eq!(code, "NOPROTO");
    let (code, message) = server_error(&mut con, &["HELLO", "two"]).await;
    assert_eq!(code, "ERR", "{message}");
    assert_eq!(ok::<String>(&mut con, &["PING"]).await, "PONG");

    assert_eq!(
        ok::<String>(&mut con, &["CLIENT", "SETNAME", "idmint-test"]).await,
        "OK"
    );
    assert_eq!(
        ok::<String>(&mut con, &["client", "getname"]).await,
        "idmint-test"
    );
    assert_eq!(
        ok::<String>(&mut con, &["CLIENT", "SETINFO", "LIB-NAME", "mylib"]).await,
        "OK"
    );
    let id: i64 = ok(&mut con, &["CLIENT", "ID"]).await;
    assert!(id > 0);
    let info: String = ok(&mut con, &["CLIENT", "INFO"]).await;
    assert!(info.contains(&format!("id={id} ")), "{info}");
    assert!(
        info.contains("name=idmint-test") && info.contains("lib-name=mylib"),
        "{info}"
    );
    let (_, message) = server_error(&mut con, &["CLIENT", "SETNAME", "has space"]).await;
    assert!(message.contains("cannot contain spaces"), "{message}");
    let (_, message) = server_error(&mut con, &["CLIENT", "KILL", "x"]).await;
    assert!(message.contains("unknown subcommand 'KILL'"), "{message}");

    let info: String = ok(&mut con, &["INFO"]).await;
    for line in [
        "# Server",
        "redis_version:",
        "idmint_version:",
        "# Clients",
        "connected_clients:",
        "# Stats",
        "# Idmint",
        "layout:time:41@1ms",
        "worker_id:",
    ] {
        assert!(info.contains(line), "INFO lacks {line}: {info}");
    }
    let server_only: String = ok(&mut con, &["INFO", "server"]).await;
    assert!(server_only.starts_with("# Server") && !server_only.contains("# Clients"));
    assert_eq!(ok::<String>(&mut con, &["INFO", "nosuchsection"]).await, "");

    let count: i64 = ok(&mut con, &["COMMAND", "COUNT"]).await;
    assert!(count >= 15);
    let table: Vec<Value> = ok(&mut con, &["COMMAND"]).await;
    assert_eq!(table.len() as i64, count);
    // Name and documentation, for every command.
    let docs: Vec<Value> = ok(&mut con, &["COMMAND", "DOCS"]).await;
    assert_eq!(docs.len() as i64, 2 * count);
    let snowflake_docs: Vec<Value> = ok(&mut con, &["COMMAND", "DOCS", "idmint.snowflake"]).await;
    assert_eq!(snowflake_docs.len(), 2);
    assert!(format!("{snowflake_docs:?}").contains("COUNT"));
    let listed: Vec<String> = ok(&mut con, &["COMMAND", "LIST"]).await;
    assert!(listed.iter().any(|c| c == "idmint.snowflake"));
    let infos: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", "incr", "nope"]).await;
    assert!(matches!(&infos[0], Value::Array(fields) if fields.len() == 10));
    assert_eq!(infos[1], Value::Nil);

    let save: Vec<String> = ok(&mut con, &["CONFIG", "GET", "save"]).await;
    assert_eq!(save, ["save", ""]);
    let appendonly: Vec<String> = ok(&mut con, &["config", "get", "appendonly"]).await;
    assert_eq!(appendonly, ["appendonly", "no"]);
    let none: Vec<String> = ok(&mut con, &["CONFIG", "GET", "no-such-param"]).await;
    assert!(none.is_empty());
    let globbed: Vec<String> = ok(&mut con, &["CONFIG", "GET", "*"]).await;
    assert!(globbed.len() >= 4 && globbed.len().is_multiple_of(2));

    // What clients probe at connect.
    let replication: String = ok(&mut con, &["INFO", "replication"]).await;
    assert!(
        replication.contains("role:master\r\n") && replication.contains("connected_slaves:0"),
        "{replication}"
    );
    let everything: String = ok(&mut con, &["INFO"]).await;
    for line in [
        "cluster_enabled:0",
        "loading:0",
        "maxmemory_policy:noeviction",
    ] {
        assert!(everything.contains(line), "INFO lacks {line}");
    }
    let role: Vec<Value> = ok(&mut con, &["ROLE"]).await;
    assert_eq!(role[0], Value::BulkString(b"master".to_vec()));
    let (seconds, micros): (u64, u64) = ok(&mut con, &["TIME"]).await;
    assert!(seconds > 1_700_000_000 && micros < 1_000_000);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]).await, 0);
    assert_eq!(
        ok::<Option<String>>(&mut con, &["GET", "probe"]).await,
        None
    );
    let id: i64 = ok(&mut con, &["INCR", "probe"]).await;
    assert_eq!(
        ok::<String>(&mut con, &["GET", "probe"]).await,
        id.to_string()
    );
    assert_eq!(
        ok::<String>(&mut con, &["GET", "probe"]).await,
        id.to_string()
    );
    assert_eq!(ok::<i64>(&mut con, &["INCR", "probe"]).await, id + 1);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]).await, 1);
    assert_eq!(
        ok::<String>(&mut con, &["CLIENT", "TRACKING", "off"]).await,
        "OK"
    );
    let (_, message) = server_error(&mut con, &["CLIENT", "TRACKING", "on"]).await;
    assert!(message.contains("client-side caching"), "{message}");
    let (_, message) = server_error(&mut con, &["CLIENT", "MAINT_NOTIFICATIONS", "on"]).await;
    assert!(message.contains("unknown subcommand"), "{message}");
    let (_, message) = server_error(&mut con, &["CONFIG", "SET", "save", ""]).await;
    assert!(message.contains("not supported"), "{message}");

    assert_eq!(ok::<String>(&mut con, &["SELECT", "0"]).await, "OK");
    let (_, message) = server_error(&mut con, &["SELECT", "1"]).await;
    assert!(message.contains("DB index is out of range"), "{message}");

    let (code, message) = server_error(&mut con, &["AUTH", "x"]).await;
    assert_eq!(code, "ERR");
    assert!(
        message.contains("without any password configured"),
        "{message}"
    );
    // As with Redis' passwordless `default` user, clients that send credentials still connect.
    assert_eq!(
        ok::<String>(&mut con, &["AUTH", "default", "any"]).await,
        "OK"
    );
    let (code, _) = server_error(&mut con, &["AUTH", "someone", "any"]).await;
    assert_eq!(code, "WRONGPASS");
    let url = format!("redis://default:any@127.0.0.1:{}/", server.port);
    let mut with_credentials = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert!(ok::<i64>(&mut with_credentials, &["INCR", "t"]).await > 0);
    server.stop().await;
}

/// Sends `request` (inline commands) on a new connection and returns what arrives within a
/// moment, as text.
async fn exchange(server: &Server, request: &str) -> String {
    let mut stream = server.raw().await;
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(b"QUIT\r\n").await.unwrap();
    read_to_close(&mut stream).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp3_replies_per_connection() {
    let server = Server::open().await;
    let reply = exchange(
        &server,
        "HELLO 3\r\nCLIENT GETNAME\r\nCONFIG GET databases\r\n",
    )
    .await;
    let expected_tail = "_\r\n%1\r\n$9\r\ndatabases\r\n$1\r\n1\r\n+OK\r\n";
    assert!(
        reply.starts_with("%7\r\n$6\r\nserver\r\n$6\r\nidmint\r\n"),
        "{reply}"
    );
    assert!(reply.contains("$5\r\nproto\r\n:3\r\n"), "{reply}");
    assert!(reply.ends_with(expected_tail), "{reply}");

    // The same commands on a RESP2 connection: flat arrays and null bulk strings.
    let reply = exchange(&server, "CLIENT GETNAME\r\nCONFIG GET databases\r\n").await;
    assert_eq!(reply, "$-1\r\n*2\r\n$9\r\ndatabases\r\n$1\r\n1\r\n+OK\r\n");

    // Decoding is a map; INFO and CLIENT INFO verbatim text; RESET goes back to RESP2.
    let id = server.ids.snowflakes(1, 0).await.unwrap().next().unwrap();
    let reply = exchange(
        &server,
        &format!("HELLO 3\r\nIDMINT.DECODE {id}\r\nINFO server\r\nRESET\r\nGET none\r\n"),
    )
    .await;
    let decode = reply.split_once("%7\r\n").map_or("", |(_, rest)| rest);
    assert!(decode.starts_with("$6\r\nserver"), "{reply}");
    assert!(reply.contains(&format!("$2\r\nid\r\n:{id}\r\n")), "{reply}");
    assert!(reply.contains("\r\ntxt:# Server\r\n"), "{reply}");
    assert!(reply.ends_with("+RESET\r\n$-1\r\n+OK\r\n"), "{reply}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_queue_and_run_at_exec_and_a_refused_one_takes_no_id() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let first: i64 = ok(&mut con, &["INCR", "tx"]).await;

    // Queued commands run only at EXEC: meanwhile another connection sees no ID taken.
    let mut stream = server.raw().await;
    stream
        .write_all(b"MULTI\r\nINCR tx\r\nIDMINT.NEXT tx COUNT 2\r\nUNWATCH\r\n")
        .await
        .unwrap();
    assert_eq!(
        read_exact_text(&mut stream, 32).await,
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
    );
    assert_eq!(
        ok::<String>(&mut con, &["GET", "tx"]).await,
        first.to_string()
    );
    stream.write_all(b"EXEC\r\nQUIT\r\n").await.unwrap();
    let reply = read_to_close(&mut stream).await;
    assert_eq!(
        reply,
        format!(
            "*3\r\n:{}\r\n*2\r\n:{}\r\n:{}\r\n+OK\r\n+OK\r\n",
            first + 1,
            first + 2,
            first + 3
        )
    );

    // Refused while queueing (unknown command, wrong arity): EXECABORT, nothing runs.
    let reply = exchange(
        &server,
        "MULTI\r\nINCR tx\r\nNOPE\r\nINCR tx\r\nEXEC\r\n\
         MULTI\r\nINCR tx\r\nINCR\r\nEXEC\r\n",
    )
    .await;
    assert!(
        reply.contains("-EXECABORT Transaction discarded"),
        "{reply}"
    );
    assert_eq!(reply.matches("-EXECABORT").count(), 2, "{reply}");
    assert_eq!(ok::<i64>(&mut con, &["INCR", "tx"]).await, first + 4);

    // A command failing inside EXEC takes no ID; the others run.
    let reply = exchange(&server, "MULTI\r\nINCRBY tx zero\r\nINCR tx\r\nEXEC\r\n").await;
    assert!(
        reply.ends_with(&format!(
            "*2\r\n-ERR value is not an integer or out of range\r\n:{}\r\n+OK\r\n",
            first + 5
        )),
        "{reply}"
    );

    // Redis' answers to misuse; DISCARD drops the queue; nested MULTI and WATCH inside one
    // are errors that leave the transaction going.
    let reply = exchange(
        &server,
        "EXEC\r\nDISCARD\r\nWATCH a b\r\nMULTI\r\nMULTI\r\nWATCH a\r\nINCR tx\r\nDISCARD\r\n",
    )
    .await;
    assert_eq!(
        reply,
        "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n+OK\r\n+OK\r\n\
         -ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not allowed\r\n\
         +QUEUED\r\n+OK\r\n+OK\r\n"
    );
    assert_eq!(ok::<i64>(&mut con, &["INCR", "tx"]).await, first + 6);

    // A queue past its bound dooms the transaction.
    let mut huge = String::from("MULTI\r\n");
    for _ in 0..20_000 {
        huge.push_str("INCR tx-with-a-rather-long-name-to-fill-the-queue\r\n");
    }
    huge.push_str("EXEC\r\n");
    let reply = exchange(&server, &huge).await;
    assert!(
        reply.contains("-ERR transaction too large"),
        "too large not refused"
    );
    assert!(
        reply.contains("-EXECABORT"),
        "EXEC ran a doomed transaction"
    );
    assert_eq!(
        ok::<Option<String>>(
            &mut con,
            &["GET", "tx-with-a-rather-long-name-to-fill-the-queue"]
        )
        .await,
        None
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_as_strings_per_command_and_per_connection() {
    let server = Server::open().await;
    let reply = exchange(
        &server,
        "IDMINT.NEXT s COUNT 2 FORMAT STRING\r\nIDMINT.FORMAT\r\nIDMINT.FORMAT string\r\n\
         INCR s\r\nINCRBY s 3\r\nIDMINT.FORMAT\r\nIDMINT.NEXT s FORMAT integer\r\n\
         IDMINT.FORMAT hex\r\nIDMINT.SNOWFLAKE FORMAT octal\r\n",
    )
    .await;
    assert_eq!(
        reply,
        "*2\r\n$1\r\n1\r\n$1\r\n2\r\n$7\r\ninteger\r\n+OK\r\n$1\r\n3\r\n$1\r\n6\r\n\
         $6\r\nstring\r\n:7\r\n-ERR FORMAT must be INTEGER, STRING, DECIMAL, BASE62, BASE36 or BASE32\r\n\
         -ERR FORMAT must be INTEGER, STRING, DECIMAL, BASE62, BASE36 or BASE32\r\n+OK\r\n"
    );
    let reply = exchange(&server, "IDMINT.FORMAT STRING\r\nIDMINT.SNOWFLAKE\r\n").await;
    assert!(reply.starts_with("+OK\r\n$"), "{reply}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_in_text_forms_per_command_and_per_connection() {
    let server = Server::open().await;
    let reply = exchange(
        &server,
        "IDMINT.NEXT f COUNT 3 FORMAT BASE36 WIDTH 0\r\n\
         IDMINT.NEXT f FORMAT decimal PREFIX ord_ WIDTH 4\r\n\
         IDMINT.FORMAT BASE62 PREFIX u_\r\nIDMINT.FORMAT\r\nINCR f\r\n\
         IDMINT.DECODE u_00000000005\r\n\
         IDMINT.FORMAT INTEGER\r\nIDMINT.SNOWFLAKE PREFIX x\r\n\
         IDMINT.SNOWFLAKE FORMAT BASE62 PREFIX a!b\r\n\
         IDMINT.DECODE zz! FORMAT BASE62\r\nIDMINT.FORMAT BASE62 WIDTH\r\n",
    )
    .await;
    let expected_start = "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$8\r\nord_0004\r\n+OK\r\n\
                          $16\r\nbase62 prefix=u_\r\n$13\r\nu_00000000005\r\n";
    assert!(reply.starts_with(expected_start), "{reply}");
    // The decoder read the connection's form and answers the ID in it.
    assert!(
        reply.contains("$2\r\nid\r\n$13\r\nu_00000000005\r\n"),
        "{reply}"
    );
    for refusal in [
        "-ERR PREFIX and WIDTH need FORMAT DECIMAL, BASE62, BASE36 or BASE32\r\n",
        "-ERR invalid argument `prefix`",
        "-ERR invalid argument `id`: `zz!`: character 3",
        "-ERR syntax error\r\n",
    ] {
        assert!(reply.contains(refusal), "{refusal} not in {reply}");
    }
    // A snowflake in base32 reads back as the integer the next one follows.
    let reply = exchange(
        &server,
        "IDMINT.SNOWFLAKE FORMAT BASE32\r\nIDMINT.SNOWFLAKE\r\n",
    )
    .await;
    let mut lines = reply.split("\r\n");
    let (_, text, next) = (lines.next(), lines.next().unwrap(), lines.next().unwrap());
    let form = idmint_core::IdForm::new(idmint_core::Radix::Base32);
    let first = form.decode(text).unwrap();
    let second: u64 = next.trim_start_matches(':').parse().unwrap();
    assert!(second > first, "{reply}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_is_required_when_a_token_is_set() {
    let server = Server::start(RespOptions {
        auth: Arc::new(Auth::admin(TOKEN)),
        ..RespOptions::default()
    })
    .await;

    let mut con = server.client().await;
    assert_eq!(ok::<String>(&mut con, &["PING"]).await, "PONG");
    for args in [
        &["INCR", "t"][..],
        &["IDMINT.SNOWFLAKE"],
        &["INFO"],
        &["CLIENT", "ID"],
    ] {
        let (code, message) = server_error(&mut con, args).await;
        assert_eq!(code, "NOAUTH", "{args:?}: {message}");
    }
    let (code, _) = server_error(&mut con, &["HELLO", "2"]).await;
    assert_eq!(code, "NOAUTH");
    let (code, _) = server_error(&mut con, &["AUTH", "wrong"]).await;
    assert_eq!(code, "WRONGPASS");
    let (code, _) = server_error(&mut con, &["AUTH", "someone", TOKEN]).await;
    assert_eq!(code, "WRONGPASS");
    let (code, _) = server_error(&mut con, &["INCR", "t"]).await;
    assert_eq!(code, "NOAUTH", "a failed AUTH does not authenticate");
    assert_eq!(ok::<String>(&mut con, &["AUTH", TOKEN]).await, "OK");
    assert!(ok::<i64>(&mut con, &["INCR", "t"]).await > 0);
    // RESET drops the authentication again.
    assert_eq!(ok::<String>(&mut con, &["RESET"]).await, "RESET");
    let (code, _) = server_error(&mut con, &["INCR", "t"]).await;
    assert_eq!(code, "NOAUTH");
    assert_eq!(
        ok::<String>(&mut con, &["AUTH", "default", TOKEN]).await,
        "OK"
    );
    assert!(ok::<i64>(&mut con, &["INCR", "t"]).await > 0);

    // HELLO 2 AUTH authenticates and answers in one command.
    let mut fresh = server.client().await;
    let info: HashMap<String, Value> =
        ok(&mut fresh, &["HELLO", "2", "AUTH", "default", TOKEN]).await;
    assert_eq!(info["proto"], Value::Int(2));
    assert!(ok::<i64>(&mut fresh, &["INCR", "t"]).await > 0);

    // A client configured with the password authenticates when it connects ...
    let url = format!("redis://:{TOKEN}@127.0.0.1:{}/", server.port);
    let mut authed = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert!(ok::<i64>(&mut authed, &["INCR", "t"]).await > 0);
    // ... and one with the wrong password fails to connect.
    let url = format!("redis://:nope@127.0.0.1:{}/", server.port);
    let refused = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await;
    assert!(refused.is_err(), "a wrong password was accepted");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_errors_are_err_or_tryagain() {
    let mut config = ids_config(LAYOUT, "resp-test");
    // 4 IDs per ms and no borrowing from the future: 1,000 IDs cannot be had in 20 ms.
    config.layout = Layout::parse("time:41@1ms,worker:4,seq:2").unwrap();
    config.snowflake = SnowflakeConfig::default()
        .with_max_lead(Duration::ZERO)
        .with_max_wait(Duration::from_millis(20))
        .with_spread_bits(0);
    config.segments.auto_create_tags = false;
    let server = Server::start_with(config, RespOptions::default()).await;
    let mut con = server.client().await;
    let (code, message) = server_error(&mut con, &["IDMINT.SNOWFLAKE", "COUNT", "1000"]).await;
    assert_eq!(code, "TRYAGAIN", "{message}");
    assert!(message.contains("unavailable"), "{message}");
    let (code, message) = server_error(&mut con, &["INCR", "nope"]).await;
    assert_eq!(code, "ERR", "{message}");
    assert!(message.contains("unknown tag `nope`"), "{message}");
    let (code, message) = server_error(&mut con, &["IDMINT.SNOWFLAKE", "SHARD", "1"]).await;
    assert_eq!(code, "ERR", "a layout without a shard field: {message}");
    assert!(ok::<i64>(&mut con, &["IDMINT.SNOWFLAKE"]).await > 0);
    server.stop().await;
}

/// The last segment ID there is: `MAX_SEGMENT_ID - 1`.
const LAST_ID: i64 = 9_223_372_036_854_775_806;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_is_served_to_its_last_id_then_err_tag_exhausted() {
    let server = Server::open().await;
    let settings = idmint_core::store::TagSettings {
        first_id: LAST_ID as u64 - 4,
        ..Default::default()
    };
    let end = idmint_core::Tag::new("end").unwrap();
    let segments = &server.ids.store().segments;
    segments.create_tag(&end, &settings).await.unwrap();
    let mut con = server.client().await;
    let exhausted = |(code, message): (String, String)| {
        assert_eq!(code, "ERR", "{message}");
        assert!(message.contains("tag_exhausted"), "{message}");
        assert!(message.contains(&LAST_ID.to_string()), "{message}");
    };
    // More than is left: refused whole, nothing taken.
    exhausted(server_error(&mut con, &["INCRBY", "end", "6"]).await);
    exhausted(server_error(&mut con, &["IDMINT.NEXT", "end", "COUNT", "6"]).await);
    assert_eq!(ok::<i64>(&mut con, &["INCR", "end"]).await, LAST_ID - 4);
    assert_eq!(
        ok::<i64>(&mut con, &["INCRBY", "end", "2"]).await,
        LAST_ID - 2
    );
    let rest: Vec<i64> = ok(&mut con, &["IDMINT.NEXT", "end", "COUNT", "2"]).await;
    assert_eq!(rest, vec![LAST_ID - 1, LAST_ID]);
    exhausted(server_error(&mut con, &["INCR", "end"]).await);
    exhausted(server_error(&mut con, &["INCRBY", "end", "1"]).await);
    exhausted(server_error(&mut con, &["IDMINT.NEXT", "end"]).await);
    // On the wire: `-ERR` then the code, like the HTTP API's `error.code`.
    let mut raw = server.raw().await;
    raw.write_all(b"INCR end\r\n").await.unwrap();
    let prefix = "-ERR tag_exhausted tag `end` is exhausted";
    assert_eq!(read_exact_text(&mut raw, prefix.len()).await, prefix);
    // Other tags are served as ever.
    assert_eq!(ok::<i64>(&mut con, &["INCR", "other"]).await, 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_commands_are_refused_like_redis() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let (code, message) = server_error(&mut con, &["XYZ", "a", "b c"]).await;
    assert_eq!(code, "ERR");
    assert!(
        message.contains("unknown command 'XYZ', with args beginning with: 'a' 'b c'"),
        "{message}"
    );
    assert_eq!(ok::<String>(&mut con, &["PING"]).await, "PONG");

    let mut raw = server.raw().await;
    raw.write_all(b"SET k v\r\n").await.unwrap();
    let expected = "-ERR unknown command 'SET', with args beginning with: 'k' 'v' \r\n";
    assert_eq!(read_exact_text(&mut raw, expected.len()).await, expected);

    // An HTTP request is dropped before its body can run as inline commands, as by Redis.
    let mut raw = server.raw().await;
    let http = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 8\r\n\r\nINCR t\r\n";
    raw.write_all(http.as_bytes()).await.unwrap();
    assert_eq!(read_to_close(&mut raw).await, "");
    let mut raw = server.raw().await;
    raw.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    // `GET / HTTP/1.1` is a `GET` with too many arguments, as in Redis; `Host:` closes.
    assert_eq!(
        read_to_close(&mut raw).await,
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_commands_are_answered_in_order() {
    let server = Server::open().await;
    let mut con = server.client().await;

    let mut pipe = redis::pipe();
    for _ in 0..100 {
        pipe.cmd("INCR").arg("pipelined");
    }
    let ids: Vec<i64> = pipe.query_async(&mut con).await.unwrap();
    assert_eq!(ids.len(), 100);
    assert!(increasing(&ids));

    let mut pipe = redis::pipe();
    for i in 0..100 {
        match i % 4 {
            0 => pipe.cmd("ECHO").arg(format!("echo-{i}")),
            1 => pipe.cmd("INCR").arg("pipelined"),
            2 => pipe.cmd("IDMINT.SNOWFLAKE").arg("COUNT").arg(2),
            _ => pipe.cmd("NOSUCH").arg(i),
        };
    }
    // The unknown commands' errors come back in place, not as a failure of the pipeline.
    let replies: Vec<Value> = pipe.ignore_errors().query_async(&mut con).await.unwrap();
    assert_eq!(replies.len(), 100);
    let mut last_incr = *ids.last().unwrap();
    for (i, reply) in replies.iter().enumerate() {
        match (i % 4, reply) {
            (0, Value::BulkString(text)) => assert_eq!(text, format!("echo-{i}").as_bytes()),
            (1, Value::Int(id)) => {
                assert!(*id > last_incr);
                last_incr = *id;
            }
            (2, Value::Array(pair)) => assert_eq!(pair.len(), 2),
            (3, Value::ServerError(error)) => assert_eq!(error.code(), "ERR"),
            (_, other) => panic!("reply {i} out of order: {other:?}"),
        }
    }

    // Raw: a single write holding many commands gets all the replies, in order.
    let mut raw = server.raw().await;
    let mut request = Vec::new();
    for i in 0..200 {
        request.extend_from_slice(
            format!("*2\r\n$4\r\nECHO\r\n${}\r\n{i}\r\n", i.to_string().len()).as_bytes(),
        );
    }
    raw.write_all(&request).await.unwrap();
    let expected: String = (0..200)
        .map(|i: i32| format!("${}\r\n{i}\r\n", i.to_string().len()))
        .collect();
    assert_eq!(read_exact_text(&mut raw, expected.len()).await, expected);
    server.stop().await;
}

/// Whether this node has loaded (and so created) `tag`.
fn loaded(server: &Server, tag: &str) -> bool {
    server
        .ids
        .segments()
        .loaded(&Tag::new(tag).unwrap())
        .is_some()
}

/// `commands`, each a list of words, as one write of RESP arrays.
fn resp_request(commands: &[Vec<String>]) -> Vec<u8> {
    let mut request = Vec::new();
    for words in commands {
        request.extend_from_slice(format!("*{}\r\n", words.len()).as_bytes());
        for word in words {
            request.extend_from_slice(format!("${}\r\n{word}\r\n", word.len()).as_bytes());
        }
    }
    request
}

fn words(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_owned).collect()
}

/// A pipeline of `INCR`s on new tags loads them together (the connection decodes ahead), yet
/// every command is answered in order, each tag's IDs increase, and no tag is created where
/// its own command would not have created it: after `QUIT`, inside `MULTI`, before `AUTH`,
/// outside the token's tags, or for an `INCRBY` with a bad count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_tags_of_a_pipeline_load_together_only_where_their_commands_would() {
    let server = Server::open().await;
    let mut commands: Vec<Vec<String>> = (0..400).map(|i| words(&format!("INCR p-{i}"))).collect();
    commands.push(words("INCRBY bad-count 0"));
    commands.extend((0..400).map(|i| words(&format!("INCR p-{i}"))));
    commands.push(words("MULTI"));
    commands.push(words("INCR in-multi"));
    commands.push(words("DISCARD"));
    commands.push(words("QUIT"));
    commands.push(words("INCR after-quit-1"));
    commands.push(words("INCR after-quit-2"));
    let mut raw = server.raw().await;
    raw.write_all(&resp_request(&commands)).await.unwrap();
    let replies = read_to_close(&mut raw).await;
    let lines: Vec<&str> = replies.split("\r\n").collect();
    let mut first = HashMap::new();
    for (i, line) in lines[..400].iter().enumerate() {
        let id: i64 = line.strip_prefix(':').unwrap().parse().unwrap();
        first.insert(i, id);
    }
    assert!(
        lines[400].starts_with("-ERR increment must be between 1 and"),
        "{}",
        lines[400]
    );
    for (i, line) in lines[401..801].iter().enumerate() {
        let id: i64 = line.strip_prefix(':').unwrap().parse().unwrap();
        assert_eq!(id, first[&i] + 1, "p-{i}: its second ID follows its first");
    }
    assert_eq!(&lines[801..805], ["+OK", "+QUEUED", "+OK", "+OK"]);
    assert_eq!(
        lines.len(),
        806,
        "nothing answered after QUIT: {:?}",
        &lines[805..]
    );
    for tag in ["bad-count", "in-multi", "after-quit-1", "after-quit-2"] {
        assert!(
            !loaded(&server, tag),
            "{tag} was created ahead of its command"
        );
    }
    server.stop().await;

    // A token for the tags `a-*`: nothing is loaded before AUTH, nor outside the patterns.
    let mut tokens = Tokens::default();
    tokens.push_secret(
        TOKEN.as_bytes(),
        Grant::new("a", Scope::Mint, vec!["a-*".into()]),
    );
    let server = Server::start(RespOptions {
        auth: Arc::new(Auth::new(tokens)),
        ..RespOptions::default()
    })
    .await;
    let mut commands: Vec<Vec<String>> = (0..50)
        .map(|i| words(&format!("INCR a-early-{i}")))
        .collect();
    commands.push(words(&format!("AUTH {TOKEN}")));
    for i in 0..50 {
        commands.push(words(&format!("INCR a-{i}")));
        commands.push(words(&format!("INCR b-{i}")));
    }
    commands.push(words("QUIT"));
    let mut raw = server.raw().await;
    raw.write_all(&resp_request(&commands)).await.unwrap();
    let replies = read_to_close(&mut raw).await;
    let lines: Vec<&str> = replies.split("\r\n").collect();
    assert!(
        lines[..50].iter().all(|l| l.starts_with("-NOAUTH")),
        "{:?}",
        &lines[..50]
    );
    assert_eq!(lines[50], "+OK");
    for i in 0..50 {
        assert!(lines[51 + 2 * i].starts_with(':'), "{}", lines[51 + 2 * i]);
        assert!(
            lines[52 + 2 * i].starts_with("-NOPERM"),
            "{}",
            lines[52 + 2 * i]
        );
        assert!(loaded(&server, &format!("a-{i}")));
        assert!(
            !loaded(&server, &format!("b-{i}")),
            "b-{i} outside the token's tags"
        );
        assert!(
            !loaded(&server, &format!("a-early-{i}")),
            "a-early-{i} before AUTH"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_get_a_protocol_error_and_close_only_their_connection() {
    let server = Server::open().await;
    let mut con = server.client().await;
    assert!(ok::<i64>(&mut con, &["INCR", "steady"]).await > 0);

    for (request, expected) in [
        (
            &b"*1\r\n$x\r\n"[..],
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$1000000000\r\n",
            "-ERR Protocol error: bulk length 1000000000 exceeds the limit",
        ),
        (
            b"*2\r\n*1\r\n$4\r\nPING\r\n",
            "-ERR Protocol error: nested arrays are not allowed",
        ),
        (
            b"*abc\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n:5\r\n",
            "-ERR Protocol error: expected '$', got ':'",
        ),
        (
            b"*-5\r\n",
            "-ERR Protocol error: invalid multibulk length -5: negative",
        ),
        (
            b"*1\r\n$4\r\nPINGxx",
            "-ERR Protocol error: expected CRLF after the bulk string data",
        ),
        (
            b"\"unbalanced\r\n",
            "-ERR Protocol error: unbalanced quotes",
        ),
        (
            b"\x00\xff\x01garbage'x\r\n",
            "-ERR Protocol error: unbalanced quotes",
        ),
        // Commands before the bad frame are answered first.
        (
            b"PING\r\n*1\r\n$-1\r\n",
            "+PONG\r\n-ERR Protocol error: null bulk",
        ),
    ] {
        let mut raw = server.raw().await;
        raw.write_all(request).await.unwrap();
        let reply = read_to_close(&mut raw).await;
        assert!(
            reply.starts_with(expected),
            "{}: got {reply:?}",
            request.escape_ascii()
        );
        assert!(
            reply.ends_with("\r\n") && reply.matches("\r\n").count() <= 2,
            "{reply:?}"
        );
        // The other connection is unaffected.
        assert!(ok::<i64>(&mut con, &["INCR", "steady"]).await > 0);
    }

    // An endless inline line is cut off at the limit.
    let mut raw = server.raw().await;
    // One byte over the limit: the server has read it all when it refuses the line.
    let junk = vec![b'a'; 64 * 1024 + 1];
    let _ = raw.write_all(&junk).await;
    let reply = read_to_close(&mut raw).await;
    assert!(
        reply.starts_with("-ERR Protocol error: too big inline request"),
        "{reply:?}"
    );
    assert_eq!(ok::<String>(&mut con, &["PING"]).await, "PONG");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_commands_and_quit_over_raw_tcp() {
    let server = Server::open().await;
    let mut raw = server.raw().await;
    raw.write_all(b"PING\r\n").await.unwrap();
    assert_eq!(read_exact_text(&mut raw, 7).await, "+PONG\r\n");
    raw.write_all(b"INCR t\r\nincr t\n").await.unwrap();
    let mut replies = String::new();
    while replies.matches("\r\n").count() < 2 {
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), raw.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed early");
        replies.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    let ids: Vec<i64> = replies
        .lines()
        .map(|l| l.strip_prefix(':').unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[1] > ids[0]);
    raw.write_all(b"ECHO \"a b\"\r\nQUIT\r\nPING\r\n")
        .await
        .unwrap();
    // QUIT answers OK and closes: the PING after it is never answered.
    assert_eq!(read_to_close(&mut raw).await, "$3\r\na b\r\n+OK\r\n");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_refused() {
    let server = Server::start(RespOptions {
        connections: ConnectionLimits {
            max_connections: 1,
            ..ConnectionLimits::default()
        },
        ..RespOptions::default()
    })
    .await;
    let mut first = server.raw().await;
    first.write_all(b"PING\r\n").await.unwrap();
    assert_eq!(read_exact_text(&mut first, 7).await, "+PONG\r\n");
    let mut second = server.raw().await;
    assert_eq!(
        read_to_close(&mut second).await,
        "-ERR max number of clients reached\r\n"
    );
    drop(first);
    // The slot frees once the first connection is gone.
    let mut third = None;
    for _ in 0..50 {
        let mut raw = server.raw().await;
        raw.write_all(b"PING\r\n").await.unwrap();
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), raw.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        if &buf[..n] == b"+PONG\r\n" {
            third = Some(raw);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(third.is_some(), "the connection slot was never freed");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_idle_connections_and_stops_accepting() {
    let server = Server::open().await;
    let port = server.port;
    let mut idle = server.raw().await;
    idle.write_all(b"PING\r\n").await.unwrap();
    assert_eq!(read_exact_text(&mut idle, 7).await, "+PONG\r\n");
    let mut con = server.client().await;
    assert!(ok::<i64>(&mut con, &["INCR", "t"]).await > 0);
    let started = std::time::Instant::now();
    server.stop().await;
    // Not a speed check: an idle connection must be closed at once, not cut off when the
    // 5 s grace period for busy ones runs out.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(read_to_close(&mut idle).await, "");
    assert!(query::<i64>(&mut con, &["INCR", "t"]).await.is_err());
    assert!(
        TcpStream::connect(("127.0.0.1", port)).await.is_err(),
        "still accepting"
    );
}

/// The value of the sample line starting with `series`, 0 when absent.
fn sample(rendered: &str, series: &str) -> f64 {
    rendered
        .lines()
        .find_map(|line| line.strip_prefix(series))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

// The recorder is the binary's, shared with the HTTP tests: the tag is this test's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_issued_are_counted_per_kind_and_tag() {
    let metrics = prometheus();
    let server = Server::open().await;
    let mut con = server.client().await;
    let segment = r#"idmint_ids_issued_total{kind="segment",tag="resp-metered"}"#;
    let snowflake = r#"idmint_ids_issued_total{kind="snowflake"}"#;
    let snowflakes_before = sample(&metrics.render(), snowflake);
    for _ in 0..10 {
        let _: i64 = ok(&mut con, &["INCR", "resp-metered"]).await;
    }
    let _: i64 = ok(&mut con, &["INCRBY", "resp-metered", "5"]).await;
    let _: Vec<i64> = ok(&mut con, &["IDMINT.NEXT", "resp-metered", "COUNT", "4"]).await;
    let _: Vec<i64> = ok(&mut con, &["IDMINT.SNOWFLAKE", "COUNT", "7"]).await;
    // Counts are flushed before each batch's replies are written.
    let rendered = metrics.render();
    assert_eq!(sample(&rendered, segment), 19.0, "{rendered}");
    assert!(
        sample(&rendered, snowflake) >= snowflakes_before + 7.0,
        "{rendered}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_command_in_flight_finish() {
    let mut config = ids_config(LAYOUT, "resp-test");
    // 4 IDs per ms and at most 20 ms borrowed: a batch of 1,000 waits its whole `max_wait`
    // (1.5 s) and fails; it is in flight meanwhile.
    config.layout = Layout::parse("time:41@1ms,worker:4,seq:2").unwrap();
    config.snowflake = SnowflakeConfig::default()
        .with_max_lead(Duration::from_millis(20))
        .with_max_wait(Duration::from_millis(1_500))
        .with_spread_bits(0);
    let server = Server::start_with(config, RespOptions::default()).await;
    let mut raw = server.raw().await;
    raw.write_all(b"PING\r\n").await.unwrap();
    assert_eq!(read_exact_text(&mut raw, 7).await, "+PONG\r\n");
    raw.write_all(b"IDMINT.SNOWFLAKE COUNT 1000\r\nPING\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopping = tokio::spawn(server.stop());
    // The batch being run is finished and answered (both commands had arrived), then the
    // connection closes.
    let reply = read_to_close(&mut raw).await;
    assert!(reply.starts_with("-TRYAGAIN "), "{reply}");
    assert!(reply.ends_with("\r\n+PONG\r\n"), "{reply}");
    stopping.await.unwrap();
}

/// The path of `program`, or a failure explaining how to get it.
fn tool(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{program} is not on PATH: run the tests under scripts/with-stores, which \
                 installs redis-tools (or install the redis-tools package)"
            )
        })
}

/// Runs a program to completion off the async threads; returns (status, stdout, stderr).
async fn run_tool(program: &str, args: Vec<String>) -> (std::process::ExitStatus, String, String) {
    let path = tool(program);
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(path)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_and_redis_benchmark_work_unmodified() {
    let server = Server::open().await;
    let port = server.port.to_string();
    let cli = |args: &[&str]| {
        let mut all = vec!["-p".to_owned(), port.clone()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        run_tool("redis-cli", all)
    };

    let (status, out, err) = cli(&["INCR", "cli"]).await;
    assert!(status.success(), "{err}");
    let first: i64 = out.trim().parse().unwrap_or_else(|_| panic!("{out:?}"));
    let (_, out, _) = cli(&["INCR", "cli"]).await;
    assert!(out.trim().parse::<i64>().unwrap() > first);
    let (status, out, _) = cli(&["PING"]).await;
    assert!(status.success());
    assert_eq!(out.trim(), "PONG");
    let (status, out, err) = cli(&["IDMINT.SNOWFLAKE", "COUNT", "3"]).await;
    assert!(status.success(), "{err}");
    let ids: Vec<i64> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(ids.len(), 3, "{out:?}");
    assert!(increasing(&ids));
    let (_, out, _) = cli(&["INFO", "server"]).await;
    assert!(out.contains("redis_version:"), "{out}");
    let (_, out, _) = cli(&["NOSUCH"]).await;
    assert!(out.contains("unknown command 'NOSUCH'"), "{out}");

    let mut con = server.client().await;
    let before: i64 = ok(&mut con, &["INCR", "bench"]).await;
    let args = [
        "-p", &port, "-n", "10000", "-c", "10", "-q", "INCR", "bench",
    ];
    let (status, out, err) = run_tool(
        "redis-benchmark",
        args.iter().map(|a| (*a).to_owned()).collect(),
    )
    .await;
    assert!(status.success(), "redis-benchmark failed: {out}\n{err}");
    assert!(out.contains("requests per second"), "{out}\n{err}");
    assert!(!err.contains("WARNING"), "redis-benchmark warned: {err}");
    let after: i64 = ok(&mut con, &["INCR", "bench"]).await;
    assert!(
        after - before > 10_000,
        "{before} -> {after}: not every INCR was served"
    );
    server.stop().await;
}

/// Not a test: a throughput measurement, run by hand in a release build:
///
/// ```text
/// cargo test --release -p idmint-server --test resp -- --ignored --nocapture benchmark
/// ```
///
/// It prints what `redis-benchmark -c 50 -P 16 -n 200000 -q INCR tag` reports against this
/// server (compare with the same command against `redis-server`; see BENCHMARKS.md).
/// `IDMINT_RESP_BENCH_ARGS` replaces the `redis-benchmark` arguments. With
/// `IDMINT_RESP_BENCH_PORT` set, it serves on that port for `IDMINT_RESP_BENCH_SECS` (default
/// 60) seconds instead, for benchmarks run from outside; `TOKIO_WORKER_THREADS` sets the
/// runtime's threads.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement, not a test: run it by hand in a release build"]
async fn benchmark_incr_with_redis_benchmark() {
    if let Ok(port) = std::env::var("IDMINT_RESP_BENCH_PORT") {
        let secs = std::env::var("IDMINT_RESP_BENCH_SECS").map_or(60, |s| s.parse().unwrap());
        let store = idmint_store::open(&sqlite_url("resp"), &StoreOptions::default())
            .await
            .unwrap();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let ids = Ids::start(ids_config(LAYOUT, "resp-test"), store, clock)
            .await
            .unwrap();
        let listener = TcpListener::bind(format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        println!("serving on port {port} for {secs} s");
        let stop = tokio::time::sleep(Duration::from_secs(secs));
        serve(listener, Arc::clone(&ids), RespOptions::default(), stop)
            .await
            .unwrap();
        ids.shutdown().await.unwrap();
        return;
    }
    let server = Server::open().await;
    let port = server.port.to_string();
    let extra = std::env::var("IDMINT_RESP_BENCH_ARGS")
        .unwrap_or_else(|_| "-c 50 -P 16 -n 200000 -q INCR tag".to_owned());
    let mut args = vec!["-p".to_owned(), port];
    args.extend(extra.split_whitespace().map(str::to_owned));
    for _ in 0..3 {
        let (status, out, err) = run_tool("redis-benchmark", args.clone()).await;
        assert!(status.success(), "{out}\n{err}");
        let summary = out.rsplit('\r').next().unwrap_or(&out).trim().to_owned();
        println!("idmint: {summary}");
    }
    server.stop().await;
}
