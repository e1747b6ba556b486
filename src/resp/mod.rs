//! RESP2 and RESP3: frames, an incremental request decoder, a reply parser and an encoder.
//!
//! Both programs in the workspace use this module and nothing else to speak the protocol:
//! the storage node decodes requests with [`RequestDecoder`] and writes replies with
//! [`ReplyBuf`]; the proxy and the tests parse replies with [`parse_frame`].
//!
//! Parsers work on byte slices or buffers and report `Incomplete` (here `Ok(None)`) when more
//! bytes are needed, in the style of pelikan's protocol crates.

mod double_text;
mod encode;
mod frame;
mod limits;
mod parse;
mod request;
mod scan;

pub use double_text::{format_double, format_g, DoubleText};
pub use encode::{
    encode_request, request_bytes, request_len, write_integer_decimal, Proto, ReplyBuf,
};
pub use frame::Frame;
pub use limits::Limits;
pub use parse::{parse_frame, parse_static_frame, ParseError};
pub use request::{split_inline_args, ProtocolError, RequestDecoder};
pub use scan::{ReplyCap, ReplyScanner, ScanError};

#[cfg(test)]
mod tests;
