//! `framelab history`: SQLite and PostgreSQL stores, the order of runs, change points.

mod basics;
mod changepoint;
mod order;
