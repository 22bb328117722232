//! Runs the real `idmint` binary and checks what it prints and how it exits.

use std::collections::HashMap;
use std::process::{Command, Output};

/// Exit status of a usage error (clap's, and ours for a bad layout, epoch or ID).
const EXIT_USAGE: i32 = 2;

/// What one run of the binary did.
struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts the run succeeded and returns its stdout.
    fn ok(&self) -> &str {
        assert_eq!(
            self.status,
            Some(0),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        &self.stdout
    }

    /// Asserts the run failed as a usage error with one `error:` line on stderr containing
    /// every one of `needles`, and returns that line.
    fn usage_error(&self, needles: &[&str]) -> &str {
        assert_eq!(
            self.status,
            Some(EXIT_USAGE),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        assert!(
            self.stdout.is_empty(),
            "nothing on stdout after an error: {}",
            self.stdout
        );
        let line = self.stderr.trim_end();
        assert!(line.starts_with("error: "), "{line}");
        assert!(!line.contains('\n'), "one line: {line}");
        assert!(!line.contains("panicked"), "{line}");
        for needle in needles {
            assert!(line.contains(needle), "`{needle}` missing from: {line}");
        }
        line
    }

    /// The `label: value` lines of stdout (values trimmed).
    fn pairs(&self) -> HashMap<String, String> {
        self.stdout
            .lines()
            .filter_map(|line| line.split_once(": "))
            .map(|(label, value)| (label.trim().to_owned(), value.trim().to_owned()))
            .collect()
    }
}

/// Runs `idmint` with `args`.
fn idmint(args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_idmint"))
        .args(args)
        .output()
        .expect("run idmint");
    Run {
        status: status.code(),
        stdout: String::from_utf8(stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
    }
}

/// Runs `idmint` with `args` and parses its stdout as JSON.
fn idmint_json(args: &[&str]) -> serde_json::Value {
    let run = idmint(args);
    serde_json::from_str(run.ok()).expect("JSON on stdout")
}

const DISCORD_ID: &str = "175928847299117063";

#[test]
fn layout_twitter_shows_rate_counts_and_end() {
    let run = idmint(&["layout", "--layout", "twitter"]);
    let pairs = run.pairs();
    run.ok();
    assert_eq!(
        pairs["layout"],
        "twitter (time:41@1ms,dc:5,worker:5,seq:12)"
    );
    assert_eq!(
        pairs["epoch"],
        "2010-11-04T01:42:54.657Z (1288834974657 ms since 1970)"
    );
    assert_eq!(pairs["unit"], "1ms");
    assert_eq!(pairs["total bits"], "63 of 63");
    assert_eq!(pairs["IDs per second per worker"], "4,096,000");
    assert_eq!(pairs["workers"], "32");
    assert_eq!(pairs["datacenters"], "32");
    assert_eq!(pairs["shards"], "1");
    assert!(
        pairs["runs out"].starts_with("2080-07-10T17:30:30.209Z (in "),
        "{}",
        pairs["runs out"]
    );
    assert!(pairs["note"].contains("Twitter Snowflake"));
    assert!(run.stderr.is_empty(), "no warning: {}", run.stderr);
}

#[test]
fn layout_lists_every_field_most_significant_first() {
    let run = idmint(&["layout", "--layout", "twitter"]);
    let rows: Vec<Vec<&str>> = run
        .ok()
        .lines()
        .skip_while(|line| !line.starts_with("fields"))
        .skip(2)
        .take(4)
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "time",
            "41",
            "62..22",
            "22",
            "2,199,023,255,551",
            "2,199,023,255,552"
        ]
    );
    assert_eq!(rows[1], ["dc", "5", "21..17", "17", "31", "32"]);
    assert_eq!(rows[2], ["worker", "5", "16..12", "12", "31", "32"]);
    assert_eq!(rows[3], ["seq", "12", "11..0", "0", "4,095", "4,096"]);
}

