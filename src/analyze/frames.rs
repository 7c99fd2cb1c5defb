//! Frames from spans: start, end, total, intervals, the measured window.
