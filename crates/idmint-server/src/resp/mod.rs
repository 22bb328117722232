//! The Redis-protocol front end (stub: being written).
