use crate::analyze::pair::PairSpec;
use crate::import::{parse_bytes, Format, ImportOptions};
use crate::model::{Run, Span};

const MS: i64 = 1_000_000;

use crate::import::test_support::{fixture, Importer};

const IMPORT: Importer = Importer(Format::Wayland);

/// (frame, start, duration) of the spans of one stage, in file order.
fn spans(run: &Run, stage: &str) -> Vec<(u64, i64, i64)> {
    let Some(id) = run.stages.iter().position(|s| s == stage) else {
        return Vec::new();
    };
    run.spans
        .iter()
        .filter(|s| usize::from(s.stage) == id)
        .map(|s: &Span| (s.frame, s.start_ns, s.dur_ns))
        .collect()
}

fn notes(run: &Run) -> &[String] {
    &run.import.as_ref().unwrap().notes
}

/// The number a note starts with, for the note holding `phrase`; 0 without one.
fn noted(run: &Run, phrase: &str) -> u64 {
    let found: Vec<&String> = notes(run).iter().filter(|n| n.contains(phrase)).collect();
    assert!(found.len() <= 1, "{phrase:?} in several notes: {found:?}");
    found
        .first()
        .map_or(0, |n| n.split(' ').next().unwrap().parse().unwrap())
}

fn events_named(run: &Run, name: &str) -> usize {
    let id = run.event_names.iter().position(|n| n == name);
    run.events
        .iter()
        .filter(|e| Some(usize::from(e.event)) == id)
        .count()
}

#[test]
fn first_frames_of_a_real_client_log_number_by_number() {
    // weston-simple-shm on libwayland 1.21. Commit 0 has no buffer (it comes before the
    // first configure); the origin is the first frame callback's request, 871084.668.
    let run = IMPORT.run(fixture("wayland-1.21-simple-shm-client.log.gz"));
    let commits = spans(&run, "commit→release");
    // [ 871084.670] commit → [ 871094.662] wl_buffer@10.release()
    assert_eq!(commits[0], (1, 2_000, 9_992_000));
    // [ 871094.781] commit → [ 871119.963] release
    assert_eq!(commits[1], (2, 10_113_000, 25_182_000));
    let callbacks = spans(&run, "frame callback");
    // [ 871084.668] frame(new id wl_callback@11) → [ 871094.665] wl_callback@11.done
    assert_eq!(callbacks[0], (1, 0, 9_997_000));
    assert_eq!(callbacks[1], (2, 10_110_000, 25_189_000));
    assert_eq!(run.threads.len(), 1);
    assert_eq!((run.threads[0].pid, run.threads[0].tid), (0, 0));
    assert_eq!(run.threads[0].name, "client");
    assert_eq!(run.import.as_ref().unwrap().format, "wayland");
}

#[test]
fn presentation_feedback_belongs_to_its_commit() {
    // weston-presentation-shm on libwayland 1.23 (`{Default Queue}`, `#` ids).
    let run = IMPORT.run(fixture("wayland-1.23-presentation-shm-client.log.gz"));
    let commits = spans(&run, "commit→release");
    let presented = spans(&run, "presentation");
    assert!(!presented.is_empty());
    for (frame, start, dur) in &presented {
        let commit = commits
            .iter()
            .find(|c| c.0 == *frame)
            .expect("a commit of the frame");
        // The feedback is requested just before its commit, and presented after it.
        assert!(start <= &commit.1 && start + dur > commit.1, "{frame}");
    }
    // [1088366.917] {Default Queue}  -> wl_surface#3.commit() is the first to apply a
    // buffer; [1088378.449] {Default Queue} wl_buffer#12.release()
    let first = commits[0];
    assert_eq!(first.2, 11_532_000);
}

