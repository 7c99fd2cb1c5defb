//! `framelab._native`: the framelab SDK (`framelab-probe`, linked in directly) for Python.
//!
//! Every call goes straight to the crate's C ABI functions, which take ids and plain
//! structs: a span ends on whichever thread calls `end` (the C rules, not the Rust guard's),
//! because a Python object may be handed between threads. The Python layer (`framelab/`)
//! adds the decorator and the rest; nothing here allocates on the hot path (a stage reuses
//! its span object while nobody else holds it).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::{Arc, Mutex, TryLockError};

use framelab_probe::ffi::{self, FlLaps, FlSpan};
use framelab_probe::{
    Counter as ProbeCounter, Event as ProbeEvent, Queue as ProbeQueue, Stage as ProbeStage,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    SpanError,
    PyRuntimeError,
    "A span or laps used wrongly: ended twice, or a lap after the laps were finished."
);

/// The longest name accepted, in UTF-8 bytes. The collector reads at most 64 MiB of a
/// process's names (4095 names of 16 KiB): a longer name would crowd out the others.
const MAX_NAME_BYTES: usize = 16 * 1024;

/// Bumped in the child after every fork: a span or laps begun before the fork is dropped in
/// the child, as the Rust SDK drops a guard carried across a fork, instead of being written
/// into the child's ring with a start taken in the parent.
static FORK_GENERATION: AtomicU32 = AtomicU32::new(0);

extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> i32;
}

unsafe extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Relaxed);
}

fn checked_name(kind: &str, name: &str) -> PyResult<()> {
    if name.len() > MAX_NAME_BYTES {
        return Err(PyValueError::new_err(format!(
            "{kind} name is {} bytes long, more than the {MAX_NAME_BYTES} a name may have: \
             give it a shorter name",
            name.len()
        )));
    }
    Ok(())
}

/// A named stage of a frame (`capture`, `encode`). Create once, outside the frame loop.
#[pyclass(module = "framelab._native", subclass, frozen)]
struct Stage {
    stage: ProbeStage,
    name: Arc<str>,
    /// The span `span()` hands out again while nobody else holds it (see `span`).
    spare: Py<Span>,
}

