//! Upgrading files written by an older framelab, one schema version at a time.
//!
//! A migration turns schema `from` into `from + 1`, with SQL, or with code where SQL cannot
//! (8 → 9 encodes span rows into blocks), so a file's history of versions is replayable
//! and each step is testable on its own. All steps needed by a file run in one
//! transaction: a file is either fully upgraded or untouched.

use rusqlite::Connection;

use super::schema::{self, SCHEMA_VERSION};

pub struct Migration {
    /// The version this step upgrades from; it produces `from + 1`.
    pub from: i64,
    pub step: Step,
}

pub enum Step {
    Sql(&'static str),
    /// Run inside the migration's transaction; `vacuum`: the step frees so many pages that
    /// the file is rewritten after the commit, to give them back.
    Code {
        run: fn(&Connection) -> rusqlite::Result<()>,
        vacuum: bool,
    },
}

/// Every migration to date, oldest first.
/// When bumping `SCHEMA_VERSION` to N, append the step from N-1 here.
pub const MIGRATIONS: &[Migration] = &[
    // 2: imported runs (`imports`) and imported histograms (`histograms`).
    Migration {
        from: 1,
        step: Step::Sql(schema::IMPORT_TABLES),
    },
    // 3: how each process row's CPU was measured (`processes.cpu_resolution_ns`,
    // `cpu_source`, `note`).
    Migration {
        from: 2,
        step: Step::Sql(schema::PROCESS_CPU_COLUMNS),
    },
    // 4: where the warmup was counted from (`runs.warmup_from`, `warmup_frames`,
    // `first_span_ns`); older runs keep 'launch', which is what they did.
    Migration {
        from: 3,
        step: Step::Sql(schema::RUNS_WARMUP_COLUMNS),
    },
    // 5: metrics from the command's output (`metrics`) and the output kept (`outputs`);
    // `experiment_runs.status` may be `warmup`. Older runs have neither: nothing to fill.
    Migration {
        from: 4,
        step: Step::Sql(schema::OUTPUT_TABLES),
    },
    // 6: sampled profiles (`profiles`, `profile_frames`, `profile_stacks`,
    // `profile_samples`, view `profile_leaves`). Older runs were not profiled.
    Migration {
        from: 5,
        step: Step::Sql(schema::PROFILE_TABLES),
    },
    // 7: the role of a watched process (`processes.watch_role`; older runs' watched
    // processes count under their own name, which an empty role means) and the scheduler's
    // view of the run's threads (`sched_status`, `sched_slices`; older runs have none: their
    // busy time stays the union of their spans).
    Migration {
        from: 6,
        step: Step::Sql(schema::SCHEMA_7_ADDITIONS),
    },
    // 8: a run's tags (`run_tags`); older runs have none.
    Migration {
        from: 7,
        step: Step::Sql(schema::SCHEMA_8_ADDITIONS),
    },
    // 9: spans in blocks (`span_blocks`, `span_slots`); `spans` becomes a view decoding
    // them, with the same columns; runs' span id ranges renumbered in the blocks' order.
    Migration {
        from: 8,
        step: Step::Code {
            run: super::block_rows::rows_to_blocks,
            vacuum: true,
        },
    },
];

/// Whether `version` can be brought to `SCHEMA_VERSION` by this build.
pub fn can_migrate(version: i64) -> bool {
    version >= 1 && steps(MIGRATIONS, version, SCHEMA_VERSION).is_some()
}

/// Upgrades a framelab file of schema `version` to `SCHEMA_VERSION` in place.
pub fn migrate(conn: &mut Connection, version: i64) -> anyhow::Result<()> {
    migrate_with(conn, version, SCHEMA_VERSION, MIGRATIONS)
}

/// The steps from `version` to `target`, or `None` if one is missing.
fn steps(migrations: &[Migration], version: i64, target: i64) -> Option<Vec<&Migration>> {
    (version..target)
        .map(|from| migrations.iter().find(|m| m.from == from))
        .collect()
}

pub(crate) fn migrate_with(
    conn: &mut Connection,
    version: i64,
    target: i64,
    migrations: &[Migration],
) -> anyhow::Result<()> {
    if version == target {
        return Ok(());
    }
    let Some(steps) = steps(migrations, version, target) else {
        anyhow::bail!(
            "no migration from schema {version} to {target} in this build: \
             open the file with the framelab that wrote it and export the runs"
        );
    };
    // A hand-edited file's span of a run no longer in `runs` moves to a block as it is
    // (SQLite ignores this pragma inside a transaction).
    conn.execute_batch("PRAGMA foreign_keys = OFF")?;
    let tx = conn.transaction()?;
    let mut vacuum = false;
    for step in steps {
        match &step.step {
            Step::Sql(sql) => tx.execute_batch(sql)?,
            Step::Code { run, vacuum: v } => {
                run(&tx)?;
                vacuum |= v;
            }
        }
    }
    tx.execute(
        "UPDATE framelab SET value = ?1 WHERE key = 'schema_version'",
        [target.to_string()],
    )?;
    schema::stamp(&tx, target)?;
    tx.commit()?;
    if vacuum {
        // The upgrade is committed: a VACUUM that fails (no room for the copy it writes)
        // only leaves the freed pages in the file, for later writes to reuse.
        let _ = conn.execute_batch("VACUUM");
    }
    Ok(())
}

/// Turns a file of today's schema back into schema 8's layout (spans as rows, with schema
/// 8's tables and views, from the same SQL the 8 → 9 step starts from), stamped 8: the
/// tests of that step, in here and end to end, start from it.
#[doc(hidden)]
pub fn undo_9(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE old_spans AS SELECT * FROM spans ORDER BY id;
         DROP VIEW frames; DROP VIEW named_spans; DROP VIEW stage_summary;
         DROP VIEW spans; DROP TABLE span_blocks; DROP TABLE span_slots;",
    )?;
    conn.execute_batch(schema::SPANS_TABLE_8)?;
    conn.execute_batch(super::block_rows::SPAN_VIEWS)?;
    conn.execute_batch(
        "INSERT INTO spans SELECT * FROM temp.old_spans; DROP TABLE temp.old_spans;",
    )?;
    stamp_as(conn, 8)
}

