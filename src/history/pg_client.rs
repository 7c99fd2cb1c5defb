//! framelab's PostgreSQL connection: tokio-postgres on a runtime of its own, with one
//! deadline on the whole handshake and on every statement. A server that accepts the
//! connection and never answers (a hung server, a port that is something else) then ends
//! the command with one line naming it, instead of hanging it for ever: the socket-level
//! timeout alone covers only the TCP connect.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;
use tokio::runtime::Runtime;

use super::sql::{postgres_params, postgres_rows, Cell, Param, Tx};

/// How long a handshake or a statement may take when the URL has no `connect_timeout`.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// A connection and the runtime that drives it.
pub struct PgClient {
    runtime: Runtime,
    client: tokio_postgres::Client,
    deadline: Duration,
    /// `host:port`, for messages.
    server: String,
}

/// What the handshake or a statement gets when the server does not answer in time. A
/// server that answered the handshake is PostgreSQL: a statement it does not finish is most
/// often one waiting for a lock another session holds.
fn no_answer(server: &str, deadline: Duration, connected: bool) -> anyhow::Error {
    let why = if connected {
        "did not finish a statement: it stopped answering, or the statement waits for a \
         lock another session holds (a `history add` still running, a transaction left \
         open: see pg_stat_activity)"
    } else {
        "accepted the connection but did not answer: it is hung or is not PostgreSQL"
    };
    anyhow::anyhow!(
        "the PostgreSQL server at {server} {why} (waited {} s); check the server, or give it \
         longer with connect_timeout=SECONDS in the store URL (…/db?connect_timeout=30)",
        deadline.as_secs_f64()
    )
}

/// Runs `work` on `runtime`, or gives up after `deadline`.
fn within<T>(
    runtime: &Runtime,
    deadline: Duration,
    server: &str,
    connected: bool,
    work: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T> {
    match runtime.block_on(async { tokio::time::timeout(deadline, work).await }) {
        Ok(result) => Ok(result?),
        Err(_) => Err(no_answer(server, deadline, connected)),
    }
}

impl PgClient {
    /// Connects (TCP, TLS when `tls` makes it, start-up and authentication) within
    /// `deadline`.
    pub fn connect<T>(
        config: &tokio_postgres::Config,
        tls: T,
        deadline: Duration,
        server: String,
    ) -> Result<PgClient>
    where
        T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket> + Send + 'static,
        T::Stream: Send + 'static,
        T::TlsConnect: Send,
        <T::TlsConnect as tokio_postgres::tls::TlsConnect<tokio_postgres::Socket>>::Future: Send,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (client, connection) = within(&runtime, deadline, &server, false, config.connect(tls))?;
        // Driven whenever the runtime runs a statement (a current-thread runtime).
        runtime.spawn(connection);
        Ok(PgClient {
            runtime,
            client,
            deadline,
            server,
        })
    }

    /// Opens a transaction; statements in it and its commit each have the deadline.
    pub fn transaction(&mut self) -> Result<PgTx<'_>> {
        let tx = within(
            &self.runtime,
            self.deadline,
            &self.server,
            true,
            self.client.transaction(),
        )?;
        Ok(PgTx {
            runtime: &self.runtime,
            tx,
            deadline: self.deadline,
            server: &self.server,
        })
    }
}

/// An open transaction; dropped without [`PgTx::commit`], it is rolled back.
pub struct PgTx<'a> {
    runtime: &'a Runtime,
    tx: tokio_postgres::Transaction<'a>,
    deadline: Duration,
    server: &'a str,
}

impl PgTx<'_> {
    /// Commits. A commit whose answer never came may have been done or not: the error
    /// says so (adding again is safe: runs already there are skipped).
    pub fn commit(self) -> Result<()> {
        let (deadline, server) = (self.deadline, self.server);
        within(self.runtime, deadline, server, true, self.tx.commit()).map_err(|e| {
            if e.downcast_ref::<tokio_postgres::Error>().is_some() {
                e
            } else {
                anyhow::anyhow!(
                    "{e:#}; the commit was sent, so whether it was done is unknown: run the \
                     command again once the server answers (an add skips the runs already \
                     there)"
                )
            }
        })
    }
}

impl Tx for PgTx<'_> {
    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let boxed = postgres_params(params);
        let refs: Vec<_> = boxed.iter().map(|b| b.as_ref()).collect();
        within(
            self.runtime,
            self.deadline,
            self.server,
            true,
            self.tx.execute(sql, &refs),
        )
    }

    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Vec<Cell>>> {
        let boxed = postgres_params(params);
        let refs: Vec<_> = boxed.iter().map(|b| b.as_ref()).collect();
        let rows = within(
            self.runtime,
            self.deadline,
            self.server,
            true,
            self.tx.query(sql, &refs),
        )?;
        postgres_rows(rows)
    }
}
