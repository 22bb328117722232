//! A server connection's read loop over this crate, against a simulated socket: what
//! `redis-benchmark -P 16 INCR` and `PING_INLINE` send, delivered in arbitrary pieces, then a
//! malformed request, which is answered and ends the connection.
//!
//! `cargo run -p idmint-resp --example read_loop`

use std::io::{self, Read, Write};

use bytes::BytesMut;
use idmint_resp::{encode, Command, RequestDecoder};

/// A socket stand-in that returns its bytes a few at a time, as TCP may.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let rest = self.data.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(out.len()).min(self.step);
        out[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        self.step = self.step % 13 + 7; // vary the read sizes
        Ok(n)
    }
}

/// What the server would do with one command; returns false to close the connection.
fn execute(cmd: &Command, counter: &mut i64, out: &mut Vec<u8>) -> bool {
    match cmd.upper_name().as_deref() {
        Some(b"PING") => encode::simple(out, "PONG"),
        Some(b"INCR") if cmd.len() == 2 => {
            *counter += 1;
            encode::integer(out, *counter);
        }
        Some(b"QUIT") => {
            encode::ok(out);
            return false;
        }
        _ => encode::error_fmt(
            out,
            format_args!(
                "ERR unknown command '{}', with args beginning with: ",
                cmd.name().escape_ascii()
            ),
        ),
    }
    true
}

fn main() -> io::Result<()> {
    // The client's bytes: a 16-deep INCR pipeline, inline PINGs, a typo, then garbage.
    let mut request = Vec::new();
    for _ in 0..16 {
        encode::command(&mut request, &["INCR", "counter:__rand_int__"]);
    }
    request.extend_from_slice(b"PING\r\nPING\r\nINCRR x\r\n*2\r\n:1\r\n");
    let mut socket = Trickle {
        data: request,
        pos: 0,
        step: 5,
    };

    let mut decoder = RequestDecoder::default();
    let mut inbuf = BytesMut::with_capacity(16 * 1024);
    let mut outbuf = Vec::with_capacity(16 * 1024);
    let mut counter = 0;
    let mut sent = Vec::new(); // stands in for the socket's write side
    let mut chunk = [0u8; 4096];
    'conn: loop {
        let n = socket.read(&mut chunk)?;
        if n == 0 {
            break; // peer closed
        }
        inbuf.extend_from_slice(&chunk[..n]);
        loop {
            match decoder.decode(&mut inbuf) {
                Ok(Some(cmd)) => {
                    if !execute(&cmd, &mut counter, &mut outbuf) {
                        sent.write_all(&outbuf)?;
                        break 'conn;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // The stream can no longer be split into requests: answer, then close.
                    e.write_reply(&mut outbuf);
                    sent.write_all(&outbuf)?;
                    break 'conn;
                }
            }
        }
        // One write per read, however many replies it holds: pipelining's whole point.
        sent.write_all(&outbuf)?;
        outbuf.clear();
    }
    print!("{}", String::from_utf8_lossy(&sent));
    Ok(())
}
