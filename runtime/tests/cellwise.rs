//! The fused cell-wise kernel against the element-wise kernels one operator at a time: random
//! programs over scalars, dense matrices, row and column vectors (values with NaN, ±Inf and
//! -0.0), every result, sum and row sum bit for bit, and every register's non-zero count,
//! whenever the operators one at a time store every intermediate densely (the kernel's
//! contract: its caller runs them one at a time otherwise).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spores_runtime::kernels::cellwise::{Inst, Leaf, Out, Program, Reduce, Src};
use spores_runtime::kernels::{self, Operand};
use spores_runtime::matrix::Dense;
use spores_runtime::ops::{AggDir, AggOp, BinOp, UnaryOp};
use spores_runtime::Matrix;

const BINARY: [BinOp; 9] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Pow,
    BinOp::Min,
    BinOp::Max,
    BinOp::Ne,
    BinOp::Mod,
];

const UNARY: [UnaryOp; 6] = [
    UnaryOp::Neg,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sqrt,
    UnaryOp::Abs,
    UnaryOp::Sigmoid,
];

/// A value drawn mostly from a normal-ish range, sometimes a special one.
fn value(rng: &mut ChaCha8Rng, density: f64) -> f64 {
    if rng.gen::<f64>() >= density {
        return 0.0;
    }
    match rng.gen_range(0..200) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        4 => 1e300,
        5 => 2.0,
        _ => rng.gen_range(-3.0..3.0),
    }
}

fn values(rng: &mut ChaCha8Rng, len: usize, density: f64) -> Vec<f64> {
    (0..len).map(|_| value(rng, density)).collect()
}

/// The leaves' storage: the data and the matrix the operators one at a time see.
enum Stored {
    Scalar(f64),
    Mat(Matrix),
}

fn operand(s: &Stored) -> Operand<'_> {
    match s {
        Stored::Scalar(v) => Operand::Scalar(*v),
        Stored::Mat(m) => Operand::Matrix(m),
    }
}

fn dense_of(m: &Matrix) -> &[f64] {
    match m {
        Matrix::Dense(d) => d.as_slice().unwrap(),
        Matrix::Sparse(_) => unreachable!("leaves are dense"),
    }
}

/// A random program of `k` instructions over random leaves of a `rows x cols` output.
fn random_case(
    rng: &mut ChaCha8Rng,
    rows: usize,
    cols: usize,
    k: usize,
) -> (Vec<Stored>, Vec<Inst>) {
    let nleaves = rng.gen_range(1..5);
    let mut leaves = Vec::new();
    for _ in 0..nleaves {
        let density = if rng.gen_bool(0.8) { 1.0 } else { 0.6 };
        let shape = match rng.gen_range(0..6) {
            0 => None,
            1 => Some((rows, 1)),
            2 => Some((1, cols)),
            _ => Some((rows, cols)),
        };
        leaves.push(match shape {
            None => Stored::Scalar(value(rng, 1.0)),
            Some((r, c)) => Stored::Mat(Matrix::Dense(
                Dense::from_shape_vec((r, c), values(rng, r * c, density)).unwrap(),
            )),
        });
    }
    // the first instruction reads a full leaf, so every register has the output's shape
    leaves.push(Stored::Mat(Matrix::Dense(
        Dense::from_shape_vec((rows, cols), values(rng, rows * cols, 1.0)).unwrap(),
    )));
    let full = leaves.len() - 1;
    let mut insts = Vec::new();
    for i in 0..k {
        let pick = |rng: &mut ChaCha8Rng| {
            if i > 0 && rng.gen_bool(0.6) {
                Src::Reg(rng.gen_range(0..i))
            } else {
                Src::Leaf(rng.gen_range(0..leaves.len()))
            }
        };
        let first = if i == 0 {
            Src::Leaf(full)
        } else {
            Src::Reg(i - 1)
        };
        let inst = match rng.gen_range(0..10) {
            0..=5 => {
                let op = BINARY[rng.gen_range(0..BINARY.len())];
                let other = pick(rng);
                if rng.gen_bool(0.5) {
                    Inst::Bin(op, first, other)
                } else {
                    Inst::Bin(op, other, first)
                }
            }
            6..=8 => Inst::Un(UNARY[rng.gen_range(0..UNARY.len())], first),
            _ => Inst::Sprop(first),
        };
        insts.push(inst);
    }
    (leaves, insts)
}

