//! `--pin CPUS`: a CPU list as taskset(1) and /sys write it ("0-3,6").

use anyhow::{bail, Result};

/// Parses "0-3,6" into [0, 1, 2, 3, 6] and checks every CPU is one this process may use.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim) {
        let number = |s: &str| -> Result<usize> {
            s.trim().parse::<usize>().map_err(|_| {
                anyhow::anyhow!(
                    "--pin {text}: '{s}' is not a CPU number; give a list such as 0-3,6"
                )
            })
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    bail!("--pin {text}: the range {part} runs backwards; write {b}-{a}");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    let allowed = allowed_cpus();
    if let Some(&cpu) = cpus
        .iter()
        .find(|c| !allowed.is_empty() && !allowed.contains(c))
    {
        bail!(
            "--pin {text}: CPU {cpu} is not available to framelab here (it may use {})",
            describe(&allowed)
        );
    }
    Ok(cpus)
}

/// The CPUs this process may run on (empty if the kernel would not say).
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let got =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if got != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// "0-3,6" from a sorted list.
pub fn describe(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(describe(&[0, 1, 2, 3, 6]), "0-3,6");
        assert!(parse_cpu_list("1-0")
            .unwrap_err()
            .to_string()
            .contains("backwards"));
        assert!(parse_cpu_list("x")
            .unwrap_err()
            .to_string()
            .contains("not a CPU number"));
        assert!(parse_cpu_list("100000")
            .unwrap_err()
            .to_string()
            .contains("not available"));
    }
}
