//! Cell-wise fusion: a chain of element-wise operators over matrices of one shape, with
//! scalars and broadcast row and column vectors, evaluated in one pass over the cells,
//! optionally reduced by `sum` or `rowSums` at the end, without forming the intermediates.
//!
//! A plan such as `R - alpha * HS` or `sum(S * HS)` runs, operator by operator, as one kernel
//! per node: each writes a fresh matrix of the full shape and the next reads it back, so a
//! chain of `k` operators moves about `3k` matrices through memory where one pass moves the
//! operands and the result once (SystemDS's `+*`, `-*`, `tak+*` and `uasqk+` instructions,
//! and its code generator's cell template, do the same).
//!
//! A [`Program`] is a list of instructions ([`Inst`]) in topological order; instruction `i`
//! writes register `i` and reads leaves ([`Leaf`]: a scalar, a dense matrix of the output's
//! shape, a column vector with one value per row, a row vector with one value per column) and
//! earlier registers. The cells are evaluated in chunks of [`CHUNK`] consecutive cells
//! (row-major), each instruction over the whole chunk into a small register buffer that
//! stays in the first-level cache; broadcast vectors are spread over a chunk that spans
//! rows. The last instruction is the result: written into the output matrix, or folded into
//! a sum or into row sums.
//!
//! **The same bits as the operators one at a time.** Every instruction computes each cell as
//! the element-wise kernel does (the same closures: [`super::elementwise`]'s `fill_op`, and
//! [`UnaryOp::apply_slice`]), so each cell of each register equals the cell of the matrix the
//! unfused plan forms, and a sum adds the result's cells in [`super::aggregate`]'s order:
//! sequentially and compensated up to [`super::aggregate::SEQ_CELLS`] cells, else in its
//! fixed blocks of eight compensated lanes, merged in order; row sums in its groups of rows.
//! That holds when the unfused plan stores every intermediate densely: a sparse intermediate
//! has implicit `+0.0` cells and is summed over its stored values, which moves zero signs and
//! compensations. So the kernel also counts the non-zeros of every register ([`Fused::nnz`]),
//! from which the caller decides whether each intermediate would have been stored sparse, and
//! runs the operators one at a time instead when one would (rare: data that is mostly zeros).
//! Sparse operands are never leaves: the caller keeps the sparse kernels for them.
//!
//! Two programs can share a pass ([`Program::run_then_sum`]): the first forms cells, the
//! second sums a function of them ([`Leaf::Cells`]), block by block of the parallel sum.

use super::aggregate::{
    plain_sum, row_group_sums, Kahan, Lanes, PAR_ROWS, ROW_LANES, SEQ_CELLS, SUM_BLOCK,
};
use super::elementwise::{fill_op, RowView, PAR_CELLS};
use crate::fill::{par_filled, Sink};
use crate::matrix::{count_stored, count_stored_nonfinite, Dense};
use crate::ops::{BinOp, UnaryOp};
use rayon::prelude::*;

/// Cells evaluated together by every instruction (its registers stay in the L1 cache).
pub const CHUNK: usize = 1024;

/// Cells per parallel task of an element-wise result.
const TASK: usize = 1 << 14;

/// An operand of a program, as seen from its output of `rows x cols` cells.
#[derive(Clone, Copy, Debug)]
pub enum Leaf<'a> {
    /// one value for every cell
    Scalar(f64),
    /// a dense matrix of the output's shape, row-major (`rows * cols` values)
    Full(&'a [f64]),
    /// a column vector: one value per row (`rows` values)
    Col(&'a [f64]),
    /// a row vector: one value per column (`cols` values)
    Row(&'a [f64]),
    /// the cells of the program this one follows in the same pass
    /// ([`Program::run_then_sum`]): each chunk's cells just computed, never read back from
    /// memory
    Cells,
}

/// Where an instruction reads an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// leaf `k` of the program
    Leaf(usize),
    /// the register of instruction `k` (an earlier one)
    Reg(usize),
}

/// One element-wise operation; instruction `i` writes register `i`.
#[derive(Clone, Copy, Debug)]
pub enum Inst {
    /// `a op b` cell by cell (the element-wise kernel's closures)
    Bin(BinOp, Src, Src),
    /// `f(a)` cell by cell ([`UnaryOp::apply_slice`])
    Un(UnaryOp, Src),
    /// `a * (1 - a)` cell by cell (`kernels::sprop`)
    Sprop(Src),
}

/// What becomes of the last instruction's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// the cells themselves: a dense `rows x cols` matrix
    Cells,
    /// their sum ([`super::aggregate::aggregate_all`]'s order)
    Sum,
    /// their sum in the parallel sum's fixed blocks at any size
    /// ([`super::aggregate::sum_any_order`]): a sum whose order the program does not fix
    SumAnyOrder,
    /// the sum of each row ([`super::aggregate::aggregate_dir`]'s order)
    RowSums,
}

