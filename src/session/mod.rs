//! `framelab run`: launching the command in a session, draining rings, accounting, stopping.
