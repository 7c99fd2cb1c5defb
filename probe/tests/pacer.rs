//! The pacer's policy logic against a fake clock: time moves only when the pacer sleeps or
//! spins, or when a test says work took time. No assertion depends on the real clock.

mod common;

use std::collections::VecDeque;

use common::{is_child, Session};
use framelab_probe::ffi::{fl_pacer_free, fl_pacer_new, fl_pacer_wait};
use framelab_probe::wire::{kind, name_kind, PACER_LATE_COUNTER};

use framelab_probe::pacer::{
    wait_until, InvalidRate, LatePolicy, PaceClock, Pacer, SpinWindow, WaitMethod,
};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
/// Where the fake clock starts: an arbitrary CLOCK_MONOTONIC-like value.
const T0: u64 = 5_000 * MS;

/// A clock that sleeps with a scripted overshoot and spins in steps of 1 ns.
struct FakeClock {
    now: u64,
    /// Overshoot of each sleep in turn; once empty, `default_overshoot`.
    overshoots: VecDeque<u64>,
    default_overshoot: u64,
    /// Sleeps that return this much before their target (a signal), in turn, first.
    early: VecDeque<u64>,
    /// Every target asked of `sleep_until_ns`.
    sleeps: Vec<u64>,
    spins: u64,
}

impl FakeClock {
    fn new(default_overshoot: u64) -> FakeClock {
        FakeClock {
            now: T0,
            overshoots: VecDeque::new(),
            default_overshoot,
            early: VecDeque::new(),
            sleeps: Vec::new(),
            spins: 0,
        }
    }

    /// The frame's work: time passes without the pacer.
    fn work(&mut self, ns: u64) {
        self.now += ns;
    }
}

impl PaceClock for FakeClock {
    fn now_ns(&mut self) -> u64 {
        self.now
    }

    fn sleep_until_ns(&mut self, deadline_ns: u64) {
        self.sleeps.push(deadline_ns);
        if let Some(early) = self.early.pop_front() {
            self.now = self.now.max(deadline_ns - early);
            return;
        }
        let over = self
            .overshoots
            .pop_front()
            .unwrap_or(self.default_overshoot);
        self.now = self.now.max(deadline_ns + over);
    }

    fn spin(&mut self) {
        self.spins += 1;
        self.now += 1;
    }
}

fn pacer(fps: f64, policy: LatePolicy, overshoot: u64) -> Pacer<FakeClock> {
    Pacer::with_clock(FakeClock::new(overshoot), fps, policy)
        .unwrap()
        .recording(false)
}

#[test]
fn the_first_wait_anchors_the_grid_and_returns_at_once() {
    let mut p = pacer(100.0, LatePolicy::Skip, 0);
    assert_eq!(p.next_deadline_ns(), None);
    let w = p.wait(0);
    assert_eq!((w.deadline_ns, w.woke_ns, w.late_ns), (T0, T0, 0));
    assert!(!w.slept && !w.was_late);
    assert!(p.clock().sleeps.is_empty() && p.clock().spins == 0);
    assert_eq!(p.next_deadline_ns(), Some(T0 + 10 * MS));
}

#[test]
fn deadlines_are_absolute_so_sleep_error_does_not_drift() {
    // Sleep only, every sleep 70 µs late, 3 ms of work a frame: each frame is 70 µs late
    // against its own slot, never more, and the slots stay anchor + n × 10 ms.
    let mut p = pacer(100.0, LatePolicy::CatchUp, 70 * US).with_method(WaitMethod::Sleep);
    p.wait(0);
    for n in 1..=1000u64 {
        p.clock_mut().work(3 * MS);
        let w = p.wait(n);
        assert_eq!(w.deadline_ns, T0 + n * 10 * MS);
        assert_eq!(w.late_ns, 70 * US);
        assert!(w.slept && !w.was_late);
    }
    assert_eq!(p.clock().sleeps.len(), 1000);
    assert_eq!(p.clock().spins, 0, "the sleep method never spins");
}

#[test]
fn a_fractional_period_stays_on_its_grid() {
    // 175 fps: 5714285.714… ns. Slot n is at T0 + ⌊n × 1e9 / 175⌋ (within the 2⁻²⁰ ns of the
    // fixed-point period): slot 175 exactly one second after the anchor, slot 7 at 40 ms.
    let mut p = pacer(175.0, LatePolicy::CatchUp, 0).with_method(WaitMethod::Sleep);
    p.wait(0);
    let mut deadlines = vec![T0];
    for n in 1..=175u64 {
        deadlines.push(p.wait(n).deadline_ns);
    }
    assert_eq!(deadlines[1], T0 + 5_714_285);
    assert_eq!(deadlines[7], T0 + 40 * MS);
    assert_eq!(deadlines[175], T0 + 1_000 * MS);
    assert!((p.period_ns() - 1e9 / 175.0).abs() < 1e-6);
}

