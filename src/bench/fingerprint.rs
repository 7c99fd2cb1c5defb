//! The environment fingerprint recorded before each run: what could make two runs differ
//! that is not the code (CPU, governor, boost, kernel, load, GPU and driver).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::experiment::Fingerprint;

/// nvidia-smi can hang on a wedged driver: give up after this.
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(5);

/// The GPU part, probed once per bench (it does not change between runs).
#[derive(Clone, Debug, Default)]
pub struct GpuInfo {
    pub names: String,
    pub driver: String,
}

/// Reads /proc and /sys for everything but the GPU, which the caller probed once.
pub fn probe(gpu: &GpuInfo, pinned: &str) -> Fingerprint {
    let host = crate::host::probe();
    Fingerprint {
        hostname: host.hostname,
        cpu_model: host.cpu_model,
        cores: host.cores,
        kernel: host.kernel,
        governor: governors(),
        boost: boost(),
        cpu_mhz: cpu_mhz(),
        load_avg_1m: load_avg(),
        gpu: gpu.names.clone(),
        gpu_driver: gpu.driver.clone(),
        pinned_cpus: pinned.to_owned(),
    }
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

fn cpu_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir("/sys/devices/system/cpu")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("cpu"))
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    dirs.sort();
    dirs
}

/// Distinct scaling governors, in CPU order.
fn governors() -> String {
    let mut seen: Vec<String> = Vec::new();
    for dir in cpu_dirs() {
        if let Some(g) = read_trimmed(dir.join("cpufreq/scaling_governor")) {
            if !seen.contains(&g) {
                seen.push(g);
            }
        }
    }
    seen.join(",")
}

fn boost() -> String {
    if let Some(v) = read_trimmed("/sys/devices/system/cpu/cpufreq/boost") {
        return if v == "1" { "on" } else { "off" }.into();
    }
    if let Some(v) = read_trimmed("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return if v == "1" { "off" } else { "on" }.into();
    }
    String::new()
}

/// Mean current frequency: cpufreq where present, else /proc/cpuinfo's "cpu MHz".
fn cpu_mhz() -> Option<f64> {
    let khz: Vec<f64> = cpu_dirs()
        .iter()
        .filter_map(|d| read_trimmed(d.join("cpufreq/scaling_cur_freq")))
        .filter_map(|s| s.parse::<f64>().ok())
        .collect();
    if !khz.is_empty() {
        return Some(khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0);
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: Vec<f64> = cpuinfo
        .lines()
        .filter_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "cpu MHz").then(|| value.trim().parse().ok())?
        })
        .collect();
    (!mhz.is_empty()).then(|| mhz.iter().sum::<f64>() / mhz.len() as f64)
}

fn load_avg() -> Option<f64> {
    read_trimmed("/proc/loadavg")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// GPU names and driver from `nvidia-smi` when it is on PATH; empty otherwise.
pub fn probe_gpu() -> GpuInfo {
    let Ok(mut child) = Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return GpuInfo::default();
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < NVIDIA_SMI_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return GpuInfo::default();
            }
        }
    }
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read;
        let _ = out.read_to_string(&mut text);
    }
    parse_nvidia_smi(&text)
}

/// "NVIDIA H100, 550.54" lines → names joined by "; ", the first driver.
fn parse_nvidia_smi(text: &str) -> GpuInfo {
    let mut names = Vec::new();
    let mut driver = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (name, version) = line.rsplit_once(',').unwrap_or((line, ""));
        names.push(name.trim().to_owned());
        if driver.is_empty() {
            driver = version.trim().to_owned();
        }
    }
    GpuInfo {
        names: names.join("; "),
        driver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_lines() {
        let g = parse_nvidia_smi(
            "NVIDIA H100 80GB HBM3, 550.54.15\nNVIDIA H100 80GB HBM3, 550.54.15\n",
        );
        assert_eq!(g.names, "NVIDIA H100 80GB HBM3; NVIDIA H100 80GB HBM3");
        assert_eq!(g.driver, "550.54.15");
        assert_eq!(parse_nvidia_smi("").names, "");
    }

    #[test]
    fn this_machine_has_a_cpu_and_kernel() {
        let f = probe(&GpuInfo::default(), "");
        assert!(!f.cpu_model.is_empty() && !f.kernel.is_empty() && f.cores > 0);
        assert!(f.load_avg_1m.is_some());
    }
}
