//! Perfetto traces: the wire schema (`proto`) and the debug annotations a framelab export
//! writes on slices and instants, which the importer reads back without being asked.

pub mod proto;

pub const FRAME_ANNOTATION: &str = "frame";

/// Perfetto takes pid 0 for the kernel's idle process (its threads show as `swapper`), while
/// framelab's pid 0 is "no process known" (MangoHud, WAYLAND_DEBUG, a CSV without pids). So
/// pid 0 is written as this one, above any Linux pid (`pid_max` is at most 2^22) and odd (no
/// Windows pid is), and read back as 0.
pub const NO_PROCESS_PID: i32 = i32::MAX;

/// The pid a trace gets for framelab's `pid`.
pub fn written_pid(pid: u32) -> i32 {
    if pid == 0 {
        NO_PROCESS_PID
    } else {
        pid as i32
    }
}

/// framelab's pid for a trace's (32 bits, signed or not).
pub fn read_pid(pid: i32) -> u32 {
    if pid == NO_PROCESS_PID {
        0
    } else {
        pid as u32
    }
}
pub const KEY_ANNOTATION: &str = "key";
