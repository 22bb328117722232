//! Benchmark of the segment buffer (being written).
fn main() {}
