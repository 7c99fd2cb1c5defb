//! The spill gives the run the drain would have given: the same records converted as they
//! come, or spilled and folded at the end, or folded from the spill alone (a killed run's),
//! hold the same spans, counters, events, names in the same order and invalid records.

use std::io::Write;
use std::path::Path;

use framelab_probe::wire::{kind, Record, CLOCK_MONO, CLOCK_TSC};

use super::clock::TickClock;
use super::convert::Converter;
use super::direct::{DirectFile, DirectWriter, RingPages};
use super::file::{read_chunks, Chunk, RingDrain, SpillEnd, SpillHeader, SpillWriter};

/// A process's names file, appended to between drains as a program interns names.
fn append_names(dir: &Path, pid: u32, lines: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("n-{pid}")))
        .unwrap();
    file.write_all(lines.as_bytes()).unwrap();
}

/// The first tick of the clock's newest segment.
fn newest_tick(clock: &TickClock) -> u64 {
    let bytes = clock.encode_segments(clock.segment_count() - 1);
    u64::from_le_bytes(bytes[..8].try_into().unwrap())
}

/// One drain's rings: (pid, thread, clock kind, records).
type Drain = Vec<(u32, u32, u32, Vec<Record>)>;

/// Three drains of two processes and three threads: spans, laps across drains, counters,
/// events, names interned between drains, and records the program damaged.
fn drains(dir: &Path, clock: &mut TickClock) -> Vec<(i64, Drain)> {
    let mut out = Vec::new();
    append_names(dir, 10, "1 s decode\n2 s encode\n3 c bytes\n");
    append_names(dir, 20, "1 s upload\n2 e commit\n");
    let t = newest_tick(clock);
    let span = |name, frame, a: u64, b: u64| Record::new(kind::SPAN, name, 0, frame, a, b);
    out.push((
        10_000_000_000,
        vec![
            (
                10,
                0,
                CLOCK_TSC,
                vec![
                    span(1, 0, t + 100, t + 900),
                    span(2, 0, t + 900, t + 1500),
                    Record::new(kind::COUNTER, 3, 0, 0, 4096, 0),
                ],
            ),
            (
                10,
                1,
                CLOCK_TSC,
                vec![
                    span(1, 1, t + 200, t + 800),
                    span(9, 1, t, t + 5), /* not interned */
                ],
            ),
            (
                20,
                2,
                CLOCK_MONO,
                vec![
                    Record::new(kind::SPAN, 1, 0, 0, 0, 0),
                    Record::new(kind::EVENT, 2, 0, 7, 5_000, 0),
                ],
            ),
        ],
    ));
    clock.refresh();
    // Interned after the first drain: the next drains' records use them.
    append_names(dir, 10, "4 s send\n5 e flush\n");
    let t = newest_tick(clock);
    out.push((
        20_000_000_000,
        vec![
            (
                10,
                0,
                CLOCK_TSC,
                vec![
                    span(4, 0, t + 10, t + 20),
                    span(1, 2, t + 50, t + 40), /* ends first */
                    Record::new(kind::EVENT, 5, 0, 3, t + 30, 0),
                ],
            ),
            (
                10,
                1,
                CLOCK_TSC,
                vec![
                    span(2, 1, t + 60, u64::MAX / 2), /* after now */
                    Record::new(99, 1, 0, 0, 0, 0),
                ],
            ),
            (
                20,
                2,
                CLOCK_MONO,
                vec![
                    Record::new(kind::SPAN_NS, 1, 0, 1, 3, 9), /* before launch */
                ],
            ),
        ],
    ));
    clock.refresh();
    let t = newest_tick(clock);
    out.push((
        30_000_000_000,
        vec![(
            10,
            1,
            CLOCK_TSC,
            vec![span(4, 3, t + 5, t + 7), span(1, 3, t + 1, t + 4)],
        )],
    ));
    out
}

/// What a converter made, in order.
fn made(conv: &mut Converter) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\ninvalid {} first {:?} frames {}",
        conv.take_named(),
        conv.spans,
        conv.counters,
        conv.events,
        conv.invalid_records,
        conv.first_span_ns,
        conv.frames_seen
    )
}