/// Marks a file as one of schema `version`.
fn stamp_as(conn: &Connection, version: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE framelab SET value = ?1 WHERE key = 'schema_version'",
        [version.to_string()],
    )?;
    schema::stamp(conn, version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::{identify, FileKind};

    /// Marks a file made by today's schema as one of `version` (after the test dropped
    /// what later versions added).
    fn stamp_as(conn: &Connection, version: i64) {
        super::stamp_as(conn, version).unwrap();
    }

    fn undo_9(conn: &Connection) {
        super::undo_9(conn).unwrap();
    }

    /// Upgrades a file of `version` and checks it is now of today's schema.
    fn migrate_to_current(conn: &mut Connection, version: i64) {
        assert!(can_migrate(version));
        migrate(conn, version).unwrap();
        assert_eq!(
            identify(conn).unwrap(),
            FileKind::Framelab {
                version: SCHEMA_VERSION
            }
        );
    }

    #[test]
    fn applies_each_step_in_order_and_records_the_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        let fake = [
            Migration {
                from: 2,
                step: Step::Sql("ALTER TABLE runs ADD COLUMN notes_v3 TEXT;"),
            },
            Migration {
                from: 1,
                step: Step::Sql("ALTER TABLE runs ADD COLUMN notes_v2 TEXT;"),
            },
        ];
        migrate_with(&mut conn, 1, 3, &fake).unwrap();
        assert_eq!(identify(&conn).unwrap(), FileKind::Framelab { version: 3 });
        conn.prepare("SELECT notes_v2, notes_v3 FROM runs").unwrap();
        let user_version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(user_version, 3);
    }

    #[test]
    fn a_missing_step_leaves_the_file_untouched() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        let v = SCHEMA_VERSION;
        let fake = [Migration {
            from: v,
            step: Step::Sql("ALTER TABLE runs ADD COLUMN notes_next TEXT;"),
        }];
        let err = migrate_with(&mut conn, v, v + 2, &fake).unwrap_err();
        let expected = format!("no migration from schema {v} to {}", v + 2);
        assert!(err.to_string().contains(&expected), "{err}");
        assert_eq!(identify(&conn).unwrap(), FileKind::Framelab { version: v });
    }

    #[test]
    fn a_schema_1_file_gets_the_import_tables() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        // What schema 1 was: everything but the tables schema 2 added.
        conn.execute_batch("DROP TABLE imports; DROP TABLE histograms;")
            .unwrap();
        stamp_as(&conn, 1);
        // ... and everything schema 3 added to `processes`.
        conn.execute_batch(
            "ALTER TABLE processes DROP COLUMN cpu_resolution_ns;
             ALTER TABLE processes DROP COLUMN cpu_source;
             ALTER TABLE processes DROP COLUMN note;",
        )
        .unwrap();
        // ... and what schema 4 added to `runs`.
        conn.execute_batch(SCHEMA_4_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_6_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_5_DROPPED).unwrap();
        migrate_to_current(&mut conn, 1);
        conn.prepare(
            "SELECT run_id, format, files_json, skipped, first_skipped, notes_json FROM imports",
        )
        .unwrap();
        conn.prepare("SELECT run_id, hist_id, name, unit, buckets_json FROM histograms")
            .unwrap();
    }

    #[test]
    fn a_schema_2_file_gets_the_cpu_columns_with_the_tick_resolution_it_was_read_at() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        // What schema 2 was: `processes` without the columns schema 3 added.
        // ... and what schema 4 added to `runs`.
        conn.execute_batch(SCHEMA_4_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_6_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_5_DROPPED).unwrap();
        conn.execute_batch(
            "ALTER TABLE processes DROP COLUMN cpu_resolution_ns;
             ALTER TABLE processes DROP COLUMN cpu_source;
             ALTER TABLE processes DROP COLUMN note;
             INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                 host_name, host_cpu_model, host_cores, host_kernel, host_clocksource, clock,
                 origin_mono_ns, window_start_ns, window_end_ns, end_reason, dropped_events,
                 invalid_records, names_refused)
             VALUES (1, 'old', '[]', '', '', '', '', 1, '', '', 'mono', 0, 0, 1, 'exited', 0, 0, 0);
             INSERT INTO processes VALUES (1, 0, 42, 1, 'old', 'command', 250000000, 10000000, 1000000000, 0);",
        )
        .unwrap();
        stamp_as(&conn, 2);
        migrate_to_current(&mut conn, 2);
        let (resolution, source, note): (i64, String, String) = conn
            .query_row(
                "SELECT cpu_resolution_ns, cpu_source, note FROM processes WHERE pid = 42",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            (resolution, source.as_str(), note.as_str()),
            (10_000_000, "proc", "")
        );
    }

    /// What schema 4 added: the columns of `schema::RUNS_WARMUP_COLUMNS`.
    const SCHEMA_4_DROPPED: &str = "ALTER TABLE runs DROP COLUMN warmup_from;
         ALTER TABLE runs DROP COLUMN warmup_frames;
         ALTER TABLE runs DROP COLUMN first_span_ns;";

    #[test]
    fn a_schema_3_file_says_its_runs_warmed_up_from_launch() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        conn.execute_batch(SCHEMA_4_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_6_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_5_DROPPED).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                 host_name, host_cpu_model, host_cores, host_kernel, host_clocksource, clock,
                 origin_mono_ns, window_start_ns, window_end_ns, end_reason, dropped_events,
                 invalid_records, names_refused, warmup_ns)
             VALUES (1, 'old', '[]', '', '', '', '', 1, '', '', 'mono', 0, 3000000000,
                 9000000000, 'duration', 0, 0, 0, 3000000000);",
        )
        .unwrap();
        stamp_as(&conn, 3);
        migrate(&mut conn, 3).unwrap();
        assert_eq!(
            identify(&conn).unwrap(),
            FileKind::Framelab {
                version: SCHEMA_VERSION
            }
        );
        let (from, frames, first): (String, Option<i64>, Option<i64>) = conn
            .query_row(
                "SELECT warmup_from, warmup_frames, first_span_ns FROM runs",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((from.as_str(), frames, first), ("launch", None, None));
    }

    /// What schema 5 added: the tables of `schema::OUTPUT_TABLES`.
    const SCHEMA_5_DROPPED: &str =
        "DROP TABLE metrics; DROP TABLE outputs; ALTER TABLE processes DROP COLUMN service;";

    #[test]
    fn a_schema_4_file_gets_empty_metric_and_output_tables() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_6_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_5_DROPPED).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                 host_name, host_cpu_model, host_cores, host_kernel, host_clocksource, clock,
                 origin_mono_ns, window_start_ns, window_end_ns, end_reason, dropped_events,
                 invalid_records, names_refused)
             VALUES (1, 'old', '[]', '', '', '', '', 1, '', '', 'mono', 0, 0, 1, 'exited', 0, 0, 0);",
        )
        .unwrap();
        stamp_as(&conn, 4);
        migrate_to_current(&mut conn, 4);
        let count = |table: &str| -> i64 {
            conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(
            (count("metrics"), count("outputs"), count("runs")),
            (0, 0, 1)
        );
        conn.prepare(
            "SELECT run_id, role, name, position, value, unit, direction, definition, failure \
             FROM metrics",
        )
        .unwrap();
        conn.prepare("SELECT run_id, role, stream, bytes, dropped, content, note FROM outputs")
            .unwrap();
    }

    /// What schema 6 added: the tables of `schema::PROFILE_TABLES`.
    const SCHEMA_6_DROPPED: &str = "DROP VIEW profile_leaves; DROP TABLE profile_samples;
         DROP TABLE profile_stacks; DROP TABLE profile_frames; DROP TABLE profiles;";

    /// What schema 8 added: the table of `schema::SCHEMA_8_ADDITIONS`.
    const SCHEMA_8_DROPPED: &str = "DROP TABLE run_tags;";

    #[test]
    fn a_schema_7_file_gets_an_empty_tags_table_its_runs_read_with_no_tags() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        stamp_as(&conn, 7);
        // Read before the upgrade (a read-only look): no table, no tags.
        assert!(crate::store::tags::load_tags(&conn, 1).unwrap().is_empty());
        migrate_to_current(&mut conn, 7);
        conn.execute_batch(
            "INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                 host_name, host_cpu_model, host_cores, host_kernel, host_clocksource, clock,
                 origin_mono_ns, window_start_ns, window_end_ns, end_reason, dropped_events,
                 invalid_records, names_refused)
             VALUES (1, 'new', '[]', '', '', '', '', 1, '', '', 'mono', 0, 0, 1, 'exited', 0, 0, 0);",
        )
        .unwrap();
        let tags = [crate::model::Tag {
            key: "build".into(),
            value: "release".into(),
        }];
        crate::store::tags::insert_tags(&conn, 1, &tags).unwrap();
        assert_eq!(crate::store::tags::load_tags(&conn, 1).unwrap(), tags);
    }

    /// What schema 7 added: the column and tables of `schema::SCHEMA_7_ADDITIONS`.
    const SCHEMA_7_DROPPED: &str = "ALTER TABLE processes DROP COLUMN watch_role;
         DROP TABLE sched_slices; DROP TABLE sched_status;";

    #[test]
    fn a_schema_6_files_watched_processes_get_an_empty_role() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                 host_name, host_cpu_model, host_cores, host_kernel, host_clocksource, clock,
                 origin_mono_ns, window_start_ns, window_end_ns, end_reason, dropped_events,
                 invalid_records, names_refused)
             VALUES (1, 'old', '[]', '', '', '', '', 1, '', '', 'mono', 0, 0, 1, 'exited', 0, 0, 0);
             INSERT INTO processes (run_id, process_index, pid, ppid, name, role, user_ns,
                 sys_ns, wall_ns, peak_rss_bytes)
             VALUES (1, 0, 42, 1, 'decoderd', 'watched', 250000000, 0, 1000000000, 0);",
        )
        .unwrap();
        stamp_as(&conn, 6);
        migrate_to_current(&mut conn, 6);
        let role: String = conn
            .query_row("SELECT watch_role FROM processes WHERE pid = 42", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(role, "", "an older watched row counts under its own name");
    }

    #[test]
    fn a_schema_5_file_is_upgraded_with_empty_profile_tables() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_6_DROPPED).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                 host_name, host_cpu_model, host_cores, host_kernel, host_clocksource, clock,
                 origin_mono_ns, window_start_ns, window_end_ns, end_reason, dropped_events,
                 invalid_records, names_refused)
             VALUES (1, 'old', '[]', '', '', '', '', 1, '', '', 'mono', 0, 0, 1, 'exited', 0, 0, 0);",
        )
        .unwrap();
        stamp_as(&conn, 5);
        migrate_to_current(&mut conn, 5);
        let profiles: i64 = conn
            .query_row("SELECT count(*) FROM profiles", [], |r| r.get(0))
            .unwrap();
        assert_eq!(profiles, 0);
        assert_eq!(
            crate::store::profile::read_profile(&conn, 1).unwrap(),
            None,
            "an upgraded run has no profile"
        );
        conn.prepare(
            "SELECT run_id, t_ns, pid, tid, cpu, function, module, known FROM profile_leaves",
        )
        .unwrap();
    }

    #[test]
    fn a_schema_6_file_is_upgraded_with_empty_sched_tables() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        conn.execute_batch(SCHEMA_8_DROPPED).unwrap();
        conn.execute_batch(SCHEMA_7_DROPPED).unwrap();
        stamp_as(&conn, 6);
        migrate_to_current(&mut conn, 6);
        assert_eq!(crate::store::sched::read_sched(&conn, 1).unwrap(), None);
    }

    #[test]
    fn a_schema_8_files_span_rows_become_blocks_read_back_in_id_order() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::create(&conn).unwrap();
        undo_9(&conn);
        let run = |id: i64| {
            format!(
                "INSERT INTO runs (run_id, name, command_json, started_at, framelab_version,
                     host_name, host_cpu_model, host_cores, host_kernel, host_clocksource,
                     clock, origin_mono_ns, window_start_ns, window_end_ns, end_reason,
                     dropped_events, invalid_records, names_refused)
                 VALUES ({id}, 'old', '[]', '', '', '', '', 1, '', '', 'mono', 0, 0, 1,
                     'exited', 0, 0, 0);"
            )
        };
        conn.execute_batch(&(run(1) + &run(2) + &run(3))).unwrap();
        // Two runs' rows interleaved (recorded at once), extreme values, a gap in the ids
        // (rows deleted by hand), run 3 without spans.
        let mut rows = Vec::new();
        for i in 0..2_000i64 {
            let run_id = 1 + i % 2;
            let dur = match i {
                7 => i64::MAX,
                8 => -3,
                _ => 1_000 + i,
            };
            let frame = if i == 9 { -1 } else { i / 10 };
            rows.push((100 + i * 2, run_id, frame, i % 5, i % 3, i * 1_000, dur));
        }
        for r in &rows {
            conn.execute(
                "INSERT INTO spans (id, run_id, frame, stage_id, thread_id, start_ns, dur_ns)                  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                *r,
            )
            .unwrap();
        }
        migrate_to_current(&mut conn, 8);
        let view: Vec<(i64, i64, i64, i64, i64, i64)> = conn
            .prepare("SELECT run_id, frame, stage_id, thread_id, start_ns, dur_ns FROM spans")
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // Each run's spans in their own blocks, in their order; blocks of runs recorded at
        // once interleave as their rows did.
        for run_id in [1, 2] {
            let of_run = |rows: Vec<(i64, i64, i64, i64, i64, i64)>| -> Vec<_> {
                rows.into_iter().filter(|r| r.0 == run_id).collect()
            };
            let expected = rows
                .iter()
                .map(|r| (r.1, r.2, r.3, r.4, r.5, r.6))
                .collect();
            assert!(of_run(view.clone()) == of_run(expected), "run {run_id}");
        }
        assert_eq!(view.len(), rows.len());
        let ranges: Vec<(i64, Option<i64>, Option<i64>)> = conn
            .prepare("SELECT span_count, span_id_first, span_id_last FROM runs ORDER BY run_id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ranges[0].0 + ranges[1].0, 2_000);
        assert_eq!(
            (ranges[0].1.min(ranges[1].1), ranges[0].2.max(ranges[1].2)),
            (Some(1), Some(2_000))
        );
        assert_eq!(ranges[2], (0, None, None));
        let frames: i64 = conn
            .query_row("SELECT count(*) FROM frames", [], |r| r.get(0))
            .unwrap();
        assert_eq!(frames, 401, "the views over spans work again");
    }

    #[test]
    fn the_current_version_needs_no_step() {
        assert!(can_migrate(SCHEMA_VERSION));
        assert!(!can_migrate(0));
    }
}