/// Each instruction's result, the operators one at a time.
fn one_at_a_time(leaves: &[Stored], insts: &[Inst]) -> Vec<Matrix> {
    let mut regs: Vec<Matrix> = Vec::new();
    for inst in insts {
        let get = |s: Src, regs: &[Matrix]| -> Stored {
            match s {
                Src::Leaf(k) => match &leaves[k] {
                    Stored::Scalar(v) => Stored::Scalar(*v),
                    Stored::Mat(m) => Stored::Mat(m.clone()),
                },
                Src::Reg(k) => Stored::Mat(regs[k].clone()),
            }
        };
        let r = match *inst {
            Inst::Bin(op, a, b) => {
                let (a, b) = (get(a, &regs), get(b, &regs));
                kernels::binary(op, operand(&a), operand(&b))
            }
            Inst::Un(op, a) => match get(a, &regs) {
                Stored::Mat(m) => kernels::unary(op, &m),
                Stored::Scalar(_) => unreachable!("unary of a register or full leaf"),
            },
            Inst::Sprop(a) => match get(a, &regs) {
                Stored::Mat(m) => kernels::sprop(&m),
                Stored::Scalar(_) => unreachable!(),
            },
        };
        regs.push(r);
    }
    regs
}

/// The program's leaves over the stored operands of a `rows x cols` output.
fn leaves_of(stored: &[Stored], rows: usize, cols: usize) -> Vec<Leaf<'_>> {
    stored
        .iter()
        .map(|s| match s {
            Stored::Scalar(v) => Leaf::Scalar(*v),
            Stored::Mat(m) if m.shape() == (rows, cols) => Leaf::Full(dense_of(m)),
            Stored::Mat(m) if m.shape() == (1, 1) => Leaf::Scalar(m.get(0, 0)),
            Stored::Mat(m) if m.cols() == 1 => Leaf::Col(dense_of(m)),
            Stored::Mat(m) => Leaf::Row(dense_of(m)),
        })
        .collect()
}

fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check_shape(rows: usize, cols: usize, seed: u64, cases: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut compared = 0;
    for case in 0..cases {
        let k = rng.gen_range(1..6);
        let (stored, insts) = random_case(&mut rng, rows, cols, k);
        let leaves = leaves_of(&stored, rows, cols);
        let program = Program {
            rows,
            cols,
            leaves,
            insts: insts.clone(),
        };
        let want = one_at_a_time(&stored, &insts);
        let what = format!("{rows}x{cols} case {case}: {insts:?}");
        // the contract: every intermediate stored densely by the operators one at a time
        if want[..k - 1].iter().any(|m| m.is_sparse()) {
            continue;
        }
        compared += 1;
        let last = &want[k - 1];
        for reduce in [
            Reduce::Cells,
            Reduce::Sum,
            Reduce::SumAnyOrder,
            Reduce::RowSums,
        ] {
            let got = program.run(reduce);
            let counts: Vec<usize> = want.iter().map(|m| m.nnz()).collect();
            assert_eq!(got.nnz, counts, "{what}: non-zeros ({reduce:?})");
            assert_eq!(
                got.finite,
                last.all_finite(),
                "{what}: finiteness of the last register ({reduce:?})"
            );
            match got.out {
                Out::Cells(d) => {
                    assert_eq!(d.dim(), (rows, cols));
                    for i in 0..rows {
                        for j in 0..cols {
                            let (g, w) = (d[(i, j)], last.get(i, j));
                            assert!(same_bits(g, w), "{what}: ({i},{j}) {g:e} vs {w:e}");
                        }
                    }
                }
                // a sum over a sparse result skips its zeros: the caller's fallback
                Out::Sum(_) if last.is_sparse() => {}
                Out::RowSums(_) if last.is_sparse() => {}
                Out::Sum(s) => {
                    let w = match reduce {
                        Reduce::SumAnyOrder => kernels::aggregate::sum_any_order(last),
                        _ => kernels::aggregate_all(AggOp::Sum, last),
                    };
                    assert!(same_bits(s, w), "{what}: sum {s:e} vs {w:e} ({reduce:?})");
                }
                Out::RowSums(r) => {
                    let w = kernels::aggregate_dir(AggOp::Sum, AggDir::Row, last);
                    assert_eq!(r.dim(), (rows, 1));
                    for i in 0..rows {
                        let (g, w) = (r[(i, 0)], w.get(i, 0));
                        assert!(same_bits(g, w), "{what}: row {i} {g:e} vs {w:e}");
                    }
                }
            }
        }
    }
    assert!(
        compared * 3 >= cases,
        "{rows}x{cols}: too few cases compared ({compared})"
    );
}

