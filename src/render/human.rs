//! Human units for reports and tables: µs with a precision that suits the value, seconds, decimal
//! byte totals and bit rates, binary sizes for memory.

/// A duration in µs: two decimals below 1 µs, one below 10 µs, whole µs above.
pub fn us(ns: f64) -> String {
    let us = ns / 1e3;
    let a = us.abs();
    if a < 1.0 {
        format!("{us:.2}")
    } else if a < 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

/// A duration in ms with one decimal and its unit: `2.1 ms`.
pub fn ms(ns: i64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// [`ms`], with two significant digits below 0.1 ms: a 42 µs preemption is `0.042 ms`,
/// not `0.0 ms`.
pub fn ms_fine(ns: i64) -> String {
    match ns.unsigned_abs() {
        100_000.. => ms(ns),
        10_000.. => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{:.4} ms", ns as f64 / 1e6),
    }
}

/// A mean in µs: one decimal (two below 1 µs), since means of whole-ns data are not whole µs.
pub fn us_mean(ns: f64) -> String {
    let us = ns / 1e3;
    if us.abs() < 1.0 {
        format!("{us:.2}")
    } else {
        format!("{us:.1}")
    }
}

/// Seconds with two decimals.
pub fn secs(ns: i64) -> String {
    format!("{:.2}", ns as f64 / 1e9)
}

/// CPU seconds known to `resolution_ns`: two decimals at most, fewer when coarser.
pub fn cpu_secs(ns: i64, resolution_ns: i64) -> String {
    crate::units::fixed_to_resolution(ns as f64 / 1e9, resolution_ns as f64 / 1e9, 2)
}

/// A load % from CPU known to `resolution_ns` over `wall_ns`: one decimal at most.
pub fn load_pct(pct: f64, resolution_ns: i64, wall_ns: i64) -> String {
    let resolution = crate::analyze::cpu::load_resolution_pct(resolution_ns, wall_ns);
    crate::units::fixed_to_resolution(pct, resolution, 1)
}

/// Cores (load ÷ 100), two decimals at most.
pub fn cores(cores: f64, resolution_ns: i64, wall_ns: i64) -> String {
    use crate::analyze::cpu;
    let resolution = cpu::cores_resolution(cpu::load_resolution_pct(resolution_ns, wall_ns), 1);
    crate::units::fixed_to_resolution(cores, resolution, 2)
}

/// An fps target without useless zeros: `120`, `59.94`.
pub fn fps_target(fps: f64) -> String {
    let s = format!("{fps:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn scaled(value: f64, base: f64, units: &[&str]) -> String {
    let mut v = value;
    let mut unit = 0;
    while v.abs() >= base && unit + 1 < units.len() {
        v /= base;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} {}", units[0])
    } else {
        format!("{v:.1} {}", units[unit])
    }
}

/// A byte total in decimal units: `34.4 MB`.
pub fn bytes(b: f64) -> String {
    scaled(b, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"])
}

/// A bit rate in decimal units: `11.0 Mbit/s`.
pub fn bit_rate(bits_per_s: f64) -> String {
    scaled(
        bits_per_s,
        1000.0,
        &["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"],
    )
}

/// Memory in binary units: `48.2 MiB`.
pub fn mem(b: u64) -> String {
    scaled(b as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"])
}

/// A plain number for counters: whole values as integers, others with two decimals.
pub fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The command as one could paste it into a shell: arguments with spaces or shell
/// characters in single quotes.
pub fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_preemption_is_not_zero_ms() {
        assert_eq!(ms_fine(2_100_000), "2.1 ms");
        assert_eq!(ms_fine(100_000), "0.1 ms");
        assert_eq!(ms_fine(42_000), "0.042 ms");
        assert_eq!(ms_fine(4_200), "0.0042 ms");
    }

    #[test]
    fn microseconds() {
        assert_eq!(us(350.0), "0.35");
        assert_eq!(us(2_340.0), "2.3");
        assert_eq!(us(12_400.0), "12");
        assert_eq!(us(8_333_333.0), "8333");
        assert_eq!(us_mean(16_100.0), "16.1");
        assert_eq!(us_mean(420.0), "0.42");
        assert_eq!(us_mean(2_421_000.0), "2421.0");
    }

    #[test]
    fn sizes_and_rates() {
        assert_eq!(bytes(34_400_000.0), "34.4 MB");
        assert_eq!(bytes(999.0), "999 B");
        assert_eq!(bytes(2.5e9), "2.5 GB");
        assert_eq!(bit_rate(11_000_000.0), "11.0 Mbit/s");
        assert_eq!(bit_rate(0.0), "0 bit/s");
        assert_eq!(mem(50_541_363), "48.2 MiB");
        assert_eq!(mem(512), "512 B");
        assert_eq!(secs(25_000_000_000), "25.00");
    }

    #[test]
    fn targets_and_numbers() {
        assert_eq!(fps_target(120.0), "120");
        assert_eq!(fps_target(59.94), "59.94");
        assert_eq!(number(25.0), "25");
        assert_eq!(number(2.5), "2.50");
    }

    #[test]
    fn shell_quoting() {
        let args: Vec<String> = ["ffmpeg", "-i", "in file.mp4", "it's", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            shell_words(&args),
            r#"ffmpeg -i 'in file.mp4' 'it'\''s' ''"#
        );
    }
}
