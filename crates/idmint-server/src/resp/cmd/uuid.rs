//! `IDMINT.UUID [COUNT n] [FORMAT f]`: one UUIDv7 (canonical text unless `FORMAT` says
//! otherwise), or an array of `n`, strictly increasing on this node (see `id128`).

use bytes::Bytes;
use idmint_core::{Id128Form, Id128Kind};

use super::args::Refusal;
use super::id128::Id128Request;

/// Reads `IDMINT.UUID`'s options.
pub(super) fn parse(params: &[Bytes], max_count: u64) -> Result<Id128Request, Refusal<'_>> {
    Id128Request::parse(params, Id128Kind::Uuid7, Id128Form::Uuid, max_count)
}