#[test]
fn small_shapes_match_the_operators_one_at_a_time() {
    for (i, &(r, c)) in [(1, 1), (3, 5), (1, 37), (37, 1), (37, 29), (2, 1500)]
        .iter()
        .enumerate()
    {
        check_shape(r, c, 100 + i as u64, 120);
    }
}

#[test]
fn parallel_and_blocked_paths_match_the_operators_one_at_a_time() {
    // past the parallel thresholds; 600 x 500 also past the sum's sequential limit (its fixed
    // blocks), 5000 x 7 with chunks spanning rows, 200 x 1500 with rows longer than a chunk
    for (i, &(r, c)) in [(600, 500), (5000, 7), (200, 1500), (70000, 1)]
        .iter()
        .enumerate()
    {
        check_shape(r, c, 200 + i as u64, 12);
    }
}

#[test]
fn a_chain_of_axpys_is_one_pass_with_the_same_bits() {
    // U + alpha * S and R - alpha * HS, SystemDS's +* and -*; sum(R ^ 2), its uasqk+
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (m, n) = (3000, 20);
    let mk = |rng: &mut ChaCha8Rng| {
        Matrix::Dense(Dense::from_shape_vec((m, n), values(rng, m * n, 1.0)).unwrap())
    };
    let (r, hs) = (mk(&mut rng), mk(&mut rng));
    let alpha = 0.37;
    let program = Program {
        rows: m,
        cols: n,
        leaves: vec![
            Leaf::Full(dense_of(&r)),
            Leaf::Scalar(alpha),
            Leaf::Full(dense_of(&hs)),
            Leaf::Scalar(2.0),
        ],
        insts: vec![
            Inst::Bin(BinOp::Mul, Src::Leaf(1), Src::Leaf(2)),
            Inst::Bin(BinOp::Sub, Src::Leaf(0), Src::Reg(0)),
        ],
    };
    let ahs = kernels::binary(BinOp::Mul, Operand::Scalar(alpha), Operand::Matrix(&hs));
    let want = kernels::binary(BinOp::Sub, Operand::Matrix(&r), Operand::Matrix(&ahs));
    let Out::Cells(d) = program.run(Reduce::Cells).out else {
        unreachable!()
    };
    assert!((0..m).all(|i| (0..n).all(|j| same_bits(d[(i, j)], want.get(i, j)))));
    let mut sq = program.clone();
    sq.insts
        .push(Inst::Bin(BinOp::Pow, Src::Reg(1), Src::Leaf(3)));
    let Out::Sum(s) = sq.run(Reduce::Sum).out else {
        unreachable!()
    };
    let sq_want = kernels::binary(BinOp::Pow, Operand::Matrix(&want), Operand::Scalar(2.0));
    assert!(same_bits(s, kernels::aggregate_all(AggOp::Sum, &sq_want)));
}

