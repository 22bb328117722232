//! Named layouts with their real epochs, so IDs minted by those systems decode correctly.

/// A named layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The name users type.
    pub name: &'static str,
    /// Its fields.
    pub spec: &'static str,
    /// Its epoch, ms since the Unix epoch.
    pub epoch_ms: u64,
    /// Where it comes from and what differs from the original, for `idmint layout`.
    pub note: &'static str,
}

/// Every preset.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "twitter",
        spec: "time:41@1ms,dc:5,worker:5,seq:12",
        epoch_ms: 1_288_834_974_657,
        note: "Twitter Snowflake (2010): 41 bits of ms, 5 datacenter, 5 worker, 12 sequence",
    },
    Preset {
        name: "discord",
        spec: "time:41@1ms,dc:5,worker:5,seq:12",
        epoch_ms: 1_420_070_400_000,
        note: "Discord (epoch 2015-01-01): its 42-bit time is held in 41 bits so IDs stay \
               positive; identical for every ID minted before 2084-09-06",
    },
    Preset {
        name: "instagram",
        spec: "time:40@1ms,shard:13,seq:10",
        epoch_ms: 1_314_220_021_721,
        note: "Instagram (epoch 2011-08-24): 13 logical shard, 10 sequence; its 41-bit time \
               is held in 40 bits so IDs stay positive; identical for every ID minted before \
               2046-06-27",
    },
    Preset {
        name: "sonyflake",
        spec: "time:39@10ms,seq:8,worker:16",
        epoch_ms: 1_409_529_600_000,
        note: "Sonyflake (epoch 2014-09-01): 39 bits of 10 ms, 8 sequence, 16 machine",
    },
    Preset {
        name: "uid-generator",
        spec: "time:28@1s,worker:22,seq:13",
        epoch_ms: 1_463_702_400_000,
        note: "Baidu uid-generator (epoch 2016-05-20): 28 bits of seconds ran out in 2024",
    },
    Preset {
        name: "js-safe",
        spec: "time:38@10ms,worker:5,seq:10",
        epoch_ms: super::DEFAULT_EPOCH_MS,
        note: "53 bits, exact in JavaScript numbers: 38 bits of 10 ms (87 years), 32 workers, \
               1,024 per 10 ms",
    },
];

/// The preset called `name`, if any.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name.trim())
}

/// Every preset's name.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}
