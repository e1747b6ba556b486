//! `client-output-buffer-limit`: per client class, a hard limit in bytes, and a soft limit
//! that may be exceeded for at most a number of seconds (0 disables either).
//!
//! The value is written as Redis writes it: groups of `<class> <hard> <soft> <seconds>`, where
//! class is `normal`, `replica` (or `slave`) or `pubsub` and sizes take memory units (`32mb`).
//! CONFIG SET changes only the classes it names. The node enforces the `pubsub` class (a
//! subscriber's undelivered messages) and the `replica` class (the stream a replica has not
//! been sent, `replication::master::feeder`); `normal` is kept and shown.

use crate::config::params::parse_memory;

/// One class's limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// The limits of every client class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputBufferLimits {
    pub normal: BufferLimit,
    pub replica: BufferLimit,
    pub pubsub: BufferLimit,
}

impl Default for OutputBufferLimits {
    /// Redis's defaults.
    fn default() -> Self {
        OutputBufferLimits {
            normal: BufferLimit::default(),
            replica: BufferLimit {
                hard: 256 * 1024 * 1024,
                soft: 64 * 1024 * 1024,
                soft_seconds: 60,
            },
            pubsub: BufferLimit {
                hard: 32 * 1024 * 1024,
                soft: 8 * 1024 * 1024,
                soft_seconds: 60,
            },
        }
    }
}

impl OutputBufferLimits {
    /// Applies `<class> <hard> <soft> <seconds> ...`; all groups are checked before any is
    /// applied. The error is Redis's reason text.
    pub fn apply(&mut self, words: &[String]) -> Result<(), String> {
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        let mut updates = Vec::new();
        for group in words.chunks(4) {
            let class = group[0].to_ascii_lowercase();
            if !matches!(class.as_str(), "normal" | "replica" | "slave" | "pubsub") {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
            let hard = parse_memory(&group[1]);
            let soft = parse_memory(&group[2]);
            let seconds = group[3].parse::<i64>().ok().filter(|&s| s >= 0);
            let (Some(hard), Some(soft), Some(seconds)) = (hard, soft, seconds) else {
                return Err(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .into(),
                );
            };
            let limit = BufferLimit {
                hard,
                soft,
                soft_seconds: seconds as u64,
            };
            updates.push((class, limit));
        }
        for (class, limit) in updates {
            match class.as_str() {
                "normal" => self.normal = limit,
                "pubsub" => self.pubsub = limit,
                _ => self.replica = limit,
            }
        }
        Ok(())
    }

    /// The value as CONFIG GET shows it.
    pub fn show(&self) -> String {
        [
            ("normal", self.normal),
            ("slave", self.replica),
            ("pubsub", self.pubsub),
        ]
        .iter()
        .map(|(name, l)| format!("{name} {} {} {}", l.hard, l.soft, l.soft_seconds))
        .collect::<Vec<_>>()
        .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn defaults_and_updates_show_as_redis() {
        let mut limits = OutputBufferLimits::default();
        assert_eq!(
            limits.show(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        limits.apply(&words("pubsub 1mb 512kb 10")).unwrap();
        assert_eq!(
            limits.show(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10"
        );
        assert!(limits.apply(&words("pubsub 1 2")).is_err());
        assert!(limits.apply(&words("master 1 2 3")).is_err());
        assert!(limits.apply(&words("pubsub 1 2 -1")).is_err());
        assert!(limits.apply(&words("replica 1 2 3 pubsub x 1 1")).is_err());
        assert_eq!(limits.replica.hard, 268435456);
    }
}
