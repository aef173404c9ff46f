//! Large results written once, straight to memory.
//!
//! A kernel that forms a dense result in one pass (a fused cell-wise update such as
//! `U = U + alpha * S`, the rows of a sampled product) used to take a zeroed matrix
//! ([`crate::matrix::zeros`]) and write its values over the zeros. For a result larger than
//! the last-level cache that moves the result through memory three times: the zeros are
//! written, each line is read back for ownership when the values are stored (a store to a
//! line not in the cache loads it first), and the values are written. On the 2-core AMD VM
//! a 32 MB `a + c * b` took 4.4-4.7 ms that way, 3.0 ms written over uninitialised memory,
//! and 2.1 ms with non-temporal stores, which skip the read for ownership: as fast as only
//! reading the two operands.
//!
//! [`par_filled`] hands each task a [`Sink`]: its part of a fresh, uninitialised vector, to be
//! filled in order, value by value or slice by slice ([`Sink::put`]). Each task computes a
//! small block of values into a buffer of its own (in the first-level cache) and puts it;
//! the sink copies it with non-temporal stores when the whole result is at least
//! [`STREAM_CELLS`] values (past the cache, where nothing would read it back soon) and with
//! ordinary stores below. The values are the same either way; only where they travel
//! differs. Every value is written exactly once, and a task that does not fill its part is a
//! broken invariant (a panic, never uninitialised values in a matrix).

use crate::matrix::populate;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Results of at least this many values (16 MiB, half of the largest last-level cache the
/// kernels were measured on) are written with non-temporal stores.
pub const STREAM_CELLS: usize = 1 << 21;

/// A task's part of a result being filled: the values must be put in order until it is full.
pub struct Sink<'a> {
    dst: &'a mut [MaybeUninit<f64>],
    at: usize,
    stream: bool,
}

impl<'a> Sink<'a> {
    fn new(dst: &'a mut [MaybeUninit<f64>], stream: bool) -> Self {
        Sink { dst, at: 0, stream }
    }

    /// How many values this part holds.
    pub fn len(&self) -> usize {
        self.dst.len()
    }

    /// Whether this part holds no values.
    pub fn is_empty(&self) -> bool {
        self.dst.is_empty()
    }

    /// How many values are still to be put.
    pub fn left(&self) -> usize {
        self.dst.len() - self.at
    }

    /// Appends `vals` after the values put so far. Panics if they overflow the part (the
    /// caller's contract).
    pub fn put(&mut self, vals: &[f64]) {
        let end = self.at + vals.len();
        assert!(
            end <= self.dst.len(),
            "Sink contract: no more values than the part"
        );
        let dst = &mut self.dst[self.at..end];
        self.at = end;
        #[cfg(target_arch = "x86_64")]
        if self.stream {
            stream(dst, vals);
            return;
        }
        for (d, &v) in dst.iter_mut().zip(vals) {
            d.write(v);
        }
    }

