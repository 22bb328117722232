//! `IDMINT.RANGE` and `IDMINT.GIVEBACK`, the two commands the client libraries build on.

use idmint_core::Tag;

use super::{ok, server_error, Server};

/// `[first, last]` of a run.
async fn range(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> (u64, u64) {
    let run: Vec<u64> = ok(con, args).await;
    assert_eq!(run.len(), 2, "{args:?} answered {run:?}");
    (run[0], run[1])
}

#[tokio::test]
async fn a_range_is_contiguous_and_above_the_floor_given() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let (first, last) = range(&mut con, &["IDMINT.RANGE", "orders", "100"]).await;
    assert_eq!(last - first + 1, 100);
    let next: u64 = ok(&mut con, &["INCR", "orders"]).await;
    assert!(next > last);

    // A floor this node's buffer has not reached (another node handed out IDs up to it): the
    // run comes from the store, above it, and the buffer is left alone.
    let tag = Tag::new("orders").unwrap();
    let elsewhere = server
        .ids
        .store()
        .segments
        .allocate(&tag, 1_000)
        .await
        .unwrap();
    let floor = (elsewhere.end - 1).to_string();
    let (first, last) = range(&mut con, &["IDMINT.RANGE", "orders", "10", "ABOVE", &floor]).await;
    assert!(first > elsewhere.end - 1, "{first} is not above {floor}");
    assert_eq!(last - first + 1, 10);
    let from_buffer: u64 = ok(&mut con, &["INCR", "orders"]).await;
    assert_eq!(from_buffer, next + 1, "the node's buffer was disturbed");
    // A floor the buffer is past: served from the buffer.
    let low = next.to_string();
    let (first, _) = range(&mut con, &["IDMINT.RANGE", "orders", "5", "abOve", &low]).await;
    assert_eq!(first, from_buffer + 1);
    // A floor beyond every ID ever handed out is refused, and burns no ID of the store.
    let before = server
        .ids
        .store()
        .segments
        .tag_info(&tag)
        .await
        .unwrap()
        .unwrap()
        .max_id;
    let (code, message) = server_error(
        &mut con,
        &[
            "IDMINT.RANGE",
            "orders",
            "5",
            "ABOVE",
            "9000000000000000000",
        ],
    )
    .await;
    assert_eq!(code, "ERR");
    assert!(message.contains("beyond every ID"), "{message}");
    let after = server
        .ids
        .store()
        .segments
        .tag_info(&tag)
        .await
        .unwrap()
        .unwrap()
        .max_id;
    assert_eq!(after, before, "the refused range was not given back");

    for (args, text) in [
        (
            &["IDMINT.RANGE", "orders", "0"][..],
            "count must be between 1 and",
        ),
        (&["IDMINT.RANGE", "orders", "x"], "not an integer"),
        (&["IDMINT.RANGE", "orders", "5", "ABOVE"], "syntax error"),
        (
            &["IDMINT.RANGE", "orders", "5", "BELOW", "3"],
            "syntax error",
        ),
        (
            &["IDMINT.RANGE", "orders", "5", "ABOVE", "-3"],
            "not an integer",
        ),
        (&["IDMINT.RANGE", "orders"], "wrong number of arguments"),
        (&["IDMINT.RANGE", "bad\ttag", "5"], "invalid tag"),
        (
            &["IDMINT.GIVEBACK", "orders", "9", "3"],
            "must not be above",
        ),
        (&["IDMINT.GIVEBACK", "orders", "x", "3"], "not an integer"),
        (
            &["IDMINT.GIVEBACK", "orders", "3"],
            "wrong number of arguments",
        ),
    ] {
        let (code, message) = server_error(&mut con, args).await;
        assert_eq!(code, "ERR", "{args:?}");
        assert!(message.contains(text), "{args:?}: {message}");
    }
    server.stop().await;
}

#[tokio::test]
async fn only_the_connection_that_took_a_run_returns_its_unused_tail() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let mut other = server.client().await;
    let (first, last) = range(&mut con, &["IDMINT.RANGE", "t", "10"]).await;
    let (second, end) = range(&mut con, &["IDMINT.RANGE", "t", "10"]).await;
    assert_eq!(
        second,
        last + 1,
        "the two runs should be adjacent in the node's segment"
    );

    // Another connection cannot return them, nor can this one return what it did not take.
    let words = |a: u64, b: u64| [a.to_string(), b.to_string()];
    let [a, b] = words(first + 15, end);
    assert_eq!(
        ok::<i64>(&mut other, &["IDMINT.GIVEBACK", "t", &a, &b]).await,
        0
    );
    let [a, b] = words(end, end + 5);
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "t", &a, &b]).await,
        0
    );
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "u", &a, &b]).await,
        0
    );

    // The tail of both runs, taken as one: the node hands it out again, in order.
    let [a, b] = words(first + 15, end);
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "t", &a, &b]).await,
        1
    );
    assert_eq!(ok::<u64>(&mut other, &["INCR", "t"]).await, first + 15);
    // Something was taken after the rest: it cannot come back.
    let [a, b] = words(first, first + 14);
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "t", &a, &b]).await,
        0
    );
    assert_eq!(ok::<u64>(&mut con, &["INCR", "t"]).await, first + 16);
    server.stop().await;
}

#[tokio::test]
async fn a_connection_gives_back_the_runs_of_each_of_its_tags() {
    let server = Server::open().await;
    let mut con = server.client().await;
    let (a_first, a_last) = range(&mut con, &["IDMINT.RANGE", "a", "10"]).await;
    let (b_first, b_last) = range(&mut con, &["IDMINT.RANGE", "b", "10"]).await;
    let (first, last) = (a_first + 4, a_last);
    let words = [first.to_string(), last.to_string()];
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "a", &words[0], &words[1]]).await,
        1
    );
    let words = [b_first.to_string(), b_last.to_string()];
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "b", &words[0], &words[1]]).await,
        1
    );
    assert_eq!(ok::<u64>(&mut con, &["INCR", "a"]).await, a_first + 4);
    assert_eq!(ok::<u64>(&mut con, &["INCR", "b"]).await, b_first);
    // RESET forgets what the connection may give back.
    let (first, last) = range(&mut con, &["IDMINT.RANGE", "a", "10"]).await;
    assert_eq!(ok::<String>(&mut con, &["RESET"]).await, "RESET");
    let words = [first.to_string(), last.to_string()];
    assert_eq!(
        ok::<i64>(&mut con, &["IDMINT.GIVEBACK", "a", &words[0], &words[1]]).await,
        0
    );
    server.stop().await;
}
