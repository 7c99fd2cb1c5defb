//! The NVIDIA driver's NVML library, opened with `dlopen` at run time: framelab has no
//! build-time dependency on CUDA or the driver, and runs unchanged where neither exists.
//! Function signatures and struct layouts are those of nvml.h.

use std::ffi::{c_char, c_uint, c_ulonglong, c_void, CStr, CString};
use std::path::Path;

use super::api::{
    Clock, Nvml, NvmlError, NvmlResult, ProcessUtilization, ERROR_FUNCTION_NOT_FOUND,
    ERROR_INSUFFICIENT_SIZE, ERROR_NOT_FOUND,
};

/// The names the driver installs the library under, tried in order.
pub const LIBRARY_NAMES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

type Device = *mut c_void;
type Ret = c_uint;

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessSample {
    pid: c_uint,
    time_stamp: c_ulonglong,
    sm_util: c_uint,
    mem_util: c_uint,
    enc_util: c_uint,
    dec_util: c_uint,
}

type InitFn = unsafe extern "C" fn() -> Ret;
type ErrorStringFn = unsafe extern "C" fn(Ret) -> *const c_char;
type CountFn = unsafe extern "C" fn(*mut c_uint) -> Ret;
type HandleFn = unsafe extern "C" fn(c_uint, *mut Device) -> Ret;
type TextFn = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> Ret;
type SystemTextFn = unsafe extern "C" fn(*mut c_char, c_uint) -> Ret;
type ClockFn = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> Ret;
type UtilizationFn = unsafe extern "C" fn(Device, *mut Utilization) -> Ret;
type U32Fn = unsafe extern "C" fn(Device, *mut c_uint) -> Ret;
type U64Fn = unsafe extern "C" fn(Device, *mut c_ulonglong) -> Ret;
type TemperatureFn = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> Ret;
type MemoryFn = unsafe extern "C" fn(Device, *mut Memory) -> Ret;
type ProcessFn = unsafe extern "C" fn(Device, *mut ProcessSample, *mut c_uint, c_ulonglong) -> Ret;

/// `nvmlTemperatureSensors_t`: the GPU die.
const TEMPERATURE_GPU: c_uint = 0;
/// `NVML_DEVICE_NAME_V2_BUFFER_SIZE`.
const NAME_BUFFER: usize = 96;

struct Functions {
    shutdown: InitFn,
    error_string: ErrorStringFn,
    name: Option<TextFn>,
    driver_version: Option<SystemTextFn>,
    clock: Option<ClockFn>,
    utilization: Option<UtilizationFn>,
    power: Option<U32Fn>,
    energy: Option<U64Fn>,
    temperature: Option<TemperatureFn>,
    memory: Option<MemoryFn>,
    throttle: Option<U64Fn>,
    process_utilization: Option<ProcessFn>,
}

pub struct Library {
    fns: Functions,
    devices: Vec<Result<Device, NvmlError>>,
    /// nvmlInit succeeded: nvmlShutdown is owed.
    initialized: bool,
}

// SAFETY: NVML is thread-safe, and device handles are plain pointers into it; the source
// uses the library from the sampler thread only.
unsafe impl Send for Library {}

/// `dlsym` as a typed function pointer, or `None`.
///
/// # Safety
/// `F` must be the function pointer type of the symbol's real signature.
unsafe fn symbol<F: Copy>(handle: *mut c_void, names: &[&str]) -> Option<F> {
    for name in names {
        let cname = CString::new(*name).ok()?;
        let ptr = libc::dlsym(handle, cname.as_ptr());
        if !ptr.is_null() {
            debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
            return Some(std::mem::transmute_copy::<*mut c_void, F>(&ptr));
        }
    }
    None
}

