//! `framelab history`: SQLite and PostgreSQL stores, change points.

mod basics;
mod changepoint;
