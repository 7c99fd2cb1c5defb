//! Importers: traces and logs other tools wrote, read into ordinary runs so `report`,
//! `hist`, `compare` and `export` work on them unchanged. One module per format; each
//! exposes `parse(input, &mut TraceBuilder)` and never panics on any input (fuzzed).

mod builder;
mod decimal;
pub mod detect;
mod in_order;
pub mod keys;
#[cfg(test)]
mod test_support;

pub mod bpftrace;
pub mod chrome;
pub mod ffmpeg;
pub mod generic;
pub mod mangohud;
pub mod perfetto;
pub mod presentmon;
pub mod wayland;
pub mod write;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use builder::TraceBuilder;

use crate::analyze::pair::PairSpec;
use crate::model::{Run, RunMeta};

/// The formats `framelab import` reads, each parsed by the module of its name (`parser`).
/// What each one is, as users read it, is said once: in the `--format` help
/// (`ImportFormat` in the binary's `cli/choices.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Chrome,
    Perfetto,
    Wayland,
    Presentmon,
    Mangohud,
    Ffmpeg,
    Bpftrace,
    Csv,
    Jsonl,
}

impl Format {
    pub const ALL: [Format; 9] = [
        Format::Chrome,
        Format::Perfetto,
        Format::Wayland,
        Format::Presentmon,
        Format::Mangohud,
        Format::Ffmpeg,
        Format::Bpftrace,
        Format::Csv,
        Format::Jsonl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Chrome => "chrome",
            Format::Perfetto => "perfetto",
            Format::Wayland => "wayland",
            Format::Presentmon => "presentmon",
            Format::Mangohud => "mangohud",
            Format::Ffmpeg => "ffmpeg",
            Format::Bpftrace => "bpftrace",
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
        }
    }

    fn parser(self) -> fn(&[u8], &mut TraceBuilder) -> Result<(), ImportError> {
        match self {
            Format::Chrome => chrome::parse,
            Format::Perfetto => perfetto::parse,
            Format::Wayland => wayland::parse,
            Format::Presentmon => presentmon::parse,
            Format::Mangohud => mangohud::parse,
            Format::Ffmpeg => ffmpeg::parse,
            Format::Bpftrace => bpftrace::parse,
            Format::Csv => generic::parse_csv,
            Format::Jsonl => generic::parse_jsonl,
        }
    }
}

/// Unit of bare numbers in generic CSV/JSONL times (`--time-unit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeUnit {
    #[default]
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    pub fn ns_per_unit(self) -> i64 {
        match self {
            TimeUnit::Ns => 1,
            TimeUnit::Us => 1_000,
            TimeUnit::Ms => 1_000_000,
            TimeUnit::S => 1_000_000_000,
        }
    }
}

/// What the user told the importer beyond the files.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The argument holding a slice's frame id (Chrome `args`, Perfetto debug annotations).
    pub frame_arg: Option<String>,
    /// A regular expression on a slice's name whose first group is the frame id; a group
    /// named `stage` gives the stage, else the stage is the name with the match removed.
    pub frame_regex: Option<regex::Regex>,
    /// `--pair START:END`: instant events paired by key into spans.
    pub pairs: Vec<PairSpec>,
    /// `--key FIELD`: the argument or column holding an event's key.
    pub key: Option<String>,
    /// Count malformed records and go on instead of stopping at the first.
    pub skip_bad: bool,
    /// Generic CSV/JSONL: `FIELD=COLUMN` (fields: start, end, dur, time, name, frame,
    /// thread, pid, key).
    pub map: Vec<(String, String)>,
    /// Generic CSV/JSONL: the unit of bare time numbers.
    pub time_unit: TimeUnit,
    /// Keep only this process (PresentMon's Application, a Chrome/Perfetto process name).
    pub process: Option<String>,
    /// `--time-unit` was given (not only its default), so it must apply to the format.
    pub time_unit_given: bool,
}