/// A fused cell-wise computation.
#[derive(Clone, Debug)]
pub struct Program<'a> {
    /// rows of the output
    pub rows: usize,
    /// columns of the output
    pub cols: usize,
    /// the operands
    pub leaves: Vec<Leaf<'a>>,
    /// the instructions, in order; the last is the result
    pub insts: Vec<Inst>,
}

/// The result of a program.
#[derive(Clone, Debug)]
pub enum Out {
    /// [`Reduce::Cells`]: the last register's cells
    Cells(Dense),
    /// [`Reduce::Sum`]
    Sum(f64),
    /// [`Reduce::RowSums`]: one sum per row, a `rows x 1` matrix
    RowSums(Dense),
}

/// A result with the non-zero count of every register over all cells
/// ([`crate::matrix::is_stored`]: NaN and `-0.0` count), in instruction order, and whether the
/// last register's cells are all finite (counted as they are made, so a caller need not scan
/// a large result for it).
#[derive(Clone, Debug)]
pub struct Fused {
    /// the result
    pub out: Out,
    /// non-zeros per instruction
    pub nnz: Vec<usize>,
    /// whether every cell of the last instruction (the result's cells, before any sum) is
    /// finite
    pub finite: bool,
}

impl Fused {
    /// The result from the counts of a run: one per instruction, then the number of
    /// non-finite cells of the last ([`Scratch::nnz`]).
    fn new(out: Out, mut counts: Vec<usize>) -> Self {
        let nonfinite = counts.pop().expect("the non-finite count");
        Fused {
            out,
            nnz: counts,
            finite: nonfinite == 0,
        }
    }
}

/// A task's buffers: one register per instruction but the last, one spread vector per leaf,
/// and the registers' non-zero counts followed by the number of non-finite cells of the last
/// register.
struct Scratch {
    regs: Vec<Vec<f64>>,
    spread: Vec<Vec<f64>>,
    nnz: Vec<usize>,
}

