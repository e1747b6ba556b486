//! `HELLO` and `AUTH`: argument parsing and the `HELLO` reply, shared by both servers.
//!
//! - `AUTH [username] password` → `+OK`; `-WRONGPASS invalid username-password pair or user is
//!   disabled.`; `AUTH password` with no password configured → `-ERR AUTH <password> called
//!   without any password configured ...`.
//! - `HELLO [protover [AUTH username password] [SETNAME clientname]]` → a map (an array of
//!   pairs in RESP2) with `server`, `version`, `proto`, `id`, `mode`, `role`, `modules`.
//!   Errors: `-NOPROTO unsupported protocol version`, `-ERR Protocol version is not an
//!   integer or out of range`, `-ERR Syntax error in HELLO option '...'`, and `-NOAUTH HELLO
//!   must be called with the client already authenticated, ...` when not authenticated.
//!
//! Each server checks the credentials against its own users; the order of the checks (auth,
//! then the NOAUTH gate, then the name) is Redis's, in [`HelloRequest::authorize`].

use bytes::{Bytes, BytesMut};

use super::errors::{
    AUTH_WITHOUT_PASSWORD, INVALID_CLIENT_NAME, NOAUTH_HELLO, NOPROTO, PROTO_NOT_INTEGER, SYNTAX,
};
use crate::resp::{Proto, ReplyBuf};

/// The Redis version whose behaviour both servers reproduce; clients pick features by it.
pub const REDIS_VERSION: &str = "7.0.15";

/// The credentials of an `AUTH` command: `(username, password)`. `default_has_password` says
/// whether `AUTH password` (no username) can succeed at all.
pub fn parse_auth(args: &[Bytes], default_has_password: bool) -> Result<(&[u8], &[u8]), String> {
    match args {
        [_, password] if default_has_password => Ok((b"default", password)),
        [_, _] => Err(AUTH_WITHOUT_PASSWORD.into()),
        [_, user, password] => Ok((user, password)),
        _ => Err(SYNTAX.into()),
    }
}

/// A parsed `HELLO`.
#[derive(Debug)]
pub struct HelloRequest<'a> {
    /// The protocol asked for; `None` keeps the connection's.
    pub proto: Option<Proto>,
    pub auth: Option<(&'a [u8], &'a [u8])>,
    pub setname: Option<&'a [u8]>,
}

impl<'a> HelloRequest<'a> {
    pub fn parse(args: &'a [Bytes]) -> Result<HelloRequest<'a>, String> {
        let proto = match args.get(1) {
            None => None,
            Some(version) => match crate::numbers::parse_i64(version) {
                Some(2) => Some(Proto::Resp2),
                Some(3) => Some(Proto::Resp3),
                Some(_) => return Err(NOPROTO.into()),
                None => return Err(PROTO_NOT_INTEGER.into()),
            },
        };
        let mut request = HelloRequest {
            proto,
            auth: None,
            setname: None,
        };
        let mut i = 2;
        while let Some(option) = args.get(i) {
            let more = args.len() - i - 1;
            if option.eq_ignore_ascii_case(b"auth") && more >= 2 {
                request.auth = Some((&args[i + 1], &args[i + 2]));
                i += 3;
            } else if option.eq_ignore_ascii_case(b"setname") && more >= 1 {
                request.setname = Some(&args[i + 1]);
                i += 2;
            } else {
                return Err(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(option)
                ));
            }
        }
        Ok(request)
    }

    /// Runs Redis's checks in its order: the credentials (with the server's `check`, which
    /// marks the client authenticated), then the NOAUTH gate, then the client name.
    pub fn authorize(
        &self,
        authenticated: bool,
        check: impl FnOnce(&[u8], &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut authenticated = authenticated;
        if let Some((user, password)) = self.auth {
            check(user, password)?;
            authenticated = true;
        }
        if !authenticated {
            return Err(NOAUTH_HELLO.into());
        }
        if let Some(name) = self.setname {
            validate_client_name(name)?;
        }
        Ok(())
    }
}

/// Client names (CLIENT SETNAME, HELLO SETNAME) are printable ASCII without spaces.
pub fn validate_client_name(name: &[u8]) -> Result<(), String> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(INVALID_CLIENT_NAME.into());
    }
    Ok(())
}

/// What a server says about itself in the `HELLO` reply.
pub struct HelloReply<'a> {
    /// `redis` for the storage node; the proxy names itself (see `src/proxy`).
    pub server: &'a str,
    pub proto: Proto,
    pub id: u64,
    /// `standalone` or `cluster`, as Redis says.
    pub mode: &'a str,
    pub role: &'a str,
}

impl HelloReply<'_> {
    pub fn write(&self, out: &mut ReplyBuf<'_>) {
        out.map(7);
        out.bulk(b"server");
        out.bulk(self.server.as_bytes());
        out.bulk(b"version");
        out.bulk(REDIS_VERSION.as_bytes());
        out.bulk(b"proto");
        out.integer(if self.proto == Proto::Resp3 { 3 } else { 2 });
        out.bulk(b"id");
        out.integer(self.id as i64);
        out.bulk(b"mode");
        out.bulk(self.mode.as_bytes());
        out.bulk(b"role");
        out.bulk(self.role.as_bytes());
        out.bulk(b"modules");
        out.array(0);
    }

    pub fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::new();
        self.write(&mut ReplyBuf::new(&mut buf, self.proto));
        buf.freeze()
    }
}