#[test]
fn hybrid_sleeps_to_the_spin_window_then_spins_to_the_deadline() {
    // Overshoot 40 µs; window = 60 µs initial estimate + 50 µs margin = 110 µs.
    let mut p = pacer(100.0, LatePolicy::CatchUp, 40 * US);
    p.wait(0);
    assert_eq!(p.spin_window_ns(), 110 * US);
    p.clock_mut().work(2 * MS);
    let w = p.wait(1);
    let deadline = T0 + 10 * MS;
    assert_eq!(p.clock().sleeps, vec![deadline - 110 * US]);
    // Woke 40 µs after the sleep target, then spun the remaining 70 µs in 1 ns steps.
    assert_eq!(p.clock().spins, 70 * US);
    assert_eq!((w.woke_ns, w.late_ns), (deadline, 0));
    assert!(w.slept && !w.was_late);
}

#[test]
fn an_early_wake_up_sleeps_again_and_never_returns_before_the_deadline() {
    let mut clock = FakeClock::new(5 * US);
    clock.early.push_back(300 * US); // a signal 300 µs before the target
    let mut spin = SpinWindow::for_period(10 * MS);
    let deadline = T0 + 5 * MS;
    let woke = wait_until(&mut clock, deadline, WaitMethod::Hybrid, &mut spin);
    let target = deadline - 110 * US;
    assert_eq!(clock.sleeps, vec![target, target]);
    assert_eq!(woke.woke_ns, deadline);
    // The overshoot learned is that of the sleep that completed: 5 µs, below the estimate.
    assert_eq!(
        spin.estimate_ns(),
        60 * US - ((60 * US) >> SpinWindow::DECAY_SHIFT)
    );
}

#[test]
fn an_expired_deadline_makes_no_sleep_call_and_does_not_spin() {
    for policy in [LatePolicy::CatchUp, LatePolicy::Skip, LatePolicy::Reanchor] {
        let mut p = pacer(100.0, policy, 50 * US);
        p.wait(0);
        p.clock_mut().work(10 * MS + 1); // 1 ns past the next deadline
        let w = p.wait(1);
        assert!(w.was_late && !w.slept, "{policy:?}");
        assert_eq!(w.late_ns, 1, "{policy:?}");
        assert!(p.clock().sleeps.is_empty(), "{policy:?}: no sleep call");
        assert_eq!(p.clock().spins, 0, "{policy:?}: no spin");
    }
}

#[test]
fn exactly_on_time_is_neither_late_nor_a_wait() {
    let mut p = pacer(100.0, LatePolicy::Reanchor, 50 * US);
    p.wait(0);
    p.clock_mut().work(10 * MS);
    let w = p.wait(1);
    assert!(!w.was_late && !w.slept && !w.reanchored);
    assert_eq!(w.late_ns, 0);
    assert_eq!(p.next_deadline_ns(), Some(T0 + 20 * MS));
    assert!(p.clock().sleeps.is_empty());
}

/// Frame 1 takes 25 ms of work at 100 fps: it reaches `wait(2)` at T0 + 25 ms, when the
/// slot of frame 2 (T0 + 10 ms) and the one at T0 + 20 ms have passed.
fn late_by_one_and_a_half_slots(policy: LatePolicy) -> Pacer<FakeClock> {
    let mut p = pacer(100.0, policy, 0).with_method(WaitMethod::Sleep);
    p.wait(0);
    p.clock_mut().work(25 * MS);
    p
}

#[test]
fn catch_up_runs_late_frames_back_to_back_then_returns_to_the_grid() {
    let mut p = late_by_one_and_a_half_slots(LatePolicy::CatchUp);
    let w = p.wait(1);
    assert!(w.was_late);
    assert_eq!((w.deadline_ns, w.late_ns), (T0 + 10 * MS, 15 * MS));
    // Frame 2's slot (20 ms) has passed too: it starts at once, no sleep.
    p.clock_mut().work(MS);
    let w = p.wait(2);
    assert!(w.was_late && !w.slept);
    assert_eq!(w.deadline_ns, T0 + 20 * MS);
    // Frame 3 is back on the grid: it sleeps to 30 ms.
    p.clock_mut().work(MS);
    let w = p.wait(3);
    assert!(w.slept && !w.was_late);
    assert_eq!(w.woke_ns, T0 + 30 * MS);
    assert_eq!(p.clock().sleeps, vec![T0 + 30 * MS]);
}