/// Counts made with plain string matching, checked against the spans and notes.
#[test]
fn spans_and_notes_account_for_every_message_of_the_real_logs() {
    for name in [
        "wayland-1.21-simple-shm-client.log.gz",
        "wayland-1.21-presentation-shm-client.log.gz",
        "wayland-1.21-weston-server.log.gz",
        "wayland-1.23-simple-shm-client.log.gz",
        "wayland-1.23-presentation-shm-client.log.gz",
        "wayland-1.23-weston-server.log.gz",
    ] {
        let input = fixture(name);
        let text = String::from_utf8(input.clone()).unwrap();
        let count = |a: &str, b: &str| {
            text.lines()
                .filter(|l| l.contains(a) && l.contains(b))
                .count() as u64
        };
        let commits = count("wl_surface", ".commit()");
        let releases = count("wl_buffer", ".release()");
        let frames = count("wl_surface", ".frame(new id");
        let feedbacks = count("wp_presentation", ".feedback(");
        let presented = count("wp_presentation_feedback", ".presented(");
        let not_messages = text
            .lines()
            .filter(|l| !l.starts_with('[') || l.as_bytes().get(3) == Some(&b':'))
            .count() as u64;
        assert!(commits > 50 && releases > 50, "{name}");

        let run = IMPORT.run(&input);
        let n = |stage| spans(&run, stage).len() as u64;
        assert_eq!(
            commits,
            n("commit→release")
                + noted(&run, "attached no new buffer")
                + noted(&run, "re-committed")
                + noted(&run, "destroyed (the id used again)")
                + noted(&run, "not released before the log ended"),
            "{name}: commits"
        );
        assert_eq!(
            releases,
            n("commit→release") + noted(&run, "had no commit of the buffer"),
            "{name}"
        );
        assert_eq!(
            frames,
            n("frame callback") + noted(&run, "got no done"),
            "{name}"
        );
        assert_eq!(
            feedbacks,
            n("presentation")
                + noted(&run, "discarded by the compositor")
                + noted(&run, "got neither presented"),
            "{name}"
        );
        assert_eq!(presented, n("presentation"), "{name}");
        assert_eq!(events_named(&run, "release") as u64, releases, "{name}");
        assert_eq!(
            events_named(&run, "commit") as u64,
            commits - noted(&run, "attached no new buffer"),
            "{name}"
        );
        assert_eq!(
            noted(&run, "not WAYLAND_DEBUG messages"),
            not_messages,
            "{name}"
        );
        assert_eq!(noted(&run, "lines out of order"), 0, "{name}");
        let side = if name.contains("server") {
            "server"
        } else {
            "client"
        };
        assert_eq!(run.threads.len(), 1, "{name}");
        assert_eq!(run.threads[0].name, side, "{name}");
        assert_eq!(run.threads[0].tid, u32::from(side == "server"), "{name}");
    }
}

#[test]
fn server_logs_mix_clients_and_say_so() {
    // weston launches weston-keyboard and weston-desktop-shell, then a test client: all of
    // them start with wl_display@1.get_registry(new id wl_registry@2).
    let run = IMPORT.run(fixture("wayland-1.23-weston-server.log.gz"));
    assert!(noted(&run, "id still in use") > 0);
    // weston's own log lines (`[04:49:24.903] weston 10.0.1`) are not messages.
    assert_eq!(noted(&run, "not WAYLAND_DEBUG messages"), 32);
}

#[test]
fn the_32_bit_microsecond_counter_is_unwrapped() {
    let run = IMPORT.run(fixture("wayland-wraparound.log"));
    // 4294960.000 (the origin) → 12.000 is 7.296 ms to the wrap at 4294967.296 and 12 ms
    // past it.
    assert_eq!(
        spans(&run, "commit→release"),
        [(0, 0, 19_296_000), (1, 20_296_000, 17_250_000)]
    );
    assert_eq!(spans(&run, "frame callback"), [(0, 0, 19_796_000)]);
    assert!(notes(&run).is_empty(), "{:?}", notes(&run));
}

#[test]
fn a_comma_decimal_separator_is_read_exactly() {
    let run = IMPORT.run(fixture("wayland-comma-decimal.log"));
    // Origin 12346,001: the frame callback's request.
    assert_eq!(spans(&run, "commit→release"), [(0, 1_000, 16_668_000)]);
    assert_eq!(spans(&run, "frame callback"), [(0, 0, 16_674_000)]);
}