    /// Checks that the part is full and makes its non-temporal stores visible to the other
    /// threads.
    fn finish(self) {
        assert_eq!(self.at, self.dst.len(), "Sink contract: every value put");
        #[cfg(target_arch = "x86_64")]
        if self.stream {
            // SAFETY: SSE2 is part of x86_64
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
    }
}

/// Copies `src` into `dst` (of one length) with non-temporal stores of two values where the
/// destination is 16-byte aligned, and ordinary stores for an unaligned first value and an
/// odd last one.
#[cfg(target_arch = "x86_64")]
fn stream(dst: &mut [MaybeUninit<f64>], src: &[f64]) {
    use std::arch::x86_64::{_mm_loadu_pd, _mm_stream_pd};
    debug_assert_eq!(dst.len(), src.len());
    let mut i = 0;
    if !(dst.as_ptr() as usize).is_multiple_of(16) && !src.is_empty() {
        dst[0].write(src[0]);
        i = 1;
    }
    while i + 2 <= src.len() {
        // SAFETY: i + 2 <= len for both slices, and dst + i is 16-byte aligned (an aligned
        // start plus an even count of 8-byte values); SSE2 is part of x86_64
        unsafe {
            let v = _mm_loadu_pd(src.as_ptr().add(i));
            _mm_stream_pd(dst.as_mut_ptr().add(i).cast::<f64>(), v);
        }
        i += 2;
    }
    if i < src.len() {
        dst[i].write(src[i]);
    }
}

/// A fresh vector of `len` values, filled by `fill(state, t, sink)` for each task `t` of
/// `task` consecutive values (the last may hold fewer), in parallel when `par`, with a state
/// made by `init` per worker (scratch buffers reused from task to task); also the tasks'
/// results, in task order. Each task must put exactly its part's values ([`Sink`]); the
/// values go to memory with non-temporal stores from [`STREAM_CELLS`] values.
pub fn par_filled<S, R: Send>(
    len: usize,
    task: usize,
    par: bool,
    init: impl Fn() -> S + Sync + Send,
    fill: impl Fn(&mut S, usize, &mut Sink<'_>) -> R + Sync + Send,
) -> (Vec<f64>, Vec<R>) {
    assert!(task > 0, "par_filled contract: tasks of at least one value");
    let stream = len >= STREAM_CELLS;
    let mut v: Vec<f64> = Vec::with_capacity(len);
    let run = |state: &mut S, (t, part): (usize, &mut [MaybeUninit<f64>])| {
        populate(part);
        let mut sink = Sink::new(part, stream);
        let r = fill(state, t, &mut sink);
        sink.finish();
        r
    };
    let parts = &mut v.spare_capacity_mut()[..len];
    let results = if par {
        parts
            .par_chunks_mut(task)
            .enumerate()
            .map_init(&init, run)
            .collect()
    } else {
        let mut state = init();
        parts
            .chunks_mut(task)
            .enumerate()
            .map(|p| run(&mut state, p))
            .collect()
    };
    // SAFETY: every task's sink was full when it finished (Sink::finish), and the tasks'
    // parts cover the first `len` values of the capacity
    unsafe { v.set_len(len) };
    (v, results)
}

/// A fresh `m x k` row-major matrix whose row `i` is made by `row(i, out)`, `out` being `k`
/// zeros in a buffer of the task's (in the first-level cache) that is then put in place
/// ([`par_filled`]); rows in parallel in tasks of at least `min_rows` rows, about 64 tasks
/// in all. For kernels that form each output row on its own (the right side of a sampled
/// product): the same values as writing the rows of [`crate::matrix::zeros`] in place,
/// without the zero pass and the reads for ownership.
pub fn par_rows(
    m: usize,
    k: usize,
    min_rows: usize,
    row: impl Fn(usize, &mut [f64]) + Sync + Send,
) -> crate::matrix::Dense {
    let rows = m.div_ceil(64).max(min_rows).max(1);
    let (vals, _) = par_filled(
        m * k,
        (rows * k).max(1),
        m > min_rows,
        || vec![0.0; k],
        |buf, t, sink| {
            for i in t * rows..(t * rows + sink.len() / k.max(1)) {
                buf.fill(0.0);
                row(i, buf);
                sink.put(buf);
            }
        },
    );
    crate::matrix::Dense::from_shape_vec((m, k), vals).expect("m x k")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(len: usize, task: usize, par: bool, piece: usize) {
        let (v, firsts) = par_filled(
            len,
            task,
            par,
            || vec![0.0; piece],
            |buf, t, sink| {
                let lo = t * task;
                while sink.left() > 0 {
                    let at = lo + sink.len() - sink.left();
                    let n = sink.left().min(piece);
                    for (q, b) in buf[..n].iter_mut().enumerate() {
                        *b = ((at + q) as f64).sin();
                    }
                    sink.put(&buf[..n]);
                }
                lo
            },
        );
        assert_eq!(v.len(), len);
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(
                x.to_bits(),
                (i as f64).sin().to_bits(),
                "value {i} of {len}"
            );
        }
        let want: Vec<usize> = (0..len.div_ceil(task)).map(|t| t * task).collect();
        assert_eq!(firsts, want);
    }

    #[test]
    fn every_value_lands_in_place_with_or_without_streaming() {
        for &(len, task, piece) in &[
            (0, 8, 3),
            (1, 8, 3),
            (1001, 64, 7),
            (1001, 1000, 1024),
            (STREAM_CELLS + 3, 1 << 14, 1023),
            (STREAM_CELLS + 5, 1 << 17, 1),
        ] {
            check(len, task, true, piece);
            check(len, task, false, piece);
        }
    }

    #[test]
    fn an_odd_start_streams_the_same_values() {
        let src: Vec<f64> = (0..37).map(|i| i as f64 - 18.5).collect();
        let mut v: Vec<f64> = Vec::with_capacity(40);
        let part = &mut v.spare_capacity_mut()[1..38];
        let mut sink = Sink::new(part, true);
        sink.put(&src[..5]);
        sink.put(&src[5..]);
        sink.finish();
        let got: Vec<f64> = v.spare_capacity_mut()[1..38]
            .iter()
            // SAFETY: the sink above wrote all of them
            .map(|x| unsafe { x.assume_init() })
            .collect();
        assert_eq!(got, src);
    }

    #[test]
    fn rows_are_made_from_zeros_and_put_in_place() {
        for &(m, k, min_rows) in &[
            (0, 3, 4),
            (5, 0, 4),
            (1, 1, 64),
            (1000, 7, 4),
            (70_000, 40, 64),
        ] {
            let d = par_rows(m, k, min_rows, |i, out| {
                assert!(
                    out.iter().all(|&v| v.to_bits() == 0),
                    "a row starts from +0.0"
                );
                for (c, o) in out.iter_mut().enumerate() {
                    *o += (i * 100 + c) as f64;
                }
            });
            assert_eq!(d.dim(), (m, k));
            for ((i, c), &v) in d.indexed_iter() {
                assert_eq!(v, (i * 100 + c) as f64, "({i}, {c}) of {m} x {k}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "every value put")]
    fn a_part_left_short_is_a_broken_contract() {
        par_filled(10, 4, false, || (), |_, _, sink| sink.put(&[1.0]));
    }
}
