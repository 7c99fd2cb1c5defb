//! A real PostgreSQL server for the history tests: Debian's `postgresql` binaries, a
//! cluster in a temporary directory, on a free port of 127.0.0.1, run as `nobody` when the
//! tests run as root (PostgreSQL refuses root). Stopped when dropped.
//!
//! Where no server can be started the caller skips, printing `SKIPPED: <reason>`, unless
//! FRAMELAB_REQUIRE_POSTGRES=1 (CI), which makes that a failure.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    as_nobody: bool,
}

/// The directory of initdb and pg_ctl: on PATH, else Debian's newest under
/// /usr/lib/postgresql.
fn binaries() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

impl Server {
    /// Starts a server, or says why it cannot (the caller skips or fails with that).
    pub fn start() -> Result<Server, String> {
        let bin = binaries().ok_or(
            "PostgreSQL is not installed (no initdb on PATH nor under /usr/lib/postgresql; \
             tests/tools/install.sh installs it)",
        )?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let as_nobody = unsafe { libc::geteuid() } == 0;
        if as_nobody {
            let status = Command::new("chown")
                .args(["-R", "nobody"])
                .arg(dir.path())
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !status.success() {
                return Err("cannot give the cluster's directory to nobody".into());
            }
        }
        let server = Server {
            dir,
            bin,
            port: free_port(),
            as_nobody,
        };
        let data = server.data();
        server.pg(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        server.start_again()?;
        Ok(server)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs a PostgreSQL program, as nobody when we are root.
    fn pg(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(program);
        let mut command = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = command
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                String::from_utf8_lossy(&out.stdout).trim()
            ))
        }
    }

    /// Starts the server (again, after [`Server::kill`]) and waits until it accepts.
    pub fn start_again(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log").display().to_string();
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "-t",
                "120",
                "start",
            ],
        )
    }

    /// Stops the server at once, as a crash would (no shutdown checkpoint).
    pub fn kill(&self) {
        let _ = self.pg("pg_ctl", &["-D", &self.data(), "-m", "immediate", "stop"]);
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// A client for the test's own checks and set-up.
    pub fn client(&self, database: &str) -> postgres::Client {
        postgres::Client::connect(&self.url(database), postgres::NoTls).expect("connects")
    }

    /// A new empty database (each test uses its own).
    pub fn create_database(&self, name: &str) -> String {
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("creates a database");
        self.url(name)
    }
}

/// Runs openssl, or says why it failed.
fn openssl(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("openssl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A self-signed CA in `dir` (`NAME.crt`, `NAME.key`).
pub fn make_ca(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let (crt, key) = (format!("{name}.crt"), format!("{name}.key"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &key,
            "-out",
            &crt,
            "-subj",
            &format!("/CN=framelab test {name}"),
        ],
    )?;
    Ok(dir.join(crt))
}

impl Server {
    /// Turns TLS on with a certificate for 127.0.0.1 and localhost signed by `ca` (made
    /// by [`make_ca`] in `ca_dir`), and from then on takes TCP connections over TLS only
    /// (`hostssl`); `password_user` must also give its password (scram-sha-256). Restarts.
    pub fn require_tls(&self, ca_dir: &Path, ca: &str, password_user: &str) -> Result<(), String> {
        let data = PathBuf::from(self.data());
        openssl(
            ca_dir,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        )?;
        std::fs::write(
            ca_dir.join("san.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )
        .map_err(|e| e.to_string())?;
        openssl(
            ca_dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                &format!("{ca}.crt"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                "server.crt",
                "-extfile",
                "san.ext",
            ],
        )?;
        for file in ["server.crt", "server.key"] {
            std::fs::copy(ca_dir.join(file), data.join(file)).map_err(|e| e.to_string())?;
        }
        let mut conf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap_or_default();
        conf.push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        std::fs::write(data.join("postgresql.conf"), conf).map_err(|e| e.to_string())?;
        std::fs::write(
            data.join("pg_hba.conf"),
            format!(
                "local all all trust\nhostssl all {password_user} 127.0.0.1/32 scram-sha-256\n\
                 hostssl all all 127.0.0.1/32 trust\n"
            ),
        )
        .map_err(|e| e.to_string())?;
        if self.as_nobody {
            Command::new("chown")
                .args(["-R", "nobody"])
                .arg(&data)
                .status()
                .map_err(|e| format!("chown: {e}"))?;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            data.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .map_err(|e| e.to_string())?;
        self.pg("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"])?;
        self.start_again()
    }

    /// Runs SQL as postgres over the Unix socket (TCP may demand TLS).
    pub fn local_sql(&self, sql: &str) {
        let url = format!(
            "host={} port={} user=postgres dbname=postgres",
            self.dir.path().display(),
            self.port
        );
        postgres::Client::connect(&url, postgres::NoTls)
            .expect("connects over the socket")
            .batch_execute(sql)
            .expect("runs");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.pg("pg_ctl", &["-D", &self.data(), "-m", "fast", "stop"]);
    }
}

/// A server, or `None` after printing why the test skips; a failure under
/// FRAMELAB_REQUIRE_POSTGRES=1.
pub fn server_or_skip() -> Option<Server> {
    match Server::start() {
        Ok(server) => Some(server),
        Err(reason) if std::env::var("FRAMELAB_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!(
                "FRAMELAB_REQUIRE_POSTGRES=1 but no PostgreSQL server could be started: {reason}"
            )
        }
        Err(reason) => {
            println!("SKIPPED: {reason}");
            None
        }
    }
}
