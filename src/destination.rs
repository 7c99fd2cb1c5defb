//! Every file framelab writes goes through here: what the path given with `-o` is, and how
//! to write it without harming anything else there (docs/run-file.md, "Where framelab
//! writes").
//!
//! - A regular file written whole (an export) is written under an unpredictable temporary
//!   name in its own directory, created with `O_CREAT|O_EXCL` (which never follows a link
//!   planted there), synced, then renamed over the target: a failed write leaves the old
//!   file as it was, and nothing else is ever touched.
//! - A character device, a FIFO and `-` (standard output) are written as streams: opened
//!   without creating or truncating, never replaced. A block device is refused.
//! - The null device means "keep nothing".
//! - A symbolic link is followed only when it and every link after it belong to you or to
//!   root, and only to something that exists; the link itself is never replaced. A link
//!   owned by someone else is how a link planted in a shared directory makes framelab write
//!   where its planter chose.
//! - Run files are SQLite databases written in place as the run goes: only regular files,
//!   created exclusively, with no planted link at SQLite's journal names beside them.

use std::fs::{self, Metadata, OpenOptions, Permissions};
use std::io::{self, BufWriter, ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use crate::write_behind::WriteBehind;

/// Links followed before giving up (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// What a path given as an output is.
#[derive(Debug)]
pub enum Target {
    /// `-`, or `/dev/stdout`: framelab's standard output.
    Stdout,
    /// A node of the null device: nothing is kept.
    Null(PathBuf),
    /// A character device, a FIFO, or one of framelab's own descriptors (`/dev/fd/N`).
    Stream { path: PathBuf, kind: &'static str },
    /// A regular file, `path` after following links; `existing` when it is replaced.
    File {
        path: PathBuf,
        existing: Option<Metadata>,
    },
}

impl Target {
    /// Tells what `given` is, following links only as the module comment says.
    pub fn resolve(given: &Path) -> Result<Target> {
        if given.as_os_str() == "-" || given == Path::new("/dev/stdout") {
            return Ok(Target::Stdout);
        }
        if is_descriptor(given) {
            return Ok(Target::Stream {
                path: given.to_owned(),
                kind: "an open file of framelab's",
            });
        }
        let path = follow_links(given)?;
        match fs::symlink_metadata(&path) {
            Ok(meta) => classify(given, path, meta),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                check_parent(given, &path)?;
                Ok(Target::File {
                    path,
                    existing: None,
                })
            }
            Err(e) => bail!("cannot write {}: {e}", given.display()),
        }
    }

    /// The path written to, for messages and identity checks (`None` for standard output).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Target::Stdout => None,
            Target::Null(path) | Target::Stream { path, .. } | Target::File { path, .. } => {
                Some(path)
            }
        }
    }

    /// Refuses to write over `input` (the file being read): compared by device and inode,
    /// so another name, a hard link or a symbolic link to it is caught too.
    pub fn refuse_overwriting(&self, given: &Path, input: &Path) -> Result<()> {
        let (Some(out), Ok(inp)) = (
            self.path().and_then(|p| fs::metadata(p).ok()),
            fs::metadata(input),
        ) else {
            return Ok(());
        };
        if out.dev() == inp.dev() && out.ino() == inp.ino() {
            bail!(
                "refusing to write {} over {}, the file being read: give another -o",
                given.display(),
                input.display()
            );
        }
        Ok(())
    }
}

/// `/dev/fd/N`, `/proc/self/fd/N`, `/dev/stderr`: framelab's own open files, written
/// where they already point.
fn is_descriptor(path: &Path) -> bool {
    path == Path::new("/dev/stderr")
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/")
        || path.starts_with(format!("/proc/{}/fd/", std::process::id()))
}

