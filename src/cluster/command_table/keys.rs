//! Where a command's keys are: Redis 7.0 key specs, and the few commands whose keys the
//! specs cannot describe.

use bytes::Bytes;

use super::CommandSpec;
use crate::resp::Frame;

/// Where the search for keys starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginSearch {
    /// A fixed argument index.
    Index(i64),
    /// The argument after a keyword, searched from `start_from` (negative: from the end).
    Keyword {
        keyword: String,
        start_from: i64,
    },
    Unknown,
}

/// How the keys continue from where the search began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindKeys {
    /// `last_key` relative to the first key (-1: the last argument); with a negative
    /// `last_key`, `limit` > 1 means only `1/limit` of the remaining arguments are keys.
    Range {
        last_key: i64,
        key_step: i64,
        limit: i64,
    },
    /// A count argument at `key_num_idx` (relative to the begin), keys from `first_key`.
    KeyNum {
        key_num_idx: i64,
        first_key: i64,
        key_step: i64,
    },
    Unknown,
}

/// One Redis key spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    pub flags: Vec<String>,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

/// Why keys could not be found in a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeysError {
    /// A key count is not a number or is negative (`COMMAND GETKEYS` answers
    /// `Invalid arguments specified for command`).
    InvalidArguments,
}

fn field_int(spec: Option<&Frame>, name: &str) -> i64 {
    spec.and_then(|s| s.map_get(name))
        .and_then(Frame::as_integer)
        .unwrap_or(0)
}

