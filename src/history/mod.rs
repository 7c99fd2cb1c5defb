pub mod changepoint;
pub mod check;
pub mod series;
