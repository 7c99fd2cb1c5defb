//! `framelab probes`: what a binary offers to probe (its functions with the first
//! instruction each starts with, its USDT probe sites) and, with `--cost`, what a probe
//! costs on this machine, as one document of tables with typed cells. The command prints
//! it through the common text writer (`render::document`); nothing here prints.

use std::path::PathBuf;

use super::cost::{self, Calibration, InstructionClass, Shape};
use super::elf::Binary;
use super::usdt::UsdtProbe;
use crate::render::document::{Block, Document};
use crate::render::line::{plain, Span};
use crate::render::table::Layout;
use crate::render::{Table, Value};

/// What `framelab probes` was asked: the costs, a binary's functions, or both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListingRequest {
    /// `--cost`: measure what a probed call costs here, by first instruction.
    pub cost: bool,
    /// The executable or library: a path, a program on PATH, or a soname.
    pub binary: Option<String>,
    /// Part of a function's (or a USDT probe's) name; empty: every one.
    pub pattern: String,
}

/// The listing asked for. The binary is found and read first, so a wrong name is refused
/// before the costs are measured; `Err` is the line to print.
pub fn listing(request: &ListingRequest) -> Result<Document, String> {
    let listed = match &request.binary {
        Some(binary) => Some(Listed::read(binary, &request.pattern)?),
        None => None,
    };
    let mut blocks = Vec::new();
    if request.cost {
        blocks.extend(cost_blocks(&measure_costs()?));
    }
    if let Some(listed) = &listed {
        blocks.extend(listed.blocks());
    }
    // `probes` writes text alone (`render::format::PROBES`): no JSON form.
    Ok(Document {
        blocks,
        json: String::new(),
    })
}

/// What one class of first instruction costs a probed thread, measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassCost {
    pub class: InstructionClass,
    /// An entry probe alone.
    pub entry: Calibration,
    /// An entry and a return probe: a `--probe` span.
    pub call: Calibration,
}

/// What probes cost here: each class of first instruction, and a USDT pair on a `nop`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Costs {
    pub classes: Vec<ClassCost>,
    pub usdt_pair: Calibration,
}

/// Each class measured here and now (needs the uprobe PMU: root or CAP_SYS_ADMIN).
fn measure_costs() -> Result<Costs, String> {
    let pmu = super::uprobe::Pmu::find()?;
    let mut classes = Vec::new();
    for class in InstructionClass::ALL {
        classes.push(ClassCost {
            class,
            entry: cost::measure(&pmu, class, Shape::Entry)?,
            call: cost::measure(&pmu, class, Shape::Call)?,
        });
    }
    let usdt_pair = cost::measure(&pmu, InstructionClass::Nop1, Shape::Pair)?;
    Ok(Costs { classes, usdt_pair })
}

/// `--cost`'s table: each class's entry, entry + return and the part inside the span (what
/// a run subtracts from each span), in µs.
pub fn cost_blocks(costs: &Costs) -> Vec<Block> {
    let us = |ns: i64| Value::fixed(ns as f64 / 1e3, 1);
    let in_span = |c: &Calibration| c.in_span_ns.map_or(Value::Missing("?"), us);
    // The last column holds no figure: its header names the unit of the others.
    let mut table = Table::new(&[
        "first instruction",
        "entry",
        "entry + return",
        "in the span",
        "µs",
    ])
    .with_layout(Layout {
        first_gap: 1,
        min_widths: vec![23, 7, 16, 13],
        cut: usize::MAX,
        ..Layout::default()
    });
    for c in &costs.classes {
        table.push(vec![
            c.class.describe().into(),
            us(c.entry.per_call_ns),
            us(c.call.per_call_ns),
            in_span(&c.call),
            Value::Missing(""),
        ]);
    }
    table.push(vec![
        "USDT begin + end (nop)".into(),
        Value::Missing(""),
        us(costs.usdt_pair.per_call_ns),
        in_span(&costs.usdt_pair),
        Value::Missing(""),
    ]);
    vec![
        Block::Heading(plain(
            "what a probe costs the probed thread, by the first instruction probed:",
        )),
        Block::TableUnder(table),
        Block::Heading(plain(
            "(\"in the span\": the part of a call's cost between its span's two timestamps, \
             taken off each span)",
        )),
    ]
}

