//! One metric's values over commits, on one machine (and branch): what `history check`
//! reads from the store.

pub struct Point {
    pub commit: String,
    pub branch: Option<String>,
    pub recorded_at_unix_s: i64,
    pub run_id: String,
    pub value: f64,
}

pub struct Series {
    pub metric: String,
    /// The machine's fingerprint.
    pub machine: String,
    pub branch: Option<String>,
    /// Oldest first.
    pub points: Vec<Point>,
}