#[test]
fn records_spilled_then_folded_convert_as_the_drain_converts_them() {
    let (live_dir, spill_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let clock = TickClock::new();
    let origin = i64::from_le_bytes(clock.encode_segments(0)[8..16].try_into().unwrap());
    let origin = f64::from_bits(origin as u64) as i64 - 1_000;
    let mut recorded_clock = clock.clone();
    let plan = drains(live_dir.path(), &mut recorded_clock);
    // The same names files for the spilling run, appended at the same points.
    let mut live = Converter::new(origin, clock.clone(), Some(live_dir.path().to_owned()));
    let mut spilling = Converter::new(origin, clock.clone(), Some(spill_dir.path().to_owned()));
    let spill = spill_dir.path().join("run.framelab-spill");
    let header = SpillHeader {
        run_id: 1,
        origin_mono_ns: origin,
    };
    let mut writer = SpillWriter::create(&spill, header).unwrap();
    writer.clock(0, &clock.encode_segments(0));
    let names_10 = std::fs::read_to_string(live_dir.path().join("n-10")).unwrap();
    let names_20 = std::fs::read_to_string(live_dir.path().join("n-20")).unwrap();
    let (first_10, later_10) = names_10.split_at(names_10.find("4 s").unwrap());
    append_names(spill_dir.path(), 10, first_10);
    append_names(spill_dir.path(), 20, &names_20);
    for (drain_index, (latest, rings)) in plan.iter().enumerate() {
        if drain_index == 1 {
            // The clock refreshed, and process 10 interned names, before this drain.
            for conv in [&mut live, &mut spilling] {
                let from = conv.clock.segment_count();
                assert!(conv
                    .clock
                    .push_encoded(from, &recorded_clock.encode_segments(from)));
            }
            writer.clock(1, &recorded_clock.encode_segments(1));
            append_names(spill_dir.path(), 10, later_10);
        }
        if drain_index == 2 {
            let from = live.clock.segment_count();
            for conv in [&mut live, &mut spilling] {
                assert!(conv
                    .clock
                    .push_encoded(from, &recorded_clock.encode_segments(from)));
            }
            writer.clock(from, &recorded_clock.encode_segments(from));
        }
        live.begin_drain(*latest, live.segments_now());
        for (pid, thread, clock_kind, records) in rings {
            live.convert_records(*pid, *clock_kind, *thread, records);
            let of = RingDrain {
                pid: *pid,
                thread: *thread,
                clock: *clock_kind,
                latest_end_ns: *latest,
                segments: spilling.segments_now(),
            };
            writer.records(of, records);
        }
        // The spilling drain's names, read after the rings' heads.
        for pid in [10, 20] {
            if let Some((at, bytes)) = spilling.refresh_names(pid) {
                writer.names(pid, at, &bytes);
            }
        }
        writer.write().unwrap();
    }
    let expected = made(&mut live);
    assert!(expected.contains("invalid 6"), "{expected}");

    // Folded at the end by the converter that spilled (names already read, none read again).
    spilling.read_names_from(None);
    let (_, file) = super::file::open(&spill).unwrap().unwrap();
    let end = read_chunks(file, super::file::open_data(&spill).as_ref(), |chunk| {
        if let Chunk::Records(drained) = chunk {
            spilling.convert_drained(&drained);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(end, SpillEnd::Whole);
    assert_eq!(made(&mut spilling), expected);

    // Folded from the spill alone, as the next open of a killed run's file does.
    let mut alone = Converter::new(origin, TickClock::replayed(), None);
    let (read_header, file) = super::file::open(&spill).unwrap().unwrap();
    assert_eq!(read_header, header);
    read_chunks(file, super::file::open_data(&spill).as_ref(), |chunk| {
        match chunk {
            Chunk::Names { pid, at, bytes } => {
                assert!(alone.names.entry(pid).or_default().feed_at(at, bytes))
            }
            Chunk::Clock { first, segments } => assert!(alone.clock.push_encoded(first, segments)),
            Chunk::Records(drained) => alone.convert_drained(&drained),
            Chunk::Thread { .. } => {}
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(made(&mut alone), expected);
}

#[test]
fn a_spill_cut_mid_chunk_gives_its_whole_chunks_and_counts_the_cut_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut-spill");
    let mut writer = new_spill(&path, 3);
    let records: Vec<Record> = (0..10)
        .map(|i| Record::new(kind::SPAN, 1, 0, i, i, i + 1))
        .collect();
    let of = OF_ONE_RING;
    writer.records(of, &records[..4]);
    writer.names(1, 0, b"1 s a\n");
    writer.records(of, &records[4..]);
    writer.write().unwrap();
    drop(writer);
    let len = std::fs::metadata(&path).unwrap().len();
    // A kill during the last write: 40 bytes of its 6 records are missing.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 40)
        .unwrap();
    let (_, file) = super::file::open(&path).unwrap().unwrap();
    let mut got = Vec::new();
    let end = read_chunks(file, super::file::open_data(&path).as_ref(), |chunk| {
        if let Chunk::Records(drained) = chunk {
            got.extend(drained.records.iter().map(|r| r.frame));
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(got, [0, 1, 2, 3]);
    assert_eq!(end, SpillEnd::Cut { records: 6 });

    // Garbage: not a spill at all, or a chunk of no kind.
    std::fs::write(
        &path,
        b"this is not a spill, only words of the right length..",
    )
    .unwrap();
    let problem = super::file::open(&path).unwrap_err().to_string();
    assert!(problem.contains("not a framelab spill"), "{problem}");
    let mut bytes = super::file::MAGIC.to_vec();
    bytes.resize(32, 0);
    bytes.extend_from_slice(&[7u8; 40]);
    std::fs::write(&path, bytes).unwrap();
    let (_, file) = super::file::open(&path).unwrap().unwrap();
    let problem = read_chunks(file, super::file::open_data(&path).as_ref(), |_| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(problem.contains("chunk at byte 32"), "{problem}");
}

#[test]
fn a_spill_is_made_once_and_locked_while_its_recorder_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked-spill");
    let header = SpillHeader {
        run_id: 1,
        origin_mono_ns: 0,
    };
    let writer = SpillWriter::create(&path, header).unwrap();
    assert!(
        SpillWriter::create(&path, header).is_err(),
        "never over an existing spill"
    );
    let (_, file) = super::file::open(&path).unwrap().unwrap();
    assert!(super::file::held_by_recorder(&file));
    drop(writer);
    let (_, file) = super::file::open(&path).unwrap().unwrap();
    assert!(!super::file::held_by_recorder(&file));
}

/// A spill at `path` for run `run_id`, its clock's origin at 0.
fn new_spill(path: &Path, run_id: i64) -> SpillWriter {
    let header = SpillHeader {
        run_id,
        origin_mono_ns: 0,
    };
    SpillWriter::create(path, header).unwrap()
}

/// Ring records of process 1's thread 0, by the monotonic clock.
const OF_ONE_RING: RingDrain = RingDrain {
    pid: 1,
    thread: 0,
    clock: CLOCK_MONO,
    latest_end_ns: 0,
    segments: 1,
};

/// A ring file as a program makes it: a 256-byte header (left zero here), then `records`.
fn ring_file(path: &Path, records: &[Record]) -> std::fs::File {
    let mut bytes = vec![0u8; framelab_probe::wire::HEADER_BYTES];
    for r in records {
        // SAFETY: a Record is four integers with no padding.
        let raw = unsafe { std::slice::from_raw_parts((r as *const Record).cast::<u8>(), 32) };
        bytes.extend_from_slice(raw);
    }
    std::fs::write(path, bytes).unwrap();
    std::fs::File::open(path).unwrap()
}

/// Whether `path` is on ext4, which takes direct writes.
fn on_ext4(path: &Path) -> bool {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path and out-pointer.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c.as_ptr(), &mut fs) == 0 && fs.f_type == 0xEF53 }
}

/// A spill whose records went in three ways, in order: past the page cache from the ring's
/// pages (a part starting mid-page, then one at the array's start, as a wrap gives),
/// gathered and written, and past the page cache again after a names chunk.
fn mixed_spill(dir: &Path, direct: bool) -> (std::path::PathBuf, SpillWriter) {
    let records: Vec<Record> = (0..1000)
        .map(|i| Record::new(kind::SPAN, 1, 0, i, i, i + 1))
        .collect();
    let ring_path = dir.join("ring");
    let ring = ring_file(&ring_path, &records);
    let pages = RingPages::map(&ring, std::fs::metadata(&ring_path).unwrap().len() as usize);
    let pages = std::sync::Arc::new(pages.unwrap());
    let path = dir.join("mixed-spill");
    let mut writer = new_spill(&path, 5);
    if direct {
        writer.start_direct();
    } else {
        writer.direct_with(
            DirectWriter::start(DirectFile::buffered(&crate::spill::file::data_path(&path)))
                .unwrap(),
        );
    }
    let of = OF_ONE_RING;
    let at = |slot: u64| framelab_probe::wire::HEADER_BYTES as u64 + slot * 32;
    writer.names(1, 0, b"1 s a\n");
    writer.write().unwrap();
    // Records 700..1000, then 0..300: the array's end, then its start.
    let parts = [(at(700), 300 * 32), (at(0), 300 * 32)];
    let landed = |writer: &mut SpillWriter, parts: &[(u64, usize)]| {
        let reserved = (writer.begin_direct(&pages, parts.iter().copied(), of)).unwrap();
        for part in &reserved {
            assert!(part.outcome.wait_until(far_off()));
            part.outcome.take().unwrap().0.unwrap();
        }
        writer.confirm_direct(&reserved).unwrap();
    };
    landed(&mut writer, &parts);
    writer.records(of, &records[300..310]);
    writer.names(1, 6, b"2 s b\n");
    writer.write().unwrap();
    // Records 150..160 again, their write never confirmed (given up): read past.
    let void = writer.begin_direct(&pages, [(at(150), 10 * 32)].into_iter(), of);
    assert!(void.unwrap()[0].outcome.wait_until(far_off()));
    landed(&mut writer, &[(at(310), 390 * 32)]);
    (path, writer)
}

fn far_off() -> std::time::Instant {
    std::time::Instant::now() + std::time::Duration::from_secs(60)
}

/// The frames of a spill's records, in order, and how reading it ended.
fn spilled_frames(path: &Path) -> (Vec<u64>, SpillEnd) {
    let (_, file) = super::file::open(path).unwrap().unwrap();
    let mut frames = Vec::new();
    let end = read_chunks(file, super::file::open_data(path).as_ref(), |chunk| {
        if let Chunk::Records(d) = chunk {
            frames.extend(d.records.iter().map(|r| r.frame));
        }
        Ok(())
    })
    .unwrap();
    (frames, end)
}

#[test]
fn records_written_from_the_rings_pages_read_back_between_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut probe = new_spill(&dir.path().join("probe-spill"), 1);
    probe.start_direct();
    let takes_direct = probe.takes_direct();
    if on_ext4(dir.path()) {
        assert!(
            takes_direct,
            "ext4 takes direct writes: the spill must use them"
        );
    }
    // With O_DIRECT where the filesystem takes it, and the same layout without.
    for direct in [takes_direct, false] {
        let sub = tempfile::tempdir_in(dir.path()).unwrap();
        let (path, writer) = mixed_spill(sub.path(), direct);
        assert_eq!(writer.records_written, 1000);
        assert_eq!(writer.records_direct, 990);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            writer.written_bytes()
        );
        let (frames, end) = spilled_frames(&path);
        let expected: Vec<u64> = (700..1000)
            .chain(0..300)
            .chain(300..310)
            .chain(310..700)
            .collect();
        assert_eq!(frames, expected);
        assert_eq!(end, SpillEnd::Whole);
    }
}

#[test]
fn a_spill_cut_in_a_direct_chunk_keeps_the_chunks_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = mixed_spill(dir.path(), false);
    drop(writer);
    // A kill during the last direct write: its data's last page missing.
    let data = super::file::data_path(&path);
    let len = std::fs::metadata(&data).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&data)
        .unwrap()
        .set_len(len - 4096)
        .unwrap();
    let (frames, end) = spilled_frames(&path);
    assert_eq!(frames, (700..1000).chain(0..310).collect::<Vec<_>>());
    assert_eq!(end, SpillEnd::Cut { records: 390 });
}

#[test]
fn a_direct_chunk_placing_its_records_outside_its_data_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = mixed_spill(dir.path(), false);
    drop(writer);
    let mut bytes = std::fs::read(&path).unwrap();
    // The first direct chunk follows the header and a names chunk of 6 bytes: its layout
    // (skip, bytes, data) 32 bytes after its header starts.
    let layout = 32 + 32 + 6 + 32;
    bytes[layout + 12..layout + 16].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let (_, file) = super::file::open(&path).unwrap().unwrap();
    let problem = read_chunks(file, super::file::open_data(&path).as_ref(), |_| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(
        problem.contains("chunk at byte 70 places its records outside its data"),
        "{problem}"
    );
}

#[test]
fn a_spill_an_older_framelab_left_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old-spill");
    let mut writer = new_spill(&path, 2);
    let of = OF_ONE_RING;
    let records: Vec<Record> = (0..3)
        .map(|i| Record::new(kind::SPAN, 1, 0, i, i, i + 1))
        .collect();
    writer.records(of, &records);
    writer.write().unwrap();
    drop(writer);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..8].copy_from_slice(b"FLSPILL1");
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(spilled_frames(&path), (vec![0, 1, 2], SpillEnd::Whole));
}
