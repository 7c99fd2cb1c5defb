//! Parsing and printing of durations, rates and sizes.
