//! Opening run files for reading or writing, and turning every way a file can be wrong
//! into one line that names the problem and the fix.

use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::migrate;
use super::schema::{self, FileKind, APPLICATION_ID, SCHEMA_VERSION};

/// How long a connection waits for another process's lock (a live recording, a reader)
/// before giving up: longer than one commit interval of a recording writer.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// An error whose message is exactly one line, whatever the path or the SQLite text holds.
pub fn one_line(message: String) -> anyhow::Error {
    anyhow!(message.replace(['\n', '\r'], " "))
}

/// A write failed because the file system holding the run file is full. Typed so the
/// recorder can say what it kept and what it lost (`DiskFull::path` is the file).
#[derive(Clone, Debug)]
pub struct DiskFull {
    pub path: PathBuf,
}

impl std::fmt::Display for DiskFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.path.display();
        write!(
            f,
            "cannot write {p}: the disk is full; free some space or write elsewhere"
        )
    }
}

impl std::error::Error for DiskFull {}

/// The message for a SQLite failure on `path` while `doing` something.
pub fn sqlite_failure(path: &Path, doing: &str, err: &rusqlite::Error) -> anyhow::Error {
    if err.sqlite_error_code() == Some(ErrorCode::DiskFull) {
        return anyhow::Error::new(DiskFull {
            path: path.to_owned(),
        });
    }
    let p = path.display();
    let message = match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt) => format!(
            "{p} is corrupt ({err}, while {doing}): the file was damaged or cut short after it \
             was written; restore an intact copy or record the run again"
        ),
        Some(ErrorCode::NotADatabase) => format!(
            "{p} is not a framelab run file (not an SQLite database); pass a .framelab file \
             written by `framelab run`"
        ),
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied | ErrorCode::CannotOpen) => {
            format!("cannot {doing} {p}: {err}; check its permissions or choose another path")
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "{p} is locked by another process ({err}, while {doing}); wait for it to finish \
             or use another file"
        ),
        _ => format!("{p}: SQLite failed while {doing}: {err}"),
    };
    one_line(message)
}

/// Why an existing path cannot be read as a run file, found before SQLite sees it: SQLite
/// would create a missing file, and reports a text file only once it is queried.
#[derive(Debug)]
enum FileProblem {
    Missing,
    Unreadable(std::io::Error),
    Directory,
    /// A device, pipe or socket (`/dev/zero`): its length says nothing.
    NotRegular,
    Empty,
    NotSqlite,
    Truncated {
        len: u64,
        expected: u64,
    },
    /// Told by the header, before SQLite parses a schema it may not understand.
    Newer {
        version: i64,
    },
}

impl FileProblem {
    /// What is wrong, completing "PATH ...".
    fn what(&self) -> String {
        match self {
            FileProblem::Missing => "does not exist".into(),
            FileProblem::Unreadable(e) => format!("cannot be read ({e})"),
            FileProblem::Directory => "is a directory".into(),
            FileProblem::NotRegular => "is not a regular file (a device, pipe or socket)".into(),
            FileProblem::Empty => "is empty (0 bytes)".into(),
            FileProblem::NotSqlite => "is not a framelab run file (not an SQLite database)".into(),
            FileProblem::Truncated { len, expected } => {
                format!("is truncated ({len} of {expected} bytes)")
            }
            FileProblem::Newer { version } => format!(
                "was written by a newer framelab (schema {version}, this build reads \
                 ≤ {SCHEMA_VERSION})"
            ),
        }
    }

    /// The whole message for someone trying to read the file.
    fn for_reading(&self, path: &Path) -> anyhow::Error {
        let fix = match self {
            FileProblem::Missing => "check the path (`framelab run -o FILE` writes one)",
            FileProblem::Unreadable(_) => "check its permissions",
            FileProblem::Directory => "pass the .framelab file inside it",
            FileProblem::NotRegular => "pass a .framelab file written by `framelab run`",
            FileProblem::Empty => "it was created but never written; record the run again",
            FileProblem::NotSqlite => "pass a .framelab file written by `framelab run`",
            FileProblem::Truncated { .. } => {
                "the copy or download was cut short; copy the file again from where it was recorded"
            }
            FileProblem::Newer { .. } => "upgrade framelab",
        };
        one_line(format!("{} {}: {fix}", path.display(), self.what()))
    }
}

/// Whether `path` is an SQLite database (its header says so), framelab's or another's.
pub fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; SQLITE_MAGIC.len()];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == SQLITE_MAGIC)
}