/// `given` with every symbolic link at its end followed, each checked: owned by us or
/// root, pointing to something that exists.
fn follow_links(given: &Path) -> Result<PathBuf> {
    let me = unsafe_geteuid();
    let mut path = given.to_owned();
    for _ in 0..MAX_LINKS {
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound && path != given => bail!(
                "refusing to write through {}: it is a symbolic link to {}, which does not \
                 exist; give the path itself if you mean to create it",
                given.display(),
                path.display()
            ),
            Err(_) => return Ok(path),
        };
        if !meta.file_type().is_symlink() {
            return Ok(path);
        }
        if meta.uid() != me && meta.uid() != 0 {
            bail!(
                "refusing to write through {}: {} is a symbolic link owned by another user \
                 (uid {}), who chose where it points; give the path it points to if you mean it",
                given.display(),
                path.display(),
                meta.uid()
            );
        }
        let target =
            fs::read_link(&path).map_err(|e| anyhow!("cannot write {}: {e}", given.display()))?;
        path = match path.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
        if is_descriptor(&path) {
            return Ok(path);
        }
    }
    bail!(
        "cannot write {}: too many levels of symbolic links",
        given.display()
    )
}

fn unsafe_geteuid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// The null device: character device 1:3 on Linux, whatever its name.
fn is_null_device(meta: &Metadata) -> bool {
    meta.file_type().is_char_device()
        && libc::major(meta.rdev()) == 1
        && libc::minor(meta.rdev()) == 3
}

fn classify(given: &Path, path: PathBuf, meta: Metadata) -> Result<Target> {
    let kind = meta.file_type();
    let shown = given.display();
    if kind.is_file() {
        Ok(Target::File {
            path,
            existing: Some(meta),
        })
    } else if kind.is_dir() {
        bail!(
            "cannot write {shown}: it is a directory; pass a file path such as {}",
            given.join("out").display()
        )
    } else if is_null_device(&meta) {
        Ok(Target::Null(path))
    } else if kind.is_char_device() {
        Ok(Target::Stream {
            path,
            kind: "a character device",
        })
    } else if kind.is_fifo() {
        Ok(Target::Stream {
            path,
            kind: "a FIFO",
        })
    } else if kind.is_block_device() {
        bail!("refusing to write to {shown}: it is a block device (a disk); give a file path")
    } else if kind.is_socket() {
        bail!("cannot write to {shown}: it is a socket, which cannot be opened as a file; give a file path or - for standard output")
    } else {
        bail!("cannot write to {shown}: it is neither a file nor a device; give a file path")
    }
}

/// A new file's directory must exist (SQLite and rename would fail less clearly).
fn check_parent(given: &Path, path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => bail!(
            "cannot create {}: {} is not a directory; choose another output path",
            given.display(),
            parent.display()
        ),
        Err(_) => bail!(
            "cannot create {}: directory {} does not exist; create it or choose another output path",
            given.display(),
            parent.display()
        ),
    }
}

/// Why a write failed, in words, from the first I/O error in `error`'s causes.
pub fn io_reason(error: &anyhow::Error) -> String {
    match io_of(error).and_then(io::Error::raw_os_error) {
        Some(libc::ENOSPC) => {
            "no space left on the device (ENOSPC); free some space or write elsewhere".into()
        }
        Some(libc::EDQUOT) => {
            "the disk quota is exhausted (EDQUOT); free some space or write elsewhere".into()
        }
        Some(libc::EPIPE) => "the reading end was closed (EPIPE)".into(),
        Some(libc::EROFS) => "the file system is read-only (EROFS); write elsewhere".into(),
        _ => format!("{error:#}"),
    }
}

