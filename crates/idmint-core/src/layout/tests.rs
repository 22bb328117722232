#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn reason(spec: &str) -> String {
    match Layout::parse(spec) {
        Err(Error::InvalidLayout { reason, .. }) => reason,
        other => panic!("{spec}: expected InvalidLayout, got {other:?}"),
    }
}

#[test]
fn parses_the_design_example() {
    let layout = Layout::parse("time:41@1ms,worker:10,seq:12").unwrap();
    assert_eq!(layout.spec(), "time:41@1ms,worker:10,seq:12");
    assert_eq!(layout.total_bits(), 63);
    assert_eq!(layout.worker_count(), 1024);
    assert_eq!(layout.ids_per_second_per_worker(), 4_096_000);
    assert_eq!(layout.epoch_ms(), DEFAULT_EPOCH_MS);
    let worker = layout.field(FieldKind::Worker).unwrap();
    assert_eq!((worker.bits, worker.shift), (10, 12));
}

#[test]
fn spec_is_tolerant_of_spaces_and_long_names() {
    let layout = Layout::parse(" time : 40 @ 10ms , datacenter:3, sequence:8 ").unwrap();
    assert_eq!(layout.spec(), "time:40@10ms,dc:3,seq:8");
}

#[test]
fn refuses_bad_specs_with_a_reason_naming_the_problem() {
    assert!(reason("time:41@1ms,worker:11,seq:12").contains("64 bits"));
    assert!(reason("time:41@1ms,worker:10").contains("no `seq`"));
    assert!(reason("worker:10,seq:12").contains("no `time`"));
    assert!(reason("time:41@1ms,time:10,seq:12").contains("`time` appears twice"));
    assert!(reason("time:41@5ms,seq:12").contains("unknown time unit `5ms`"));
    assert!(reason("time:41@1ms,host:5,seq:12").contains("unknown field `host`"));
    assert!(reason("time:41@1ms,seq:0").contains("from 1 to 63"));
    assert!(reason("time:41@1ms,seq:x").contains("from 1 to 63"));
    assert!(reason("time:41@1ms,seq").contains("needs a width"));
    assert!(reason("time:41@1ms,seq:12@1ms").contains("only `time` takes a unit"));
    assert!(reason("").contains("empty"));
    assert!(reason("seq:12,time:41@1ms").contains("`time` must come before `seq`"));
    assert!(reason("twiter").contains("not a preset"));
    assert!(reason("time:55@1s,seq:8").contains("outlast"));
}

#[test]
fn epoch_in_the_future_is_refused() {
    let layout = Layout::parse_with_epoch("twitter", Some("2030-01-01")).unwrap();
    let now = parse_epoch("2026-11-21T00:00:00Z").unwrap();
    assert!(matches!(
        layout.check_epoch_not_future(now),
        Err(Error::InvalidEpoch { reason, .. }) if reason.contains("future")
    ));
    assert!(Layout::parse("twitter")
        .unwrap()
        .check_epoch_not_future(now)
        .is_ok());
}

#[test]
fn epochs_parse_in_three_forms() {
    assert_eq!(parse_epoch("1288834974657").unwrap(), 1_288_834_974_657);
    assert_eq!(parse_epoch("2015-01-01").unwrap(), 1_420_070_400_000);
    assert_eq!(
        parse_epoch("2015-01-01T01:00:00+01:00").unwrap(),
        1_420_070_400_000
    );
    assert!(matches!(
        parse_epoch("yesterday"),
        Err(Error::InvalidEpoch { .. })
    ));
    assert!(matches!(
        parse_epoch("1960-01-01"),
        Err(Error::InvalidEpoch { .. })
    ));
}

#[test]
fn presets_have_their_real_shapes() {
    for preset in PRESETS {
        let layout = Layout::parse(preset.name).unwrap();
        assert!(layout.total_bits() <= MAX_LAYOUT_BITS, "{}", preset.name);
        assert_eq!(layout.preset_name(), Some(preset.name));
    }
    assert_eq!(
        Layout::parse("twitter")
            .unwrap()
            .ids_per_second_per_worker(),
        4_096_000
    );
    assert_eq!(
        Layout::parse("sonyflake")
            .unwrap()
            .ids_per_second_per_worker(),
        25_600
    );
    assert_eq!(Layout::parse("instagram").unwrap().shard_count(), 8_192);
    assert!(Layout::parse("js-safe").unwrap().total_bits() <= 53);
    let instagram = Layout::parse("instagram").unwrap();
    assert_eq!(
        format_ms_rfc3339(instagram.ends_at_ms()),
        "2046-06-27T17:00:49.497Z"
    );
    let uid = Layout::parse("uid-generator").unwrap();
    assert_eq!(
        format_ms_rfc3339(uid.ends_at_ms()),
        "2024-11-20T21:24:16.000Z"
    );
}

#[test]
fn decodes_discords_documented_example() {
    let decoded = Layout::parse("discord")
        .unwrap()
        .decode(175_928_847_299_117_063)
        .unwrap();
    assert_eq!(decoded.time, "2016-04-30T11:18:25.796Z");
    assert_eq!(
        (decoded.dc, decoded.worker, decoded.seq),
        (Some(1), Some(0), 7)
    );
}

#[test]
fn twitter_layout_ends_in_2080() {
    let layout = Layout::parse("twitter").unwrap();
    assert_eq!(
        format_ms_rfc3339(layout.ends_at_ms()),
        "2080-07-10T17:30:30.209Z"
    );
}

#[test]
fn compose_checks_every_field() {
    let layout = Layout::parse("twitter").unwrap();
    let parts = IdParts {
        tick: 5,
        dc: 31,
        worker: 32,
        shard: 0,
        seq: 1,
    };
    assert!(matches!(
        layout.compose(&parts),
        Err(Error::InvalidArgument { name: "worker", .. })
    ));
    let parts = IdParts {
        shard: 1,
        ..IdParts::default()
    };
    assert!(matches!(
        layout.compose(&parts),
        Err(Error::InvalidArgument { name: "shard", .. })
    ));
}

#[test]
fn decompose_refuses_ids_wider_than_the_layout() {
    let layout = Layout::parse("js-safe").unwrap();
    assert!(layout.decompose(1 << 53).is_err());
    assert!(layout.decompose((1 << 53) - 1).is_ok());
}

#[test]
fn ticks_round_down_to_the_unit() {
    let layout = Layout::parse("sonyflake").unwrap();
    let epoch = layout.epoch_ms();
    assert_eq!(layout.tick_at(epoch + 19), Some(1));
    assert_eq!(layout.tick_at(epoch - 1), None);
    assert_eq!(layout.tick_start_ms(2), epoch + 20);
}

/// Regression (fuzz target `layout_spec`): a wide sequence under a narrow time field is a valid
/// layout, and asking for its rate overflowed `u64` arithmetic and panicked.
#[test]
fn rate_of_a_very_wide_sequence_saturates() {
    let layout = Layout::parse("time:1@1ms,seq:55,worker:1,dc:1").unwrap();
    assert_eq!(layout.ids_per_second_per_worker(), u64::MAX);
    let layout = Layout::parse("time:1@1ms,seq:62").unwrap();
    assert_eq!(layout.ids_per_second_per_worker(), u64::MAX);
    // The widest sequence whose rate still fits is exact.
    let layout = Layout::parse("time:9@1ms,seq:54").unwrap();
    assert_eq!(layout.ids_per_second_per_worker(), (1 << 54) * 1_000);
    let layout = Layout::parse("time:1@1s,seq:62").unwrap();
    assert_eq!(layout.ids_per_second_per_worker(), 1 << 62);
}
