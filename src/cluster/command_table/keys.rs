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
        let flags = super::text_list(frame.map_get("flags"));
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

    /// Appends the indexes of this spec's keys in `args` (the command name at index 0), as
    /// Redis's `getKeysUsingKeySpecs` does. `Err` means the spec cannot be applied to these
    /// arguments (Redis's `invalid_spec`: unknown or incomplete spec, a key count that is not
    /// a non-negative number, or keys that would lie outside the arguments).
    fn collect(&self, args: &[Bytes], out: &mut Vec<usize>) -> Result<(), KeysError> {
        let invalid = Err(KeysError::InvalidArguments);
        let argc = args.len() as i64;
        let first = match &self.begin {
            BeginSearch::Index(i) => *i,
            BeginSearch::Keyword {
                keyword,
                start_from,
            } => {
                // Redis searches from `startfrom` towards the end (positive) or the start
                // (negative), stopping before the last argument / before argument 1.
                let (start, end) = if *start_from > 0 {
                    (*start_from, argc - 1)
                } else {
                    (argc + start_from, 1)
                };
                let mut found = None;
                let mut i = start;
                while i != end && (1..argc).contains(&i) {
                    if args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match found {
                    Some(first) => first,
                    // No keyword, no keys from this spec.
                    None => return Ok(()),
                }
            }
            BeginSearch::Unknown => return invalid,
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
                let Some(count) = args.get((first + key_num_idx) as usize) else {
                    return invalid;
                };
                let Some(count) = crate::numbers::parse_i64(count).filter(|&n| n >= 0) else {
                    return invalid;
                };
                let first = first + first_key;
                // A count near i64::MAX (from the client) must not overflow: it is simply
                // more keys than there are arguments.
                let Some(last) = first.checked_add(count - 1) else {
                    return invalid;
                };
                (first, last, *key_step)
            }
            FindKeys::Unknown => return invalid,
        };
        if last >= argc || last < first || first >= argc {
            return invalid;
        }
        let step = step.max(1);
        let mut i = first;
        while i <= last {
            if i >= 1 {
                out.push(i as usize);
            }
            i += step;
        }
        if self.has_flag("incomplete") {
            return invalid;
        }
        Ok(())
    }
}

impl CommandSpec {
    /// Indexes of the key arguments of a request for this command (`args[0]` is the command
    /// name; for a subcommand spec `args[1]` is the subcommand), as Redis 7.0 finds them:
    /// from the key specs, and when a spec does not fit the arguments, from the command's
    /// own key-finding rule if it has one (`getkeys_proc`), which may find no keys.
    /// Channels (`not_key`) are not keys. `Err` when the specs do not fit and the command
    /// has no rule of its own: Redis then finds no keys either.
    pub fn key_indexes(&self, args: &[Bytes]) -> Result<Vec<usize>, KeysError> {
        let mut out = Vec::new();
        for spec in &self.key_specs {
            if spec.is_not_key() {
                continue;
            }
            if spec.collect(args, &mut out).is_err() {
                return native_keys(&self.name, args).ok_or(KeysError::InvalidArguments);
            }
        }
        Ok(out)
    }
}

impl CommandSpec {
    /// The key arguments with their access flags, as `COMMAND GETKEYSANDFLAGS` reports them:
    /// each key carries the flags of the key spec that found it. SET and BITFIELD (whose
    /// specs say `variable_flags`) and commands whose specs do not fit the arguments are
    /// answered by the command's own rule, as Redis's `getKeysFromCommandWithSpecs` does.
    pub fn keys_and_flags(&self, args: &[Bytes]) -> Result<Vec<(usize, Vec<&str>)>, KeysError> {
        let variable = self.key_specs.iter().any(|s| s.has_flag("variable_flags"));
        if !variable {
            let mut found = Vec::new();
            let mut fits = true;
            for spec in self.key_specs.iter().filter(|s| !s.is_not_key()) {
                let mut indexes = Vec::new();
                if spec.collect(args, &mut indexes).is_err() {
                    fits = false;
                    break;
                }
                let flags: Vec<&str> = spec.flags.iter().map(String::as_str).collect();
                found.extend(indexes.into_iter().map(|i| (i, flags.clone())));
            }
            if fits {
                return Ok(found);
            }
        }
        let indexes = match self.name.as_str() {
            "set" | "bitfield" => vec![1],
            name => native_keys(name, args).ok_or(KeysError::InvalidArguments)?,
        };
        Ok(indexes
            .into_iter()
            .enumerate()
            .map(|(n, i)| (i, native_key_flags(&self.name, n, args)))
            .collect())
    }
}