/// A binary's functions and USDT probe sites matching a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The file, as found.
    pub path: PathBuf,
    pub pattern: String,
    /// How many functions the file has, matching or not.
    pub total: usize,
    pub functions: Vec<ListedFunction>,
    /// With no function matching: the closest names.
    pub near: Vec<String>,
    pub usdt: Vec<UsdtProbe>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedFunction {
    pub file_offset: u64,
    pub size: u64,
    pub class: InstructionClass,
    pub name: String,
}

impl Listed {
    /// Finds `binary` and reads what of it matches `pattern`.
    pub fn read(binary: &str, pattern: &str) -> Result<Listed, String> {
        let path = super::find_binary(binary)?;
        let elf = Binary::read(&path)?;
        let functions: Vec<ListedFunction> = (elf.functions.iter())
            .filter(|f| f.name.contains(pattern))
            .map(|f| ListedFunction {
                file_offset: f.file_offset,
                size: f.size,
                class: InstructionClass::of(elf.bytes_at(f.file_offset)),
                name: f.name.clone(),
            })
            .collect();
        let near = match functions.is_empty() && !pattern.is_empty() {
            true => elf
                .near(pattern, 5)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            false => Vec::new(),
        };
        let usdt = (super::usdt::probes(&path)?.into_iter())
            .filter(|p| p.name.contains(pattern) || p.provider.contains(pattern))
            .collect();
        Ok(Listed {
            path,
            pattern: pattern.to_owned(),
            total: elf.functions.len(),
            functions,
            near,
            usdt,
        })
    }

    /// The file and its count, the functions' table, the near matches, the USDT sites.
    pub fn blocks(&self) -> Vec<Block> {
        let matching = match self.pattern.is_empty() {
            true => String::new(),
            false => format!(" matching {:?} (of {})", self.pattern, self.total),
        };
        let mut blocks = vec![Block::Heading(vec![
            Span::name(self.path.display().to_string()),
            Span::plain(format!(
                " · {}{matching}",
                crate::units::plural(self.functions.len() as u64, "function", "functions")
            )),
        ])];
        if !self.functions.is_empty() {
            blocks.push(Block::TableUnder(self.functions_table()));
        }
        if !self.near.is_empty() {
            blocks.push(Block::Paragraph(plain(format!(
                "near matches: {}",
                self.near.join(", ")
            ))));
        }
        if !self.usdt.is_empty() {
            blocks.push(Block::Heading(plain(format!(
                "{} USDT probe sites (--usdt, --usdt-event)",
                self.usdt.len()
            ))));
            blocks.push(Block::TableUnder(self.usdt_table()));
        }
        blocks
    }

    fn functions_table(&self) -> Table {
        let mut table = Table::new(&["offset", "size", "first instruction", "function"])
            .with_names(&[], &[3])
            .with_layout(listing_layout(vec![8, 8, 25], vec![2, 3]));
        for f in &self.functions {
            table.push(vec![
                offset(f.file_offset),
                Value::Count(f.size as i64),
                f.class.describe().into(),
                (&f.name).into(),
            ]);
        }
        table
    }

    fn usdt_table(&self) -> Table {
        let mut table = Table::new(&["offset", "semaphore", "probe", "arguments"])
            .with_names(&[], &[2, 3])
            .with_layout(listing_layout(vec![8, 11, 30], vec![2, 3]));
        for p in &self.usdt {
            table.push(vec![
                offset(p.file_offset),
                match p.semaphore_offset {
                    0 => Value::Missing("-"),
                    at => Value::Offset {
                        offset: at,
                        digits: 0,
                    },
                },
                format!("{}:{}", p.provider, p.name).into(),
                (&p.arguments).into(),
            ]);
        }
        table
    }
}

/// A place in the file as the listing shows it: at least six hex digits.
fn offset(at: u64) -> Value {
    Value::Offset {
        offset: at,
        digits: 6,
    }
}