/// The length of an existing file that may be a run file.
fn check_existing_file(path: &Path) -> Result<u64, FileProblem> {
    let meta = fs::metadata(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => FileProblem::Missing,
        _ => FileProblem::Unreadable(e),
    })?;
    if meta.is_dir() {
        return Err(FileProblem::Directory);
    }
    if !meta.is_file() {
        return Err(FileProblem::NotRegular);
    }
    let len = meta.len();
    if len == 0 {
        return Err(FileProblem::Empty);
    }
    let mut header = Vec::with_capacity(100);
    fs::File::open(path)
        .and_then(|f| f.take(100).read_to_end(&mut header))
        .map_err(FileProblem::Unreadable)?;
    if header.len() < SQLITE_MAGIC.len() || &header[..SQLITE_MAGIC.len()] != SQLITE_MAGIC {
        return Err(FileProblem::NotSqlite);
    }
    if let Some(version) = newer_version_in_header(&header) {
        return Err(FileProblem::Newer { version });
    }
    if let Some(expected) = expected_size(&header) {
        if len < expected && !has_sidecar(path) {
            return Err(FileProblem::Truncated { len, expected });
        }
    }
    Ok(len)
}

/// The schema version a framelab file's header announces (`user_version` at byte 60,
/// `application_id` at byte 68), when it is newer than this build reads.
fn newer_version_in_header(header: &[u8]) -> Option<i64> {
    let be32 = |at: usize| Some(i32::from_be_bytes(header.get(at..at + 4)?.try_into().ok()?));
    let version = i64::from(be32(60)?);
    (be32(68)? == APPLICATION_ID && version > SCHEMA_VERSION).then_some(version)
}

/// The size the SQLite header promises, when the header says its page count is current.
/// A header cut short (under 100 bytes) promises at least one whole header page.
fn expected_size(header: &[u8]) -> Option<u64> {
    if header.len() < 100 {
        return Some(512);
    }
    let be32 = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => u64::from(n),
    };
    let pages = u64::from(be32(28));
    let counter_is_current = be32(24) == be32(92);
    (counter_is_current && pages > 0).then_some(pages * page_size)
}

/// A write-ahead log or rollback journal next to the file: then SQLite, not the header,
/// knows how big the file should be (a checkpoint may have been cut by a kill).
fn has_sidecar(path: &Path) -> bool {
    ["-wal", "-journal"].iter().any(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        fs::metadata(PathBuf::from(name)).is_ok_and(|m| m.len() > 0)
    })
}

/// Opens an existing run file for reading and checks it is a framelab file this build
/// reads. Opened read-write when allowed: a file left by a killed recording has its
/// write-ahead log folded back in when the last connection closes. Never creates a file.
/// Readers open through `reading::open_for_reading`, which folds a left spill in too.
pub(super) fn open_checked(path: &Path) -> anyhow::Result<Connection> {
    let len = check_existing_file(path).map_err(|problem| problem.for_reading(path))?;
    // Opened read-write, SQLite may roll back or write through a journal name.
    crate::destination::check_sidecars(path, path)?;
    let mut conn = open_connection(path)?;
    match schema::identify(&conn).map_err(|e| sqlite_failure(path, "reading its schema", &e))? {
        FileKind::Framelab { version } => {
            check_version(path, version)?;
            if version < SCHEMA_VERSION {
                migrate::migrate(&mut conn, version).map_err(|e| {
                    one_line(format!(
                        "{} uses schema {version} and could not be upgraded to {SCHEMA_VERSION}: \
                         {e}; copy it somewhere writable and try again",
                        path.display()
                    ))
                })?;
            }
            Ok(conn)
        }
        FileKind::Empty => Err(one_line(format!(
            "{} is an empty SQLite database ({len} bytes), not a framelab run file; pass a \
             .framelab file written by `framelab run`",
            path.display()
        ))),
        FileKind::Foreign => Err(not_framelab(path)),
    }
}

/// Another connection to a file `open_for_reading` has already checked, for reading parts
/// of a run in parallel.
pub fn open_another_reader(path: &Path) -> anyhow::Result<Connection> {
    // A run still recording is read from its private copy (`reading`).
    open_connection(&super::live_copies::live_copy(path))
}

/// A connection to `path` itself, read-write where allowed.
fn open_connection(path: &Path) -> anyhow::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_READ_WRITE)
        .or_else(|_| Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_READ_ONLY))
        .map_err(|e| sqlite_failure(path, "open", &e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| sqlite_failure(path, "open", &e))?;
    // Catches more damaged pages as they are read, for about 1% of read time.
    conn.execute_batch("PRAGMA cell_size_check = ON")
        .map_err(|e| sqlite_failure(path, "open", &e))?;
    Ok(conn)
}

