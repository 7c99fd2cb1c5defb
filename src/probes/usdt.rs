//! USDT probes (`<sys/sdt.h>`, DTrace-style static probes) of a binary: each is an ELF note
//! in `.note.stapsdt` giving the probe's address, its semaphore (a counter the program
//! checks before doing the work of a probe's arguments; the kernel raises it while a
//! uprobe is attached), its provider and name, and where each argument lives at the probe
//! (`-4@%edi`: a signed 4-byte value in edi).

use std::path::Path;

use object::{Object, ObjectSection, ObjectSegment};

use crate::perf_event::bindings as b;

/// One USDT probe of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsdtProbe {
    /// The file it is in.
    pub path: std::path::PathBuf,
    pub provider: String,
    pub name: String,
    /// Where the probe's instruction lies in the file.
    pub file_offset: u64,
    /// Where its semaphore lies in the file; 0 without one.
    pub semaphore_offset: u64,
    /// As the note gives them (`-4@%edi 8@%rax`).
    pub arguments: String,
    /// What the probe's instruction makes a hit cost.
    pub class: super::cost::InstructionClass,
}

impl UsdtProbe {
    /// Where argument `n` (1-based) can be read from at the probe; `Err` says why not.
    pub fn argument(&self, n: usize) -> Result<Argument, String> {
        let spec = self
            .arguments
            .split_whitespace()
            .nth(n - 1)
            .ok_or_else(|| {
                format!(
                    "USDT probe {}:{} has no argument {n} (its arguments: {:?})",
                    self.provider, self.name, self.arguments
                )
            })?;
        Argument::parse(spec).ok_or_else(|| {
            format!(
                "USDT probe {}:{}'s argument {n} is {spec:?}, which framelab cannot read (only \
                 registers and constants, not memory): key it by another argument, or \
                 probe a function instead",
                self.provider, self.name
            )
        })
    }
}

/// Where a USDT argument lives at its probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Argument {
    /// In a register (a `PERF_REG_X86_*` number), `size` bytes, signed when `signed`.
    Register {
        reg: u32,
        size: u8,
        signed: bool,
    },
    Constant(i64),
}

impl Argument {
    /// `-4@%edi`, `8@%rax`, `4@$42`; memory operands (`8@-8(%rbp)`) are `None`.
    pub fn parse(spec: &str) -> Option<Argument> {
        let (size, operand) = spec.split_once('@')?;
        let size: i8 = size.parse().ok()?;
        if let Some(constant) = operand.strip_prefix('$') {
            return constant.parse().ok().map(Argument::Constant);
        }
        let reg = register(operand.strip_prefix('%')?)?;
        Some(Argument::Register {
            reg,
            size: size.unsigned_abs(),
            signed: size < 0,
        })
    }

    /// The register to sample, as a `sample_regs_user` mask; 0 for a constant.
    pub fn mask(self) -> u64 {
        match self {
            Argument::Register { reg, .. } => 1u64 << reg,
            Argument::Constant(_) => 0,
        }
    }

    /// The value, from the sampled register.
    pub fn value(self, register: u64) -> u64 {
        match self {
            Argument::Constant(c) => c as u64,
            Argument::Register { size, signed, .. } => {
                let bits = (size.clamp(1, 8) as u32) * 8;
                if bits == 64 {
                    return register;
                }
                let low = register & ((1u64 << bits) - 1);
                match signed && low >> (bits - 1) == 1 {
                    true => (low | !((1u64 << bits) - 1)) as i64 as u64,
                    false => low,
                }
            }
        }
    }
}