#[pymethods]
impl Stage {
    #[new]
    fn new(py: Python<'_>, name: &str) -> PyResult<Self> {
        checked_name("stage", name)?;
        let stage = ProbeStage::new(name);
        let name: Arc<str> = name.into();
        let spare = Span::idle(stage, name.clone());
        Ok(Stage {
            stage,
            name,
            spare: Py::new(py, spare)?,
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The interned id: 0 when the process's name table was full (records are then counted
    /// as invalid by the collector).
    #[getter]
    fn id(&self) -> u16 {
        self.stage.id()
    }

    /// Starts a span of this stage for `frame` now; it is recorded by `end()` or at the end
    /// of the `with` block.
    fn span(&self, py: Python<'_>, frame: u64) -> PyResult<Py<Span>> {
        // In a `with` loop the previous span is gone by the next call: when the spare is
        // referenced by this stage alone, it is restarted instead of allocating a new one.
        // Exact under the GIL (the module does not declare itself free-threading safe, so
        // the GIL is always on while this runs). Nested or kept spans get fresh objects.
        // SAFETY: a live object's reference count.
        if unsafe { pyo3::ffi::Py_REFCNT(self.spare.as_ptr()) } == 1 {
            self.spare.get().restart(frame);
            return Ok(self.spare.clone_ref(py));
        }
        let span = Span::idle(self.stage, self.name.clone());
        span.restart(frame);
        Py::new(py, span)
    }

    /// Records a span whose ends the program already has, CLOCK_MONOTONIC nanoseconds
    /// (`time.monotonic_ns()`, `framelab.now_ns()`).
    fn record_ns(&self, frame: u64, start_ns: u64, end_ns: u64) {
        self.stage.record_ns(frame, start_ns, end_ns);
    }

    /// Records a span that ran on `queue` (a GPU stream), not on the calling thread: the
    /// queue is a resource of its own in the report.
    fn record_ns_on(&self, queue: &Queue, frame: u64, start_ns: u64, end_ns: u64) {
        self.stage
            .record_ns_on(&queue.queue, frame, start_ns, end_ns);
    }

    fn __repr__(&self) -> String {
        format!("Stage({:?}, id={})", self.name, self.stage.id())
    }
}

const OPEN: u8 = 0;
const ENDED: u8 = 1;

/// A running span of one stage and one frame. Ends once: `end()`, or leaving `with`.
///
/// Fields are atomics because a stage restarts its spare span in place (`Stage::span`).
#[pyclass(module = "framelab._native", frozen)]
struct Span {
    stage: ProbeStage,
    frame: AtomicU64,
    /// The start in the SDK's clock; `live` 0 when the process does not record.
    start: AtomicU64,
    live: AtomicU32,
    generation: AtomicU32,
    state: AtomicU8,
    /// For the error message of a second end (shared with the stage, no copy).
    name: Arc<str>,
}

impl Span {
    fn idle(stage: ProbeStage, name: Arc<str>) -> Span {
        Span {
            stage,
            frame: AtomicU64::new(0),
            start: AtomicU64::new(0),
            live: AtomicU32::new(0),
            generation: AtomicU32::new(0),
            state: AtomicU8::new(ENDED),
            name,
        }
    }

    /// Begins it again, for `frame`, now.
    fn restart(&self, frame: u64) {
        let begun = ffi::fl_begin(u32::from(self.stage.id()), frame);
        self.frame.store(frame, Relaxed);
        self.start.store(begun.start, Relaxed);
        self.live.store(begun.live, Relaxed);
        self.generation
            .store(FORK_GENERATION.load(Relaxed), Relaxed);
        self.state.store(OPEN, Relaxed);
    }

    fn finish(&self) -> PyResult<()> {
        if self
            .state
            .compare_exchange(OPEN, ENDED, Relaxed, Relaxed)
            .is_err()
        {
            return Err(SpanError::new_err(format!(
                "the span of stage {:?} for frame {} was already ended: end a span once",
                self.name,
                self.frame.load(Relaxed)
            )));
        }
        if self.generation.load(Relaxed) == FORK_GENERATION.load(Relaxed) {
            let span = FlSpan {
                frame: self.frame.load(Relaxed),
                start: self.start.load(Relaxed),
                stage: u32::from(self.stage.id()),
                live: self.live.load(Relaxed),
            };
            // SAFETY: the fields of a span from fl_begin.
            unsafe { ffi::fl_end(&span) };
        }
        Ok(())
    }
}

#[pymethods]
impl Span {
    /// Records the span, from its start to now. A second call raises `SpanError`.
    fn end(&self) -> PyResult<()> {
        self.finish()
    }

    #[getter]
    fn frame(&self) -> u64 {
        self.frame.load(Relaxed)
    }

    #[getter]
    fn ended(&self) -> bool {
        self.state.load(Relaxed) == ENDED
    }
}

/// The `with` protocol at the cost of two C calls. CPython's `with` looks `__enter__` and
/// `__exit__` up on every block, and a method would make a bound method object each time,
/// then go through PyO3's argument parsing: together as dear as the span itself. Instead
/// both names hold a `WithProtocol` whose `tp_descr_get` gives the span itself, and the
/// span's `tp_call` does the rest: no argument is `__enter__` (returns the span), the three
/// exception values are `__exit__` (ends it, returns False so exceptions propagate).
#[pyclass(module = "framelab._native", frozen)]
struct WithProtocol;

/// `tp_descr_get` of `WithProtocol`: the instance it is looked up on (itself on the class).
unsafe extern "C" fn the_instance(
    descr: *mut pyo3::ffi::PyObject,
    instance: *mut pyo3::ffi::PyObject,
    _owner: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    let found = if instance.is_null() { descr } else { instance };
    pyo3::ffi::Py_NewRef(found)
}

/// `tp_call` of `Span`: `__enter__` or `__exit__`, told apart by the number of arguments.
unsafe extern "C" fn span_call(
    span: *mut pyo3::ffi::PyObject,
    args: *mut pyo3::ffi::PyObject,
    kwargs: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    let py = Python::assume_attached();
    let given = pyo3::ffi::PyTuple_GET_SIZE(args);
    let result = match (given, kwargs.is_null()) {
        (0, true) => return pyo3::ffi::Py_NewRef(span),
        (3, true) => {
            let span = Bound::<PyAny>::from_borrowed_ptr(py, span).cast_into_unchecked::<Span>();
            span.get().finish()
        }
        _ => Err(PyTypeError::new_err(
            "a span is called by `with` only, as __enter__() or __exit__(type, value, \
             traceback): use `with stage.span(frame):` or `.end()`",
        )),
    };
    match result {
        Ok(()) => pyo3::ffi::Py_NewRef(pyo3::ffi::Py_False()),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// Installs the `with` protocol of `Span` described at [`WithProtocol`].
fn install_with_protocol(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let protocol = py.get_type::<WithProtocol>();
    let span = py.get_type::<Span>();
    // SAFETY: both are heap types this module just made, not used yet; a slot set before
    // first use and announced with PyType_Modified is what CPython's own types do.
    unsafe {
        let protocol = protocol.as_ptr().cast::<pyo3::ffi::PyTypeObject>();
        (*protocol).tp_descr_get = Some(the_instance);
        pyo3::ffi::PyType_Modified(protocol);
        let span = span.as_ptr().cast::<pyo3::ffi::PyTypeObject>();
        (*span).tp_call = Some(span_call);
        pyo3::ffi::PyType_Modified(span);
    }
    let instance = Py::new(py, WithProtocol)?;
    span.setattr("__enter__", &instance)?;
    span.setattr("__exit__", &instance)?;
    Ok(())
}

/// A named queue (`gpu0.compute`): a resource that is not a thread of the program. Spans
/// recorded on it with `Stage.record_ns_on` make it a resource of its own in the report.
#[pyclass(module = "framelab._native", frozen)]
struct Queue {
    queue: ProbeQueue,
}

#[pymethods]
impl Queue {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        if name.is_empty() || name.len() > MAX_QUEUE_NAME_BYTES {
            return Err(PyValueError::new_err(format!(
                "queue name {name:?} is {} bytes long: give it 1 to {MAX_QUEUE_NAME_BYTES} \
                 bytes (the run file keeps a queue's name as a thread name)",
                name.len()
            )));
        }
        Ok(Queue {
            queue: ProbeQueue::new(name),
        })
    }

    /// The queue of GPU `device`'s stream `stream`, named `gpu<device>.stream<stream>` as
    /// from Rust (`Queue::gpu`) and C (`fl_queue_new_gpu`).
    #[staticmethod]
    fn gpu(device: u32, stream: u64) -> Queue {
        Queue {
            queue: ProbeQueue::gpu(device, stream),
        }
    }

    #[getter]
    fn name(&self) -> &str {
        self.queue.name()
    }

    fn __repr__(&self) -> String {
        format!("Queue({:?})", self.queue.name())
    }
}

/// A queue's name is stored as a thread name: at most 31 bytes.
const MAX_QUEUE_NAME_BYTES: usize = 31;

/// Consecutive stages of one frame: `lap(stage)` records `stage` from the previous
/// boundary to now, one clock read per boundary.
#[pyclass(module = "framelab._native", frozen)]
struct Laps {
    frame: AtomicU64,
    last: AtomicU64,
    live: u32,
    generation: u32,
}

#[pymethods]
impl Laps {
    #[new]
    fn new(frame: u64) -> Self {
        let laps = ffi::fl_laps_start(frame);
        Laps {
            frame: AtomicU64::new(frame),
            last: AtomicU64::new(laps.last),
            live: laps.live,
            generation: FORK_GENERATION.load(Relaxed),
        }
    }

    /// Ends `stage` now; the next stage starts at this same instant.
    fn lap(&self, stage: &Stage) {
        if self.live == 0 || self.generation != FORK_GENERATION.load(Relaxed) {
            return;
        }
        let mut laps = FlLaps {
            frame: self.frame.load(Relaxed),
            last: self.last.load(Relaxed),
            live: 1,
        };
        // SAFETY: a valid FlLaps on the stack.
        unsafe { ffi::fl_lap(&mut laps, u32::from(stage.stage.id())) };
        self.last.store(laps.last, Relaxed);
    }

    /// Moves the boundary to now without recording (time between stages that is no stage).
    fn skip(&self) {
        if self.live != 0 {
            self.last.store(framelab_probe::ticks(), Relaxed);
        }
    }

    /// Moves on to the next frame, starting from the last boundary.
    fn next_frame(&self, frame: u64) {
        self.frame.store(frame, Relaxed);
    }

    #[getter]
    fn frame(&self) -> u64 {
        self.frame.load(Relaxed)
    }
}

/// A named per-frame number (`bytes`, `keyframe`); several values of a frame add up.
#[pyclass(module = "framelab._native", frozen)]
struct Counter {
    counter: ProbeCounter,
    name: String,
}

#[pymethods]
impl Counter {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        checked_name("counter", name)?;
        Ok(Counter {
            counter: ProbeCounter::new(name),
            name: name.to_owned(),
        })
    }

    fn add(&self, frame: u64, value: i64) {
        self.counter.add(frame, value);
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn id(&self) -> u16 {
        self.counter.id()
    }

    fn __repr__(&self) -> String {
        format!("Counter({:?}, id={})", self.name, self.counter.id())
    }
}

/// A named kind of instant (`commit`, `release`), marked with a key for pairing.
#[pyclass(module = "framelab._native", frozen)]
struct Event {
    event: ProbeEvent,
    name: String,
}

#[pymethods]
impl Event {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        checked_name("event", name)?;
        Ok(Event {
            event: ProbeEvent::new(name),
            name: name.to_owned(),
        })
    }

    /// Records an instant now with `key` (a buffer id, a request id).
    fn mark(&self, key: u64) {
        self.event.mark(key);
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn id(&self) -> u16 {
        self.event.id()
    }

    fn __repr__(&self) -> String {
        format!("Event({:?}, id={})", self.name, self.event.id())
    }
}

/// What `Pacer.wait` did for one frame (the Rust SDK's `Wake`).
#[pyclass(module = "framelab._native", frozen, get_all)]
struct Wake {
    deadline_ns: u64,
    woke_ns: u64,
    late_ns: u64,
    overshoot_ns: u64,
    was_late: bool,
    slept: bool,
    skipped_slots: u64,
    reanchored: bool,
}

#[pymethods]
impl Wake {
    fn __repr__(&self) -> String {
        format!(
            "Wake(deadline_ns={}, woke_ns={}, late_ns={}, overshoot_ns={}, was_late={}, slept={}, skipped_slots={}, reanchored={})",
            self.deadline_ns, self.woke_ns, self.late_ns, self.overshoot_ns, self.was_late, self.slept,
            self.skipped_slots, self.reanchored
        )
    }
}

/// Paces a loop at `fps` on absolute deadlines (the Rust SDK's `Pacer`), recording how late
/// it woke for each frame (counter `pacer_late_ns`: a wait, not a stage; `record=False`: not).
#[pyclass(module = "framelab._native", frozen)]
struct Pacer {
    /// Held for one `wait` at a time: a second thread's is refused, not queued behind it.
    pacer: Mutex<framelab_probe::Pacer>,
    period_ns: f64,
}

#[pymethods]
impl Pacer {
    #[new]
    #[pyo3(signature = (fps, late = "catch_up", method = "hybrid", record = true))]
    fn new(fps: f64, late: &str, method: &str, record: bool) -> PyResult<Self> {
        use framelab_probe::pacer::WaitMethod;
        use framelab_probe::LatePolicy;
        let policy = match late {
            "catch_up" => LatePolicy::CatchUp,
            "skip" => LatePolicy::Skip,
            "reanchor" => LatePolicy::Reanchor,
            other => {
                return Err(PyValueError::new_err(format!(
                    "late={other:?} is not a late policy: use 'catch_up', 'skip' or 'reanchor'"
                )))
            }
        };
        let method = match method {
            "hybrid" => WaitMethod::Hybrid,
            "sleep" => WaitMethod::Sleep,
            other => {
                return Err(PyValueError::new_err(format!(
                    "method={other:?} is not a wait method: use 'hybrid' or 'sleep'"
                )))
            }
        };
        let pacer = framelab_probe::Pacer::new(fps, policy)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .with_method(method)
            .recording(record);
        Ok(Pacer {
            period_ns: pacer.period_ns(),
            pacer: Mutex::new(pacer),
        })
    }

    /// Waits for `frame`'s slot, the GIL released meanwhile. One thread at a time: a pacer
    /// paces one loop, so a wait while another thread waits on it is an error.
    fn wait(&self, py: Python<'_>, frame: u64) -> PyResult<Wake> {
        let mut pacer = match self.pacer.try_lock() {
            Ok(pacer) => pacer,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "Pacer.wait: another thread is waiting on this pacer; a pacer paces one \
                     loop: give each thread its own Pacer",
                ))
            }
        };
        let pacer = &mut *pacer; // the pacer, not its guard, crosses into the detached call
        let w = py.detach(|| pacer.wait(frame));
        Ok(Wake {
            deadline_ns: w.deadline_ns,
            woke_ns: w.woke_ns,
            late_ns: w.late_ns,
            overshoot_ns: w.overshoot_ns,
            was_late: w.was_late,
            slept: w.slept,
            skipped_slots: w.skipped_slots,
            reanchored: w.reanchored,
        })
    }

    /// The period in ns (fractional: 175 fps is 5714285.714 ns).
    #[getter]
    fn period_ns(&self) -> f64 {
        self.period_ns
    }
}

/// Whether this process records into a framelab session (`framelab run` around it).
#[pyfunction]
fn enabled() -> bool {
    framelab_probe::enabled()
}

/// CLOCK_MONOTONIC in ns: the clock `record_ns` takes (the same as `time.monotonic_ns()`).
#[pyfunction]
fn now_ns() -> u64 {
    framelab_probe::monotonic_ns()
}

/// Names refused because this process interned more than the SDK's 4095.
#[pyfunction]
fn names_refused() -> u32 {
    framelab_probe::names_refused()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: the handler only bumps an atomic.
    unsafe { pthread_atfork(None, None, Some(after_fork_in_child)) };
    m.add_class::<Stage>()?;
    m.add_class::<Span>()?;
    install_with_protocol(m)?;
    m.add_class::<Queue>()?;
    m.add_class::<Laps>()?;
    m.add_class::<Counter>()?;
    m.add_class::<Event>()?;
    m.add_class::<Pacer>()?;
    m.add_class::<Wake>()?;
    m.add_function(wrap_pyfunction!(enabled, m)?)?;
    m.add_function(wrap_pyfunction!(now_ns, m)?)?;
    m.add_function(wrap_pyfunction!(names_refused, m)?)?;
    m.add("SpanError", m.py().get_type::<SpanError>())?;
    m.add("MAX_NAME_BYTES", MAX_NAME_BYTES)?;
    Ok(())
}
