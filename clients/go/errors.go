package idmint

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The kinds of failure a call can end in. Every error the client returns for one of them
// matches it with errors.Is; most are an *Error (errors.As) that says more: the node's code,
// the tag, the node, the node's reply, and the cause.
var (
	// ErrUnavailable: no node could serve within Config.MaxWait (every node down,
	// unreachable, or its store unavailable). Retryable: the same call may succeed later. The
	// *Error's Err is the last failure seen.
	ErrUnavailable = errors.New("idmint: no node could serve")
	// ErrClosed: the client was closed; it hands out nothing more.
	ErrClosed = errors.New("idmint: the client is closed")
	// ErrAuth: the nodes refused the token (wrong, missing, not allowed this command or tag,
	// or a token given to nodes that have none).
	ErrAuth = errors.New("idmint: the token was refused")
	// ErrPermuted: the nodes hand out their IDs permuted (serve --permutation-key-file), so
	// they refuse the runs of consecutive IDs the client keeps for segment IDs. Take such
	// IDs from the nodes themselves (IDMINT.NEXT tag COUNT n). Snowflakes are still served.
	ErrPermuted = errors.New("idmint: the nodes hand out permuted IDs")
	// ErrTagExhausted: the tag's IDs are used up; start a new tag. Not retryable.
	ErrTagExhausted = errors.New("idmint: the tag is exhausted")
	// ErrPeriodUnavailable: a dated tag cannot hand out an ID now (its period is used up, or
	// the store's clock went back into an earlier one). Lifts when the next period begins.
	ErrPeriodUnavailable = errors.New("idmint: the dated tag's period is unavailable")
	// ErrDated: the nodes refused a range of a dated tag. Next handles it itself (it takes the
	// tag's IDs one by one from the nodes), so callers do not see it from Next.
	ErrDated = errors.New("idmint: the tag is dated")
	// ErrRefused: a node refused the request for another reason no retry changes (a bad tag
	// name, an unknown tag, the nodes' tag cap, the token's quota). The *Error's Code says
	// which when the node gave one.
	ErrRefused = errors.New("idmint: the node refused the request")
	// ErrBadReply: a node answered with a reply that breaks the protocol's contract (a range
	// that is not a run above the IDs already held, an ID outside 1..2^63-1). Nothing of it
	// is handed out.
	ErrBadReply = errors.New("idmint: a node's reply breaks the contract")
	// ErrInvalidArgument: an argument of the call was refused before anything was sent: a
	// tag name the nodes would refuse, a count out of range, a text that is not an ID in the
	// Form, a prefix or width a Form cannot have. The *Error's Code says which
	// ("invalid_tag", "invalid_argument").
	ErrInvalidArgument = errors.New("idmint: invalid argument")
	// ErrConfig: the Config cannot work; the *ConfigError names the field.
	ErrConfig = errors.New("idmint: bad configuration")
)

