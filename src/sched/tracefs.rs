//! Finding a tracepoint in tracefs: its id (what `perf_event_open` takes as the config of a
//! `PERF_TYPE_TRACEPOINT` event) and where each field of its raw record lies, from its
//! `format` file, so no offset is written down here: they differ between kernels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where tracefs is looked for, in order.
const PLACES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// A field of a tracepoint's raw record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
}

impl Field {
    /// The field's value as an integer (little or big endian as the machine is), or 0 past
    /// the record's end.
    pub fn int(&self, raw: &[u8]) -> i64 {
        let Some(bytes) = raw.get(self.offset..self.offset + self.size) else {
            return 0;
        };
        match self.size {
            1 => bytes[0] as i8 as i64,
            2 => i16::from_ne_bytes([bytes[0], bytes[1]]) as i64,
            4 => i32::from_ne_bytes(bytes.try_into().unwrap()) as i64,
            8 => i64::from_ne_bytes(bytes.try_into().unwrap()),
            _ => 0,
        }
    }

    /// The field as a NUL-terminated string (`char comm[16]`).
    pub fn text<'a>(&self, raw: &'a [u8]) -> &'a [u8] {
        let end = (self.offset + self.size).min(raw.len());
        let bytes = raw.get(self.offset.min(end)..end).unwrap_or_default();
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        &bytes[..len]
    }
}

/// A tracepoint as tracefs describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tracepoint {
    pub id: u64,
    pub fields: HashMap<String, Field>,
}

impl Tracepoint {
    /// The named field, or why the kernel's format lacks it.
    pub fn field(&self, name: &str) -> Result<Field, String> {
        self.fields
            .get(name)
            .copied()
            .ok_or_else(|| format!("this kernel's tracepoint format has no field {name}"))
    }
}

/// The mounted tracefs; as root, mounts it where it is missing (`mount -t tracefs`).
pub fn root() -> Result<PathBuf, String> {
    if let Some(found) = mounted() {
        return Ok(found);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && mount(Path::new(PLACES[0])).is_ok() {
        if let Some(found) = mounted() {
            return Ok(found);
        }
    }
    if let Some(closed) = PLACES.iter().find(|p| not_readable(Path::new(p))) {
        return Err(format!(
            "tracefs at {closed} is not readable by this user (it is mounted, for root only): \
             run framelab as root"
        ));
    }
    Err("tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)".into())
}

/// A place that holds something this user may not look into (tracefs mounted 0700).
fn not_readable(place: &Path) -> bool {
    std::fs::read_dir(place).is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
}

fn mounted() -> Option<PathBuf> {
    PLACES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
}

fn mount(at: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    let c = |s: &str| CString::new(s).expect("no NUL");
    let target = c(&at.to_string_lossy());
    let (source, kind) = (c("nodev"), c("tracefs"));
    // SAFETY: valid NUL-terminated strings; no data argument.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            kind.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Reads `events/<group>/<name>/{id,format}` under `root`.
pub fn tracepoint(root: &Path, group: &str, name: &str) -> Result<Tracepoint, String> {
    let dir = root.join("events").join(group).join(name);
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::PermissionDenied => {
                    " (tracefs is root's: run as root, or mount it readable with mode=755)"
                }
                _ => "",
            };
            format!("cannot read {}: {e}{hint}", dir.join(file).display())
        })
    };
    let id = read("id")?
        .trim()
        .parse()
        .map_err(|_| format!("{}: not a number", dir.join("id").display()))?;
    Ok(Tracepoint {
        id,
        fields: parse_format(&read("format")?),
    })
}

/// The fields of a `format` file: lines like
/// `field:pid_t prev_pid; offset:24; size:4; signed:1;`. Array fields (`char comm[16]`)
/// are named without their brackets.
pub fn parse_format(text: &str) -> HashMap<String, Field> {
    let mut fields = HashMap::new();
    for line in text.lines() {
        let mut declaration = None;
        let (mut offset, mut size) = (None, None);
        for part in line.split(';').map(str::trim) {
            if let Some(d) = part.strip_prefix("field:") {
                declaration = Some(d);
            } else if let Some(o) = part.strip_prefix("offset:") {
                offset = o.parse().ok();
            } else if let Some(s) = part.strip_prefix("size:") {
                size = s.parse().ok();
            }
        }
        let (Some(declaration), Some(offset), Some(size)) = (declaration, offset, size) else {
            continue;
        };
        let Some(last) = declaration.split_whitespace().last() else {
            continue;
        };
        let name = last.split('[').next().unwrap_or(last);
        fields.insert(name.to_owned(), Field { offset, size });
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
        \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\n\
        print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn a_format_file_gives_each_fields_place() {
        let f = parse_format(SWITCH);
        assert_eq!(
            f["prev_comm"],
            Field {
                offset: 8,
                size: 16
            }
        );
        assert_eq!(
            f["prev_state"],
            Field {
                offset: 32,
                size: 8
            }
        );
        assert_eq!(
            f["next_pid"],
            Field {
                offset: 56,
                size: 4
            }
        );
        assert_eq!(f["common_type"], Field { offset: 0, size: 2 });
        assert!(!f.contains_key("print fmt"));
    }

    #[test]
    fn fields_read_from_a_raw_record() {
        let f = parse_format(SWITCH);
        let mut raw = vec![0u8; 64];
        raw[8..12].copy_from_slice(b"hog\0");
        raw[56..60].copy_from_slice(&4242i32.to_ne_bytes());
        assert_eq!(f["prev_comm"].text(&raw), b"hog");
        assert_eq!(f["next_pid"].int(&raw), 4242);
        // Short records read as zeros, never out of bounds.
        assert_eq!(f["next_pid"].int(&raw[..20]), 0);
        assert_eq!(f["next_comm"].text(&raw[..10]), b"");
    }

    #[test]
    fn garbage_gives_no_fields() {
        assert!(parse_format("field:;offset:x;size:;\n;;;\nfield:int a;offset:1").is_empty());
    }
}
