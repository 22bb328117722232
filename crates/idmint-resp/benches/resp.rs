//! The hot path of `redis-benchmark -P 16 INCR`: parse a pipeline of 16 `INCR` requests and
//! encode 16 integer replies.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idmint_resp::{encode, parse_command, Limits, RequestDecoder};

fn pipeline() -> Vec<u8> {
    let mut buf = Vec::new();
    for _ in 0..16 {
        encode::command(&mut buf, &["INCR", "counter:__rand_int__"]);
    }
    buf
}

fn parse(c: &mut Criterion) {
    let input = pipeline();
    let limits = Limits::default();
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Elements(16));
    group.bench_function("parse_command_x16", |b| {
        b.iter(|| {
            let mut used = 0;
            while let Some((cmd, n)) = parse_command(&input[used..], &limits).unwrap() {
                used += n;
                black_box(cmd);
            }
        })
    });
    group.bench_function("decoder_x16", |b| {
        let mut decoder = RequestDecoder::new(limits);
        let mut buf = BytesMut::with_capacity(4096);
        b.iter(|| {
            buf.extend_from_slice(&input);
            while let Some(cmd) = decoder.decode(&mut buf).unwrap() {
                black_box(cmd);
            }
        })
    });
    group.finish();
}

fn replies(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(16));
    let mut out = Vec::with_capacity(1024);
    group.bench_function("integer_x16", |b| {
        b.iter(|| {
            out.clear();
            for i in 0..16 {
                encode::integer(&mut out, black_box(1_000_000_007 + i));
            }
            black_box(&out);
        })
    });
    group.finish();
}

criterion_group!(benches, parse, replies);
criterion_main!(benches);
