//! The built-in demo: a real capture → convert → encode → packetize → send pipeline.
