//! Named queues: resources that are not threads of the program (a GPU stream, a DMA engine,
//! a hardware encoder). Spans recorded on a queue (`Stage::record_ns_on`) make it a
//! resource of its own in the report: its utilisation, its stages, the rate it bounds.
//!
//! A queue writes into a ring of its own whose header names the queue and carries a pseudo
//! tid (`wire::QUEUE_TID_BASE` and up): the collector stores it as one more thread of the
//! process, so the run file needs nothing new. Any thread may record on a queue, so its
//! records are written under a lock; a stage's own spans stay lock-free.

use std::sync::atomic::{AtomicU32, Ordering::*};
use std::sync::Mutex;

use crate::session::{self, FORK_GENERATION};
use crate::wire::{kind, Record, RingHeader, QUEUE_TID_BASE};
use crate::{push, Stage};

/// Queues made by this process: the next one's pseudo tid is the base plus this.
static QUEUES_MADE: AtomicU32 = AtomicU32::new(0);

/// A named queue (`gpu0.compute`). Create once, like a stage; record spans on it with
/// [`Stage::record_ns_on`]. Names longer than 31 bytes are cut (at a character boundary).
pub struct Queue {
    name: [u8; 32],
    tid: u32,
    ring: Mutex<QueueRing>,
}

/// The queue's ring in this process, made on its first record.
struct QueueRing {
    ring: *mut RingHeader,
    bytes: usize,
    /// `FORK_GENERATION` when the ring was made: a forked child makes its own.
    generation: u32,
    /// No session, or the ring could not be made: records are dropped without retrying.
    gave_up: bool,
}

// SAFETY: the ring pointer is only used with the lock held.
unsafe impl Send for QueueRing {}

impl Queue {
    pub fn new(name: &str) -> Queue {
        let mut cut = name.len().min(31);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut bytes = [0u8; 32];
        bytes[..cut].copy_from_slice(&name.as_bytes()[..cut]);
        Queue {
            name: bytes,
            tid: QUEUE_TID_BASE + QUEUES_MADE.fetch_add(1, Relaxed),
            ring: Mutex::new(QueueRing {
                ring: std::ptr::null_mut(),
                bytes: 0,
                generation: FORK_GENERATION.load(Relaxed),
                gave_up: false,
            }),
        }
    }

    /// The queue of a GPU stream, named after the device and the stream:
    /// [`gpu_queue_name`]. Where GPU work is recorded unless told otherwise, so that it
    /// counts to the GPU, never to the CPU thread that recorded it.
    pub fn gpu(device: u32, stream: u64) -> Queue {
        Queue::new(&gpu_queue_name(device, stream))
    }

    /// The name as recorded (cut to 31 bytes).
    pub fn name(&self) -> &str {
        let len = self.name.iter().position(|&b| b == 0).unwrap_or(32);
        std::str::from_utf8(&self.name[..len]).unwrap_or("")
    }

    /// The pseudo tid the run file gives this queue in this process.
    pub fn tid(&self) -> u32 {
        self.tid
    }

    pub(crate) fn record(&self, record: Record) {
        let Ok(mut q) = self.ring.lock() else { return };
        let generation = FORK_GENERATION.load(Relaxed);
        if q.generation != generation {
            // A forked child: the mapping is the parent's ring. Leave it, make the child's.
            *q = QueueRing {
                ring: std::ptr::null_mut(),
                bytes: 0,
                generation,
                gave_up: false,
            };
        }
        if q.ring.is_null() && !q.gave_up {
            match session::create_queue_ring(self.tid, self.name) {
                Some((ring, bytes)) => (q.ring, q.bytes) = (ring, bytes),
                None => q.gave_up = true,
            }
        }
        if !q.ring.is_null() {
            // SAFETY: the queue's live mapping, written by one thread at a time (the lock).
            unsafe { push(q.ring, record) }
        }
    }
}

/// `gpu<device>.stream<stream>` (`gpu0.stream0`): the name of a GPU stream's queue, the same
/// from Rust, C (`fl_queue_new_gpu`) and Python (`framelab.gpu`). `device` is the GPU's index
/// (as NVML and CUDA number them, the `GPU0` of the telemetry); `stream` tells its streams
/// apart (PyTorch's `stream_id`, CUDA 12's `cudaStreamGetId`, or an index of your own; 0 for
/// the default stream). Cut to 31 bytes like any queue name: with a device under 10 every
/// stream number stays whole.
pub fn gpu_queue_name(device: u32, stream: u64) -> String {
    format!("gpu{device}.stream{stream}")
}

impl Drop for Queue {
    fn drop(&mut self) {
        let q = self.ring.get_mut().unwrap_or_else(|e| e.into_inner());
        if !q.ring.is_null() && q.generation == FORK_GENERATION.load(Relaxed) {
            // SAFETY: our mapping; no record is being written (we are its only owner).
            unsafe {
                (*q.ring).closed.store(1, Release);
                crate::sys::munmap(q.ring.cast(), q.bytes);
            }
        }
    }
}

impl Stage {
    /// Records a span of this stage that ran on `queue` (not on the calling thread), in
    /// CLOCK_MONOTONIC nanoseconds: GPU work timed by events, converted to the host clock.
    #[inline]
    pub fn record_ns_on(self, queue: &Queue, frame: u64, start_ns: u64, end_ns: u64) {
        if crate::session::MODE.load(Relaxed) == crate::session::MODE_OFF {
            return;
        }
        queue.record(Record::new(
            kind::SPAN_NS,
            self.0,
            0,
            frame,
            start_ns,
            end_ns,
        ));
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("name", &self.name())
            .field("tid", &self.tid)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_queue_is_named_after_its_device_and_stream() {
        assert_eq!(Queue::gpu(0, 0).name(), "gpu0.stream0");
        assert_eq!(Queue::gpu(3, 35).name(), "gpu3.stream35");
        let widest = Queue::gpu(9, u64::MAX);
        assert_eq!(widest.name(), format!("gpu9.stream{}", u64::MAX));
        assert_eq!(widest.name().len(), 31);
        // The C ABI names it the same way.
        let q = crate::ffi::fl_queue_new_gpu(1, 7);
        // SAFETY: a live queue from fl_queue_new_gpu, freed once.
        unsafe {
            assert_eq!((*q).name(), "gpu1.stream7");
            crate::ffi::fl_queue_free(q);
        }
    }
}