#[test]
fn a_reused_id_never_pairs_with_its_previous_object() {
    let run = IMPORT.run(fixture("wayland-id-reuse.log"));
    // Buffer 10 committed at 1001.000 (the origin), destroyed, its id reused at 1004.000:
    // the release at 1010.000 is the new buffer's, committed at 1004.300.
    assert_eq!(spans(&run, "commit→release"), [(1, 3_300_000, 5_700_000)]);
    // done(77) is printed after delete_id(11) and still pairs; callback 12 was deleted
    // without done, and the sync that reuses its id gets the next done.
    assert_eq!(
        spans(&run, "frame callback"),
        [(0, 0, 2_500_000), (1, 3_200_000, 5_800_000)]
    );
    assert_eq!(noted(&run, "destroyed (the id used again)"), 1);
    assert_eq!(noted(&run, "got no done"), 1);
    assert_eq!(noted(&run, "attached no new buffer"), 1);
    assert_eq!(noted(&run, "id still in use"), 0);
    assert_eq!(notes(&run).len(), 3, "{:?}", notes(&run));
}

#[test]
fn releases_without_commit_and_recommits_are_counted_not_invented() {
    let run = IMPORT.run(fixture("wayland-release-without-commit.log"));
    // Buffer 21 committed at 502 and again at 503 before its release at 510; the origin
    // is the first release, at 501.
    assert_eq!(spans(&run, "commit→release"), [(1, 2 * MS, 7 * MS)]);
    assert_eq!(noted(&run, "had no commit of the buffer"), 2);
    assert_eq!(noted(&run, "re-committed"), 1);
    // The generic pairing of the events sees the same thing, without id reuse.
    let opts = ImportOptions {
        pairs: vec![PairSpec::parse("commit:release").unwrap()],
        ..ImportOptions::default()
    };
    let input = fixture("wayland-release-without-commit.log");
    let paired = parse_bytes(Format::Wayland, &input, opts).unwrap();
    assert_eq!(spans(&paired, "commit:release"), [(21, 2 * MS, 7 * MS)]);
}

#[test]
fn a_malformed_message_is_an_error_with_its_line_unless_skipped() {
    let input = fixture("wayland-malformed.log");
    let err = parse_bytes(Format::Wayland, &input, ImportOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input:5: not a WAYLAND_DEBUG message (no object id after the '@'): \
         \"[12.3] wl_surface@.commit(\"; expected `[1234567.890] interface@id.message(arguments)`, \
         or pass --skip-bad to skip such lines"
    );
    let run = IMPORT.run_skipping_bad(&input);
    let info = run.import.as_ref().unwrap();
    assert_eq!(info.skipped, 2);
    assert!(info
        .first_skipped
        .as_deref()
        .unwrap()
        .starts_with("input:5: "));
    assert_eq!(spans(&run, "commit→release"), [(0, 0, 7_800_000)]);
    assert_eq!(noted(&run, "not WAYLAND_DEBUG messages"), 1);
}

#[test]
fn bad_arguments_of_a_known_message_name_the_message() {
    let input = b"[1.000]  -> wl_surface@3.attach(what, 0, 0)\n";
    let err = parse_bytes(Format::Wayland, input, ImportOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input:1: wl_surface.attach should have a wl_buffer@ID or nil first as arguments, not \
         (\"what, 0, 0\"); pass --skip-bad to skip such lines"
    );
}

#[test]
fn garbage_bytes_are_skipped_in_other_lines_and_bad_in_messages() {
    let input = fixture("wayland-garbage-bytes.log");
    let err = parse_bytes(Format::Wayland, &input, ImportOptions::default()).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "input:6: not a WAYLAND_DEBUG message (the interface name is not an identifier)"
        ),
        "{err}"
    );
    let run = IMPORT.run_skipping_bad(&input);
    assert_eq!(spans(&run, "commit→release"), [(0, 0, 3_750_000)]);
    assert_eq!(noted(&run, "not WAYLAND_DEBUG messages"), 1);
    assert_eq!(run.import.as_ref().unwrap().skipped, 1);
}

#[test]
fn newer_prefixes_and_a_server_side_log() {
    let input = b"\
[  10.000] wl_surface#3.attach(wl_buffer#7, 0, 0)
[  10.000] wl_surface#3.commit()
[  10.000] wp_presentation#5.feedback(wl_surface#3, new id wp_presentation_feedback#9)
[  10.000] wl_surface#3.commit()
[  15.000]  -> wp_presentation_feedback#9.discarded()
[  16.000]  -> wl_buffer#7.release()
[  17.000] {Default Queue} discarded[dead proxy on dispatch]  -> wl_buffer#7.release()
";
    let run = IMPORT.run(input);
    assert_eq!(run.threads[0].name, "server");
    assert_eq!(run.threads[0].tid, 1);
    assert_eq!(spans(&run, "commit→release"), [(0, 0, 6 * MS)]);
    assert_eq!(spans(&run, "presentation"), []);
    assert_eq!(noted(&run, "discarded by the compositor"), 1);
    assert_eq!(noted(&run, "marked discarded by libwayland"), 1);
    assert_eq!(noted(&run, "had no commit of the buffer"), 1);
    assert_eq!(noted(&run, "attached no new buffer"), 1);
}