/// Writes a whole output (an export) to `target` with `write`. `given` is the path as the
/// user typed it, for messages.
pub fn write_whole(
    target: &Target,
    given: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let shown = given.display();
    let written = match target {
        Target::Stdout => {
            let stdout = io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            write(&mut out).and_then(|()| Ok(out.flush()?))
        }
        Target::Null(path) | Target::Stream { path, .. } => {
            // No create, no truncate: a device that vanished is an error, never a new file.
            let file = OpenOptions::new()
                .write(true)
                .append(is_descriptor(path))
                .custom_flags(libc::O_NOCTTY)
                .open(path)
                .map_err(|e| anyhow!("cannot open {shown}: {e}"))?;
            let mut out = BufWriter::with_capacity(1 << 20, file);
            write(&mut out).and_then(|()| Ok(out.flush()?))
        }
        Target::File { path, existing } => {
            refuse_database(given, path)?;
            replace_file(path, existing.as_ref(), write)
        }
    };
    written.map_err(|e| {
        let io = io_of(&e);
        let broken_pipe = io.is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe);
        if matches!(target, Target::Stdout) && broken_pipe {
            anyhow::Error::new(StdoutClosed)
        } else if io.is_none() {
            // Not the output's fault (an input found damaged while it was written out):
            // said as it is, not as a failure to write.
            e
        } else {
            anyhow!("cannot write {shown}: {}", io_reason(&e))
        }
    })
}

/// An export, page or report is never written over an SQLite database (a run file, an
/// experiment, a history store): named by mistake, its recorded data would be gone.
pub fn refuse_database(given: &Path, path: &Path) -> Result<()> {
    if crate::store::is_sqlite(path) {
        bail!(
            "refusing to write over {}: it is an SQLite database (a run file, an experiment or a \
             history store); choose another output path, or remove it first",
            given.display()
        );
    }
    Ok(())
}

/// Standard output's reader went away (`| head`): what it wanted it has, and framelab ends
/// quietly (exit 0). A broken pipe anywhere else (a database connection, a program's pipe)
/// is an error like any other.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `text` to standard output: a closed pipe is [`StdoutClosed`], never the panic of
/// `print!`.
pub fn print(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    (out.write_all(text.as_bytes()))
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => anyhow::Error::new(StdoutClosed),
            _ => anyhow!("cannot write to standard output: {e}"),
        })
}

/// A CSV writer's error as the I/O error it wraps, where it wraps one: a closed pipe or a
/// full disk is then said as such (the csv crate's error does not give it as its source).
pub fn csv_error(error: csv::Error) -> anyhow::Error {
    match error.into_kind() {
        csv::ErrorKind::Io(io) => io.into(),
        other => anyhow!("cannot write a CSV row: {other:?}"),
    }
}

fn io_of(error: &anyhow::Error) -> Option<&io::Error> {
    error.chain().find_map(|e| e.downcast_ref::<io::Error>())
}

/// Writes `path` whole under a temporary name beside it and renames it into place. A
/// replaced file keeps its permissions (and, where allowed, its owner).
fn replace_file(
    path: &Path,
    existing: Option<&Metadata>,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    // New files get what any file created here gets (0666 less the umask).
    let mode = existing.map_or(0o666, |m| m.mode() & 0o7777);
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    if let Some(old) = existing {
        // The umask narrowed the creation mode; the replaced file's own mode is wanted.
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))?;
        if old.uid() != unsafe_geteuid() {
            let _ = std::os::unix::fs::fchown(temp.as_file(), Some(old.uid()), Some(old.gid()));
        }
    }
    {
        let mut out = BufWriter::with_capacity(1 << 20, WriteBehind::new(temp.as_file_mut()));
        write(&mut out)?;
        out.flush()?;
    }
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Where a run file goes: a regular file, or nowhere (`-o /dev/null`), in which case the
/// run is written to a private temporary directory, removed when this is dropped.
#[derive(Debug)]
pub enum RunFile {
    Keep(PathBuf),
    Discard {
        path: PathBuf,
        _dir: tempfile::TempDir,
    },
}

