//! Package (and DRAM, core...) energy from RAPL: `/sys/class/powercap/intel-rapl:N[:M]`,
//! `energy_uj` with `max_energy_range_uj`. The kernel's counter wraps around (every few
//! minutes on a busy server); the stored series is unwrapped, so it only grows.

use std::path::Path;

use super::files::{read_trimmed, Reread};
use super::{Readings, Tick};
use crate::model::SeriesKind;

/// A counter that wraps to 0 after `range`, turned into one that only grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwrapper {
    range: i64,
    last_raw: Option<i64>,
    total: i64,
}

impl Unwrapper {
    /// `range`: `max_energy_range_uj`, the counter's largest value; 0 when unknown.
    pub fn new(range: i64) -> Unwrapper {
        Unwrapper {
            range,
            last_raw: None,
            total: 0,
        }
    }

    /// The unwrapped value for a raw reading: the first reading as is, then the running
    /// total of the differences, a drop being read as one wrap past `range`.
    pub fn next(&mut self, raw: i64) -> i64 {
        match self.last_raw {
            None => self.total = raw,
            Some(last) if raw >= last => {
                self.total = self.total.saturating_add(raw.saturating_sub(last))
            }
            Some(last) => {
                // From `last` up to the top of the range, then from 0 to `raw`. Without a
                // known range the size of the wrap is unknown: count from 0 only.
                let to_top = self.range.saturating_sub(last).max(0);
                self.total = self.total.saturating_add(to_top).saturating_add(raw);
            }
        }
        self.last_raw = Some(raw);
        self.total
    }
}

struct Domain {
    /// `intel-rapl:0`, `intel-rapl:0:1`.
    id: String,
    /// `package-0`, `dram`, `core`...
    name: String,
    energy: Reread,
    unwrap: Unwrapper,
    series: Option<u32>,
}

pub struct Rapl {
    domains: Vec<Domain>,
}

impl Rapl {
    pub fn open(sys: &Path) -> Result<Rapl, String> {
        let dir = sys.join("class/powercap");
        let mut found: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_str()?.to_string();
                        name.starts_with("intel-rapl:").then(|| (name, e.path()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        if found.is_empty() {
            return Err(format!(
                "no {}/intel-rapl:* (no RAPL energy counters: not an Intel or recent AMD CPU, or a VM)",
                dir.display()
            ));
        }
        let mut domains = Vec::new();
        let mut unreadable = None;
        for (id, path) in found {
            let mut energy = Reread::new(path.join("energy_uj"));
            // Since 2020 the counters are readable by root only (a side channel).
            if let Err(problem) = energy.read_i64() {
                unreadable.get_or_insert(problem);
                continue;
            }
            let range = read_trimmed(&path.join("max_energy_range_uj"))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            domains.push(Domain {
                name: read_trimmed(&path.join("name")).unwrap_or_else(|| id.clone()),
                id,
                energy,
                unwrap: Unwrapper::new(range),
                series: None,
            });
        }
        if domains.is_empty() {
            return Err(format!(
                "{} (run as root, or make energy_uj readable)",
                unreadable.unwrap_or_else(|| "no readable energy_uj".into())
            ));
        }
        Ok(Rapl { domains })
    }

    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.domains.iter().map(|d| d.name.as_str()).collect();
        names.join(", ")
    }

    pub fn read(&mut self, _tick: &Tick, out: &mut Readings) -> Result<(), String> {
        for domain in &mut self.domains {
            match domain.energy.read_i64() {
                Ok(raw) => {
                    let total = domain.unwrap.next(raw);
                    let (id, name) = (&domain.id, &domain.name);
                    let series = *domain.series.get_or_insert_with(|| {
                        out.series(
                            "energy",
                            id.clone(),
                            name.clone(),
                            "uJ",
                            SeriesKind::Counter,
                        )
                    });
                    out.push(series, total);
                }
                Err(problem) => out.skip(|| problem),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_a_counter_that_wraps_past_its_range() {
        // Range 1000: 900 → 950 (+50) → wraps to 30 (+50 to the top, +30) → 100 (+70).
        let mut u = Unwrapper::new(1000);
        assert_eq!(u.next(900), 900);
        assert_eq!(u.next(950), 950);
        assert_eq!(u.next(30), 1030);
        assert_eq!(u.next(100), 1100);
        // Twice more around: the total keeps growing.
        assert_eq!(u.next(10), 2010);
    }

    #[test]
    fn absurd_readings_saturate_instead_of_overflowing() {
        let mut u = Unwrapper::new(i64::MAX);
        u.next(-5);
        assert!(u.next(i64::MAX) >= i64::MAX - 5);
        u.next(i64::MIN);
    }

    #[test]
    fn an_unknown_range_counts_a_wrap_from_zero() {
        let mut u = Unwrapper::new(0);
        u.next(500);
        assert_eq!(u.next(20), 520);
    }
}
