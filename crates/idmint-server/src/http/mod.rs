//! The HTTP front end (stub: being written).