// Error is a failed call: which kind (one of the Err* values above, matched by errors.Is),
// and what is known of it.
type Error struct {
	// Kind is one of ErrUnavailable, ErrAuth, ErrPermuted, ErrTagExhausted,
	// ErrPeriodUnavailable, ErrDated, ErrRefused, ErrBadReply, ErrInvalidArgument.
	Kind error
	// Code is the node's code (one of ErrorCodes, such as "tag_exhausted" or "too_many_tags")
	// when there is one; "store_unavailable" for ErrUnavailable.
	Code string
	// Tag is the tag the call was for, if any.
	Tag string
	// Node is the address of the node that answered last (host:port), if any.
	Node string
	// Reply is the node's error reply as it came (`ERR tag_exhausted tag ...`,
	// `WRONGPASS ...`), if there was one.
	Reply string
	// Waited is how long the call waited, for ErrUnavailable.
	Waited time.Duration
	// Err is the cause: for ErrUnavailable the last failure seen.
	Err error
	// message says what happened, in words.
	message string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("idmint: ")
	b.WriteString(e.message)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is matches the error's Kind, so errors.Is(err, idmint.ErrUnavailable) works.
func (e *Error) Is(target error) bool {
	return target != nil && target == e.Kind
}

// Unwrap gives the cause.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the same call may succeed later without any change.
func (e *Error) Retryable() bool { return e.Kind == ErrUnavailable }

// ConfigError is a Config that cannot work: which field, and why. New returns it before any
// connection is opened; it matches ErrConfig with errors.Is.
type ConfigError struct {
	// Field is the Config field refused, by its Go name ("Nodes", "MaxBackoff", ...).
	Field string
	// Reason says what the field must be, or what is wrong with a node's address.
	Reason string
	// Err is the error behind it, for an address that does not parse.
	Err error
}

func (e *ConfigError) Error() string {
	text := fmt.Sprintf("idmint: configuration: %s: %s", e.Field, e.Reason)
	if e.Err != nil {
		text += ": " + e.Err.Error()
	}
	return text
}

// Is matches ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Unwrap gives the error behind the refusal.
func (e *ConfigError) Unwrap() error { return e.Err }

// replyError is an error reply of a node: `-CODE detail`.
type replyError struct {
	code   string // ERR, WRONGPASS, TRYAGAIN, ...
	detail string // the text after the code
}

func (r *replyError) Error() string {
	if r.detail == "" {
		return r.code
	}
	return r.code + " " + r.detail
}

// parseReplyError splits an error reply's text into its code and the rest.
func parseReplyError(text string) *replyError {
	code, detail, found := strings.Cut(text, " ")
	if !found {
		return &replyError{code: text}
	}
	// A reply whose first word is not a code in capitals (not sent by idmint, nor Redis):
	// keep it whole under ERR.
	for _, c := range code {
		if !(c >= 'A' && c <= 'Z' || c == '_') {
			return &replyError{code: "ERR", detail: text}
		}
	}
	return &replyError{code: code, detail: detail}
}

// idmintCode is the idmint code right after `-ERR` (`-ERR tag_exhausted tag ...`), or "".
func (r *replyError) idmintCode() string {
	if r.code != "ERR" {
		return ""
	}
	word, _, _ := strings.Cut(r.detail, " ")
	if isErrorCode(word) {
		return word
	}
	return ""
}

// refusalStarts are the starts of the refusals that carry no code: the words of Redis and of
// idmint's commands for a bad command or argument.
var refusalStarts = []string{
	"invalid tag",
	"invalid argument",
	"unknown tag",
	"count must be",
	"unknown command",
	"wrong number of arguments",
	"syntax error",
	"value is not an integer",
	"first must not be",
	// A token sent to a node that has none.
	"AUTH <password> called without",
}

// isAuth reports whether the reply refuses the token.
func (r *replyError) isAuth() bool {
	switch r.code {
	case "WRONGPASS", "NOAUTH", "NOPERM":
		return true
	}
	return r.code == "ERR" && strings.HasPrefix(r.detail, "AUTH <password> called without")
}

// isRefusal reports whether the reply is one no retry changes (so another node is not asked
// to wait for it), rather than the node's failure. An allow-list: anything else (TRYAGAIN,
// `max number of clients reached`, a code this client does not know) is the node's failure.
func (r *replyError) isRefusal() bool {
	if r.isAuth() {
		return true
	}
	if r.code != "ERR" {
		return false
	}
	if refusedCodes[r.idmintCode()] {
		return true
	}
	for _, start := range refusalStarts {
		// Either case: the nodes write "count must be" for IDMINT.RANGE's count and "COUNT
		// must be" for the COUNT option of IDMINT.SNOWFLAKE.
		if len(r.detail) >= len(start) && strings.EqualFold(r.detail[:len(start)], start) {
			return true
		}
	}
	return false
}

// refusal turns a node's refusal into the caller's error.
func refusal(node, tag string, r *replyError) *Error {
	e := &Error{Tag: tag, Node: node, Reply: r.Error(), Code: r.idmintCode()}
	switch {
	case r.isAuth():
		e.Kind = ErrAuth
		// As the Rust client reads Redis' own codes: the HTTP API's words for the same.
		switch r.code {
		case "WRONGPASS", "NOAUTH":
			e.Code = "unauthorized"
		case "NOPERM":
			e.Code = "forbidden"
		}
		e.message = fmt.Sprintf("%s refused the token: %s", node, r.Error())
	case e.Code == "tag_exhausted":
		e.Kind = ErrTagExhausted
		e.message = fmt.Sprintf("tag `%s` is exhausted (%s)", tag, r.detail)
	case e.Code == "period_unavailable":
		e.Kind = ErrPeriodUnavailable
		e.message = fmt.Sprintf("dated tag `%s` cannot hand out an ID now (%s)", tag, r.detail)
	case e.Code == "dated":
		e.Kind = ErrDated
		e.message = fmt.Sprintf("tag `%s` is dated (%s)", tag, r.detail)
	case e.Code == "permuted":
		e.Kind = ErrPermuted
		e.message = fmt.Sprintf("%s hands out its IDs permuted (serve --permutation-key-file): "+
			"this client keeps segment IDs as runs of consecutive IDs, which permuted IDs are "+
			"not; take segment IDs from the nodes themselves (IDMINT.NEXT tag COUNT n)", node)
	default:
		e.Kind = ErrRefused
		if e.Code == "" && strings.HasPrefix(r.detail, "unknown tag") {
			e.Code = "unknown_tag"
		} else if e.Code == "" && strings.HasPrefix(r.detail, "invalid tag") {
			e.Code = "invalid_tag"
		}
		e.message = fmt.Sprintf("%s refused: %s", node, r.Error())
	}
	return e
}

// unavailable is ErrUnavailable after waiting `waited`, the last failure being `cause`.
func unavailable(tag string, waited time.Duration, cause error) *Error {
	e := &Error{
		Kind:    ErrUnavailable,
		Code:    "store_unavailable",
		Tag:     tag,
		Waited:  waited,
		Err:     cause,
		message: fmt.Sprintf("no idmint node could serve within %v", waited.Round(time.Millisecond)),
	}
	var nodeErr *nodeFailure
	if errors.As(cause, &nodeErr) {
		e.Node = nodeErr.node
		if nodeErr.reply != nil {
			e.Reply = nodeErr.reply.Error()
		}
	}
	return e
}

// badReply is ErrBadReply: a node's answer that is never handed out.
func badReply(node, tag, what string) *Error {
	return &Error{Kind: ErrBadReply, Code: "store_invalid", Tag: tag, Node: node,
		message: fmt.Sprintf("%s answered %s", node, what)}
}

// nodeFailure is one node failing one request: down, a timeout, a dropped connection, a reply
// that does not parse, or TRYAGAIN (its store is down).
type nodeFailure struct {
	node  string
	what  string
	reply *replyError // the error reply, if the node sent one
	err   error
}

func (f *nodeFailure) Error() string {
	text := f.node + " " + f.what
	if f.reply != nil {
		text += ": " + f.reply.Error()
	}
	if f.err != nil {
		text += ": " + f.err.Error()
	}
	return text
}

func (f *nodeFailure) Unwrap() error { return f.err }
