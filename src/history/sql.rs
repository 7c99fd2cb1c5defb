//! The little SQL both stores share: one statement text (PostgreSQL's `$1` placeholders,
//! rewritten to `?1` for SQLite), typed parameters and cells, and a transaction over either.

use anyhow::{Context, Result};
use tokio_postgres::types::{ToSql, Type};

/// A parameter of a statement.
#[derive(Clone, Debug)]
pub enum Param<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Int(i64),
    Real(f64),
}

/// A cell of a result row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Cell {
    pub fn text(&self) -> String {
        match self {
            Cell::Text(t) => t.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Real(r) => r.to_string(),
            Cell::Null => String::new(),
        }
    }

    pub fn opt_text(&self) -> Option<String> {
        match self {
            Cell::Null => None,
            other => Some(other.text()),
        }
    }

    pub fn int(&self) -> i64 {
        match self {
            Cell::Int(i) => *i,
            Cell::Real(r) => *r as i64,
            _ => 0,
        }
    }

    pub fn real(&self) -> f64 {
        match self {
            Cell::Real(r) => *r,
            Cell::Int(i) => *i as f64,
            _ => f64::NAN,
        }
    }
}

/// Statements inside one open transaction, of either database.
pub trait Tx {
    /// Rows changed.
    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64>;
    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Vec<Cell>>>;
}

/// `$1` → `?1`: SQLite's numbered placeholder. The statements here hold no `$` otherwise.
fn sqlite_text(sql: &str) -> String {
    sql.replace('$', "?")
}

fn sqlite_params<'a>(params: &'a [Param<'a>]) -> Vec<rusqlite::types::Value> {
    use rusqlite::types::Value;
    params
        .iter()
        .map(|p| match p {
            Param::Text(t) => Value::Text((*t).to_owned()),
            Param::OptText(Some(t)) => Value::Text((*t).to_owned()),
            Param::OptText(None) => Value::Null,
            Param::Int(i) => Value::Integer(*i),
            Param::Real(r) => Value::Real(*r),
        })
        .collect()
}

impl Tx for rusqlite::Transaction<'_> {
    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let values = sqlite_params(params);
        let n = rusqlite::Connection::execute(
            self,
            &sqlite_text(sql),
            rusqlite::params_from_iter(values),
        )?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Vec<Cell>>> {
        use rusqlite::types::ValueRef;
        let mut statement = self.prepare(&sqlite_text(sql))?;
        let columns = statement.column_count();
        let mut rows = statement.query(rusqlite::params_from_iter(sqlite_params(params)))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut cells = Vec::with_capacity(columns);
            for i in 0..columns {
                cells.push(match row.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(v) => Cell::Int(v),
                    ValueRef::Real(v) => Cell::Real(v),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Cell::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(cells);
        }
        Ok(out)
    }
}

pub fn postgres_params<'a>(params: &'a [Param<'a>]) -> Vec<Box<dyn ToSql + Sync + 'a>> {
    params
        .iter()
        .map(|p| -> Box<dyn ToSql + Sync + 'a> {
            match p {
                Param::Text(t) => Box::new(*t),
                Param::OptText(t) => Box::new(*t),
                Param::Int(i) => Box::new(*i),
                Param::Real(r) => Box::new(*r),
            }
        })
        .collect()
}

/// PostgreSQL's rows as cells.
pub fn postgres_rows(rows: Vec<tokio_postgres::Row>) -> Result<Vec<Vec<Cell>>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut cells = Vec::with_capacity(row.len());
        for (i, column) in row.columns().iter().enumerate() {
            let ty = column.type_();
            let cell = if *ty == Type::INT8 {
                row.try_get::<_, Option<i64>>(i)?.map(Cell::Int)
            } else if *ty == Type::INT4 {
                row.try_get::<_, Option<i32>>(i)?
                    .map(|v| Cell::Int(v.into()))
            } else if *ty == Type::FLOAT8 {
                row.try_get::<_, Option<f64>>(i)?.map(Cell::Real)
            } else {
                row.try_get::<_, Option<String>>(i)
                    .with_context(|| format!("column {} of type {ty}", column.name()))?
                    .map(Cell::Text)
            };
            cells.push(cell.unwrap_or(Cell::Null));
        }
        out.push(cells);
    }
    Ok(out)
}