impl ImportOptions {
    /// Refuses an option the format never reads (`--process` on a MangoHud log, `--map` on
    /// a Chrome trace): it would be ignored, and the run not what was asked for.
    pub fn refuse_unused(&self, format: Format) -> anyhow::Result<()> {
        use Format::*;
        let given: [(&str, bool, &[Format]); 7] = [
            ("--frame-arg", self.frame_arg.is_some(), &[Chrome, Perfetto]),
            (
                "--frame-regex",
                self.frame_regex.is_some(),
                &[Chrome, Perfetto],
            ),
            (
                "--pair",
                !self.pairs.is_empty(),
                &[Chrome, Perfetto, Wayland, Presentmon, Csv, Jsonl],
            ),
            ("--key", self.key.is_some(), &[Chrome, Perfetto, Csv, Jsonl]),
            ("--map", !self.map.is_empty(), &[Csv, Jsonl]),
            ("--time-unit", self.time_unit_given, &[Csv, Jsonl]),
            (
                "--process",
                self.process.is_some(),
                &[Chrome, Perfetto, Presentmon],
            ),
        ];
        for (option, is_given, formats) in given {
            if is_given && !formats.contains(&format) {
                let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
                crate::bail_usage!(
                    "{option} does not apply to {} input (it is read for {} only): leave it out",
                    format.name(),
                    names.join(", ")
                );
            }
        }
        Ok(())
    }

    /// The frame id and stage name carried by a slice's name, per `--frame-regex`.
    pub fn frame_in_name(&self, name: &str) -> Option<(u64, String)> {
        let re = self.frame_regex.as_ref()?;
        let caps = re.captures(name)?;
        let frame_group = (re.capture_names().enumerate().skip(1))
            .find(|(_, group)| *group != Some("stage"))
            .map(|(i, _)| i)?;
        let id = caps.get(frame_group)?;
        let frame = keys::key_of(id.as_str());
        let stage = match caps.name("stage") {
            Some(stage) => stage.as_str().to_owned(),
            None => {
                let whole = caps.get(0)?.range();
                let rest = format!("{}{}", &name[..whole.start], &name[whole.end..]);
                let trimmed =
                    rest.trim_matches(|c: char| c.is_whitespace() || "#:-_/.,".contains(c));
                if trimmed.is_empty() {
                    name.to_owned()
                } else {
                    trimmed.to_owned()
                }
            }
        };
        Some((frame, stage))
    }
}

/// Where in a file something went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// 1-based line number.
    Line(u64),
    /// 0-based byte offset (binary formats, JSON).
    Byte(u64),
    /// The file as a whole (empty, nothing recognisable).
    Whole,
}

/// An import failure, printed as `FILE:LINE: what is wrong`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub file: String,
    pub at: Location,
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Location::Line(n) => write!(f, "{}:{n}: {}", self.file, self.message),
            Location::Byte(n) => write!(f, "{}: at byte {n}: {}", self.file, self.message),
            Location::Whole => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ImportError {}

/// Parses `input` (already decompressed) as `format` into a run: the fuzz targets' entry.
pub fn parse_bytes(format: Format, input: &[u8], opts: ImportOptions) -> Result<Run, ImportError> {
    let mut b = TraceBuilder::new(format.name(), opts);
    b.start_file("input");
    (format.parser())(input, &mut b)?;
    b.finish(RunMeta::default())
}

/// How much an import may read: the bytes of one input after decompression, and how many
/// times its compressed size a gzip input may grow beyond `RATIO_FREE_BYTES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputLimits {
    pub max_bytes: u64,
    pub max_ratio: u64,
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_bytes: 1 << 30,
            max_ratio: 200,
        }
    }
}

/// A gzip input may decompress to this much whatever its ratio: small compressed files of
/// very repetitive logs are genuine.
pub const RATIO_FREE_BYTES: u64 = 64 << 20;

/// A file's bytes, gunzipped when it starts with the gzip magic, within the default limits.
pub fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    read_input_within(path, InputLimits::default())
}

/// `n` bytes in MiB or GiB, for messages.
fn size(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    }
}

