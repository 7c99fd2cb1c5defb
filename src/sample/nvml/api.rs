//! What the NVML source asks of the driver, as a trait: the real library (`library.rs`)
//! implements it, and tests substitute a scripted GPU that fails on cue.

/// An NVML return code other than success, with the driver's own text for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvmlError {
    pub code: u32,
    pub text: String,
}

// Return codes from nvml.h that change what the source does.
pub const ERROR_NOT_SUPPORTED: u32 = 3;
pub const ERROR_NO_PERMISSION: u32 = 4;
pub const ERROR_NOT_FOUND: u32 = 6;
pub const ERROR_INSUFFICIENT_SIZE: u32 = 7;
pub const ERROR_FUNCTION_NOT_FOUND: u32 = 13;
pub const ERROR_GPU_IS_LOST: u32 = 15;

impl NvmlError {
    pub fn new(code: u32, text: impl Into<String>) -> NvmlError {
        NvmlError {
            code,
            text: text.into(),
        }
    }

    /// This GPU or driver does not offer the metric: stop asking, say so once.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self.code,
            ERROR_NOT_SUPPORTED | ERROR_NO_PERMISSION | ERROR_FUNCTION_NOT_FOUND
        )
    }

    /// The GPU fell off the bus or was reset: nothing more will come from it.
    pub fn is_gpu_lost(&self) -> bool {
        self.code == ERROR_GPU_IS_LOST
    }
}

impl std::fmt::Display for NvmlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (NVML error {})", self.text, self.code)
    }
}

pub type NvmlResult<T> = Result<T, NvmlError>;

/// The clocks NVML reports (`nvmlClockType_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Graphics = 0,
    Sm = 1,
    Memory = 2,
}

/// One process's share of a GPU over the driver's last sampling period
/// (`nvmlProcessUtilizationSample_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessUtilization {
    pub pid: u32,
    /// The driver's timestamp of the sample, µs (CPU wall clock).
    pub timestamp_us: u64,
    pub sm_pct: u32,
    pub mem_pct: u32,
}

/// The NVML calls the source makes, by device index.
pub trait Nvml: Send {
    fn driver_version(&self) -> Option<String>;
    fn device_count(&self) -> NvmlResult<u32>;
    fn name(&self, device: u32) -> NvmlResult<String>;
    fn clock_mhz(&self, device: u32, clock: Clock) -> NvmlResult<u32>;
    /// GPU and memory-controller busy % over the driver's last sampling period.
    fn utilization_pct(&self, device: u32) -> NvmlResult<(u32, u32)>;
    fn power_mw(&self, device: u32) -> NvmlResult<u32>;
    /// Energy since the driver was loaded, mJ.
    fn energy_mj(&self, device: u32) -> NvmlResult<u64>;
    fn temperature_c(&self, device: u32) -> NvmlResult<u32>;
    fn memory_used_bytes(&self, device: u32) -> NvmlResult<u64>;
    /// Why the clocks are held down now (a bitmask; names in `throttle.rs`).
    fn throttle_reasons(&self, device: u32) -> NvmlResult<u64>;
    /// Per-process utilisation samples newer than `since_us` (0: all the driver has).
    fn process_utilization(
        &self,
        device: u32,
        since_us: u64,
    ) -> NvmlResult<Vec<ProcessUtilization>>;
}