#[test]
fn a_cut_off_last_line_is_noted_not_an_error() {
    let input = b"[1.000]  -> wl_surface@3.attach(wl_buffer@4, 0, 0)\n[1.000]  -> wl_surface@3.com";
    let run = IMPORT.run(input);
    assert!(notes(&run)
        .iter()
        .any(|n| n.starts_with("the last line was cut off")));
    // But a broken line with a newline after it is an error.
    let input = b"[1.000]  -> wl_surface@3.com\n[2.000]  -> wl_surface@3.commit()";
    assert!(parse_bytes(Format::Wayland, input, ImportOptions::default()).is_err());
}

#[test]
fn files_without_messages_are_errors() {
    let err = parse_bytes(Format::Wayland, b"\n \n", ImportOptions::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("input: the file is empty"),
        "{err}"
    );
    let err =
        parse_bytes(Format::Wayland, b"hello\nworld\n", ImportOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("input: no WAYLAND_DEBUG message"),
        "{err}"
    );
}

#[test]
fn never_panics_on_mangled_real_input() {
    let input = fixture("wayland-1.23-presentation-shm-client.log.gz");
    // Every prefix, and the file with bytes flipped here and there.
    for cut in (0..input.len()).step_by(97) {
        let _ = parse_bytes(Format::Wayland, &input[..cut], ImportOptions::default());
    }
    let mut mangled = input.clone();
    let mut x: u32 = 12345;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let i = x as usize % mangled.len();
        mangled[i] = (x >> 8) as u8;
    }
    let _ = IMPORT.run_skipping_bad(&mangled);
}

#[test]
fn a_line_stamped_seconds_back_is_a_bad_record_not_a_late_print() {
    // The 1.21 client log with line 301's release stamped 30 s earlier: kept at that
    // stamp, it moved the origin 30 s back and stretched the window 7 times.
    let original = fixture("wayland-1.21-simple-shm-client.log.gz");
    let edited = String::from_utf8(original.clone()).unwrap().replacen(
        "[ 872006.332] wl_buffer@10.release()",
        "[ 842006.332] wl_buffer@10.release()",
        1,
    );
    let err = IMPORT.error(&edited);
    assert!(
        err.starts_with("input:301: stamped 30.000 s before the line before it"),
        "{err}"
    );
    let run = IMPORT.run_skipping_bad(&edited);
    assert_eq!(run.import.as_ref().unwrap().skipped, 1);
    let kept = IMPORT.run(&original);
    assert_eq!(
        spans(&run, "frame callback"),
        spans(&kept, "frame callback")
    );
    // Printed half a second late, a line keeps its time.
    let late = String::from_utf8(original).unwrap().replacen(
        "[ 872006.332] wl_buffer@10.release()",
        "[ 872005.832] wl_buffer@10.release()",
        1,
    );
    assert_eq!(IMPORT.run(&late).import.unwrap().skipped, 0);
}

#[test]
fn several_surfaces_committing_are_said_to_mix_in_the_frames() {
    // weston-subsurfaces: subsurfaces 19 and 21 commit a buffer each per 25 ms frame, the
    // main surface 15 once: 259 frames where the client drew 129.
    let run = IMPORT.run(fixture("wayland-1.21-subsurfaces-client.log.gz"));
    assert_eq!(
        noted(&run, "surfaces committed buffers"),
        3,
        "{:?}",
        notes(&run)
    );
    let note = notes(&run)
        .iter()
        .find(|n| n.contains("surfaces committed"))
        .unwrap();
    assert!(
        note.starts_with(
            "3 surfaces committed buffers (wl_surface@19 129, wl_surface@21 129, \
             wl_surface@15 1): each commit is a frame"
        ),
        "{note}"
    );
    // One surface: no such note.
    let one = IMPORT.run(fixture("wayland-1.21-simple-shm-client.log.gz"));
    assert_eq!(noted(&one, "surfaces committed buffers"), 0);
}
