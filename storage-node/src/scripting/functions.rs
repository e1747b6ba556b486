//! Function libraries: FUNCTION LOAD / DELETE / FLUSH / LIST / STATS / DUMP / RESTORE and
//! FCALL, as Redis 7.0 keeps them.

#[derive(Default)]
pub struct Functions {}
