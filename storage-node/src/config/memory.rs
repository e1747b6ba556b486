//! The memory limit and eviction settings, with Redis 7.0's names, defaults and value
//! syntax: `maxmemory`, `maxmemory-policy`, `maxmemory-samples`,
//! `maxmemory-eviction-tenacity`, `maxmemory-clients`, `lfu-log-factor`, `lfu-decay-time`
//! and `lazyfree-lazy-eviction`. `crate::keyspace::evict` honours them before every
//! command, `crate::server::client_eviction` honours `maxmemory-clients`.

use super::params::{param, Access, Kind, Param};

/// Which keys eviction may remove, and how it picks among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysLfu,
    VolatileLfu,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// In Redis 7.0's order, which its CONFIG SET error lists.
    pub const NAMES: &'static [&'static str] = &[
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "noeviction",
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::AllKeysLru => "allkeys-lru",
            Policy::VolatileLru => "volatile-lru",
            Policy::AllKeysLfu => "allkeys-lfu",
            Policy::VolatileLfu => "volatile-lfu",
            Policy::AllKeysRandom => "allkeys-random",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
        }
    }

    fn from_name(name: &str) -> Option<Policy> {
        [
            Policy::NoEviction,
            Policy::AllKeysLru,
            Policy::VolatileLru,
            Policy::AllKeysLfu,
            Policy::VolatileLfu,
            Policy::AllKeysRandom,
            Policy::VolatileRandom,
            Policy::VolatileTtl,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    /// Only keys with a time to live may be evicted.
    pub fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// Keys keep an access frequency instead of an LRU clock.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    pub fn is_random(self) -> bool {
        matches!(self, Policy::AllKeysRandom | Policy::VolatileRandom)
    }
}

/// `maxmemory-clients`: a size in bytes, or a percentage of `maxmemory`; 0 is no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientsLimit {
    Bytes(u64),
    Percent(u64),
}

#[derive(Clone, Debug)]
pub struct MemorySettings {
    /// Bytes the node may use before it evicts (or refuses writes); 0 is no limit.
    pub maxmemory: u64,
    pub policy: Policy,
    /// Keys looked at per database for each refill of the eviction pool.
    pub samples: u64,
    /// 0..=100: how long one command may spend evicting before the rest is left to the cron.
    pub tenacity: u64,
    pub clients: ClientsLimit,
    /// Evicted keys are propagated as UNLINK instead of DEL.
    pub lazy_eviction: bool,
    pub lfu_log_factor: u64,
    /// Minutes per step of frequency decay.
    pub lfu_decay_time: u64,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            maxmemory: 0,
            policy: Policy::NoEviction,
            samples: 5,
            tenacity: 10,
            clients: ClientsLimit::Bytes(0),
            lazy_eviction: false,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        }
    }
}

impl MemorySettings {
    /// The limit on all normal clients' buffers, in bytes (0: none), as Redis's
    /// `getClientEvictionLimit` computes it: a percentage of `maxmemory`.
    pub fn clients_limit(&self) -> u64 {
        match self.clients {
            ClientsLimit::Bytes(bytes) => bytes,
            ClientsLimit::Percent(percent) => {
                (self.maxmemory as f64 * percent as f64 / 100.0) as u64
            }
        }
    }
}

const INT_MAX: i64 = i32::MAX as i64;

pub const PARAMS: &[Param] = &[
    param("maxmemory", Kind::UnsignedMemory, Access::Mutable),
    param(
        "maxmemory-policy",
        Kind::Enum(Policy::NAMES),
        Access::Mutable,
    ),
    param(
        "maxmemory-samples",
        Kind::Int {
            min: 1,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param(
        "maxmemory-eviction-tenacity",
        Kind::Int { min: 0, max: 100 },
        Access::Mutable,
    ),
    param(
        "maxmemory-clients",
        Kind::MemoryOrPercent { max_percent: 100 },
        Access::Mutable,
    ),
    param("lazyfree-lazy-eviction", Kind::Bool, Access::Mutable),
    param(
        "lfu-log-factor",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
    param(
        "lfu-decay-time",
        Kind::Int {
            min: 0,
            max: INT_MAX,
        },
        Access::Mutable,
    ),
];

fn unsigned(value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| "bad number".to_string())
}

/// Applies one memory setting whose value was already checked against its [`Kind`]
/// (`value` in the checked form: a number, `yes`/`no`, an option, `N%`).
pub fn apply(settings: &mut MemorySettings, name: &str, value: &str) -> Result<(), String> {
    match name {
        "maxmemory" => settings.maxmemory = unsigned(value)?,
        "maxmemory-policy" => {
            settings.policy = Policy::from_name(value).ok_or("unknown maxmemory policy")?
        }
        "maxmemory-samples" => settings.samples = unsigned(value)?,
        "maxmemory-eviction-tenacity" => settings.tenacity = unsigned(value)?,
        "maxmemory-clients" => {
            settings.clients = match value.strip_suffix('%') {
                Some(percent) => ClientsLimit::Percent(unsigned(percent)?),
                None => ClientsLimit::Bytes(unsigned(value)?),
            }
        }
        "lazyfree-lazy-eviction" => settings.lazy_eviction = value == "yes",
        "lfu-log-factor" => settings.lfu_log_factor = unsigned(value)?,
        "lfu-decay-time" => settings.lfu_decay_time = unsigned(value)?,
        _ => return Err(format!("unknown setting '{name}'")),
    }
    Ok(())
}

/// The value CONFIG GET shows.
pub fn get(settings: &MemorySettings, name: &str) -> Option<String> {
    Some(match name {
        "maxmemory" => settings.maxmemory.to_string(),
        "maxmemory-policy" => settings.policy.name().to_string(),
        "maxmemory-samples" => settings.samples.to_string(),
        "maxmemory-eviction-tenacity" => settings.tenacity.to_string(),
        "maxmemory-clients" => match settings.clients {
            ClientsLimit::Bytes(bytes) => bytes.to_string(),
            ClientsLimit::Percent(percent) => format!("{percent}%"),
        },
        "lazyfree-lazy-eviction" => if settings.lazy_eviction { "yes" } else { "no" }.into(),
        "lfu-log-factor" => settings.lfu_log_factor.to_string(),
        "lfu-decay-time" => settings.lfu_decay_time.to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_limit_as_a_share_of_maxmemory() {
        let mut settings = MemorySettings::default();
        apply(&mut settings, "maxmemory", "1000").unwrap();
        apply(&mut settings, "maxmemory-clients", "5%").unwrap();
        assert_eq!(settings.clients_limit(), 50);
        assert_eq!(get(&settings, "maxmemory-clients").unwrap(), "5%");
        apply(&mut settings, "maxmemory-clients", "300").unwrap();
        assert_eq!(settings.clients_limit(), 300);
    }
}
