//! `framelab history`: every run's metrics kept by commit and machine, in a SQLite file or
//! a PostgreSQL database (docs/history.md), shown as tables and trend plots, exported, and
//! checked for the commits where a metric moved.

pub mod add;
pub mod changepoint;
pub mod check;
pub mod commands;
pub mod export;
mod pg_client;
mod pg_connect;
mod pg_tls;
pub mod series;
pub mod show;
mod sql;
pub mod store;
