//! Names of NVML's clock throttle (since driver 535: "clocks event") reason bits, as
//! nvml.h defines them.

/// (bit, name) pairs, lowest bit first.
pub const REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The names of the bits set in `mask`; unknown bits as `0x…`.
pub fn reason_names(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| name.to_string())
        .collect();
    let known: u64 = REASONS.iter().map(|(bit, _)| bit).sum();
    let unknown = mask & !known;
    if unknown != 0 {
        names.push(format!("{unknown:#x}"));
    }
    names
}

/// Reasons that mean the GPU was held below the clock it wanted while busy: the ones worth
/// a reader's attention next to a late frame (`gpu_idle` is the normal state of an idle GPU).
pub fn is_slowdown(name: &str) -> bool {
    !matches!(
        name,
        "gpu_idle" | "applications_clocks_setting" | "display_clock_setting"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_known_and_unknown_bits() {
        assert_eq!(reason_names(0), Vec::<String>::new());
        assert_eq!(reason_names(0x1), vec!["gpu_idle"]);
        assert_eq!(
            reason_names(0x4 | 0x40 | 0x1000),
            vec!["sw_power_cap", "hw_thermal_slowdown", "0x1000"]
        );
        assert!(is_slowdown("sw_power_cap") && !is_slowdown("gpu_idle"));
    }
}