fn not_framelab(path: &Path) -> anyhow::Error {
    one_line(format!(
        "{} is an SQLite database but not a framelab run file (no framelab schema_version); \
         pass a .framelab file written by `framelab run`",
        path.display()
    ))
}

fn check_version(path: &Path, version: i64) -> anyhow::Result<()> {
    if version > SCHEMA_VERSION {
        return Err(one_line(format!(
            "{} was written by a newer framelab (schema {version}, this build reads \
             ≤ {SCHEMA_VERSION}): upgrade framelab",
            path.display()
        )));
    }
    if !migrate::can_migrate(version) {
        return Err(one_line(format!(
            "{} uses schema {version}, which this build cannot upgrade: open it with the \
             framelab release that wrote it",
            path.display()
        )));
    }
    Ok(())
}

/// Checks that `path` can become a run file, before SQLite creates anything: a missing
/// directory, a directory in the way or someone else's file are refused up front.
fn check_output_path(path: &Path) -> anyhow::Result<bool> {
    let p = path.display();
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(one_line(format!(
            "cannot write the run file to {p}: it is a directory; pass a file path such as \
             {}",
            path.join("run.framelab").display()
        ))),
        Ok(meta) if !meta.is_file() => Err(one_line(format!(
            "cannot write the run file to {p}: it is not a regular file (a link, a device or \
             a FIFO); pass a file path"
        ))),
        Ok(meta) => Ok(meta.len() > 0),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            let parent = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            match fs::metadata(parent) {
                Ok(meta) if meta.is_dir() => Ok(false),
                Ok(_) => Err(one_line(format!(
                    "cannot create {p}: {} is not a directory; choose another output path",
                    parent.display()
                ))),
                Err(_) => Err(one_line(format!(
                    "cannot create {p}: directory {} does not exist; create it or choose \
                     another output path",
                    parent.display()
                ))),
            }
        }
        Err(e) => Err(one_line(format!(
            "cannot write the run file to {p}: {e}; choose another output path"
        ))),
    }
}

/// Opens `path` to append a run: creates it with the schema when new (or an empty file),
/// upgrades an older framelab file, refuses anything else without touching it.
/// The connection is left in rollback-journal mode; the writer picks its own mode.
/// `path` is a regular file or nothing (callers resolve `-o` with `destination::RunFile`): a
/// new file is created here with `O_EXCL` and SQLite never follows a link at `path`.
/// The flag says whether this call created the file.
pub fn open_for_writing(path: &Path) -> anyhow::Result<(Connection, bool)> {
    let p = path.display();
    if check_output_path(path)? {
        check_existing_file(path).map_err(|problem| match problem {
            FileProblem::Newer { .. } => problem.for_reading(path),
            _ => one_line(format!(
                "refusing to write into {p}: it {}; choose another output path",
                problem.what()
            )),
        })?;
    }
    crate::destination::check_sidecars(path, path)?;
    let created = crate::destination::create_exclusive(path).map_err(|e| {
        one_line(format!(
            "cannot write the run file {p}: {e}; choose a writable output path"
        ))
    })?;
    let opened = open_created(path);
    if opened.is_err() && created {
        let _ = fs::remove_file(path);
    }
    opened.map(|conn| (conn, created))
}

fn open_created(path: &Path) -> anyhow::Result<Connection> {
    let p = path.display();
    let cannot = |e: rusqlite::Error| {
        let reason = match e.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => "the disk is full".to_string(),
            _ => e.to_string(),
        };
        one_line(format!(
            "cannot write the run file {p}: {reason}; choose a writable output path"
        ))
    };
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(cannot)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(cannot)?;
    // Take the write lock first, so two framelabs creating one file do not both set it up.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(cannot)?;
    let kind = schema::identify(&tx).map_err(|e| sqlite_failure(path, "reading its schema", &e))?;
    match kind {
        FileKind::Empty => {
            schema::create(&tx).map_err(cannot)?;
            tx.commit().map_err(cannot)?;
        }
        FileKind::Framelab { version } => {
            tx.rollback().map_err(cannot)?;
            check_version(path, version)?;
            migrate::migrate(&mut conn, version)
                .map_err(|e| one_line(format!("cannot upgrade {p} from schema {version}: {e}")))?;
        }
        FileKind::Foreign => {
            return Err(one_line(format!(
                "refusing to write into {p}: it is an SQLite database but not a framelab run \
                 file; choose another output path"
            )))
        }
    }
    Ok(conn)
}