impl Program<'_> {
    /// Panics unless every register read is an earlier instruction's, every leaf has the
    /// length its kind needs, and there is an instruction (the caller's contract); a
    /// [`Leaf::Cells`] only in a program that `follows` another.
    fn check(&self, follows: bool) {
        let (m, n) = (self.rows, self.cols);
        assert!(!self.insts.is_empty(), "cellwise contract: an instruction");
        for l in &self.leaves {
            let ok = match l {
                Leaf::Scalar(_) => true,
                Leaf::Full(d) => d.len() == m * n,
                Leaf::Col(c) => c.len() == m,
                Leaf::Row(r) => r.len() == n,
                Leaf::Cells => follows,
            };
            assert!(ok, "cellwise contract: leaf length");
        }
        for (i, inst) in self.insts.iter().enumerate() {
            let srcs = match *inst {
                Inst::Bin(_, a, b) => [Some(a), Some(b)],
                Inst::Un(_, a) | Inst::Sprop(a) => [Some(a), None],
            };
            for s in srcs.into_iter().flatten() {
                let ok = match s {
                    Src::Leaf(k) => k < self.leaves.len(),
                    Src::Reg(k) => k < i,
                };
                assert!(ok, "cellwise contract: operand");
            }
        }
    }

    fn scratch(&self) -> Scratch {
        let spread = self
            .leaves
            .iter()
            .map(|l| match l {
                Leaf::Col(_) | Leaf::Row(_) => vec![0.0; CHUNK],
                _ => Vec::new(),
            })
            .collect();
        Scratch {
            regs: vec![vec![0.0; CHUNK]; self.insts.len() - 1],
            spread,
            nnz: vec![0; self.insts.len() + 1],
        }
    }

    /// Evaluates cells `lo..hi` (at most [`CHUNK`]), the result into `out`; `cells` are the
    /// same cells of the program this one follows ([`Leaf::Cells`]).
    fn chunk(&self, s: &mut Scratch, lo: usize, hi: usize, out: &mut [f64], cells: &[f64]) {
        let len = hi - lo;
        debug_assert!(len <= CHUNK && out.len() == len && len > 0);
        let n = self.cols;
        let one_row = lo / n == (hi - 1) / n;
        let Scratch { regs, spread, nnz } = s;
        if !one_row {
            // spread the vectors over the chunk's rows
            for (leaf, buf) in self.leaves.iter().zip(spread.iter_mut()) {
                if !matches!(leaf, Leaf::Col(_) | Leaf::Row(_)) {
                    continue;
                }
                let (mut at, buf) = (lo, &mut buf[..len]);
                while at < hi {
                    let (i, j) = (at / n, at % n);
                    let end = hi.min((i + 1) * n);
                    let seg = &mut buf[at - lo..end - lo];
                    match leaf {
                        Leaf::Col(c) => seg.fill(c[i]),
                        Leaf::Row(r) => seg.copy_from_slice(&r[j..j + (end - at)]),
                        _ => break,
                    }
                    at = end;
                }
            }
        }
        let mut out = Some(out);
        let last = self.insts.len() - 1;
        for (i, inst) in self.insts.iter().enumerate() {
            let (done, rest) = regs.split_at_mut(i.min(last));
            let view = |src: Src| -> RowView<'_> {
                match src {
                    Src::Reg(k) => RowView::Slice(&done[k][..len]),
                    Src::Leaf(k) => match &self.leaves[k] {
                        Leaf::Scalar(v) => RowView::Const(*v),
                        Leaf::Full(d) => RowView::Slice(&d[lo..hi]),
                        Leaf::Col(c) if one_row => RowView::Const(c[lo / n]),
                        Leaf::Row(r) if one_row => RowView::Slice(&r[lo % n..lo % n + len]),
                        Leaf::Col(_) | Leaf::Row(_) => RowView::Slice(&spread[k][..len]),
                        Leaf::Cells => RowView::Slice(&cells[..len]),
                    },
                }
            };
            let dst: &mut [f64] = if i == last {
                out.take().expect("the last instruction writes the result")
            } else {
                &mut rest[0][..len]
            };
            match *inst {
                Inst::Bin(op, a, b) => fill_op(op, dst, &view(a), &view(b)),
                Inst::Un(op, a) => {
                    match view(a) {
                        RowView::Const(c) => dst.fill(c),
                        RowView::Slice(x) => dst.copy_from_slice(x),
                    }
                    op.apply_slice(dst);
                }
                Inst::Sprop(a) => match view(a) {
                    RowView::Const(c) => dst.fill(c * (1.0 - c)),
                    RowView::Slice(x) => {
                        dst.iter_mut().zip(x).for_each(|(o, &v)| *o = v * (1.0 - v))
                    }
                },
            }
            if i == last {
                let (stored, nonfinite) = count_stored_nonfinite(dst);
                nnz[i] += stored;
                nnz[i + 1] += nonfinite;
            } else {
                nnz[i] += count_stored(dst);
            }
        }
    }

    /// Evaluates cells `lo..lo + out.len()` chunk by chunk into `out`.
    fn cells(&self, s: &mut Scratch, lo: usize, out: &mut [f64]) {
        for (c, o) in out.chunks_mut(CHUNK).enumerate() {
            let a = lo + c * CHUNK;
            self.chunk(s, a, a + o.len(), o, &[]);
        }
    }

    /// Evaluates the cells of a sink's part, from cell `lo` on, chunk by chunk into `buf`
    /// (of [`CHUNK`] values, or fewer for a smaller part) and from there into the sink.
    fn cells_into(&self, s: &mut Scratch, lo: usize, sink: &mut Sink<'_>, buf: &mut [f64]) {
        let mut at = lo;
        while sink.left() > 0 {
            let c = &mut buf[..sink.left().min(CHUNK)];
            self.chunk(s, at, at + c.len(), c, &[]);
            sink.put(c);
            at += c.len();
        }
    }

    /// The sum of cells `lo..hi` (at most [`SUM_BLOCK`]), one block of the parallel sum: the
    /// cells fed to its eight lanes chunk by chunk (CHUNK divides SUM_BLOCK: only the last
    /// chunk of the last block leaves values past a multiple of eight), or, with an infinity
    /// or NaN among them, their plain sum. `follows` holds the block's cells of the program
    /// this one follows ([`Leaf::Cells`]; empty if none).
    fn block_sum(
        &self,
        s: &mut Scratch,
        buf: &mut [f64],
        lo: usize,
        hi: usize,
        follows: &[f64],
    ) -> Kahan {
        let of = |at: usize, end: usize| match follows {
            [] => &[][..],
            f => &f[at - lo..end - lo],
        };
        let mut lanes = Lanes::default();
        let mut tail = 0..0;
        let mut at = lo;
        while at < hi {
            let end = hi.min(at + CHUNK);
            let c = &mut buf[..end - at];
            self.chunk(s, at, end, c, of(at, end));
            let full = c.len() - c.len() % 8;
            lanes.feed(&c[..full]);
            tail = full..c.len();
            at = end;
        }
        if lanes.finite() {
            return lanes.finish(&buf[tail]);
        }
        // the cells again, into a scratch of their own
        let mut again = self.scratch();
        let mut plain = Vec::with_capacity(hi - lo);
        let mut at = lo;
        while at < hi {
            let end = hi.min(at + CHUNK);
            let c = &mut buf[..end - at];
            self.chunk(&mut again, at, end, c, of(at, end));
            plain.extend_from_slice(c);
            at = end;
        }
        Kahan {
            sum: plain_sum(&plain),
            corr: 0.0,
        }
    }

    /// This program's cells and, in the same pass, the sum of `then`'s, a program of the same
    /// shape that reads them as [`Leaf::Cells`] (a cell-wise update and a sum over its result,
    /// `R = R - alpha * HS; sum(R ^ 2)`): block by block of the parallel sum's fixed blocks,
    /// this program's cells into a block buffer of the task's, then `then`'s from them while
    /// they are in the cache, then the block into the result ([`par_filled`]). Each is what
    /// [`Program::run`] gives: this one with [`Reduce::Cells`], `then` with [`Reduce::Sum`]
    /// over the result formed ([`Reduce::SumAnyOrder`] when `any_order`). Panics unless both
    /// programs keep their contracts and `then` has more than [`SEQ_CELLS`] cells or
    /// `any_order` (a smaller [`Reduce::Sum`] runs in one sequential pass: run the two apart).
    pub fn run_then_sum(&self, then: &Program<'_>, any_order: bool) -> (Fused, Fused) {
        self.check(false);
        then.check(true);
        let (m, n) = (self.rows, self.cols);
        assert_eq!(
            (then.rows, then.cols),
            (m, n),
            "run_then_sum contract: one shape"
        );
        let total = m * n;
        assert!(
            total > SEQ_CELLS || any_order,
            "run_then_sum contract: a parallel sum"
        );
        let (ka, kb) = (self.insts.len(), then.insts.len());
        let (vals, blocks) = par_filled(
            total,
            SUM_BLOCK,
            true,
            || {
                // written zeros: a zeroed allocation of this size (`calloc`) makes jemalloc
                // hand a reused extent's pages back, to fault in again
                let block = crate::matrix::zeroed(SUM_BLOCK);
                (self.scratch(), then.scratch(), vec![0.0; CHUNK], block)
            },
            |(sa, sb, buf, block), b, sink| {
                let lo = b * SUM_BLOCK;
                let hi = lo + sink.len();
                let o = &mut block[..hi - lo];
                sa.nnz.iter_mut().for_each(|c| *c = 0);
                sb.nnz.iter_mut().for_each(|c| *c = 0);
                self.cells(sa, lo, o);
                let part = then.block_sum(sb, buf, lo, hi, o);
                sink.put(o);
                (part, sa.nnz.clone(), sb.nnz.clone())
            },
        );
        let mut sum = Kahan::default();
        let (mut na, mut nb) = (vec![0; ka + 1], vec![0; kb + 1]);
        for (part, ca, cb) in blocks {
            sum.merge(part);
            na.iter_mut().zip(ca).for_each(|(x, y)| *x += y);
            nb.iter_mut().zip(cb).for_each(|(x, y)| *x += y);
        }
        (
            Fused::new(
                Out::Cells(Dense::from_shape_vec((m, n), vals).expect("m x n")),
                na,
            ),
            Fused::new(Out::Sum(sum.sum), nb),
        )
    }

    /// Runs the program over every cell. Panics if the program breaks its contract (a leaf
    /// of the wrong length, an instruction reading a later register).
    pub fn run(&self, reduce: Reduce) -> Fused {
        self.check(false);
        let (m, n) = (self.rows, self.cols);
        let total = m * n;
        // the counts of every instruction, then the last one's non-finite cells
        let k = self.insts.len() + 1;
        let add_counts = |mut a: Vec<usize>, b: Vec<usize>| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        };
        match reduce {
            Reduce::Cells => {
                let (vals, counts) = par_filled(
                    total,
                    TASK,
                    total >= PAR_CELLS,
                    || (self.scratch(), vec![0.0; CHUNK]),
                    |(s, buf), t, sink| {
                        s.nnz.iter_mut().for_each(|c| *c = 0);
                        self.cells_into(s, t * TASK, sink, buf);
                        s.nnz.clone()
                    },
                );
                Fused::new(
                    Out::Cells(Dense::from_shape_vec((m, n), vals).expect("m x n")),
                    counts.into_iter().fold(vec![0; k], add_counts),
                )
            }
            Reduce::Sum if total <= SEQ_CELLS => {
                // SystemDS's sequential order: every cell compensated in turn
                let mut s = self.scratch();
                let mut buf = vec![0.0; CHUNK.min(total)];
                let mut sum = Kahan::default();
                let mut lo = 0;
                while lo < total {
                    let hi = total.min(lo + CHUNK);
                    let b = &mut buf[..hi - lo];
                    self.chunk(&mut s, lo, hi, b, &[]);
                    b.iter().for_each(|&v| sum.add(v));
                    lo = hi;
                }
                Fused::new(Out::Sum(sum.sum), s.nnz)
            }
            Reduce::Sum | Reduce::SumAnyOrder => {
                // the fixed blocks of the parallel sum, merged in order
                let blocks: Vec<(Kahan, Vec<usize>)> = (0..total.div_ceil(SUM_BLOCK))
                    .into_par_iter()
                    .map_init(
                        || (self.scratch(), vec![0.0; CHUNK]),
                        |(s, buf), b| {
                            let lo = b * SUM_BLOCK;
                            let hi = total.min(lo + SUM_BLOCK);
                            s.nnz.iter_mut().for_each(|c| *c = 0);
                            (self.block_sum(s, buf, lo, hi, &[]), s.nnz.clone())
                        },
                    )
                    .collect();
                let mut sum = Kahan::default();
                let mut nnz = vec![0; k];
                for (part, counts) in blocks {
                    sum.merge(part);
                    nnz = add_counts(nnz, counts);
                }
                Fused::new(Out::Sum(sum.sum), nnz)
            }
            Reduce::RowSums => {
                let mut sums = vec![0.0; m];
                let column = |sums: Vec<f64>| {
                    Out::RowSums(Dense::from_shape_vec((m, 1), sums).expect("m x 1"))
                };
                if n == 0 {
                    return Fused::new(column(sums), vec![0; k]);
                }
                // tasks of whole groups of rows, about TASK cells each (the same sums
                // whatever the split: each row is one group's own)
                let groups = (TASK / (ROW_LANES * n)).max(1);
                let task = |(t, out): (usize, &mut [f64])| {
                    let mut s = self.scratch();
                    let mut buf = vec![0.0; ROW_LANES * n];
                    for (g, o) in out.chunks_mut(ROW_LANES).enumerate() {
                        let r0 = (t * groups + g) * ROW_LANES;
                        let b = &mut buf[..o.len() * n];
                        self.cells(&mut s, r0 * n, b);
                        row_group_sums(b, n, o);
                    }
                    s.nnz
                };
                let nnz = if total < PAR_ROWS {
                    sums.chunks_mut(groups * ROW_LANES)
                        .enumerate()
                        .map(task)
                        .fold(vec![0; k], add_counts)
                } else {
                    sums.par_chunks_mut(groups * ROW_LANES)
                        .enumerate()
                        .map(task)
                        .reduce(|| vec![0; k], add_counts)
                };
                Fused::new(column(sums), nnz)
            }
        }
    }
}
