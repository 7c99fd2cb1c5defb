//! What reading rings with `pread` (issue 11 item 4: a ring the program truncates must not
//! SIGBUS the collector) costs against reading them through a mapping, as the collector did.
//!
//! ```sh
//! cargo build --release -p framelab-benches --bin ring_read
//! target/release/ring_read
//! ```
//!
//! One ring file of the default size in /dev/shm. Each case drains K records the way the
//! collector does once per ring per tick: read the header (head), copy K records out, write
//! the tail back. The mapping reader reads the header and records through a shared mapping
//! (volatile loads, as before); the pread reader does one `pread` of the header and, when
//! there are records, one or two of the records and one `pwrite` of the tail. Cases are
//! interleaved in rounds; the median round is printed, ns per drain and per record.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use framelab_probe::wire::{self, Record};

const CAPACITY: u64 = wire::DEFAULT_RING_RECORDS;
const HEAD_AT: u64 = 64;
const TAIL_AT: u64 = 128;

fn main() {
    let path = std::path::Path::new("/dev/shm").join(format!("ring-read-{}", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    let bytes = wire::ring_file_bytes(CAPACITY);
    file.set_len(bytes as u64).unwrap();
    // SAFETY: mapping the file just sized.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    }
    .cast::<u8>();
    assert_ne!(map.cast(), libc::MAP_FAILED);
    for i in 0..CAPACITY as usize {
        let r = Record::new(1, 1, 0, i as u64, i as u64, i as u64 + 1);
        unsafe { map.add(wire::HEADER_BYTES).cast::<Record>().add(i).write(r) };
    }
    let mut out: Vec<Record> = Vec::with_capacity(CAPACITY as usize);
    println!("| records per drain | mapping, ns/drain | pread, ns/drain | pread ÷ mapping | pread, ns/record |");
    println!("|---:|---:|---:|---:|---:|");
    for k in [0u64, 1, 16, 100, 1000, 10_000] {
        const ROUNDS: usize = 31;
        let iterations = (2_000_000 / (k + 10)).max(20);
        let (mut by_map, mut by_pread) = (Vec::new(), Vec::new());
        let mut tail = 0u64;
        for _ in 0..ROUNDS {
            for pread in [false, true] {
                let start = Instant::now();
                for _ in 0..iterations {
                    // The producer published k records.
                    let head = tail.wrapping_add(k);
                    unsafe { map.add(HEAD_AT as usize).cast::<u64>().write_volatile(head) };
                    out.clear();
                    tail = if pread {
                        drain_pread(&file, &mut out, tail)
                    } else {
                        drain_mapped(map, &mut out, tail)
                    };
                    std::hint::black_box(&out);
                }
                let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
                if pread { &mut by_pread } else { &mut by_map }.push(ns);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (m, p) = (median(&mut by_map), median(&mut by_pread));
        println!(
            "| {k} | {m:.0} | {p:.0} | {:.2} | {} |",
            p / m,
            if k == 0 {
                "–".to_owned()
            } else {
                format!("{:.2}", p / k as f64)
            }
        );
    }
    let _ = std::fs::remove_file(&path);
}

fn drain_mapped(map: *mut u8, out: &mut Vec<Record>, tail: u64) -> u64 {
    unsafe {
        let head = map.add(HEAD_AT as usize).cast::<u64>().read_volatile();
        let slots = map.add(wire::HEADER_BYTES).cast::<Record>();
        let mut i = tail;
        while i != head {
            out.push(slots.add((i & (CAPACITY - 1)) as usize).read_volatile());
            i = i.wrapping_add(1);
        }
        map.add(TAIL_AT as usize).cast::<u64>().write_volatile(head);
        head
    }
}

fn drain_pread(file: &std::fs::File, out: &mut Vec<Record>, tail: u64) -> u64 {
    let mut header = [0u8; wire::HEADER_BYTES];
    file.read_exact_at(&mut header, 0).unwrap();
    let head = u64::from_ne_bytes(
        header[HEAD_AT as usize..HEAD_AT as usize + 8]
            .try_into()
            .unwrap(),
    );
    if head == tail {
        return head;
    }
    let mut i = tail;
    while i != head {
        let slot = i & (CAPACITY - 1);
        let count = head.wrapping_sub(i).min(CAPACITY - slot) as usize;
        out.reserve(count);
        let size = std::mem::size_of::<Record>();
        let spare = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().add(out.len()).cast::<u8>(),
                count * size,
            )
        };
        file.read_exact_at(spare, wire::HEADER_BYTES as u64 + slot * size as u64)
            .unwrap();
        unsafe { out.set_len(out.len() + count) };
        i = i.wrapping_add(count as u64);
    }
    file.write_all_at(&head.to_ne_bytes(), TAIL_AT).unwrap();
    head
}