/// The `PERF_REG_X86_*` number of a register named in any of its widths.
fn register(name: &str) -> Option<u32> {
    let base = [
        (["rax", "eax", "ax", "al"], b::PERF_REG_X86_AX),
        (["rbx", "ebx", "bx", "bl"], b::PERF_REG_X86_BX),
        (["rcx", "ecx", "cx", "cl"], b::PERF_REG_X86_CX),
        (["rdx", "edx", "dx", "dl"], b::PERF_REG_X86_DX),
        (["rsi", "esi", "si", "sil"], b::PERF_REG_X86_SI),
        (["rdi", "edi", "di", "dil"], b::PERF_REG_X86_DI),
        (["rbp", "ebp", "bp", "bpl"], b::PERF_REG_X86_BP),
        (["rsp", "esp", "sp", "spl"], b::PERF_REG_X86_SP),
    ];
    if let Some((_, reg)) = base.iter().find(|(names, _)| names.contains(&name)) {
        return Some(*reg);
    }
    // r8 … r15, and their d/w/b halves.
    let number: u32 = name
        .strip_prefix('r')?
        .trim_end_matches(['d', 'w', 'b'])
        .parse()
        .ok()?;
    (8..=15)
        .contains(&number)
        .then(|| b::PERF_REG_X86_R8 + (number - 8))
}

/// The USDT probes of `path` (none when it has no `.note.stapsdt`). `Err` is the line to
/// print.
pub fn probes(path: &Path) -> Result<Vec<UsdtProbe>, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !data.starts_with(b"\x7fELF") {
        return Err(format!("{} is not an ELF binary", path.display()));
    }
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{} is not a readable ELF file: {e}", path.display()))?;
    let Some(notes) = file.section_by_name(".note.stapsdt") else {
        return Ok(Vec::new());
    };
    let notes = notes
        .data()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // Addresses in the notes are from link time; `.stapsdt.base` says how far the file
    // moved since (prelink).
    let sdt_base = file.section_by_name(".stapsdt.base").map(|s| s.address());
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            (offset, size.max(s.size()), s.address())
        })
        .collect();
    let to_offset = |address: u64| {
        segments
            .iter()
            .find(|&&(_, size, vaddr)| vaddr <= address && address < vaddr + size)
            .map(|&(offset, _, vaddr)| address - vaddr + offset)
    };
    let mut found = Vec::new();
    for note in parse_notes(notes) {
        let Some(raw) = RawNote::parse(note) else {
            continue;
        };
        let shift = |address: u64| match sdt_base {
            Some(actual) if address != 0 && raw.base != 0 => {
                address.wrapping_add(actual).wrapping_sub(raw.base)
            }
            _ => address,
        };
        let Some(file_offset) = to_offset(shift(raw.pc)) else {
            continue;
        };
        let semaphore_offset = match raw.semaphore {
            0 => 0,
            s => to_offset(shift(s)).unwrap_or(0),
        };
        let start = (file_offset as usize).min(data.len());
        found.push(UsdtProbe {
            path: path.to_owned(),
            provider: raw.provider,
            name: raw.name,
            file_offset,
            semaphore_offset,
            arguments: raw.arguments,
            class: super::cost::InstructionClass::of(&data[start..(start + 16).min(data.len())]),
        });
    }
    Ok(found)
}

/// Every site of USDT probe `provider:name` of `binary` (found as `--probe` finds
/// binaries; a probe in inlined code has several). `Err` is the line to print: no such
/// file or probe, with the probes the file has.
pub fn locate(binary: &str, provider: &str, name: &str) -> Result<Vec<UsdtProbe>, String> {
    let path = super::find_binary(binary)?;
    let all = probes(&path)?;
    let sites: Vec<UsdtProbe> = all
        .iter()
        .filter(|p| p.provider == provider && p.name == name)
        .cloned()
        .collect();
    if sites.is_empty() {
        let has = if all.is_empty() {
            "it has no USDT probes (no .note.stapsdt section)".to_owned()
        } else {
            let mut names: Vec<String> = all
                .iter()
                .map(|p| format!("{}:{}", p.provider, p.name))
                .collect();
            names.sort();
            names.dedup();
            format!("it has {}", names.join(", "))
        };
        return Err(format!(
            "{} has no USDT probe {provider}:{name}; {has}",
            path.display()
        ));
    }
    Ok(sites
        .into_iter()
        .map(|site| UsdtProbe {
            path: path.clone(),
            ..site
        })
        .collect())
}

impl UsdtProbe {
    /// What the kernel is given for this site.
    pub fn point(&self) -> super::ProbePoint {
        super::ProbePoint {
            path: self.path.clone(),
            file_offset: self.file_offset,
            semaphore_offset: self.semaphore_offset,
            function: format!("{}:{}", self.provider, self.name),
            class: self.class,
        }
    }
}

