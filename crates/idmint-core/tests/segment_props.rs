//! Segment buffer properties (being written).
