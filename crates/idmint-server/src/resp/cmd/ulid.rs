//! `IDMINT.ULID [COUNT n] [FORMAT f]`: one ULID (its 26 characters of base32 unless `FORMAT`
//! says otherwise), or an array of `n`, strictly increasing on this node (see `id128`).

use bytes::Bytes;
use idmint_core::{Id128Form, Id128Kind};

use super::args::Refusal;
use super::id128::Id128Request;

/// Reads `IDMINT.ULID`'s options.
pub(super) fn parse(params: &[Bytes], max_count: u64) -> Result<Id128Request, Refusal<'_>> {
    Id128Request::parse(params, Id128Kind::Ulid, Id128Form::Ulid, max_count)
}