/// The listing's tables: the offset first, each column at least its width in each line
/// (a longer name pushes only its own line right, as the listing always printed), names
/// whole (a C++ function's can be long).
fn listing_layout(min_widths: Vec<usize>, words: Vec<usize>) -> Layout {
    Layout {
        min_widths,
        words,
        cut: usize::MAX,
        ragged: true,
        ..Layout::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::document::write;
    use crate::render::format::{Format, PROBES};

    fn text(blocks: Vec<Block>) -> String {
        let document = Document {
            blocks,
            json: String::new(),
        };
        write(&document, Format::Text, &PROBES).unwrap()
    }

    fn calibration(per_call_ns: i64, in_span_ns: Option<i64>) -> Calibration {
        Calibration {
            per_call_ns,
            in_span_ns,
        }
    }

    /// The layout `framelab probes --cost` printed before it was a document, kept.
    #[test]
    fn the_costs_table_keeps_its_columns_and_says_its_unit_last() {
        let classes = [
            (InstructionClass::Nop5, 1_100, 2_300, Some(1_200)),
            (InstructionClass::Endbr64, 24_400, 61_500, Some(9_700)),
            (InstructionClass::SingleStep, 16_000, 51_600, None),
        ];
        let costs = Costs {
            classes: (classes.iter())
                .map(|&(class, entry, call, in_span)| ClassCost {
                    class,
                    entry: calibration(entry, None),
                    call: calibration(call, in_span),
                })
                .collect(),
            usdt_pair: calibration(2_100, Some(1_000)),
        };
        assert_eq!(
            text(cost_blocks(&costs)),
            "what a probe costs the probed thread, by the first instruction probed:\n  \
             first instruction        entry  entry + return  in the span  µs\n  \
             5-byte nop, trampoline     1.1             2.3          1.2\n  \
             endbr64                   24.4            61.5          9.7\n  \
             single-stepped            16.0            51.6            ?\n  \
             USDT begin + end (nop)                     2.1          1.0\n\
             (\"in the span\": the part of a call's cost between its span's two timestamps, \
             taken off each span)\n"
        );
    }

    fn python() -> Listed {
        let function = |file_offset, size, name: &str| ListedFunction {
            file_offset,
            size,
            class: InstructionClass::SingleStep,
            name: name.into(),
        };
        let usdt = |name: &str, file_offset, semaphore_offset, arguments: &str| UsdtProbe {
            path: "/usr/bin/python3.11".into(),
            provider: "python".into(),
            name: name.into(),
            file_offset,
            semaphore_offset,
            arguments: arguments.into(),
            class: InstructionClass::Nop1,
        };
        Listed {
            path: "/usr/bin/python3.11".into(),
            pattern: "gc".into(),
            total: 1473,
            functions: vec![
                function(0x26a160, 10, "PyInit_gc"),
                function(0x068007, 20, "Py_GetArgcArgv"),
            ],
            near: Vec::new(),
            usdt: vec![
                usdt("gc__done", 0x02873b, 0x683270, "-8@%r12"),
                usdt("gc__start", 0x0287f3, 0, "-4@112(%rsp)"),
                usdt("import__find__load__done", 0x05275a, 0x683274, ""),
            ],
        }
    }

    /// As `framelab probes /usr/bin/python3.11 gc` printed it before it was a document:
    /// a probe's long name pushes its own line right, no arguments keep the padding.
    #[test]
    fn a_listing_shows_functions_then_usdt_sites_in_their_columns() {
        assert_eq!(
            text(python().blocks()),
            "/usr/bin/python3.11 · 2 functions matching \"gc\" (of 1473)\n  \
             offset      size  first instruction        function\n  \
             0x26a160      10  single-stepped           PyInit_gc\n  \
             0x068007      20  single-stepped           Py_GetArgcArgv\n\
             3 USDT probe sites (--usdt, --usdt-event)\n  \
             offset    semaphore  probe                         arguments\n  \
             0x02873b   0x683270  python:gc__done               -8@%r12\n  \
             0x0287f3          -  python:gc__start              -4@112(%rsp)\n  \
             0x05275a   0x683274  python:import__find__load__done  \n"
        );
    }

    #[test]
    fn no_match_says_the_near_names_and_a_name_from_the_file_reaches_no_terminal_raw() {
        let listed = Listed {
            pattern: "mallc".into(),
            total: 2567,
            functions: Vec::new(),
            near: vec!["malloc".into(), "calloc".into()],
            usdt: Vec::new(),
            ..python()
        };
        assert_eq!(
            text(listed.blocks()),
            "/usr/bin/python3.11 · 0 functions matching \"mallc\" (of 2567)\n  \
             near matches: malloc, calloc\n"
        );
        let mut hostile = python();
        hostile.functions[0].name = "evil\x1b[2J".into();
        hostile.functions[1].name = "x".repeat(300);
        let shown = text(hostile.blocks());
        assert!(shown.contains("evil\\x1b[2J"), "{shown}");
        assert!(
            shown.contains(&"x".repeat(300)),
            "long names are shown whole"
        );
    }
}
