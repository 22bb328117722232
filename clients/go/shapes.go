package idmint

// The shapes of the nodes' replies. A reply of the wrong shape (a string where IDs should
// be, a negative ID, an array of the wrong length) is that node's failure, as a dropped
// connection is: the node is avoided for a while, its connection replaced, and the request
// sent to the next node. (The Rust client does the same: such a reply does not convert to
// the type it asked for.) A reply of the right shape whose IDs break the contract (a range
// not above the IDs the client holds, longer than asked) is ErrBadReply, never handed out.

// shape is what one command's reply must look like.
type shape struct {
	what string           // for messages: "[first, last]"
	ok   func(value) bool // nil: any reply
}

// isID reports whether v is an ID: an integer in 1..2^63-1 (the reader refuses larger ones).
func isID(v value) bool { return v.kind == ':' && v.num >= 1 }

var (
	// anyShape is any reply, for the tests' own commands.
	anyShape = shape{what: "any reply"}
	// rangeShape is IDMINT.RANGE's [first, last].
	rangeShape = shape{what: "two IDs [first, last]", ok: func(v value) bool {
		return v.kind == '*' && len(v.array) == 2 && isID(v.array[0]) && isID(v.array[1])
	}}
	// idsShape is IDMINT.SNOWFLAKE COUNT n's array of IDs.
	idsShape = shape{what: "an array of IDs", ok: func(v value) bool {
		if v.kind != '*' || v.null || len(v.array) == 0 {
			return false
		}
		for _, id := range v.array {
			if !isID(id) {
				return false
			}
		}
		return true
	}}
	// idShape is IDMINT.NEXT tag FORMAT INTEGER's ID.
	idShape = shape{what: "an ID", ok: isID}
	// mapShape is IDMINT.SPACE's map, keys and values in turn.
	mapShape = shape{what: "a map", ok: func(v value) bool {
		return v.kind == '*' && !v.null && len(v.array)%2 == 0
	}}
	// integerShape is IDMINT.GIVEBACK's 1 or 0.
	integerShape = shape{what: "an integer", ok: func(v value) bool { return v.kind == ':' }}
)