#[test]
fn skip_gives_up_the_missed_slots_and_keeps_the_grid() {
    let mut p = late_by_one_and_a_half_slots(LatePolicy::Skip);
    let w = p.wait(1);
    assert!(w.was_late && !w.slept);
    // Due at 10 ms, started at 25 ms: it takes the 20 ms slot, the 10 ms one is given up.
    assert_eq!(w.skipped_slots, 1);
    assert_eq!(w.late_ns, 15 * MS);
    // The next frame waits for the 30 ms slot of the same grid.
    assert_eq!(p.next_deadline_ns(), Some(T0 + 30 * MS));
    p.clock_mut().work(MS);
    let w = p.wait(2);
    assert_eq!((w.woke_ns, w.skipped_slots), (T0 + 30 * MS, 0));
    assert!(w.slept && !w.was_late);
}

#[test]
fn skip_of_less_than_a_slot_skips_nothing() {
    let mut p = pacer(100.0, LatePolicy::Skip, 0).with_method(WaitMethod::Sleep);
    p.wait(0);
    p.clock_mut().work(14 * MS); // due at 10 ms, 4 ms late
    let w = p.wait(1);
    assert!(w.was_late);
    assert_eq!(w.skipped_slots, 0);
    assert_eq!(p.next_deadline_ns(), Some(T0 + 20 * MS));
}

#[test]
fn reanchor_restarts_the_grid_at_the_late_frame() {
    let mut p = late_by_one_and_a_half_slots(LatePolicy::Reanchor);
    let w = p.wait(1);
    assert!(w.was_late && w.reanchored && !w.slept);
    assert_eq!(w.late_ns, 15 * MS);
    // New grid: 25 ms, 35 ms, 45 ms …
    assert_eq!(p.next_deadline_ns(), Some(T0 + 35 * MS));
    p.clock_mut().work(MS);
    let w = p.wait(2);
    assert_eq!(w.woke_ns, T0 + 35 * MS);
    assert!(!w.reanchored);
    p.clock_mut().work(MS);
    assert_eq!(p.wait(3).woke_ns, T0 + 45 * MS);
}

#[test]
fn the_spin_window_follows_the_overshoot_it_observes() {
    // By hand: estimate e, window min(e + 50 µs, cap); each sleep
    // e ← max(min(o, 2e, cap), e − e/128).
    let mut w = SpinWindow::for_period(20 * MS); // cap min(1 ms, 2 ms) = 1 ms
    assert_eq!(w.window_ns(), 110 * US);
    w.observe(100 * US); // a larger overshoot within twice the estimate is taken at once
    assert_eq!(w.estimate_ns(), 100 * US);
    assert_eq!(w.window_ns(), 150 * US);
    w.observe(0); // then forgotten slowly: 100000 − 781 (100000 >> 7)
    assert_eq!(w.estimate_ns(), 99_219);
    w.observe(0); // 99219 − 775
    assert_eq!(w.estimate_ns(), 98_444);
    // One stray 5 ms wake-up only doubles it; recurring ones reach the cap.
    w.observe(5 * MS);
    assert_eq!(w.estimate_ns(), 196_888);
    w.observe(5 * MS);
    w.observe(5 * MS);
    assert_eq!(w.estimate_ns(), 787_552);
    w.observe(5 * MS);
    assert_eq!(w.estimate_ns(), MS);
    assert_eq!(w.window_ns(), MS);
    // Short periods cap the window at a tenth of the period: 20 µs at 5 kHz.
    assert_eq!(SpinWindow::for_period(200 * US).window_ns(), 20 * US);
    // 175 fps: 110 µs to start with, at most 571 µs.
    assert_eq!(SpinWindow::for_period(5_714_285).window_ns(), 110 * US);
    let mut w = SpinWindow::for_period(5_714_285);
    for _ in 0..10 {
        w.observe(5 * MS);
    }
    assert_eq!(w.window_ns(), 571_428);
}

#[test]
fn the_pacer_learns_a_larger_overshoot_and_then_a_smaller_one() {
    // Sleeps overshoot by 150 µs. Frame 1: window 110 µs → 40 µs late; the estimate doubles
    // to 120 µs. Frame 2: window 170 µs → on time after 20 µs of spin; estimate 150 µs. From
    // frame 3 the window is 200 µs and every frame is on time after 50 µs of spin.
    let mut p = pacer(100.0, LatePolicy::CatchUp, 150 * US);
    p.wait(0);
    let mut late = Vec::new();
    for n in 1..=20 {
        let spins_before = p.clock().spins;
        p.clock_mut().work(MS);
        late.push(p.wait(n).late_ns);
        if n >= 3 {
            assert_eq!(p.clock().spins - spins_before, 50 * US, "frame {n}");
        }
    }
    assert_eq!(late[..3], [40 * US, 0, 0]);
    assert!(late[3..].iter().all(|&l| l == 0), "{late:?}");
    assert_eq!(p.spin_window_ns(), 200 * US);
    // Then sleeps become precise (5 µs): the window shrinks frame by frame toward 55 µs
    // (150 µs × (127/128)^n reaches 5 µs after about 440 frames).
    p.clock_mut().default_overshoot = 5 * US;
    let mut windows = Vec::new();
    for n in 21..=1000 {
        p.clock_mut().work(MS);
        assert_eq!(p.wait(n).late_ns, 0);
        windows.push(p.spin_window_ns());
    }
    assert!(windows.windows(2).all(|w| w[1] <= w[0]), "{windows:?}");
    assert_eq!(*windows.last().unwrap(), 55 * US);
}

