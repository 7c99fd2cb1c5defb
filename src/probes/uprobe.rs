//! Opening uprobes (a function's entry) and uretprobes (its return) with `perf_event_open`'s
//! uprobe PMU: the event's type is the PMU's number in sysfs, `config1` points at the file's
//! path and `config2` is the offset in it. No tracefs, no probe left behind when framelab
//! exits: the kernel removes the probe with its last event.

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use crate::perf_event::{self, bindings as b};

const PMU_DIR: &str = "/sys/bus/event_source/devices/uprobe";

/// Every sample: which event (`IDENTIFIER`, first so it is read before the rest), the
/// thread, and when.
pub const SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_IDENTIFIER | b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME) as u64;

/// The uprobe PMU of this kernel.
#[derive(Clone, Copy, Debug)]
pub struct Pmu {
    kind: u32,
    /// The `config` bit that makes a probe a return probe (`format/retprobe`: `config:0`).
    retprobe_bit: u32,
    /// Where in `config` a semaphore's file offset goes (`format/ref_ctr_offset`:
    /// `config:32-63`); `None` on kernels without semaphore support.
    semaphore_shift: Option<u32>,
}

impl Pmu {
    /// Finds it; `Err` is the line to print.
    pub fn find() -> Result<Pmu, String> {
        let dir = std::env::var("FRAMELAB_TEST_UPROBE_PMU").unwrap_or_else(|_| PMU_DIR.to_owned());
        let dir = Path::new(&dir);
        let Some(kind) = std::fs::read_to_string(dir.join("type"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
        else {
            return Err(format!(
                "this kernel offers no uprobe PMU ({} is missing: a kernel without \
                 CONFIG_UPROBE_EVENTS, or a container that hides it): --probe needs a kernel \
                 with uprobes; run on the host",
                dir.display()
            ));
        };
        let retprobe_bit = std::fs::read_to_string(dir.join("format/retprobe"))
            .ok()
            .and_then(|t| t.trim().strip_prefix("config:")?.parse().ok())
            .unwrap_or(0);
        let semaphore_shift = std::fs::read_to_string(dir.join("format/ref_ctr_offset"))
            .ok()
            .and_then(|t| {
                let bits = t.trim().strip_prefix("config:")?;
                bits.split('-').next()?.parse().ok()
            });
        Ok(Pmu {
            kind,
            retprobe_bit,
            semaphore_shift,
        })
    }

    /// Whether a USDT probe's semaphore can be raised by the kernel.
    pub fn has_semaphores(&self) -> bool {
        self.semaphore_shift.is_some()
    }

    /// Opens a probe at `offset` of `path` for `tid` (-1: every task) on `cpu` (-1: any),
    /// disabled; the kernel raises the counter at file offset `semaphore` (when not 0)
    /// while it is attached; with `registers` (a `PERF_REG_X86_*` mask) the user registers
    /// at the hit are in each sample.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        path: &Path,
        offset: u64,
        semaphore: u64,
        retprobe: bool,
        registers: u64,
        tid: i32,
        cpu: i32,
    ) -> io::Result<OwnedFd> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
        let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
        attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
        attr.type_ = self.kind;
        attr.config = if retprobe { 1 << self.retprobe_bit } else { 0 };
        if let (Some(shift), true) = (self.semaphore_shift, semaphore != 0) {
            attr.config |= semaphore << shift;
        }
        attr.__bindgen_anon_3.uprobe_path = c_path.as_ptr() as u64;
        attr.__bindgen_anon_4.probe_offset = offset;
        attr.__bindgen_anon_1.sample_period = 1;
        attr.sample_type = SAMPLE_TYPE;
        if registers != 0 {
            attr.sample_type |= b::PERF_SAMPLE_REGS_USER as u64;
            attr.sample_regs_user = registers;
        }
        attr.set_disabled(1);
        // A lost-samples record then says when it was written (`Recorder::drain`).
        attr.set_sample_id_all(1);
        // Timed on CLOCK_MONOTONIC, the clock of every span.
        attr.set_use_clockid(1);
        attr.clockid = libc::CLOCK_MONOTONIC;
        // The kernel copies the path during the call; `c_path` outlives it.
        perf_event::open(&mut attr, tid, cpu)
    }
}

/// The event's id, as `PERF_SAMPLE_IDENTIFIER` gives it in each sample.
pub fn id(fd: &OwnedFd) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    let mut id = 0u64;
    // SAFETY: a perf event descriptor we own and a valid out-pointer.
    if unsafe { perf_event_open_sys::ioctls::ID(fd.as_raw_fd(), &mut id) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

/// Why a uprobe could not be opened, in one line with what gives it. Unlike a profile of
/// one's own processes, the uprobe PMU wants CAP_SYS_ADMIN (or root) whatever
/// `perf_event_paranoid` says: kernels from 5.8 accepted CAP_PERFMON, until a 2025 fix
/// (backported to the stable kernels) asked for CAP_SYS_ADMIN again.
pub fn refusal(error: &io::Error, what: &str) -> String {
    match error.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused the uprobe on {what} ({error}): uprobes need root or \
             CAP_SYS_ADMIN (sudo setcap cap_sys_admin+ep \"$(command -v framelab)\"; kernels \
             since 2025 refuse CAP_PERFMON for them); lowering kernel.perf_event_paranoid is \
             not enough"
        ),
        Some(libc::EINVAL) => format!(
            "the kernel refused the uprobe on {what} ({error}): the offset is not where an \
             instruction starts, or the file is not one the kernel can probe; give the \
             function's name instead of an offset"
        ),
        Some(libc::ENOENT) => format!("the kernel cannot find the file of {what} ({error})"),
        _ => format!("uprobe on {what}: {}", perf_event::refusal(error)),
    }
}
