//! How a store URL reaches its PostgreSQL server, as libpq would: TLS by `sslmode`
//! (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`) with `sslrootcert`, and the
//! password from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE`, else
//! `~/.pgpass`, ignored unless only its owner can read it). tokio-postgres parses the rest
//! of the URL; these options are taken out of it first (it knows neither `verify-ca`,
//! `verify-full` nor `sslrootcert`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// libpq's `sslmode`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => bail!(
                "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
            ),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Where the CA certificates that vouch for the server come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    /// `sslrootcert=FILE` (or `$PGSSLROOTCERT`, or `~/.postgresql/root.crt`): PEM.
    File(PathBuf),
    /// `sslrootcert=system`: the system's CAs.
    System,
    /// None given and no `~/.postgresql/root.crt` (the path, for messages).
    Missing(PathBuf),
}

/// A store URL taken apart: what tokio-postgres connects with, and how TLS is made.
pub struct Target {
    pub config: tokio_postgres::Config,
    pub ssl_mode: SslMode,
    pub roots: Roots,
}

/// The URL's connection settings, without the TLS options and without a password from
/// the environment (for naming the server in messages).
pub fn parse_url(url: &str) -> Result<tokio_postgres::Config, tokio_postgres::Error> {
    split_options(url).0.parse()
}

/// Parses `url`: `sslmode` (else `$PGSSLMODE`, else `prefer`, or `verify-full` with
/// `sslrootcert=system`) and `sslrootcert` (else `$PGSSLROOTCERT`, else
/// `~/.postgresql/root.crt` if it exists) taken out, the password filled in when the URL
/// has none.
pub fn target(url: &str) -> Result<Target> {
    let (rest, options) = split_options(url);
    let mut config: tokio_postgres::Config = rest.parse()?;
    let option = |key: &str, env: &str| {
        options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()))
    };
    // libpq's default: ~/.postgresql/root.crt, when there is one.
    let default_root = match std::env::var_os("HOME") {
        Some(home) => Path::new(&home).join(".postgresql/root.crt"),
        None => PathBuf::from("~/.postgresql/root.crt"),
    };
    let roots = match option("sslrootcert", "PGSSLROOTCERT") {
        Some(value) if value == "system" => Roots::System,
        Some(file) => Roots::File(PathBuf::from(file)),
        None if default_root.is_file() => Roots::File(default_root),
        None => Roots::Missing(default_root),
    };
    // As libpq: the system's CAs make verify-full the default.
    let ssl_mode = match option("sslmode", "PGSSLMODE") {
        Some(mode) => SslMode::parse(&mode)?,
        None if roots == Roots::System => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    config.ssl_mode(match ssl_mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    if config.get_password().is_none() {
        if let Some(password) = password_from_environment(&config) {
            config.password(password);
        }
    }
    Ok(Target {
        config,
        ssl_mode,
        roots,
    })
}

/// The URL without `sslmode` and `sslrootcert`, and those (key, decoded value) pairs.
fn split_options(url: &str) -> (String, Vec<(String, String)>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), Vec::new());
    };
    let (mut kept, mut taken) = (Vec::new(), Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == "sslmode" || key == "sslrootcert" {
            let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
            taken.push((key.to_owned(), value.into_owned()));
        } else {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (rest, taken)
}

/// `PGPASSWORD`, else the password file's line for this server, database and user.
fn password_from_environment(config: &tokio_postgres::Config) -> Option<String> {
    if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
    let user = config
        .get_user()
        .map(str::to_owned)
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_default();
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        // libpq: a Unix socket matches the line for localhost.
        _ => "localhost".to_owned(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let database = config.get_dbname().unwrap_or(&user).to_owned();
    password_file_entry(&file, [&host, &port, &database, &user])
}

/// The password of the first line of `file` whose host, port, database and user match
/// (`*` matches anything), as libpq reads it; none when the file is missing, or when
/// others than its owner may read it (said on stderr: libpq ignores it then too).
pub fn password_file_entry(file: &Path, wanted: [&str; 4]) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        log::warn!(
            "password file {} has group or world access, so it is \
             ignored; permissions should be u=rw (0600) or less: chmod 600 {}",
            file.display(),
            file.display()
        );
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .find_map(|line| {
            let fields = split_entry(line);
            let matches = fields.len() == 5
                && (fields.iter().zip(wanted)).all(|(field, want)| field == "*" || field == want);
            matches.then(|| fields[4].clone())
        })
}

/// A password file line's fields: `:` separates them, `\:` and `\\` are a colon and a
/// backslash within one. The fifth field, the password, runs to the end of the line.
fn split_entry(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_options_are_taken_out_of_the_url() {
        let (rest, taken) = split_options(
            "postgres://u@db:5432/bench?sslmode=verify-full&connect_timeout=3&sslrootcert=%2Fetc%2Fca.pem",
        );
        assert_eq!(rest, "postgres://u@db:5432/bench?connect_timeout=3");
        assert_eq!(
            taken,
            [
                ("sslmode".to_owned(), "verify-full".to_owned()),
                ("sslrootcert".to_owned(), "/etc/ca.pem".to_owned())
            ]
        );
        assert!(SslMode::parse("allow-ish").is_err());
    }

    #[test]
    fn sslrootcert_system_makes_verify_full_the_default() {
        let system = target("postgres://u@db/bench?sslrootcert=system").unwrap();
        assert_eq!(
            (system.roots, system.ssl_mode),
            (Roots::System, SslMode::VerifyFull)
        );
        let file = target("postgres://u@db/bench?sslrootcert=/etc/ca.pem&sslmode=verify-ca");
        let file = file.unwrap();
        assert_eq!(file.roots, Roots::File("/etc/ca.pem".into()));
        assert_eq!(file.ssl_mode, SslMode::VerifyCa);
    }

    #[test]
    fn password_file_lines_match_as_libpq_reads_them() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:5432:*:alice:no\ndb:5432:*:alice:p\\:w:x\n*:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let find = |w: [&str; 4]| password_file_entry(&file, w);
        assert_eq!(find(["db", "5432", "bench", "alice"]).unwrap(), "p:w:x");
        assert_eq!(find(["db", "5433", "bench", "bob"]).unwrap(), "fallback");
        // Readable by others: ignored, as libpq does.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find(["db", "5432", "bench", "alice"]), None);
    }
}