impl RunFile {
    /// Checks `given` can hold a run file (see the module comment).
    pub fn resolve(given: &Path) -> Result<RunFile> {
        let shown = given.display();
        match Target::resolve(given)? {
            Target::Null(_) => {
                let dir = tempfile::Builder::new()
                    .prefix("framelab-unkept-")
                    .tempdir()
                    .map_err(|e| {
                        anyhow!("cannot create a temporary directory for the run ({e})")
                    })?;
                Ok(RunFile::Discard {
                    path: dir.path().join("run.framelab"),
                    _dir: dir,
                })
            }
            Target::File { path, .. } => {
                check_sidecars(given, &path)?;
                Ok(RunFile::Keep(path))
            }
            Target::Stdout => bail!(
                "a run file cannot go to standard output: it is a database written as the run \
                 goes; give a file path (or /dev/null to keep none)"
            ),
            Target::Stream { kind, .. } => bail!(
                "cannot write the run file to {shown}: it is {kind}, and a run file is a \
                 database written in place; give a file path (or /dev/null to keep none)"
            ),
        }
    }

    /// Where SQLite writes it.
    pub fn path(&self) -> &Path {
        match self {
            RunFile::Keep(path) | RunFile::Discard { path, .. } => path,
        }
    }

    /// False for `-o /dev/null`.
    pub fn kept(&self) -> bool {
        matches!(self, RunFile::Keep(_))
    }
}

/// The names SQLite gives the files beside a database.
const SIDECARS: [&str; 3] = ["-journal", "-wal", "-shm"];

/// Refuses a run file whose journal names hold anything but a regular file: SQLite opens
/// them without `O_EXCL`, so a link planted there would be written through.
pub fn check_sidecars(given: &Path, path: &Path) -> Result<()> {
    for suffix in SIDECARS {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let sidecar = PathBuf::from(name);
        if let Ok(meta) = fs::symlink_metadata(&sidecar) {
            if !meta.file_type().is_file() {
                bail!(
                    "refusing to use the run file {}: {} is not SQLite's journal but {}; \
                     remove it if you did not put it there",
                    given.display(),
                    sidecar.display(),
                    if meta.file_type().is_symlink() {
                        "a symbolic link"
                    } else {
                        "not a regular file"
                    }
                );
            }
        }
    }
    Ok(())
}

/// Creates `path` empty with `O_CREAT|O_EXCL` when nothing is there: true when it did.
/// SQLite then opens a file that exists, so a link planted at the name is never followed.
pub fn create_exclusive(path: &Path) -> io::Result<bool> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(path)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_file_keeps_the_umask_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.csv");
        let target = Target::resolve(&out).unwrap();
        write_whole(&target, &out, |w| Ok(w.write_all(b"x\n")?)).unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"x\n");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary left: {names:?}");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.csv");
        fs::write(&out, "old").unwrap();
        fs::set_permissions(&out, Permissions::from_mode(0o640)).unwrap();
        let target = Target::resolve(&out).unwrap();
        let err = write_whole(&target, &out, |w| {
            w.write_all(b"half")?;
            bail!("the exporter failed")
        })
        .unwrap_err();
        assert!(err.to_string().contains("the exporter failed"), "{err}");
        assert_eq!(fs::read_to_string(&out).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let target = Target::resolve(&out).unwrap();
        write_whole(&target, &out, |w| Ok(w.write_all(b"new")?)).unwrap();
        assert_eq!(fs::read_to_string(&out).unwrap(), "new");
        assert_eq!(
            fs::metadata(&out).unwrap().mode() & 0o777,
            0o640,
            "mode kept"
        );
    }

    #[test]
    fn dangling_links_and_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        let err = Target::resolve(&link).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
        let err = Target::resolve(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        let err = Target::resolve(&dir.path().join("no/such/x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn stdout_names() {
        assert!(matches!(
            Target::resolve(Path::new("-")).unwrap(),
            Target::Stdout
        ));
        assert!(matches!(
            Target::resolve(Path::new("/dev/stdout")).unwrap(),
            Target::Stdout
        ));
        assert!(RunFile::resolve(Path::new("-")).is_err());
    }

    #[test]
    fn planted_journal_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("r.framelab");
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("r.framelab-journal")).unwrap();
        let err = RunFile::resolve(&run).unwrap_err().to_string();
        assert!(
            err.contains("r.framelab-journal is not SQLite's journal"),
            "{err}"
        );
    }
}
