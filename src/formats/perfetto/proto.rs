//! The part of Perfetto's trace schema framelab reads and writes, by hand with `prost`.
//!
//! Field numbers are those of `protos/perfetto/trace/perfetto_trace.proto` (the merged
//! schema in google/perfetto). Only what framelab uses is declared: prost skips the rest.
//! A `oneof` there is a set of plain optional fields here (the wire format is the same).
//! The schema is proto2, so repeated numbers are written unpacked (`packed = "false"`),
//! as Perfetto's own decoders expect; prost reads either form.

/// The whole file: `repeated TracePacket packet = 1`. Importers walk the packets one by
/// one instead of decoding this (see `import::perfetto`); tests build small traces with it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket.sequence_flags` bits.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// Deprecated per-sequence thread: events without a track are on its thread track.
    #[prost(message, optional, tag = "44")]
    pub thread_descriptor: Option<ThreadDescriptor>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(bool, optional, tag = "41")]
    pub incremental_state_cleared: Option<bool>,
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    /// Deflate-compressed `Trace` bytes holding more packets.
    #[prost(bytes = "vec", optional, tag = "50")]
    pub compressed_packets: Option<Vec<u8>>,
    /// Zstandard-compressed packets: not read (counted).
    #[prost(bytes = "vec", optional, tag = "133")]
    pub zstd_compressed_packets: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "31")]
    pub extra_counter_track_uuids: Vec<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "45")]
    pub extra_double_counter_track_uuids: Vec<u64>,
}

/// `TrackEvent.type`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;
pub const TYPE_INSTANT: i32 = 3;
pub const TYPE_COUNTER: i32 = 4;

#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    #[prost(uint64, repeated, packed = "false", tag = "31")]
    pub extra_counter_track_uuids: Vec<u64>,
    #[prost(int64, repeated, packed = "false", tag = "12")]
    pub extra_counter_values: Vec<i64>,
    #[prost(uint64, repeated, packed = "false", tag = "45")]
    pub extra_double_counter_track_uuids: Vec<u64>,
    #[prost(double, repeated, packed = "false", tag = "46")]
    pub extra_double_counter_values: Vec<f64>,
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(message, optional, tag = "6")]
    pub legacy_event: Option<LegacyEvent>,
}

/// How Chrome still writes some events: a JSON-style phase (`B`, `E`, `X`, `I`, ...) in a
/// track event of unspecified type. Only what turns into spans and instants is declared.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LegacyEvent {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(int32, optional, tag = "2")]
    pub phase: Option<i32>,
    #[prost(int64, optional, tag = "3")]
    pub duration_us: Option<i64>,
}

/// One argument of an event. Nested values (dicts, arrays) are not declared: skipped.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    #[prost(uint64, optional, tag = "7")]
    pub pointer_value: Option<u64>,
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "10")]
    pub static_name: Option<String>,
    #[prost(string, optional, tag = "14")]
    pub description: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    pub cmdline: Vec<String>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor.unit`.
pub const UNIT_TIME_NS: i32 = 1;
pub const UNIT_COUNT: i32 = 2;
pub const UNIT_SIZE_BYTES: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub r#type: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    pub categories: Vec<String>,
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
    #[prost(int64, optional, tag = "4")]
    pub unit_multiplier: Option<i64>,
    #[prost(bool, optional, tag = "5")]
    pub is_incremental: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedName>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `EventName`, `EventCategory` and `DebugAnnotationName`: the same two fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
    #[prost(uint64, optional, tag = "4")]
    pub unit_multiplier_ns: Option<u64>,
}
