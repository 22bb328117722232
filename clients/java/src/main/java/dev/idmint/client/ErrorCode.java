package dev.idmint.client;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The stable codes of idmint's wire protocols: the HTTP API's {@code error.code}, and the word
 * right after {@code -ERR} in the Redis protocol for the codes a program must tell apart
 * ({@code -ERR tag_exhausted ...}). A program branches on these, not on messages.
 *
 * <p>The same list, in the same order, as the server's ({@code ErrorCode::ALL} in
 * {@code crates/idmint-core/src/error_code.rs}); a unit test compares the two.
 */
public enum ErrorCode {
    /** A layout spec that does not parse or breaks a layout rule. */
    INVALID_LAYOUT("invalid_layout"),
    /** An epoch that does not parse or cannot be used. */
    INVALID_EPOCH("invalid_epoch"),
    /** An argument out of range (other than a shard or an ID, which have their own codes). */
    INVALID_ARGUMENT("invalid_argument"),
    /** A shard too wide for the layout's field. */
    INVALID_SHARD("invalid_shard"),
    /** An ID that does not parse or that the layout cannot decode. */
    INVALID_ID("invalid_id"),
    /** A tag name that breaks the rule for tags. */
    INVALID_TAG("invalid_tag"),
    /** The layout's time field ran out: no more snowflakes with this layout. */
    LAYOUT_EXHAUSTED("layout_exhausted"),
    /** The clock reads a time before the layout's epoch. */
    CLOCK_BEFORE_EPOCH("clock_before_epoch"),
    /** The clock is behind the next tick the generator may issue (or behind the high-water mark of the worker ID a node was given). Retryable: the clock catches up. */
    CLOCK_BEHIND("clock_behind"),
    /** The store has not yet confirmed the high-water mark the next tick needs. */
    HWM_NOT_GRANTED("hwm_not_granted"),
    /** A tag's buffers are empty and the store delivered no range within the wait. */
    SEGMENT_UNAVAILABLE("segment_unavailable"),
    /** The store could not be reached or did not answer in time. */
    STORE_UNAVAILABLE("store_unavailable"),
    /** A conditional write of the store lost a race. */
    STORE_CONFLICT("store_conflict"),
    /** The node's worker lease was lost; it takes another. */
    LEASE_LOST("lease_lost"),
    /** The node is shutting down (its generator is closed). */
    SHUTTING_DOWN("shutting_down"),
    /** Every worker ID of the layout is held by a live node. */
    NO_WORKER_FREE("no_worker_free"),
    /** The store holds data that breaks an invariant, or refused a request as invalid. */
    STORE_INVALID("store_invalid"),
    /** The store's data is damaged: restore it from a backup. */
    STORE_CORRUPT("store_corrupt"),
    /** The worker ID a node was given is held by another live node. */
    WORKER_HELD("worker_held"),
    /** The tag does not exist (and is not created on first use). */
    UNKNOWN_TAG("unknown_tag"),
    /** The tag exists already, or a setting only its creation takes was given. */
    TAG_EXISTS("tag_exists"),
    /** The tag's IDs are used up, or too few are left for the request: start a new tag. */
    TAG_EXHAUSTED("tag_exhausted"),
    /** The node serves as many tags as it may (--max-tags). */
    TOO_MANY_TAGS("too_many_tags"),
    /** The token has as many tags as its max_tags allows. */
    TAG_QUOTA("tag_quota"),
    /** A dated tag cannot hand out an ID now: its period is used up, or the store's clock went back into an earlier one. Lifts when the next period begins, not at a retry. */
    PERIOD_UNAVAILABLE("period_unavailable"),
    /** A range kept by the client was asked of a dated tag: take its IDs one call at a time. */
    DATED("dated"),
    /** A run of consecutive IDs was asked of a node that hands its IDs out permuted. */
    PERMUTED("permuted"),
    /** The node's layout, epoch, datacenter or key differs from the namespace's ID space. */
    ID_SPACE_MISMATCH("id_space_mismatch"),
    /** The namespace has leases from before ID spaces were recorded. */
    ID_SPACE_UNRECORDED("id_space_unrecorded"),
    /** A change of ID space was refused. */
    ID_SPACE_REFUSED("id_space_refused"),
    /** The namespace's ID space changed under a running node: restart it. */
    ID_SPACE_CHANGED("id_space_changed"),
    /** format= (or prefix, width) that is not one of the forms. */
    INVALID_FORMAT("invalid_format"),
    /** count= out of range. */
    INVALID_COUNT("invalid_count"),
    /** size= of a segment lease out of range, or missing. */
    INVALID_SIZE("invalid_size"),
    /** A query string that does not parse, or an unknown parameter. */
    INVALID_QUERY("invalid_query"),
    /** A body that is not valid JSON for the route. */
    INVALID_JSON("invalid_json"),
    /** A body that could not be read. */
    INVALID_BODY("invalid_body"),
    /** A tag's step out of range. */
    INVALID_STEP("invalid_step"),
    /** A tag's description too long or not text. */
    INVALID_DESCRIPTION("invalid_description"),
    /** A tag's first_id out of range. */
    INVALID_FIRST_ID("invalid_first_id"),
    /** A tag's period (or its form) that cannot be used. */
    INVALID_DATING("invalid_dating"),
    /** Any other refused request (a rejection of the HTTP machinery). */
    BAD_REQUEST("bad_request"),
    /** No Authorization: Bearer token where one is needed. */
    UNAUTHORIZED("unauthorized"),
    /** A token that is not valid, of another scope, or not for the tag. */
    FORBIDDEN("forbidden"),
    /** No route for the path. */
    NOT_FOUND("not_found"),
    /** /metrics on a server that runs without metrics. */
    METRICS_DISABLED("metrics_disabled"),
    /** A known path asked with another method. */
    METHOD_NOT_ALLOWED("method_not_allowed"),
    /** A request body over the limit. */
    PAYLOAD_TOO_LARGE("payload_too_large"),
    /** A request that did not complete in time. */
    TIMEOUT("timeout"),
    /** The node holds no confirmed worker lease (/readyz). */
    LEASE_NOT_HELD("lease_not_held"),
    /** A connection beyond the server's limit (answered, then closed). */
    TOO_MANY_CONNECTIONS("too_many_connections"),
    /** Something that should not happen: a bug, logged by the server. */
    INTERNAL("internal");

    /** Every code's wire word, in declaration order. */
    public static final List<String> ALL =
            Stream.of(values()).map(ErrorCode::wire).collect(Collectors.toUnmodifiableList());

    private static final Map<String, ErrorCode> BY_WIRE =
            Stream.of(values()).collect(Collectors.toUnmodifiableMap(ErrorCode::wire, Function.identity()));

    private final String wire;

    ErrorCode(String wire) {
        this.wire = wire;
    }

    /** The code as it travels ({@code tag_exhausted}). */
    public String wire() {
        return wire;
    }

    /** The code a wire word names, if it is one (a newer node may send a word this client does not know). */
    public static Optional<ErrorCode> fromWire(String word) {
        return Optional.ofNullable(BY_WIRE.get(word));
    }

    @Override
    public String toString() {
        return wire;
    }
}
