//! Error replies, with Redis's exact texts.

use std::borrow::Cow;

/// An error reply; the text carries its own code (`ERR`, `WRONGTYPE`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError(Cow<'static, str>);

pub type CmdResult = Result<(), CmdError>;

impl CmdError {
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl From<&'static str> for CmdError {
    fn from(text: &'static str) -> Self {
        CmdError(Cow::Borrowed(text))
    }
}

impl From<String> for CmdError {
    fn from(text: String) -> Self {
        CmdError(Cow::Owned(text))
    }
}

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub use slotproxy::protocol::errors::NOT_INTEGER;
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub use slotproxy::protocol::errors::SYNTAX;
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";
pub const INVALID_EXPIRE: &str = "ERR invalid expire time in '{}' command";
pub const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
pub const BIT_VALUE: &str = "ERR bit is not an integer or out of range";
pub const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// `wrong number of arguments` for a command or `container|sub` name.
pub fn wrong_arity(name: &str) -> CmdError {
    slotproxy::protocol::wrong_arity(name).into()
}