fn dl_error() -> String {
    // SAFETY: dlerror returns a thread-local string or null.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null, NUL-terminated, valid until the next dl call on this thread.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

fn text_from(buffer: &[c_char]) -> String {
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

impl Library {
    /// Loads the library (`path`, or the driver's usual names) and initialises NVML.
    /// The error is the one line the report shows for the source being off.
    pub fn open(path: Option<&Path>) -> Result<Library, String> {
        let candidates: Vec<String> = match path {
            Some(p) => vec![p.to_string_lossy().into_owned()],
            None => LIBRARY_NAMES.iter().map(|s| s.to_string()).collect(),
        };
        let mut handle = std::ptr::null_mut();
        let mut why = String::new();
        for name in &candidates {
            let Ok(cname) = CString::new(name.as_str()) else {
                continue;
            };
            // SAFETY: a valid C string; RTLD_LOCAL keeps NVML's symbols out of the process's.
            handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !handle.is_null() {
                break;
            }
            why = dl_error();
        }
        if handle.is_null() {
            return Err(match path {
                Some(p) => format!("cannot load {} ({why})", p.display()),
                None => format!(
                    "{} not found: no NVIDIA driver on this machine",
                    LIBRARY_NAMES[0]
                ),
            });
        }
        // SAFETY: each symbol is looked up with the signature nvml.h gives it.
        unsafe {
            let required = |what: &str| format!("the NVML library lacks {what}: driver too old?");
            let init: InitFn =
                symbol(handle, &["nvmlInit_v2", "nvmlInit"]).ok_or_else(|| required("nvmlInit"))?;
            let shutdown: InitFn =
                symbol(handle, &["nvmlShutdown"]).ok_or_else(|| required("nvmlShutdown"))?;
            let error_string: ErrorStringFn =
                symbol(handle, &["nvmlErrorString"]).ok_or_else(|| required("nvmlErrorString"))?;
            let count: CountFn = symbol(handle, &["nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"])
                .ok_or_else(|| required("nvmlDeviceGetCount"))?;
            let by_index: HandleFn = symbol(
                handle,
                &[
                    "nvmlDeviceGetHandleByIndex_v2",
                    "nvmlDeviceGetHandleByIndex",
                ],
            )
            .ok_or_else(|| required("nvmlDeviceGetHandleByIndex"))?;
            let fns = Functions {
                shutdown,
                error_string,
                name: symbol(handle, &["nvmlDeviceGetName"]),
                driver_version: symbol(handle, &["nvmlSystemGetDriverVersion"]),
                clock: symbol(handle, &["nvmlDeviceGetClockInfo"]),
                utilization: symbol(handle, &["nvmlDeviceGetUtilizationRates"]),
                power: symbol(handle, &["nvmlDeviceGetPowerUsage"]),
                energy: symbol(handle, &["nvmlDeviceGetTotalEnergyConsumption"]),
                temperature: symbol(handle, &["nvmlDeviceGetTemperature"]),
                memory: symbol(handle, &["nvmlDeviceGetMemoryInfo"]),
                throttle: symbol(
                    handle,
                    &[
                        "nvmlDeviceGetCurrentClocksEventReasons",
                        "nvmlDeviceGetCurrentClocksThrottleReasons",
                    ],
                ),
                process_utilization: symbol(handle, &["nvmlDeviceGetProcessUtilization"]),
            };
            let mut library = Library {
                fns,
                devices: Vec::new(),
                initialized: false,
            };
            library
                .check(init())
                .map_err(|e| format!("nvmlInit failed: {e}"))?;
            library.initialized = true;
            let mut n: c_uint = 0;
            if let Err(e) = library.check(count(&mut n)) {
                return Err(format!("nvmlDeviceGetCount failed: {e}"));
            }
            for index in 0..n {
                let mut device: Device = std::ptr::null_mut();
                library
                    .devices
                    .push(library.check(by_index(index, &mut device)).map(|_| device));
            }
            Ok(library)
        }
    }

    fn error(&self, code: Ret) -> NvmlError {
        // SAFETY: nvmlErrorString returns a static string for any code.
        let text = unsafe { (self.fns.error_string)(code) };
        let text = if text.is_null() {
            "unknown error".to_string()
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        NvmlError::new(code, text)
    }

    fn check(&self, code: Ret) -> NvmlResult<()> {
        if code == 0 {
            Ok(())
        } else {
            Err(self.error(code))
        }
    }

    fn device(&self, index: u32) -> NvmlResult<Device> {
        match self.devices.get(index as usize) {
            Some(Ok(device)) => Ok(*device),
            Some(Err(e)) => Err(e.clone()),
            None => Err(NvmlError::new(2, "no such device index")),
        }
    }

    fn missing(name: &str) -> NvmlError {
        NvmlError::new(
            ERROR_FUNCTION_NOT_FOUND,
            format!("{name} is not in this driver's NVML"),
        )
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: balanced with the successful nvmlInit of `open`. The library itself stays
        // mapped: unloading a driver library buys nothing and some do not unload cleanly.
        if self.initialized {
            unsafe {
                (self.fns.shutdown)();
            }
        }
    }
}

impl Nvml for Library {
    fn driver_version(&self) -> Option<String> {
        let f = self.fns.driver_version?;
        let mut buffer = [0 as c_char; 96];
        // SAFETY: the buffer's length is passed.
        let code = unsafe { f(buffer.as_mut_ptr(), buffer.len() as c_uint) };
        (code == 0).then(|| text_from(&buffer))
    }

    fn device_count(&self) -> NvmlResult<u32> {
        Ok(self.devices.len() as u32)
    }

    fn name(&self, index: u32) -> NvmlResult<String> {
        let device = self.device(index)?;
        let f = self
            .fns
            .name
            .ok_or_else(|| Self::missing("nvmlDeviceGetName"))?;
        let mut buffer = [0 as c_char; NAME_BUFFER];
        // SAFETY: a live device handle and the buffer's length.
        self.check(unsafe { f(device, buffer.as_mut_ptr(), NAME_BUFFER as c_uint) })?;
        Ok(text_from(&buffer))
    }

    fn clock_mhz(&self, index: u32, clock: Clock) -> NvmlResult<u32> {
        let device = self.device(index)?;
        let f = self
            .fns
            .clock
            .ok_or_else(|| Self::missing("nvmlDeviceGetClockInfo"))?;
        let mut mhz: c_uint = 0;
        // SAFETY: a live device handle and an out-pointer.
        self.check(unsafe { f(device, clock as c_uint, &mut mhz) })?;
        Ok(mhz)
    }

    fn utilization_pct(&self, index: u32) -> NvmlResult<(u32, u32)> {
        let device = self.device(index)?;
        let f = self
            .fns
            .utilization
            .ok_or_else(|| Self::missing("nvmlDeviceGetUtilizationRates"))?;
        let mut u = Utilization::default();
        // SAFETY: a live device handle and an out-pointer to nvmlUtilization_t.
        self.check(unsafe { f(device, &mut u) })?;
        Ok((u.gpu, u.memory))
    }

    fn power_mw(&self, index: u32) -> NvmlResult<u32> {
        let device = self.device(index)?;
        let f = self
            .fns
            .power
            .ok_or_else(|| Self::missing("nvmlDeviceGetPowerUsage"))?;
        let mut mw: c_uint = 0;
        // SAFETY: a live device handle and an out-pointer.
        self.check(unsafe { f(device, &mut mw) })?;
        Ok(mw)
    }

    fn energy_mj(&self, index: u32) -> NvmlResult<u64> {
        let device = self.device(index)?;
        let f = self
            .fns
            .energy
            .ok_or_else(|| Self::missing("nvmlDeviceGetTotalEnergyConsumption"))?;
        let mut mj: c_ulonglong = 0;
        // SAFETY: a live device handle and an out-pointer.
        self.check(unsafe { f(device, &mut mj) })?;
        Ok(mj)
    }

    fn temperature_c(&self, index: u32) -> NvmlResult<u32> {
        let device = self.device(index)?;
        let f = self
            .fns
            .temperature
            .ok_or_else(|| Self::missing("nvmlDeviceGetTemperature"))?;
        let mut c: c_uint = 0;
        // SAFETY: a live device handle and an out-pointer.
        self.check(unsafe { f(device, TEMPERATURE_GPU, &mut c) })?;
        Ok(c)
    }

    fn memory_used_bytes(&self, index: u32) -> NvmlResult<u64> {
        let device = self.device(index)?;
        let f = self
            .fns
            .memory
            .ok_or_else(|| Self::missing("nvmlDeviceGetMemoryInfo"))?;
        let mut m = Memory::default();
        // SAFETY: a live device handle and an out-pointer to nvmlMemory_t.
        self.check(unsafe { f(device, &mut m) })?;
        Ok(m.used)
    }

    fn throttle_reasons(&self, index: u32) -> NvmlResult<u64> {
        let device = self.device(index)?;
        let f = self
            .fns
            .throttle
            .ok_or_else(|| Self::missing("nvmlDeviceGetCurrentClocksEventReasons"))?;
        let mut mask: c_ulonglong = 0;
        // SAFETY: a live device handle and an out-pointer.
        self.check(unsafe { f(device, &mut mask) })?;
        Ok(mask)
    }

    fn process_utilization(
        &self,
        index: u32,
        since_us: u64,
    ) -> NvmlResult<Vec<ProcessUtilization>> {
        let device = self.device(index)?;
        let f = self
            .fns
            .process_utilization
            .ok_or_else(|| Self::missing("nvmlDeviceGetProcessUtilization"))?;
        let mut buffer = vec![ProcessSample::default(); 64];
        for _ in 0..3 {
            let mut count = buffer.len() as c_uint;
            // SAFETY: the buffer holds `count` samples; the driver writes at most that many.
            let code = unsafe { f(device, buffer.as_mut_ptr(), &mut count, since_us) };
            match code {
                0 => {
                    buffer.truncate((count as usize).min(buffer.len()));
                    return Ok(buffer
                        .iter()
                        .map(|s| ProcessUtilization {
                            pid: s.pid,
                            timestamp_us: s.time_stamp,
                            sm_pct: s.sm_util,
                            mem_pct: s.mem_util,
                        })
                        .collect());
                }
                // No sample newer than `since_us`: nothing ran, or too soon to tell.
                ERROR_NOT_FOUND => return Ok(Vec::new()),
                ERROR_INSUFFICIENT_SIZE => {
                    let wanted = (count as usize).max(buffer.len() * 2);
                    buffer.resize(wanted + 8, ProcessSample::default());
                }
                other => return Err(self.error(other)),
            }
        }
        Err(self.error(ERROR_INSUFFICIENT_SIZE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_nvml_h() {
        assert_eq!(std::mem::size_of::<Utilization>(), 8);
        assert_eq!(std::mem::size_of::<Memory>(), 24);
        assert_eq!(std::mem::size_of::<ProcessSample>(), 32);
        assert_eq!(std::mem::offset_of!(ProcessSample, time_stamp), 8);
        assert_eq!(std::mem::offset_of!(ProcessSample, sm_util), 16);
    }

    #[test]
    fn a_missing_library_is_one_line_that_names_it() {
        let Err(why) = Library::open(Some(Path::new("/nonexistent/libnvidia-ml.so.1"))) else {
            panic!("opened a library that does not exist");
        };
        assert!(
            why.starts_with("cannot load /nonexistent/libnvidia-ml.so.1 ("),
            "{why}"
        );
        assert!(!why.contains('\n'));
    }
}
