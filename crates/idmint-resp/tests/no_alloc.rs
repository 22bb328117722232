//! A declared length is never allocated before its bytes arrive: parsing a header that
//! declares a gigabyte must not grow the process. Measured with the kernel's peak virtual size
//! (`VmPeak`), which any reservation of that size would raise, touched or not. Alone in its
//! test binary, with a single test, so no other thread allocates meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[cfg(target_os = "linux")]
#[test]
fn gigabyte_headers_reserve_nothing() {
    use bytes::BytesMut;
    use idmint_resp::{parse_command, Limits, ProtocolError, RequestDecoder};

    fn vm_peak_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmPeak:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    // Limits that allow a gigabyte, so the parser waits for the data instead of refusing.
    let huge = Limits {
        max_bulk_len: 2 << 30,
        max_request_len: 4 << 30,
        max_array_len: 1 << 30,
        ..Limits::default()
    };
    let inputs: [&[u8]; 3] = [
        b"*1\r\n$1000000000\r\nabc",
        b"*1000000000\r\n$1\r\na\r\n$1\r\n",
        b"*2\r\n$3\r\nSET\r\n$2000000000\r\n",
    ];
    let before = vm_peak_kib();
    for input in inputs {
        assert_eq!(parse_command(input, &huge), Ok(None));
        let mut decoder = RequestDecoder::new(huge);
        let mut buf = BytesMut::from(input);
        assert_eq!(decoder.decode(&mut buf), Ok(None));
        // With the default limits, the same header is an error at once.
        assert!(matches!(
            parse_command(input, &Limits::default()),
            Err(ProtocolError::LengthOverLimit { .. })
        ));
    }
    let grown_kib = vm_peak_kib().saturating_sub(before);
    assert!(
        grown_kib < 64 * 1024,
        "peak virtual size grew by {grown_kib} KiB"
    );
}
