//! Script flags, from an EVAL script's shebang line (`#!lua flags=no-writes,...`) or a
//! function's `flags` list, with Redis 7.0's errors.

/// Flags a script or function declares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
    /// A script without a shebang (Redis's compatibility mode).
    pub eval_compat: bool,
}

/// The flag names, in Redis's order (FUNCTION LIST shows them so).
pub const FLAG_NAMES: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

impl ScriptFlags {
    /// Sets a flag by name; false if there is no such flag.
    pub fn set(&mut self, name: &[u8]) -> bool {
        let flag = match name {
            b"no-writes" => &mut self.no_writes,
            b"allow-oom" => &mut self.allow_oom,
            b"allow-stale" => &mut self.allow_stale,
            b"no-cluster" => &mut self.no_cluster,
            b"allow-cross-slot-keys" => &mut self.allow_cross_slot_keys,
            _ => return false,
        };
        *flag = true;
        true
    }

    pub fn names(&self) -> Vec<&'static str> {
        let set = [
            self.no_writes,
            self.allow_oom,
            self.allow_stale,
            self.no_cluster,
            self.allow_cross_slot_keys,
        ];
        FLAG_NAMES
            .iter()
            .zip(set)
            .filter(|(_, on)| *on)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// Reads an EVAL script's shebang. Returns its flags and the body to compile: the shebang
/// line is blanked (its line break kept) so line numbers stay the user's.
pub fn parse_eval(body: &[u8]) -> Result<(ScriptFlags, Vec<u8>), String> {
    if !body.starts_with(b"#!") {
        let flags = ScriptFlags {
            eval_compat: true,
            ..ScriptFlags::default()
        };
        return Ok((flags, body.to_vec()));
    }
    let end = body
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| "ERR Invalid script shebang".to_string())?;
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts
        .next()
        .ok_or_else(|| "ERR Invalid engine in script shebang".to_string())?;
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(',') {
            if !flags.set(name.as_bytes()) {
                return Err(format!("ERR Unexpected flag in script shebang: {name}"));
            }
        }
    }
    Ok((flags, body[end..].to_vec()))
}
