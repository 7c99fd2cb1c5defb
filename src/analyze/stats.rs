//! Order statistics and moments.
