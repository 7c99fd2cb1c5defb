//! Perfetto traces: the wire schema (`proto`) and the debug annotations a framelab export
//! writes on slices and instants, which the importer reads back without being asked.

pub mod proto;

pub const FRAME_ANNOTATION: &str = "frame";
pub const KEY_ANNOTATION: &str = "key";