fn field_str(frame: Option<&Frame>, name: &str) -> String {
    frame
        .and_then(|f| f.map_get(name))
        .and_then(Frame::as_bytes)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

impl KeySpec {
    pub(super) fn from_frame(frame: &Frame) -> KeySpec {
        let flags = frame
            .map_get("flags")
            .and_then(Frame::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(|f| {
                f.as_bytes()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            })
            .collect();
        let begin_frame = frame.map_get("begin_search");
        let begin_spec = begin_frame.and_then(|b| b.map_get("spec"));
        let begin = match field_str(begin_frame, "type").as_str() {
            "index" => BeginSearch::Index(field_int(begin_spec, "index")),
            "keyword" => BeginSearch::Keyword {
                keyword: field_str(begin_spec, "keyword"),
                start_from: field_int(begin_spec, "startfrom"),
            },
            _ => BeginSearch::Unknown,
        };
        let find_frame = frame.map_get("find_keys");
        let find_spec = find_frame.and_then(|f| f.map_get("spec"));
        let find = match field_str(find_frame, "type").as_str() {
            "range" => FindKeys::Range {
                last_key: field_int(find_spec, "lastkey"),
                key_step: field_int(find_spec, "keystep"),
                limit: field_int(find_spec, "limit"),
            },
            "keynum" => FindKeys::KeyNum {
                key_num_idx: field_int(find_spec, "keynumidx"),
                first_key: field_int(find_spec, "firstkey"),
                key_step: field_int(find_spec, "keystep"),
            },
            _ => FindKeys::Unknown,
        };
        KeySpec { flags, begin, find }
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Specs marked `not_key` name channels (SPUBLISH), not keys.
    pub fn is_not_key(&self) -> bool {
        self.has_flag("not_key")
    }

    fn is_complete(&self) -> bool {
        !self.has_flag("incomplete")
            && self.begin != BeginSearch::Unknown
            && self.find != FindKeys::Unknown
    }

    /// Appends the indexes of this spec's keys in `args` (the command name at index 0).
    fn collect(&self, args: &[Bytes], out: &mut Vec<usize>) -> Result<(), KeysError> {
        let argc = args.len() as i64;
        let first = match &self.begin {
            BeginSearch::Index(i) => *i,
            BeginSearch::Keyword {
                keyword,
                start_from,
            } => {
                let found = if *start_from > 0 {
                    (*start_from..argc)
                        .find(|&i| args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()))
                } else {
                    let start = argc + start_from;
                    (1..=start).rev().find(|&i| {
                        i < argc && args[i as usize].eq_ignore_ascii_case(keyword.as_bytes())
                    })
                };
                match found {
                    Some(i) => i + 1,
                    None => return Ok(()),
                }
            }
            BeginSearch::Unknown => return Ok(()),
        };
        let (first, last, step) = match &self.find {
            FindKeys::Range {
                last_key,
                key_step,
                limit,
            } => {
                let last = if *last_key >= 0 {
                    first + last_key
                } else if *limit <= 1 {
                    argc + last_key
                } else {
                    first + ((argc - first) / limit + last_key)
                };
                (first, last, *key_step)
            }
            FindKeys::KeyNum {
                key_num_idx,
                first_key,
                key_step,
            } => {
                let count_at = first + key_num_idx;
                let Some(count) = args.get(count_at as usize) else {
                    return Ok(());
                };
                let count = crate::numbers::parse_i64(count)
                    .filter(|&n| n >= 0)
                    .ok_or(KeysError::InvalidArguments)?;
                let first = first + first_key;
                (first, first + (count - 1) * key_step, *key_step)
            }
            FindKeys::Unknown => return Ok(()),
        };
        let step = step.max(1);
        let mut i = first;
        while i <= last && i < argc {
            if i >= 1 {
                out.push(i as usize);
            }
            i += step;
        }
        Ok(())
    }
}

impl CommandSpec {
    /// Indexes of the key arguments of a request for this command (`args[0]` is the command
    /// name; for a subcommand spec `args[1]` is the subcommand). Channels (`not_key`) are not
    /// keys. Commands whose specs are incomplete are handled as Redis's `getkeys_proc` does.
    pub fn key_indexes(&self, args: &[Bytes]) -> Result<Vec<usize>, KeysError> {
        let mut out = Vec::new();
        match self.name.as_str() {
            "migrate" => return Ok(migrate_keys(args)),
            "sort" => return Ok(sort_keys(args)),
            _ => {}
        }
        for spec in &self.key_specs {
            if spec.is_not_key() {
                continue;
            }
            if !spec.is_complete() && spec.begin == BeginSearch::Unknown {
                continue;
            }
            spec.collect(args, &mut out)?;
        }
        Ok(out)
    }
}

/// `MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 u pw] [KEYS k...]`.
fn migrate_keys(args: &[Bytes]) -> Vec<usize> {
    if args.len() < 6 {
        return Vec::new();
    }
    let mut i = 6;
    while i < args.len() {
        let arg = &args[i];
        if arg.eq_ignore_ascii_case(b"auth") {
            i += 2;
        } else if arg.eq_ignore_ascii_case(b"auth2") {
            i += 3;
        } else if arg.eq_ignore_ascii_case(b"keys") {
            // KEYS only applies when the single-key argument is empty.
            if args[3].is_empty() {
                return (i + 1..args.len()).collect();
            }
            return Vec::new();
        } else {
            i += 1;
        }
    }
    vec![3]
}

/// `SORT key ... [STORE dest]`: the sorted key, and the destination when there is one.
/// Arguments of BY/GET/LIMIT are skipped so a pattern named `store` is not mistaken.
fn sort_keys(args: &[Bytes]) -> Vec<usize> {
    let mut keys = vec![1];
    let mut i = 2;
    let mut store = None;
    while i < args.len() {
        let arg = &args[i];
        let skip = if arg.eq_ignore_ascii_case(b"limit") {
            2
        } else if arg.eq_ignore_ascii_case(b"get") || arg.eq_ignore_ascii_case(b"by") {
            1
        } else if arg.eq_ignore_ascii_case(b"store") {
            if i + 1 < args.len() {
                store = Some(i + 1);
            }
            1
        } else {
            0
        };
        i += skip + 1;
    }
    if args.len() < 2 {
        return Vec::new();
    }
    keys.extend(store);
    keys
}
