//! Each core's current frequency, from `/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq`
//! (kHz, as the kernel gives it).

use std::path::Path;

use super::files::{numbered_entries, Reread};
use super::{Readings, Tick};
use crate::model::SeriesKind;

struct Core {
    number: u32,
    file: Reread,
    series: Option<u32>,
}

pub struct Cpufreq {
    cores: Vec<Core>,
}

impl Cpufreq {
    /// Finds the cores with a cpufreq driver under `sys`; off when there are none.
    pub fn open(sys: &Path) -> Result<Cpufreq, String> {
        let cpu_dir = sys.join("devices/system/cpu");
        let cores: Vec<Core> = numbered_entries(&cpu_dir, "cpu")
            .into_iter()
            .map(|(number, dir)| (number, dir.join("cpufreq/scaling_cur_freq")))
            .filter(|(_, path)| path.exists())
            .map(|(number, path)| Core {
                number,
                file: Reread::new(path),
                series: None,
            })
            .collect();
        if cores.is_empty() {
            return Err(format!(
                "no {}/cpuN/cpufreq/scaling_cur_freq (no cpufreq driver, as in most VMs)",
                cpu_dir.display()
            ));
        }
        Ok(Cpufreq { cores })
    }

    pub fn describe(&self) -> String {
        match self.cores.len() {
            1 => "1 core".into(),
            n => format!("{n} cores"),
        }
    }

    pub fn read(&mut self, _tick: &Tick, out: &mut Readings) -> Result<(), String> {
        for core in &mut self.cores {
            match core.file.read_i64() {
                Ok(khz) => {
                    let number = core.number;
                    let series = *core.series.get_or_insert_with(|| {
                        out.series(
                            "freq",
                            number.to_string(),
                            format!("cpu{number}"),
                            "kHz",
                            SeriesKind::Gauge,
                        )
                    });
                    out.push(series, khz);
                }
                // A core taken offline mid-run loses its cpufreq directory: skip it.
                Err(problem) => out.skip(|| problem),
            }
        }
        Ok(())
    }
}