#[test]
fn layout_defaults_to_the_design_example() {
    let run = idmint(&["layout"]);
    let pairs = run.pairs();
    run.ok();
    assert_eq!(pairs["layout"], "time:41@1ms,worker:10,seq:12");
    assert!(pairs["epoch"].starts_with("2025-01-01T00:00:00.000Z"));
    assert_eq!(pairs["workers"], "1,024");
    assert!(!pairs.contains_key("note"));
}

#[test]
fn layout_json_has_the_same_facts() {
    let json = idmint_json(&["layout", "--layout", "twitter", "--json"]);
    assert_eq!(json["preset"], "twitter");
    assert_eq!(json["spec"], "time:41@1ms,dc:5,worker:5,seq:12");
    assert_eq!(json["epoch_ms"], 1_288_834_974_657_u64);
    assert_eq!(json["unit"], "1ms");
    assert_eq!(json["total_bits"], 63);
    assert_eq!(json["ids_per_second_per_worker"], 4_096_000);
    assert_eq!(json["worker_count"], 32);
    assert_eq!(json["dc_count"], 32);
    assert_eq!(json["shard_count"], 1);
    assert_eq!(json["ends_at"], "2080-07-10T17:30:30.209Z");
    assert_eq!(json["ran_out"], false);
    assert!(json["remaining_days"].as_i64().unwrap() > 0);
    let names: Vec<&str> = json["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["time", "dc", "worker", "seq"]);
    assert_eq!(json["fields"][0]["msb"], 62);
    assert_eq!(json["fields"][0]["lsb"], 22);
}

#[test]
fn uid_generator_says_it_ran_out_and_still_succeeds() {
    let run = idmint(&["layout", "--layout", "uid-generator"]);
    let pairs = run.pairs();
    run.ok();
    let runs_out = &pairs["runs out"];
    assert!(
        runs_out.starts_with("2024-11-20T21:24:16.000Z (ran out "),
        "{runs_out}"
    );
    assert!(runs_out.ends_with(" ago)"), "{runs_out}");
    assert!(
        run.stderr.starts_with("warning: layout uid-generator"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("ran out on 2024-11-20T21:24:16.000Z"),
        "{}",
        run.stderr
    );

    let json = idmint_json(&["layout", "--layout", "uid-generator", "--json"]);
    assert_eq!(json["ran_out"], true);
    assert!(json["remaining_days"].as_i64().unwrap() < 0);
}

#[test]
fn layout_list_shows_every_preset() {
    let run = idmint(&["layout", "--list"]);
    let out = run.ok();
    for (name, spec, epoch) in [
        (
            "twitter",
            "time:41@1ms,dc:5,worker:5,seq:12",
            "2010-11-04T01:42:54.657Z",
        ),
        (
            "discord",
            "time:41@1ms,dc:5,worker:5,seq:12",
            "2015-01-01T00:00:00.000Z",
        ),
        (
            "instagram",
            "time:40@1ms,shard:13,seq:10",
            "2011-08-24T21:07:01.721Z",
        ),
        (
            "sonyflake",
            "time:39@10ms,seq:8,worker:16",
            "2014-09-01T00:00:00.000Z",
        ),
        (
            "uid-generator",
            "time:28@1s,worker:22,seq:13",
            "2016-05-20T00:00:00.000Z",
        ),
        (
            "js-safe",
            "time:38@10ms,worker:5,seq:10",
            "2025-01-01T00:00:00.000Z",
        ),
    ] {
        let line = out
            .lines()
            .find(|line| line.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{out}"));
        assert!(line.contains(spec) && line.contains(epoch), "{line}");
    }

    let json = idmint_json(&["layout", "--list", "--json"]);
    assert_eq!(json.as_array().unwrap().len(), 6);
    assert_eq!(json[0]["name"], "twitter");
    assert_eq!(json[0]["epoch_ms"], 1_288_834_974_657_u64);

    // clap's own conflict error: several lines, the same exit status.
    let run = idmint(&["layout", "--list", "--layout", "twitter"]);
    assert_eq!(run.status, Some(EXIT_USAGE));
    assert!(
        run.stderr
            .contains("'--list' cannot be used with '--layout <SPEC>'"),
        "{}",
        run.stderr
    );
}

#[test]
fn decodes_discords_example_as_text() {
    let run = idmint(&["decode", DISCORD_ID, "--layout", "discord"]);
    let pairs = run.pairs();
    run.ok();
    assert_eq!(pairs["id"], DISCORD_ID);
    assert_eq!(pairs["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(pairs["dc"], "1");
    assert_eq!(pairs["worker"], "0");
    assert_eq!(pairs["seq"], "7");
    assert!(!pairs.contains_key("shard"));
    // Fields come in layout order, most significant first.
    let labels: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(l, _)| l)
        .collect();
    assert_eq!(
        labels,
        ["id", "layout", "time", "unix ms", "tick", "dc", "worker", "seq"]
    );
}

#[test]
fn decodes_discords_example_as_json() {
    let json = idmint_json(&["decode", DISCORD_ID, "--layout", "discord", "--json"]);
    assert_eq!(json["id"], DISCORD_ID, "the ID is a JSON string");
    assert_eq!(json["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(json["unix_ms"], 1_462_015_105_796_u64);
    assert_eq!(json["dc"], 1);
    assert_eq!(json["worker"], 0);
    assert_eq!(json["seq"], 7);
    assert!(
        json.get("shard").is_none(),
        "absent fields are left out: {json}"
    );
}

#[test]
fn instagram_decode_shows_the_shard() {
    // Tick 1000, shard 5, seq 3 in time:40@1ms,shard:13,seq:10.
    let id = ((1000_u64 << 23) | (5 << 10) | 3).to_string();
    let run = idmint(&["decode", &id, "--layout", "instagram"]);
    let pairs = run.pairs();
    run.ok();
    assert_eq!(pairs["shard"], "5");
    assert_eq!(pairs["seq"], "3");
    assert_eq!(pairs["time"], "2011-08-24T21:07:02.721Z");
    assert!(!pairs.contains_key("worker") && !pairs.contains_key("dc"));

    let json = idmint_json(&["decode", &id, "--layout", "instagram", "--json"]);
    assert_eq!(json["shard"], 5);
    assert!(json.get("worker").is_none());
}

#[test]
fn bad_specs_fail_naming_the_flag_and_the_problem() {
    for (spec, problem) in [
        ("time:41@1ms,worker:11,seq:12", "at most 63"),
        ("time:41@1ms,worker:10", "no `seq`"),
        ("time:41@1ms,time:10,seq:12", "`time` appears twice"),
        (
            "time:41@5ms,seq:12",
            "unknown time unit `5ms`; units are 1ms, 10ms, 100ms, 1s",
        ),
        ("twiter", "not a preset"),
        ("time:41@1ms,host:5,seq:12", "unknown field `host`"),
    ] {
        let run = idmint(&["layout", "--layout", spec]);
        let line = run.usage_error(&["--layout", problem]);
        assert!(
            line.starts_with(&format!("error: --layout: invalid layout `{spec}`")),
            "{line}"
        );
        idmint(&["decode", "1", "--layout", spec]).usage_error(&["--layout", problem]);
    }
}

#[test]
fn epochs_in_the_future_are_refused() {
    idmint(&["layout", "--epoch", "2999-01-01"]).usage_error(&["--epoch", "future"]);
    idmint(&[
        "decode",
        "1",
        "--layout",
        "twitter",
        "--epoch",
        "2999-01-01",
    ])
    .usage_error(&["--epoch", "future"]);
    idmint(&["layout", "--epoch", "someday"]).usage_error(&["--epoch", "invalid epoch `someday`"]);
}

#[test]
fn epochs_are_accepted_as_dates_rfc3339_and_ms() {
    for epoch in ["2015-01-01", "2015-01-01T00:00:00Z", "1420070400000"] {
        let json = idmint_json(&["layout", "--epoch", epoch, "--json"]);
        assert_eq!(json["epoch_ms"], 1_420_070_400_000_u64, "{epoch}");
        assert_eq!(json["epoch"], "2015-01-01T00:00:00.000Z");
    }
    // A preset with another epoch: twitter's fields from Discord's epoch decode Discord IDs.
    let run = idmint(&[
        "decode",
        DISCORD_ID,
        "--layout",
        "twitter",
        "--epoch",
        "2015-01-01",
    ]);
    assert_eq!(run.pairs()["time"], "2016-04-30T11:18:25.796Z");
    let run = idmint(&["layout", "--layout", "twitter", "--epoch", "2015-01-01"]);
    assert!(run.pairs()["preset epoch"].starts_with("2010-11-04T01:42:54.657Z"));
}

#[test]
fn bad_ids_fail_naming_the_argument() {
    idmint(&["decode", "abc"]).usage_error(&["ID", "`abc`", "not a decimal number"]);
    idmint(&["decode", "-5"]).usage_error(&["ID", "negative"]);
    idmint(&["decode", "18446744073709551616"]).usage_error(&["ID", "larger than"]);
    // Wider than the layout: the library's error.
    idmint(&["decode", "9007199254740992", "--layout", "js-safe"])
        .usage_error(&["ID", "bits above the layout's 53"]);
    // Missing entirely: clap's own usage error.
    let run = idmint(&["decode"]);
    assert_eq!(run.status, Some(EXIT_USAGE));
    assert!(run.stderr.contains("<ID>"), "{}", run.stderr);
}

#[test]
fn a_future_id_gets_a_warning() {
    // The largest tick of the default layout is in 2094.
    let id = (((1_u64 << 41) - 1) << 22).to_string();
    let run = idmint(&["decode", &id]);
    run.ok();
    assert!(run.stderr.starts_with("warning: ID"), "{}", run.stderr);
    assert!(run.stderr.contains("future"), "{}", run.stderr);
}

#[test]
fn help_works() {
    let run = idmint(&["--help"]);
    let out = run.ok();
    assert!(out.contains("layout") && out.contains("decode"), "{out}");
    assert!(out.contains("Exit status"), "{out}");
    let out = idmint(&["layout", "--help"]).ok().to_owned();
    assert!(
        out.contains("--layout <SPEC>") && out.contains("time:41@1ms,worker:10,seq:12"),
        "{out}"
    );
    let out = idmint(&["decode", "--help"]).ok().to_owned();
    assert!(out.contains("<ID>") && out.contains("--json"), "{out}");
}

/// `idmint serve --help` names every setting with its variable (the external contract, and the
/// ones added since), so `--help` is the reference an operator needs.
#[test]
fn serve_help_documents_every_setting() {
    let out = idmint(&["serve", "--help"]).ok().to_owned();
    let settings = [
        ("--config <FILE>", "IDMINT_CONFIG"),
        ("--data-dir <DIR>", "IDMINT_DATA_DIR"),
        ("--store <URL>", "IDMINT_STORE"),
        ("--http <ADDR>", "IDMINT_HTTP"),
        ("--resp <ADDR>", "IDMINT_RESP"),
        ("--layout <SPEC>", "IDMINT_LAYOUT"),
        ("--epoch <EPOCH>", "IDMINT_EPOCH"),
        ("--datacenter <N>", "IDMINT_DATACENTER"),
        ("--worker-id <auto|N>", "IDMINT_WORKER_ID"),
        ("--node-name <NAME>", "IDMINT_NODE_NAME"),
        ("--admin-token <TOKEN>", "IDMINT_ADMIN_TOKEN"),
        ("--auto-create-tags <BOOL>", "IDMINT_AUTO_CREATE_TAGS"),
        ("--default-step <N>", "IDMINT_DEFAULT_STEP"),
        ("--allow-non-durable <BOOL>", "IDMINT_ALLOW_NON_DURABLE"),
        ("--io-threads <N>", "IDMINT_IO_THREADS"),
        ("--namespace <NAME>", "IDMINT_NAMESPACE"),
        ("--clock-policy <wait|switch|fail>", "IDMINT_CLOCK_POLICY"),
        ("--lease-ttl <DURATION>", "IDMINT_LEASE_TTL"),
        ("--lease-renew <DURATION>", "IDMINT_LEASE_RENEW"),
        ("--hwm-lead <DURATION>", "IDMINT_HWM_LEAD"),
        ("--max-lead <DURATION>", "IDMINT_MAX_LEAD"),
        ("--max-wait <DURATION>", "IDMINT_MAX_WAIT"),
        ("--worker-wait <DURATION>", "IDMINT_WORKER_WAIT"),
    ];
    for (flag, variable) in settings {
        assert!(out.contains(flag), "no `{flag}` in serve --help:\n{out}");
        assert!(
            out.contains(&format!("env: {variable}")),
            "no `{variable}` in serve --help:\n{out}"
        );
    }
}

#[test]
fn unknown_subcommands_are_usage_errors() {
    let run = idmint(&["frobnicate"]);
    assert_eq!(run.status, Some(EXIT_USAGE), "{}", run.stderr);
}

#[test]
fn decodes_ids_written_in_text_forms() {
    // Discord's ID in base62 with a prefix, as `format=base62&prefix=d_` writes it.
    let form = idmint_core::IdForm::new(idmint_core::Radix::Base62)
        .with_prefix("d_")
        .unwrap();
    let text = form.encode(DISCORD_ID.parse().unwrap());
    let args = ["decode", &text, "--layout", "discord", "--format", "base62"];
    let run = idmint(&[&args[..], &["--prefix", "d_"]].concat());
    let pairs = run.pairs();
    run.ok();
    assert_eq!(pairs["id"], DISCORD_ID);
    assert_eq!(pairs["time"], "2016-04-30T11:18:25.796Z");
    // Crockford's base32 reads either case and skips hyphens.
    let ulid =
        idmint_core::IdForm::new(idmint_core::Radix::Base32).encode(DISCORD_ID.parse().unwrap());
    let spaced = format!("{}-{}", &ulid[..6], &ulid[6..]).to_ascii_lowercase();
    let run = idmint(&[
        "decode",
        &spaced,
        "--layout",
        "discord",
        "--format",
        "crockford",
    ]);
    assert_eq!(run.pairs()["id"], DISCORD_ID);
    // Refusals name what to fix.
    idmint(&["decode", "zz!", "--format", "base62"]).usage_error(&["ID", "character 3"]);
    idmint(&["decode", "1", "--format", "base64"]).usage_error(&["--format", "base64"]);
    idmint(&["decode", "1", "--format", "base62", "--prefix", "a b"]).usage_error(&["--prefix"]);
    idmint(&["decode", "x_1", "--format", "base62", "--prefix", "d_"])
        .usage_error(&["prefix `d_`"]);
    let run = idmint(&["decode", "1", "--prefix", "d_"]);
    assert_eq!(
        run.status,
        Some(EXIT_USAGE),
        "--prefix without --format: {}",
        run.stderr
    );
}

#[test]
fn uuid_and_ulid_print_increasing_ids_that_other_tools_read() {
    let uuids: Vec<String> = idmint(&["uuid", "-n", "2000"])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(uuids.len(), 2000);
    assert!(uuids.windows(2).all(|w| w[0] < w[1]), "not increasing");
    for text in &uuids {
        let parsed = uuid::Uuid::parse_str(text).expect("the uuid crate reads it");
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(parsed.hyphenated().to_string(), *text);
    }
    let ulids = idmint(&["ulid", "-n", "2000"]).ok().to_owned();
    let ulids: Vec<&str> = ulids.lines().collect();
    assert!(ulids.windows(2).all(|w| w[0] < w[1]), "not increasing");
    assert!(ulids.iter().all(|u| u.len() == 26));
    // Python's uuid module reads them as version 7, in the order given.
    let python = Command::new("python3")
        .args([
            "-c",
            "import sys, uuid\n\
             ids = [uuid.UUID(line) for line in sys.argv[1:]]\n\
             assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids)\n\
             assert ids == sorted(ids)\n\
             print(len(ids))",
        ])
        .args(&uuids[..200])
        .output()
        .expect("python3");
    assert_eq!(String::from_utf8_lossy(&python.stdout).trim(), "200");
    let bytes = Command::new(env!("CARGO_BIN_EXE_idmint"))
        .args(["ulid", "-n", "3", "--format", "bytes"])
        .output()
        .expect("run idmint");
    assert_eq!(bytes.stdout.len(), 48);
    assert!(bytes.stdout[..16] < bytes.stdout[16..32]);
}

#[test]
fn decode_reads_both_128_bit_kinds_in_every_text_form() {
    let made = idmint(&["uuid", "--node-bits", "10", "--node", "513"])
        .ok()
        .trim()
        .to_owned();
    let pairs = idmint(&["decode", &made, "--node-bits", "10"]).pairs();
    assert_eq!(pairs["kind"], "uuidv7");
    assert_eq!(pairs["version"], "7");
    assert_eq!(pairs["node"], "513");
    let hex = made.replace('-', "").to_uppercase();
    assert_eq!(
        idmint(&["decode", &hex, "--node-bits", "10"]).pairs()["node"],
        "513"
    );
    let ulid = idmint(&["ulid"]).ok().trim().to_owned();
    let json = idmint_json(&["decode", &ulid, "--json"]);
    assert_eq!(json["kind"], "ulid");
    assert_eq!(json["id"], ulid.as_str());
    assert!(json.get("version").is_none());
    assert!(json["ms"].as_u64().unwrap() > 1_700_000_000_000);
    // The same 128 bits read as the other kind when asked.
    let as_uuid = idmint_json(&["decode", &ulid, "--json", "--kind", "uuidv7"]);
    assert_eq!(as_uuid["kind"], "uuidv7");
}

#[test]
fn uuid_ulid_and_decode_refuse_bad_input_naming_the_flag() {
    idmint(&["uuid", "-n", "0"]).usage_error(&["--count", "between 1 and"]);
    idmint(&["ulid", "--format", "base62"]).usage_error(&["--format", "uuid, ulid, hex or bytes"]);
    idmint(&["uuid", "--node-bits", "25", "--node", "1"]).usage_error(&["--node-bits", "24"]);
    idmint(&["uuid", "--node-bits", "4", "--node", "16"]).usage_error(&["--node", "4 bits"]);
    idmint(&["uuid", "--node-bits", "0", "--node", "0"]).usage_error(&["--node-bits"]);
    idmint(&["decode", "0192f3a1-7c2e-7a3b-8d4e-5f60718293g4"]).usage_error(&["ID", "8-4-4-4-12"]);
    idmint(&["decode", "01ARZ3NDEKTSV4RRFFQ69G5FAU"]).usage_error(&["ID", "no I, L, O, U"]);
    idmint(&["decode", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"]).usage_error(&["ID", "first character 0-7"]);
    idmint(&["decode", DISCORD_ID, "--kind", "ulid"]).usage_error(&["ID", "not a 128-bit ID"]);
    idmint(&["decode", DISCORD_ID, "--node-bits", "10"]).usage_error(&["--node-bits", "128-bit"]);
    let padded = "00000000252213096473427968";
    idmint(&["decode", padded, "--layout", "twitter"]).ok();
    let ulid = idmint(&["ulid"]).ok().trim().to_owned();
    idmint(&["decode", &ulid, "--kind", "uuid4"]).usage_error(&["--kind", "uuidv7 or ulid"]);
    idmint(&["decode", &ulid, "--node-bits", "30"]).usage_error(&["--node-bits", "24 bits"]);
}