#[test]
fn a_sum_in_the_same_pass_has_the_bits_of_the_two_programs_apart() {
    // random first programs, and after each a sum over its cells (their square, their
    // product with one of its full leaves, finite values made of them, or a random op with
    // a scalar): run_then_sum
    // against the first run with Reduce::Cells and the second, reading the cells formed,
    // with Reduce::Sum; shapes past the sum's sequential limit, with chunks spanning rows,
    // and one under it, whose sum runs in any order (Reduce::SumAnyOrder)
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut compared = 0;
    for (case, &(rows, cols)) in [(600, 500), (5000, 60), (300_000, 1), (700, 401), (300, 70)]
        .iter()
        .cycle()
        .take(20)
        .enumerate()
    {
        let any_order = rows * cols <= kernels::aggregate::SEQ_CELLS;
        let k = rng.gen_range(1..4);
        let (stored, insts) = random_case(&mut rng, rows, cols, k);
        let leaves = leaves_of(&stored, rows, cols);
        let first = Program {
            rows,
            cols,
            leaves: leaves.clone(),
            insts,
        };
        // the full leaf every random case has (its last)
        let full = leaves[leaves.len() - 1];
        let then_insts = match case % 4 {
            0 => vec![Inst::Bin(BinOp::Mul, Src::Leaf(0), Src::Leaf(0))],
            1 => vec![Inst::Bin(BinOp::Mul, Src::Leaf(1), Src::Leaf(0))],
            // finite cells (0 or 0.5): the blocks' eight lanes, not their plain sums
            2 => vec![
                Inst::Bin(BinOp::Ne, Src::Leaf(0), Src::Leaf(2)),
                Inst::Bin(BinOp::Mul, Src::Reg(0), Src::Leaf(2)),
            ],
            _ => vec![
                Inst::Bin(
                    BINARY[rng.gen_range(0..BINARY.len())],
                    Src::Leaf(0),
                    Src::Leaf(2),
                ),
                Inst::Un(UnaryOp::Abs, Src::Reg(0)),
            ],
        };
        let then = Program {
            rows,
            cols,
            leaves: vec![Leaf::Cells, full, Leaf::Scalar(0.5)],
            insts: then_insts.clone(),
        };
        let what = format!(
            "{rows}x{cols} case {case}: {:?} then {then_insts:?}",
            first.insts
        );
        let (got_a, got_b) = first.run_then_sum(&then, any_order);
        let want_a = first.run(Reduce::Cells);
        assert_eq!(got_a.nnz, want_a.nnz, "{what}: non-zeros of the first");
        assert_eq!(
            got_a.finite, want_a.finite,
            "{what}: finiteness of the first"
        );
        let (Out::Cells(ga), Out::Cells(wa)) = (&got_a.out, &want_a.out) else {
            unreachable!("cells")
        };
        let ga = ga.as_slice().unwrap();
        assert!(
            ga.iter()
                .zip(wa.as_slice().unwrap())
                .all(|(g, w)| same_bits(*g, *w)),
            "{what}: cells"
        );
        let formed = Program {
            rows,
            cols,
            leaves: vec![Leaf::Full(ga), full, Leaf::Scalar(0.5)],
            insts: then_insts,
        };
        let want_b = formed.run(if any_order {
            Reduce::SumAnyOrder
        } else {
            Reduce::Sum
        });
        assert_eq!(
            got_b.nnz, want_b.nnz,
            "{what}: non-zeros of the sum's program"
        );
        let (Out::Sum(gb), Out::Sum(wb)) = (got_b.out, want_b.out) else {
            unreachable!("sums")
        };
        assert!(same_bits(gb, wb), "{what}: sum {gb:e} vs {wb:e}");
        compared += 1;
    }
    assert_eq!(compared, 20);
}
