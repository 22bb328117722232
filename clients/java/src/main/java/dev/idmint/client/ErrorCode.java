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
    INVALID_LAYOUT("invalid_layout"),
    INVALID_EPOCH("invalid_epoch"),
    INVALID_ARGUMENT("invalid_argument"),
    INVALID_SHARD("invalid_shard"),
    INVALID_ID("invalid_id"),
    INVALID_TAG("invalid_tag"),
    LAYOUT_EXHAUSTED("layout_exhausted"),
    CLOCK_BEFORE_EPOCH("clock_before_epoch"),
    CLOCK_BEHIND("clock_behind"),
    HWM_NOT_GRANTED("hwm_not_granted"),
    SEGMENT_UNAVAILABLE("segment_unavailable"),
    STORE_UNAVAILABLE("store_unavailable"),
    STORE_CONFLICT("store_conflict"),
    LEASE_LOST("lease_lost"),
    SHUTTING_DOWN("shutting_down"),
    NO_WORKER_FREE("no_worker_free"),
    STORE_INVALID("store_invalid"),
    STORE_CORRUPT("store_corrupt"),
    WORKER_HELD("worker_held"),
    UNKNOWN_TAG("unknown_tag"),
    TAG_EXISTS("tag_exists"),
    TAG_EXHAUSTED("tag_exhausted"),
    TOO_MANY_TAGS("too_many_tags"),
    TAG_QUOTA("tag_quota"),
    PERIOD_UNAVAILABLE("period_unavailable"),
    DATED("dated"),
    PERMUTED("permuted"),
    ID_SPACE_MISMATCH("id_space_mismatch"),
    ID_SPACE_UNRECORDED("id_space_unrecorded"),
    ID_SPACE_REFUSED("id_space_refused"),
    ID_SPACE_CHANGED("id_space_changed"),
    INVALID_FORMAT("invalid_format"),
    INVALID_COUNT("invalid_count"),
    INVALID_SIZE("invalid_size"),
    INVALID_QUERY("invalid_query"),
    INVALID_JSON("invalid_json"),
    INVALID_BODY("invalid_body"),
    INVALID_STEP("invalid_step"),
    INVALID_DESCRIPTION("invalid_description"),
    INVALID_FIRST_ID("invalid_first_id"),
    INVALID_DATING("invalid_dating"),
    BAD_REQUEST("bad_request"),
    UNAUTHORIZED("unauthorized"),
    FORBIDDEN("forbidden"),
    NOT_FOUND("not_found"),
    METRICS_DISABLED("metrics_disabled"),
    METHOD_NOT_ALLOWED("method_not_allowed"),
    PAYLOAD_TOO_LARGE("payload_too_large"),
    TIMEOUT("timeout"),
    LEASE_NOT_HELD("lease_not_held"),
    TOO_MANY_CONNECTIONS("too_many_connections"),
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