/// At most `max + 1` bytes of `reader` (one more than allowed tells it went on), in a
/// buffer that never grows past that: doubling would hold twice the limit.
fn read_capped(reader: impl Read, max: u64, expected: u64) -> std::io::Result<Vec<u8>> {
    let cap = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity(usize::try_from(expected).unwrap_or(0).min(cap));
    let mut reader = reader.take(cap as u64);
    let mut chunk = vec![0u8; 256 << 10];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if out.len() + n > out.capacity() {
            // Doubling, but never past the cap.
            let grow = out.capacity().max(n).min(cap - out.len());
            out.reserve_exact(grow.max(n));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// A file's bytes, gunzipped when it starts with the gzip magic: never more than
/// `limits.max_bytes` in memory (a FIFO or `/dev/zero` is read only that far), and a gzip
/// input stops growing past `limits.max_ratio` times its own size (a decompression bomb).
pub fn read_input_within(path: &Path, limits: InputLimits) -> anyhow::Result<Vec<u8>> {
    let shown = path.display();
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot read {shown}: {e}");
    let file = std::fs::File::open(path).map_err(cannot)?;
    let too_big = || {
        anyhow::anyhow!(
            "{shown} holds more than {}, the most an import reads (--max-input); raise \
             --max-input if the file is genuine",
            size(limits.max_bytes)
        )
    };
    let regular_len = file
        .metadata()
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len());
    if regular_len.is_some_and(|len| len > limits.max_bytes) {
        return Err(too_big());
    }
    let bytes = read_capped(file, limits.max_bytes, regular_len.unwrap_or(0)).map_err(cannot)?;
    if bytes.len() as u64 > limits.max_bytes {
        return Err(too_big());
    }
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    let by_ratio = (bytes.len() as u64)
        .saturating_mul(limits.max_ratio)
        .max(RATIO_FREE_BYTES);
    let cap = by_ratio.min(limits.max_bytes);
    let out = read_capped(
        flate2::read::MultiGzDecoder::new(&bytes[..]),
        cap,
        bytes.len() as u64 * 4,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "{shown} is gzip-compressed but cannot be decompressed ({e}): is it truncated? \
                 `gzip -t {shown}` checks it"
        )
    })?;
    if out.len() as u64 > cap {
        if cap == limits.max_bytes {
            return Err(anyhow::anyhow!(
                "{shown} decompresses to more than {}, the most an import reads (--max-input); \
                 raise --max-input if the file is genuine",
                size(limits.max_bytes)
            ));
        }
        return Err(anyhow::anyhow!(
            "{shown} decompresses to more than {} times its {} bytes (over {}): it looks like a \
             decompression bomb; if it is genuine, raise --max-ratio",
            limits.max_ratio,
            bytes.len(),
            size(cap)
        ));
    }
    Ok(out)
}

/// Reads `paths` (one format for all; detected from the first when `format` is `None`)
/// into one run described by `meta`, each input within `limits`.
pub fn import_files(
    paths: &[PathBuf],
    format: Option<Format>,
    opts: ImportOptions,
    meta: RunMeta,
    limits: InputLimits,
) -> anyhow::Result<Run> {
    let mut builder: Option<TraceBuilder> = None;
    for path in paths {
        let input = read_input_within(path, limits)?;
        let shown = path.display().to_string();
        let this = match format {
            Some(f) => f,
            None => detect::detect(&input).ok_or_else(|| {
                anyhow::anyhow!(
                    "{shown}: cannot tell its format from the content; pass --format with one \
                     of {}",
                    Format::ALL.map(Format::name).join(", ")
                )
            })?,
        };
        if builder.is_none() {
            opts.refuse_unused(this)?;
        }
        let b = builder.get_or_insert_with(|| TraceBuilder::new(this.name(), opts.clone()));
        if b.format() != this.name() {
            anyhow::bail!(
                "{shown} looks like {} but the files before it are {}; import one format at a \
                 time, or pass --format",
                this.name(),
                b.format()
            );
        }
        b.start_file(&shown);
        (this.parser())(&input, b)?;
    }
    let b = builder.ok_or_else(|| anyhow::anyhow!("no input files; name at least one"))?;
    Ok(b.finish(meta)?)
}
