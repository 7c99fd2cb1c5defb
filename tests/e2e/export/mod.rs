//! `framelab export`: Perfetto against its schema, and round trips.

mod perfetto_schema;
mod roundtrip;
