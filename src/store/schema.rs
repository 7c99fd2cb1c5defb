//! Schema creation, version checks and migrations.

/// Bumped on any incompatible change; a file newer than this is refused with a clear message.
pub const SCHEMA_VERSION: i64 = 1;
