package idmint

// ErrorCodes lists every code an idmint node answers with: the HTTP API's `error.code`, and
// the word right after `-ERR` for the refusals the Redis protocol names. Same list, same order
// as the server's (idmint-core's ErrorCode::ALL in crates/idmint-core/src/error_code.rs); a
// test compares the two, so a code added there must be added here.
var ErrorCodes = []string{
	"invalid_layout",
	"invalid_epoch",
	"invalid_argument",
	"invalid_shard",
	"invalid_id",
	"invalid_tag",
	"layout_exhausted",
	"clock_before_epoch",
	"clock_behind",
	"hwm_not_granted",
	"segment_unavailable",
	"store_unavailable",
	"store_conflict",
	"lease_lost",
	"shutting_down",
	"no_worker_free",
	"store_invalid",
	"store_corrupt",
	"worker_held",
	"unknown_tag",
	"tag_exists",
	"tag_exhausted",
	"too_many_tags",
	"tag_quota",
	"period_unavailable",
	"dated",
	"permuted",
	"id_space_mismatch",
	"id_space_unrecorded",
	"id_space_refused",
	"id_space_changed",
	"invalid_format",
	"invalid_count",
	"invalid_size",
	"invalid_query",
	"invalid_json",
	"invalid_body",
	"invalid_step",
	"invalid_description",
	"invalid_first_id",
	"invalid_dating",
	"bad_request",
	"unauthorized",
	"forbidden",
	"not_found",
	"metrics_disabled",
	"method_not_allowed",
	"payload_too_large",
	"timeout",
	"lease_not_held",
	"too_many_connections",
	"internal",
}

// refusedCodes are the codes after `-ERR` that every node answers the same, so neither another
// node nor a later try helps: a used-up tag, the nodes' tag cap, the token's tag quota, runs
// asked of permuted IDs, a range of a dated tag, a dated tag's used-up period. Any other code
// there (store_corrupt: that node's store) is that node's failure.
var refusedCodes = map[string]bool{
	"tag_exhausted":      true,
	"too_many_tags":      true,
	"tag_quota":          true,
	"permuted":           true,
	"dated":              true,
	"period_unavailable": true,
}

// isErrorCode reports whether word is one of ErrorCodes.
func isErrorCode(word string) bool {
	for _, code := range ErrorCodes {
		if code == word {
			return true
		}
	}
	return false
}