/// The flags Redis's own key-finding rules give the `n`th key they find. Rules that give
/// none (EVAL, ZUNIONSTORE and the like) leave them empty, as Redis does.
fn native_key_flags(command: &str, n: usize, args: &[Bytes]) -> Vec<&'static str> {
    match command {
        "set" if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) => {
            vec!["RW", "access", "update"]
        }
        "set" => vec!["OW", "update"],
        "bitfield" if bitfield_readonly(args) => vec!["RO", "access"],
        "bitfield" => vec!["RW", "access", "update"],
        "sort" | "sort_ro" if n == 0 => vec!["RO", "access"],
        "sort" => vec!["OW", "update"],
        "migrate" => vec!["RW", "access", "delete"],
        _ => Vec::new(),
    }
}

/// Whether a BITFIELD only reads: GET and OVERFLOW operations with their arguments, and
/// nothing that fails to parse (an unparsable request is treated as a write).
fn bitfield_readonly(args: &[Bytes]) -> bool {
    let mut i = 2;
    while let Some(op) = args.get(i) {
        let remaining = args.len() - i - 1;
        if op.eq_ignore_ascii_case(b"get") && remaining >= 2 {
            i += 3;
        } else if op.eq_ignore_ascii_case(b"overflow") && remaining >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

impl CommandSpec {
    /// Key indexes as cluster routing (Redis's `getNodeByQuery`) finds them. It prefers a
    /// command's own key-finding rule, which differs from the key specs for MIGRATE: `MIGRATE
    /// host port "" db timeout KEYS` with nothing after KEYS has no key to route by.
    ///
    /// When the specs do not fit and the command has no rule of its own, routing still goes
    /// by the keys of the specs that do fit: a Redis 7.0 cluster node answers `PFMERGE dest`
    /// (no source key, so the source spec starts past the arguments) with `-MOVED` to
    /// `dest`'s owner, while `COMMAND GETKEYS PFMERGE dest` finds no keys. Routing such a
    /// request as keyless would run it on whichever node received it, writing a key into a
    /// slot that node does not serve.
    pub fn routing_key_indexes(&self, args: &[Bytes]) -> Result<Vec<usize>, KeysError> {
        if self.name == "migrate" {
            return Ok(migrate_keys(args));
        }
        self.key_indexes(args).or_else(|_| {
            let mut found = Vec::new();
            for spec in self.key_specs.iter().filter(|s| !s.is_not_key()) {
                let mut keys = Vec::new();
                if spec.collect(args, &mut keys).is_ok() {
                    found.extend(keys);
                }
            }
            if found.is_empty() {
                Err(KeysError::InvalidArguments)
            } else {
                Ok(found)
            }
        })
    }
}

/// Redis's `getkeys_proc` for the commands that have one, used when their key specs do not
/// fit the arguments. `None` for commands without one.
fn native_keys(command: &str, args: &[Bytes]) -> Option<Vec<usize>> {
    Some(match command {
        "migrate" => migrate_keys(args),
        "sort" => sort_keys(args),
        // SORT_RO never stores: the sorted key only.
        "sort_ro" => (args.len() >= 2).then_some(1).into_iter().collect(),
        "eval" | "eval_ro" | "evalsha" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop"
        | "bzmpop" => counted_keys(args, None, 2, 3),
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => {
            counted_keys(args, None, 1, 2)
        }
        "zunionstore" | "zinterstore" | "zdiffstore" => counted_keys(args, Some(1), 2, 3),
        // XREAD's own rule finds no keys in exactly the cases where its spec does not fit
        // (nothing or one argument after STREAMS).
        "xread" | "xreadgroup" => Vec::new(),
        _ => return None,
    })
}

/// Redis's `genericGetKeys`: a count at `count_at` (read with C's `atoi`), that many keys
/// from `first`, and a destination key last; no keys when the count does not fit.
fn counted_keys(
    args: &[Bytes],
    destination: Option<usize>,
    count_at: usize,
    first: usize,
) -> Vec<usize> {
    let count = args.get(count_at).map_or(0, |c| atoi(c));
    let available = args.len().saturating_sub(first) as i64;
    if count < 1 || count > available {
        return Vec::new();
    }
    let mut keys: Vec<usize> = (first..first + count as usize).collect();
    keys.extend(destination);
    keys
}

/// C's `atoi`: optional blanks and sign, then as many digits as there are; 0 otherwise.
fn atoi(text: &[u8]) -> i64 {
    let mut rest = text;
    while let [b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c, tail @ ..] = rest {
        rest = tail;
    }
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut n: i64 = 0;
    for &digit in rest.iter().take_while(|b| b.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(digit - b'0'));
    }
    if negative {
        -n
    } else {
        n
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
