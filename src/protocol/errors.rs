//! Error texts clients see from both servers, exactly as Redis 7.0 words them.

use bytes::Bytes;

use crate::cluster::{CommandSpec, CommandTable, LookupError};

pub const SYNTAX: &str = "ERR syntax error";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
/// HELLO from an unauthenticated client without `AUTH`.
pub const NOAUTH_HELLO: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
/// `AUTH password` when the default user has no password.
pub const AUTH_WITHOUT_PASSWORD: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
pub const PROTO_NOT_INTEGER: &str = "ERR Protocol version is not an integer or out of range";
pub const INVALID_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// The encoded error reply for `message` (which carries its own code, `ERR`, `MOVED`, ...).
/// Line breaks would end the reply early, so they become spaces, as Redis's `addReplyError`
/// does.
pub fn error_reply(message: &str) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 3);
    out.push(b'-');
    out.extend(
        message
            .bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
    Bytes::from(out)
}

/// An argument as Redis prints client input into an error with C's `%s`: only up to its
/// first NUL byte.
pub fn c_string(arg: &[u8]) -> String {
    let arg = arg.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(arg).into_owned()
}

/// At most `room` characters of an argument, as Redis quotes client input in errors
/// ([`c_string`]).
fn shown(arg: &[u8], room: usize) -> String {
    c_string(arg).chars().take(room).collect()
}

/// Redis's reply to a command it does not have.
pub fn unknown_command(args: &[Bytes]) -> String {
    let name = shown(args.first().map_or(&b""[..], |a| a), 128);
    let mut quoted = String::new();
    for arg in args.iter().skip(1) {
        if quoted.len() >= 128 {
            break;
        }
        let text = shown(arg, 128 - quoted.len());
        quoted.push_str(&format!("'{text}' "));
    }
    format!("ERR unknown command '{name}', with args beginning with: {quoted}")
}

/// Redis's reply to a subcommand a container command (`CONFIG`, `CLIENT`, ...) lacks.
pub fn unknown_subcommand(args: &[Bytes]) -> String {
    let sub = shown(args.get(1).map_or(&b""[..], |a| a), 128);
    let container = String::from_utf8_lossy(args.first().map_or(&b""[..], |a| a)).to_uppercase();
    format!("ERR unknown subcommand '{sub}'. Try {container} HELP.")
}

/// Redis's `addReplySubcommandSyntaxError`: a known subcommand given the wrong arguments
/// (the subcommand printed with `%.128s`: up to a NUL byte, 128 characters at most).
pub fn subcommand_syntax_error(args: &[Bytes]) -> String {
    let sub = shown(args.get(1).map_or(&b""[..], |a| a), 128);
    let container = String::from_utf8_lossy(args.first().map_or(&b""[..], |a| a)).to_uppercase();
    format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {container} HELP."
    )
}

/// What a refused EXEC answers, in MULTI or not (Redis's `rejectCommand` calls
/// `execCommandAbort`, which also discards the transaction and every WATCH): the
/// transaction is discarded because of `reason`.
pub fn exec_refused(reason: &str) -> String {
    let reason = reason.strip_prefix("ERR ").unwrap_or(reason);
    format!("EXECABORT Transaction discarded because of: {reason}")
}

/// `wrong number of arguments` for a command or `container|sub` name.
pub fn wrong_arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Looks a request up in the shared command table and checks its arity, answering Redis's
/// texts for an unknown command, an unknown subcommand and a wrong argument count.
pub fn lookup(args: &[Bytes]) -> Result<&'static CommandSpec, String> {
    let spec = match CommandTable::get().lookup(args) {
        Ok(spec) => spec,
        Err(LookupError::UnknownCommand) => return Err(unknown_command(args)),
        Err(LookupError::UnknownSubcommand) => return Err(unknown_subcommand(args)),
    };
    if !spec.arity_ok(args.len()) {
        return Err(wrong_arity(spec.display_name()));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn lookup_answers_redis_texts() {
        assert_eq!(
            lookup(&args(&["config", "x"])).unwrap_err(),
            "ERR unknown subcommand 'x'. Try CONFIG HELP."
        );
        assert_eq!(
            lookup(&args(&["config"])).unwrap_err(),
            "ERR wrong number of arguments for 'config' command"
        );
        assert_eq!(
            lookup(&args(&["config", "get"])).unwrap_err(),
            "ERR wrong number of arguments for 'config|get' command"
        );
        assert_eq!(
            lookup(&args(&["nosuch", "a", "b"])).unwrap_err(),
            "ERR unknown command 'nosuch', with args beginning with: 'a' 'b' "
        );
    }

    #[test]
    fn error_reply_keeps_one_line() {
        assert_eq!(&error_reply("ERR a\r\nb")[..], b"-ERR a  b\r\n");
    }
}
