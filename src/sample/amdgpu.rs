//! AMD GPUs through the amdgpu driver's sysfs files, under `/sys/class/drm/cardN/device/`:
//! `gpu_busy_percent`, the current shader and memory clock levels (the line of
//! `pp_dpm_sclk` / `pp_dpm_mclk` marked `*`), and from its hwmon directory the power
//! (`power1_average`, else `power1_input`, µW) and the edge temperature (`temp1_input`, m°C).

use std::path::{Path, PathBuf};

use super::files::{numbered_entries, Reread};
use super::{Readings, Tick};
use crate::model::SeriesKind;

/// The clock of the level marked `*` in a `pp_dpm_*` table, in MHz.
pub fn current_level_mhz(table: &str) -> Option<i64> {
    let line = table.lines().find(|l| l.trim_end().ends_with('*'))?;
    let (_, rest) = line.split_once(':')?;
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// One metric file of a card with its series.
struct Metric {
    metric: &'static str,
    unit: &'static str,
    file: Reread,
    /// `pp_dpm_*` tables: the marked level's MHz rather than a number.
    dpm_table: bool,
    series: Option<u32>,
}

struct Card {
    number: u32,
    metrics: Vec<Metric>,
}

pub struct Amdgpu {
    cards: Vec<Card>,
}

fn hwmon_dir(device: &Path) -> Option<PathBuf> {
    numbered_entries(&device.join("hwmon"), "hwmon")
        .into_iter()
        .map(|(_, p)| p)
        .next()
}

impl Amdgpu {
    pub fn open(sys: &Path) -> Result<Amdgpu, String> {
        let drm = sys.join("class/drm");
        let mut cards = Vec::new();
        for (number, card_dir) in numbered_entries(&drm, "card") {
            let device = card_dir.join("device");
            if !device.join("gpu_busy_percent").exists() {
                continue;
            }
            let mut metrics = Vec::new();
            let mut add = |metric, unit, path: PathBuf, dpm_table| {
                if path.exists() {
                    metrics.push(Metric {
                        metric,
                        unit,
                        file: Reread::new(path),
                        dpm_table,
                        series: None,
                    });
                }
            };
            add("gpu_busy", "%", device.join("gpu_busy_percent"), false);
            add("mem_busy", "%", device.join("mem_busy_percent"), false);
            add("sclk", "MHz", device.join("pp_dpm_sclk"), true);
            add("mclk", "MHz", device.join("pp_dpm_mclk"), true);
            if let Some(hwmon) = hwmon_dir(&device) {
                let power = if hwmon.join("power1_average").exists() {
                    hwmon.join("power1_average")
                } else {
                    hwmon.join("power1_input")
                };
                add("power", "uW", power, false);
                add("temp", "mC", hwmon.join("temp1_input"), false);
            }
            cards.push(Card { number, metrics });
        }
        if cards.is_empty() {
            return Err(format!(
                "no AMD GPU (no {}/card*/device/gpu_busy_percent)",
                drm.display()
            ));
        }
        Ok(Amdgpu { cards })
    }

    pub fn describe(&self) -> String {
        let cards: Vec<String> = self
            .cards
            .iter()
            .map(|c| format!("card{}", c.number))
            .collect();
        cards.join(", ")
    }

    pub fn read(&mut self, _tick: &Tick, out: &mut Readings) -> Result<(), String> {
        for card in &mut self.cards {
            for m in &mut card.metrics {
                let value = if m.dpm_table {
                    let path = m.file.path().display().to_string();
                    m.file.read().and_then(|text| {
                        current_level_mhz(text).ok_or_else(|| format!("{path}: no level marked *"))
                    })
                } else {
                    m.file.read_i64()
                };
                match value {
                    Ok(v) => {
                        let (metric, unit, number) = (m.metric, m.unit, card.number);
                        let series = *m.series.get_or_insert_with(|| {
                            out.series(
                                metric,
                                number.to_string(),
                                format!("card{number}"),
                                unit,
                                SeriesKind::Gauge,
                            )
                        });
                        out.push(series, v);
                    }
                    Err(problem) => out.skip(|| problem),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marked_level_is_current() {
        let table = "0: 500Mhz \n1: 800Mhz *\n2: 2100Mhz \n";
        assert_eq!(current_level_mhz(table), Some(800));
        assert_eq!(current_level_mhz("S: 19Mhz *\n0: 500Mhz\n"), Some(19));
        assert_eq!(current_level_mhz("0: 500Mhz\n1: 800Mhz\n"), None);
        assert_eq!(current_level_mhz(""), None);
    }
}
