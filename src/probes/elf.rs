//! What a probe needs of a binary: its functions (from `.symtab`, or `.dynsym` when it is
//! stripped but exports them), where each lies in the file (a uprobe is placed at a file
//! offset, not an address), and the bytes it starts with (they decide what a hit costs).
//! Read with `object`.

use std::path::Path;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// A function of a binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    /// Virtual address as the file states it.
    pub address: u64,
    pub size: u64,
    /// Where its first byte lies in the file.
    pub file_offset: u64,
}

/// The functions of one ELF file, and its bytes (for their first instructions).
pub struct Binary {
    pub functions: Vec<Function>,
    data: Vec<u8>,
}

impl Binary {
    /// Reads `path`. `Err` is the line to print: unreadable, or not ELF.
    pub fn read(path: &Path) -> Result<Binary, String> {
        let data =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if !data.starts_with(b"\x7fELF") {
            return Err(format!(
                "{} is not an ELF binary (a script or a data file?): give the executable or \
                 shared library that holds the function",
                path.display()
            ));
        }
        let file = object::File::parse(&*data)
            .map_err(|e| format!("{} is not a readable ELF file: {e}", path.display()))?;
        // (file offset, file size, vaddr) of each loadable segment.
        let segments: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, size, s.address())
            })
            .collect();
        let mut functions = Vec::new();
        // `.symtab` has everything an unstripped binary holds; `.dynsym` what it exports.
        for symbol in file.symbols().chain(file.dynamic_symbols()) {
            if symbol.kind() != SymbolKind::Text || !symbol.is_definition() {
                continue;
            }
            let (Ok(name), address) = (symbol.name(), symbol.address()) else {
                continue;
            };
            if name.is_empty() || address == 0 {
                continue;
            }
            let Some(file_offset) = file_offset(&segments, address) else {
                continue;
            };
            functions.push(Function {
                name: name.to_owned(),
                address,
                size: symbol.size(),
                file_offset,
            });
        }
        functions.sort_by(|a, b| (a.name.as_str(), a.address).cmp(&(b.name.as_str(), b.address)));
        functions.dedup_by(|a, b| a.name == b.name && a.address == b.address);
        Ok(Binary { functions, data })
    }

    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The function whose bytes hold `file_offset`.
    pub fn function_at(&self, file_offset: u64) -> Option<&Function> {
        self.functions
            .iter()
            .find(|f| f.file_offset <= file_offset && file_offset < f.file_offset + f.size.max(1))
    }

    /// Up to 16 bytes from `file_offset`.
    pub fn bytes_at(&self, file_offset: u64) -> &[u8] {
        let start = (file_offset as usize).min(self.data.len());
        &self.data[start..(start + 16).min(self.data.len())]
    }

    /// Function names close to `name`, best first: those containing it (or contained in
    /// it), then those a few edits away.
    pub fn near(&self, name: &str, most: usize) -> Vec<&str> {
        let wanted = name.to_lowercase();
        let mut scored: Vec<(usize, &str)> = self
            .functions
            .iter()
            .map(|f| f.name.as_str())
            .filter_map(|candidate| {
                let lower = candidate.to_lowercase();
                if lower.contains(&wanted) || (lower.len() >= 4 && wanted.contains(&lower)) {
                    return Some((lower.len().abs_diff(wanted.len()), candidate));
                }
                let distance = edit_distance(&lower, &wanted);
                (distance <= wanted.len() / 3 + 1).then_some((100 + distance, candidate))
            })
            .collect();
        scored.sort();
        scored.dedup_by(|a, b| a.1 == b.1);
        scored.into_iter().take(most).map(|(_, n)| n).collect()
    }
}

/// Where virtual address `address` lies in the file, from the loadable segments.
fn file_offset(segments: &[(u64, u64, u64)], address: u64) -> Option<u64> {
    segments
        .iter()
        .find(|&&(_, size, vaddr)| vaddr <= address && address < vaddr + size)
        .map(|&(offset, _, vaddr)| address - vaddr + offset)
}

/// Levenshtein distance over bytes.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_changes() {
        assert_eq!(edit_distance("encode_frame", "encode_frame"), 0);
        assert_eq!(edit_distance("encode_frame", "encode_frams"), 1);
        assert_eq!(edit_distance("encode", "decode"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn addresses_map_to_file_offsets_through_their_segment() {
        let segments = [(0, 0x1000, 0), (0x1000, 0x2000, 0x401000)];
        assert_eq!(file_offset(&segments, 0x401234), Some(0x1234));
        assert_eq!(file_offset(&segments, 0x10), Some(0x10));
        assert_eq!(file_offset(&segments, 0x900000), None);
    }

    #[test]
    fn the_test_binary_itself_has_functions_with_offsets() {
        let binary = Binary::read(&std::env::current_exe().unwrap()).unwrap();
        assert!(binary.functions.len() > 100);
        let main = binary.function("main").expect("a main");
        assert!(main.file_offset > 0);
        assert_eq!(binary.function_at(main.file_offset).unwrap().name, "main");
        assert!(binary.near("mian", 5).contains(&"main"));
    }

    #[test]
    fn a_text_file_is_refused_as_not_elf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.sh");
        std::fs::write(&path, "#!/bin/sh\necho hi\n").unwrap();
        let error = Binary::read(&path).err().unwrap();
        assert!(error.contains("is not an ELF binary"), "{error}");
    }
}