#[test]
fn invalid_rates_are_refused_with_a_sentence() {
    for fps in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e6, 1e-9] {
        assert!(
            Pacer::with_clock(FakeClock::new(0), fps, LatePolicy::Skip).is_err(),
            "{fps}"
        );
    }
    let err = InvalidRate(0.0).to_string();
    assert!(err.starts_with("cannot pace at 0 fps"), "{err}");
    assert!(Pacer::with_clock(FakeClock::new(0), 1e6, LatePolicy::Skip).is_ok());
}

#[test]
fn the_c_policy_numbers() {
    assert_eq!(LatePolicy::from_c(0), Some(LatePolicy::CatchUp));
    assert_eq!(LatePolicy::from_c(1), Some(LatePolicy::Skip));
    assert_eq!(LatePolicy::from_c(2), Some(LatePolicy::Reanchor));
    assert_eq!(LatePolicy::from_c(3), None);
    assert_eq!(LatePolicy::from_c(-1), None);
}

#[test]
fn the_pacer_records_how_late_it_woke_as_a_counter_not_a_stage() {
    const TEST: &str = "the_pacer_records_how_late_it_woke_as_a_counter_not_a_stage";
    if is_child(TEST) {
        // Sleep only, 70 µs overshoot: frame 1 waits and wakes 70 µs late; frame 2 reaches
        // the pacer 5 ms late and passes straight through.
        let mut p = Pacer::with_clock(FakeClock::new(70 * US), 100.0, LatePolicy::CatchUp)
            .unwrap()
            .with_method(WaitMethod::Sleep);
        let wakes = [
            p.wait(0),
            {
                p.clock_mut().work(MS);
                p.wait(1)
            },
            {
                p.clock_mut().work(15 * MS);
                p.wait(2)
            },
        ];
        let overshoots: Vec<u64> = wakes.iter().map(|w| w.overshoot_ns).collect();
        assert_eq!(overshoots, [0, 70 * US, 0]);
        // Against the grid frame 2 is 5.07 ms late: the pipeline's lateness, not the pacer's.
        assert_eq!(wakes[2].late_ns, 5 * MS + 70 * US);
        return;
    }
    let session = Session::new("pace");
    session.run(TEST, &[]);
    let ring = &session.rings()[0];
    let late = session.id(ring.pid, name_kind::COUNTER, PACER_LATE_COUNTER);
    let values: Vec<(u64, u64)> = (ring.records.iter())
        .filter(|r| r.kind() == kind::COUNTER && r.name() == late)
        .map(|r| (r.frame, r.a))
        .collect();
    assert_eq!(
        values,
        vec![
            (0, 0),       // the anchor: on time
            (1, 70 * US), // deadline → wake: the pacer's error
            (2, 0),       // late: from the call, nothing added
        ]
    );
    // Waiting for a slot is no stage of the frame: no span at all.
    assert!(
        (ring.records.iter()).all(|r| r.kind() != kind::SPAN && r.kind() != kind::SPAN_NS),
        "{:?}",
        ring.records
    );
}

#[test]
fn the_c_pacer_refuses_bad_arguments_and_tolerates_null() {
    assert!(fl_pacer_new(0.0, 0).is_null());
    assert!(fl_pacer_new(-60.0, 0).is_null());
    assert!(fl_pacer_new(f64::NAN, 1).is_null());
    assert!(fl_pacer_new(60.0, 3).is_null());
    // SAFETY: null is allowed for both.
    unsafe {
        assert_eq!(fl_pacer_wait(std::ptr::null_mut(), 0), -1);
        fl_pacer_free(std::ptr::null_mut());
    }
    let p = fl_pacer_new(1000.0, 1);
    assert!(!p.is_null());
    // SAFETY: a live pacer from fl_pacer_new, freed once. The first wait anchors the grid
    // and is on time by definition; the second returns a lateness (never negative).
    unsafe {
        assert_eq!(fl_pacer_wait(p, 0), 0);
        assert!(fl_pacer_wait(p, 1) >= 0);
        fl_pacer_free(p);
    }
}