/// The descriptors of the `stapsdt` notes (type 3) of a note section.
fn parse_notes(mut bytes: &[u8]) -> Vec<&[u8]> {
    let word = |b: &[u8], at: usize| -> Option<usize> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let align = |n: usize| (n + 3) & !3;
    let mut descriptors = Vec::new();
    while let (Some(name_size), Some(desc_size), Some(kind)) =
        (word(bytes, 0), word(bytes, 4), word(bytes, 8))
    {
        let name_end = 12 + align(name_size);
        let desc_end = name_end + align(desc_size);
        let (Some(name), Some(desc)) = (
            bytes.get(12..12 + name_size),
            bytes.get(name_end..name_end + desc_size),
        ) else {
            break;
        };
        if kind == 3 && name.starts_with(b"stapsdt") {
            descriptors.push(desc);
        }
        bytes = bytes.get(desc_end..).unwrap_or_default();
    }
    descriptors
}

/// A note's descriptor: pc, base and semaphore addresses, then provider, name and
/// arguments as NUL-terminated strings.
struct RawNote {
    pc: u64,
    base: u64,
    semaphore: u64,
    provider: String,
    name: String,
    arguments: String,
}

impl RawNote {
    fn parse(desc: &[u8]) -> Option<RawNote> {
        let address = |at: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(desc.get(at..at + 8)?.try_into().ok()?))
        };
        let mut strings = desc.get(24..)?.split(|&b| b == 0);
        let mut text = || {
            strings
                .next()
                .map(|s| String::from_utf8_lossy(s).into_owned())
        };
        Some(RawNote {
            pc: address(0)?,
            base: address(8)?,
            semaphore: address(16)?,
            provider: text()?,
            name: text()?,
            arguments: text().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_specs_name_a_register_or_a_constant() {
        assert_eq!(
            Argument::parse("-4@%edi"),
            Some(Argument::Register {
                reg: b::PERF_REG_X86_DI,
                size: 4,
                signed: true
            })
        );
        assert_eq!(
            Argument::parse("8@%r12"),
            Some(Argument::Register {
                reg: b::PERF_REG_X86_R12,
                size: 8,
                signed: false
            })
        );
        assert_eq!(
            Argument::parse("4@%r9d").map(Argument::mask),
            Some(1 << b::PERF_REG_X86_R9)
        );
        assert_eq!(Argument::parse("4@$42"), Some(Argument::Constant(42)));
        assert_eq!(Argument::parse("8@-8(%rbp)"), None);
        assert_eq!(Argument::parse("garbage"), None);
    }

    #[test]
    fn values_are_cut_to_their_size_and_sign_extended() {
        let int = Argument::parse("-4@%eax").unwrap();
        assert_eq!(int.value(0xdead_0000_ffff_fffe) as i64, -2);
        assert_eq!(int.value(7), 7);
        let byte = Argument::parse("1@%al").unwrap();
        assert_eq!(byte.value(0x1ff), 0xff);
    }

    #[test]
    fn a_note_gives_its_probe() {
        let mut desc = Vec::new();
        desc.extend(0x1130u64.to_ne_bytes());
        desc.extend(0x2000u64.to_ne_bytes());
        desc.extend(0u64.to_ne_bytes());
        desc.extend(b"demo\0encode_begin\0-4@%edi\0");
        let mut note = Vec::new();
        note.extend(8u32.to_ne_bytes());
        note.extend((desc.len() as u32).to_ne_bytes());
        note.extend(3u32.to_ne_bytes());
        note.extend(b"stapsdt\0");
        note.extend(&desc);
        while note.len() % 4 != 0 {
            note.push(0);
        }
        let notes = parse_notes(&note);
        assert_eq!(notes.len(), 1);
        let raw = RawNote::parse(notes[0]).unwrap();
        assert_eq!((raw.pc, raw.base), (0x1130, 0x2000));
        assert_eq!(
            (raw.provider.as_str(), raw.name.as_str()),
            ("demo", "encode_begin")
        );
        assert_eq!(raw.arguments, "-4@%edi");
    }
}
