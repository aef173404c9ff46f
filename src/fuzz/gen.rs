//! The program generator: random, well-typed, well-shaped DML programs as a small AST that the
//! reference evaluator ([`super::reference`]) runs directly and [`Program::render`] prints as
//! DML source.
//!
//! A program declares a few inputs (dense, sparse and all-zero `rand` matrices, constant
//! `matrix(c, ...)` fills, scalars), assigns two to five variables from random expression
//! trees, and prints every assigned value at the end (a matrix as `sum(T)` and, when small,
//! `toString(T)`), so that every statement ends up in one run of the optimizer. Shapes come from
//! a per-program pool of sizes (1, small, up to 30 so sparse storage happens, and rarely 0).
//! Expression trees use every operator the optimizer lowers (`+ - * / ^ %*% t() -x sum rowSums
//! colSums as.scalar matrix() exp log sqrt abs sigmoid != 0`), the barriers next to them (`min`,
//! `max`, `mean`, `rowMeans`, `colMins`, ..., `round`, `floor`, `ceil`, `sign`, `%/%`, `%%`,
//! `ifelse`), biased towards the patterns rules/*.rules rewrite: the fused templates (`X * (U %*%
//! t(V))`, `sum((X - U %*% t(V))^2)`, `sum(X * log(U %*% t(V) + eps))`, `(X / (U %*% t(V) + eps))
//! %*% V`, `t(U) %*% (X / ...)`, `((X != 0) * (U %*% t(V) - X)) %*% V`, `t(X) %*% (w * (X %*% v))`,
//! `P * (1 - P)`, `t(A) %*% B`), sums and chains of products, products with all-zero sparse inputs,
//! 1x1 matrices next to matrices and scalars. Literals include ±0, ±1e308 and subnormals, exponents
//! are whole, fractional and negative, and `min`/`max`/`*` meet NaN and Inf, as matrices meet
//! zeros.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::fmt::Write;

/// A static type: a scalar (double) or a matrix with its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// a double
    Scalar,
    /// a matrix `rows x cols`
    Mat(usize, usize),
}

/// Element-wise binary operators (with DML's broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `^`
    Pow,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `a != b` (generated as `x != 0`)
    Ne,
    /// `a > b`
    Gt,
    /// `a %/% b` (integer division: the quotient truncated towards zero)
    IntDiv,
    /// `a %% b` (`a - (a %/% b) * b`; NaN for `b = 0`)
    Mod,
}

/// Element-wise unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Un {
    /// `-x`
    Neg,
    /// `exp`
    Exp,
    /// `log`
    Log,
    /// `sqrt`
    Sqrt,
    /// `abs`
    Abs,
    /// `sigmoid`
    Sigmoid,
    /// `round`
    Round,
    /// `floor`
    Floor,
    /// `ceil`
    Ceil,
    /// `sign`
    Sign,
}

/// Aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    /// `sum`
    Sum,
    /// `mean`
    Mean,
    /// `min(X)`
    Min,
    /// `max(X)`
    Max,
    /// `rowSums`
    RowSums,
    /// `colSums`
    ColSums,
    /// `rowMeans`
    RowMeans,
    /// `colMeans`
    ColMeans,
    /// `rowMins`
    RowMins,
    /// `rowMaxs`
    RowMaxs,
    /// `colMins`
    ColMins,
    /// `colMaxs`
    ColMaxs,
}

/// An expression of a generated program.
#[derive(Clone, Debug, PartialEq)]
pub enum E {
    /// a double literal
    Num(f64),
    /// a variable
    Var(String),
    /// an element-wise binary operator
    Bin(Bin, Box<E>, Box<E>),
    /// an element-wise unary operator
    Un(Un, Box<E>),
    /// `A %*% B`
    MatMul(Box<E>, Box<E>),
    /// `t(A)`
    T(Box<E>),
    /// an aggregate
    Agg(Agg, Box<E>),
    /// `as.scalar(A)` of a 1x1 matrix
    AsScalar(Box<E>),
    /// `matrix(v, rows=r, cols=c)` of a scalar v
    Fill(Box<E>, usize, usize),
    /// `ifelse(c, a, b)`: `a` where `c` is non-zero, else `b` (all three broadcast)
    IfElse(Box<E>, Box<E>, Box<E>),
}

/// How an input matrix is made.
#[derive(Clone, Debug, PartialEq)]
pub enum InputKind {
    /// `rand(rows, cols, min, max, sparsity, seed)`
    Rand {
        /// smallest value
        min: f64,
        /// largest value
        max: f64,
        /// fraction of non-zeros
        sparsity: f64,
        /// seed
        seed: u64,
    },
    /// `matrix(v, rows, cols)`
    Fill(f64),
    /// a scalar variable `name = v`
    Scalar(f64),
}

/// An input variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// its name
    pub name: String,
    /// rows (1 for scalars)
    pub rows: usize,
    /// columns (1 for scalars)
    pub cols: usize,
    /// how it is made
    pub kind: InputKind,
}

impl Input {
    /// Its type.
    pub fn ty(&self) -> Ty {
        match self.kind {
            InputKind::Scalar(_) => Ty::Scalar,
            _ => Ty::Mat(self.rows, self.cols),
        }
    }
}

/// An assignment `name = expr` of the program body.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// the variable assigned
    pub name: String,
    /// the expression
    pub expr: E,
}

/// A generated program: inputs, assignments (run `iters` times in a `for` loop when that is
/// more than 1, so plans are reused and inputs reassigned), and prints of every assigned
/// variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// input variables
    pub inputs: Vec<Input>,
    /// the assignments, in order
    pub stmts: Vec<Stmt>,
    /// how many times the assignments run
    pub iters: u32,
}

/// Matrices with at most this many cells are also printed cell by cell with `toString`.
pub const PRINT_CELLS: usize = 24;

impl Program {
    /// The type of every variable (inputs and assignments).
    pub fn env(&self) -> Vec<(String, Ty)> {
        let mut env: Vec<(String, Ty)> = self
            .inputs
            .iter()
            .map(|i| (i.name.clone(), i.ty()))
            .collect();
        for s in &self.stmts {
            if let Some(t) = type_of(&s.expr, &env) {
                env.push((s.name.clone(), t));
            }
        }
        env
    }

    /// The program as DML source.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for i in &self.inputs {
            let _ = match &i.kind {
                InputKind::Rand {
                    min,
                    max,
                    sparsity,
                    seed,
                } => writeln!(
                    out,
                    "{} = rand(rows={}, cols={}, min={}, max={}, sparsity={}, seed={})",
                    i.name,
                    i.rows,
                    i.cols,
                    num(*min),
                    num(*max),
                    num(*sparsity),
                    seed
                ),
                InputKind::Fill(v) => writeln!(
                    out,
                    "{} = matrix({}, rows={}, cols={})",
                    i.name,
                    num(*v),
                    i.rows,
                    i.cols
                ),
                InputKind::Scalar(v) => writeln!(out, "{} = {}", i.name, num(*v)),
            };
        }
        let indent = if self.iters > 1 {
            let _ = writeln!(out, "for (it in 1:{}) {{", self.iters);
            "  "
        } else {
            ""
        };
        for s in &self.stmts {
            let _ = writeln!(out, "{indent}{} = {}", s.name, render(&s.expr));
        }
        if self.iters > 1 {
            out.push_str("}\n");
        }
        let env = self.env();
        for s in &self.stmts {
            match env.iter().find(|(n, _)| *n == s.name).map(|e| e.1) {
                Some(Ty::Mat(r, c)) => {
                    let _ = writeln!(out, "print(sum({}))", s.name);
                    if r * c <= PRINT_CELLS {
                        let _ = writeln!(out, "print(toString({}))", s.name);
                    }
                }
                Some(Ty::Scalar) => {
                    let _ = writeln!(out, "print({})", s.name);
                }
                None => {}
            }
        }
        out
    }
}

/// A double literal as DML source (always a double: `2.0`, `1e-8`, `(-1.5)`).
pub fn num(v: f64) -> String {
    let s = format!("{:?}", v.abs());
    if v.is_sign_negative() {
        format!("(-{s})")
    } else {
        s
    }
}

/// An expression as DML source, fully parenthesized.
pub fn render(e: &E) -> String {
    match e {
        E::Num(v) => num(*v),
        E::Var(n) => n.clone(),
        E::Bin(op, a, b) => {
            let (a, b) = (render(a), render(b));
            match op {
                Bin::Add => format!("({a} + {b})"),
                Bin::Sub => format!("({a} - {b})"),
                Bin::Mul => format!("({a} * {b})"),
                Bin::Div => format!("({a} / {b})"),
                Bin::Pow => format!("({a} ^ {b})"),
                Bin::Ne => format!("({a} != {b})"),
                Bin::Gt => format!("({a} > {b})"),
                Bin::IntDiv => format!("({a} %/% {b})"),
                Bin::Mod => format!("({a} %% {b})"),
                Bin::Min => format!("min({a}, {b})"),
                Bin::Max => format!("max({a}, {b})"),
            }
        }
        E::Un(Un::Neg, a) => format!("(-{})", render(a)),
        E::Un(op, a) => {
            let f = match op {
                Un::Neg => unreachable!("handled above"),
                Un::Exp => "exp",
                Un::Log => "log",
                Un::Sqrt => "sqrt",
                Un::Abs => "abs",
                Un::Sigmoid => "sigmoid",
                Un::Round => "round",
                Un::Floor => "floor",
                Un::Ceil => "ceil",
                Un::Sign => "sign",
            };
            format!("{f}({})", render(a))
        }
        E::MatMul(a, b) => format!("({} %*% {})", render(a), render(b)),
        E::T(a) => format!("t({})", render(a)),
        E::Agg(op, a) => {
            let f = match op {
                Agg::Sum => "sum",
                Agg::Mean => "mean",
                Agg::Min => "min",
                Agg::Max => "max",
                Agg::RowSums => "rowSums",
                Agg::ColSums => "colSums",
                Agg::RowMeans => "rowMeans",
                Agg::ColMeans => "colMeans",
                Agg::RowMins => "rowMins",
                Agg::RowMaxs => "rowMaxs",
                Agg::ColMins => "colMins",
                Agg::ColMaxs => "colMaxs",
            };
            format!("{f}({})", render(a))
        }
        E::AsScalar(a) => format!("as.scalar({})", render(a)),
        E::Fill(v, r, c) => format!("matrix({}, rows={r}, cols={c})", render(v)),
        E::IfElse(c, a, b) => format!("ifelse({}, {}, {})", render(c), render(a), render(b)),
    }
}

/// The type of an expression in an environment, or `None` if it is ill-typed (the shrinker
/// uses this to keep only well-typed candidates).
pub fn type_of(e: &E, env: &[(String, Ty)]) -> Option<Ty> {
    Some(match e {
        E::Num(_) => Ty::Scalar,
        E::Var(n) => env.iter().rev().find(|(m, _)| m == n)?.1,
        E::Bin(_, a, b) => broadcast(type_of(a, env)?, type_of(b, env)?)?,
        E::Un(_, a) => type_of(a, env)?,
        E::MatMul(a, b) => match (type_of(a, env)?, type_of(b, env)?) {
            (Ty::Mat(r, k), Ty::Mat(k2, c)) if k == k2 => Ty::Mat(r, c),
            _ => return None,
        },
        E::T(a) => match type_of(a, env)? {
            Ty::Mat(r, c) => Ty::Mat(c, r),
            Ty::Scalar => return None,
        },
        E::Agg(op, a) => {
            let Ty::Mat(r, c) = type_of(a, env)? else {
                return None;
            };
            match op {
                Agg::Sum | Agg::Mean => Ty::Scalar,
                Agg::Min | Agg::Max if r * c > 0 => Ty::Scalar,
                Agg::RowSums | Agg::RowMeans => Ty::Mat(r, 1),
                Agg::RowMins | Agg::RowMaxs if c > 0 => Ty::Mat(r, 1),
                Agg::ColSums | Agg::ColMeans => Ty::Mat(1, c),
                Agg::ColMins | Agg::ColMaxs if r > 0 => Ty::Mat(1, c),
                _ => return None,
            }
        }
        E::AsScalar(a) => match type_of(a, env)? {
            Ty::Mat(1, 1) => Ty::Scalar,
            _ => return None,
        },
        E::Fill(v, r, c) => match type_of(v, env)? {
            Ty::Scalar => Ty::Mat(*r, *c),
            _ => return None,
        },
        E::IfElse(c, a, b) => broadcast(
            type_of(c, env)?,
            broadcast(type_of(a, env)?, type_of(b, env)?)?,
        )?,
    })
}

/// DML's element-wise broadcasting (equal sizes, or one side 1 in a dimension).
pub fn broadcast(a: Ty, b: Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Scalar, t) | (t, Ty::Scalar) => Some(t),
        (Ty::Mat(r, c), Ty::Mat(r2, c2)) => {
            let one = |x: usize, y: usize| {
                if x == y {
                    Some(x)
                } else if x == 1 {
                    Some(y)
                } else if y == 1 {
                    Some(x)
                } else {
                    None
                }
            };
            Some(Ty::Mat(one(r, r2)?, one(c, c2)?))
        }
    }
}

/// Literals the generator uses: units, zeros of both signs, small values, one that overflows
/// when squared, two that overflow when doubled, and subnormals.
const LITERALS: &[f64] = &[
    0.0, 1.0, 2.0, 0.5, -1.0, -2.5, 3.0, 1e-8, 0.1, -0.0, 1e200, 7.0, 1e308, 1e-320, -1e308,
    -1e-320, -0.0,
];
/// Exponents of `^`: whole, fractional and negative (a negative base to a fractional power
/// is NaN, a zero to a negative one is Inf).
const EXPONENTS: &[f64] = &[
    2.0, 2.0, 2.0, 3.0, 0.5, -1.0, 0.0, 1.0, -2.0, -0.5, 1.5, -3.0,
];
/// Exponents of the inner `^` of a power of a power: whole and not.
const NESTED: &[f64] = &[2.0, 0.5, 3.0, 1.5, -1.0];

/// The generator's state for one program.
pub struct Gen<'r> {
    rng: &'r mut ChaCha8Rng,
    env: Vec<(String, Ty)>,
    dims: Vec<usize>,
    /// variables that hold strictly positive values (factors of the log and division
    /// templates use them most of the time)
    positive: Vec<String>,
    /// inputs stored sparse (element-wise operators with special scalars use them)
    sparse: Vec<String>,
    /// all-zero sparse inputs (products with them meet Inf and NaN)
    zeros: Vec<String>,
}

/// Generates one program from the random state.
pub fn program(rng: &mut ChaCha8Rng) -> Program {
    let mut dims = vec![1];
    for _ in 0..3 {
        let d = if rng.gen_bool(0.04) {
            0
        } else {
            *[1, 2, 3, 4, 5, 8, 12, 30, 30]
                .choose(rng)
                .expect("not empty")
        };
        dims.push(d);
    }
    let mut inputs = Vec::new();
    let n_inputs = rng.gen_range(2..=5);
    let mut positive = Vec::new();
    let (mut sparse, mut zeros) = (Vec::new(), Vec::new());
    for i in 0..n_inputs {
        let rows = *dims.choose(rng).expect("not empty");
        let cols = *dims.choose(rng).expect("not empty");
        let name = format!("X{i}");
        let kind = match rng.gen_range(0..10) {
            0..=2 => InputKind::Rand {
                min: -1.0,
                max: 1.0,
                sparsity: 1.0,
                seed: rng.gen_range(1..1000),
            },
            3..=4 => {
                positive.push(name.clone());
                InputKind::Rand {
                    min: 0.1,
                    max: 2.0,
                    sparsity: 1.0,
                    seed: rng.gen_range(1..1000),
                }
            }
            5..=7 => {
                sparse.push(name.clone());
                InputKind::Rand {
                    min: if rng.gen_bool(0.5) { 0.0 } else { -1.0 },
                    max: 1.0,
                    sparsity: *[0.05, 0.1, 0.2, 0.3].choose(rng).expect("not empty"),
                    seed: rng.gen_range(1..1000),
                }
            }
            8 => {
                sparse.push(name.clone());
                zeros.push(name.clone());
                InputKind::Rand {
                    min: 0.0,
                    max: 1.0,
                    sparsity: 0.0,
                    seed: rng.gen_range(1..1000),
                }
            }
            _ => {
                let v = *[0.0, 1.0, 0.5, -2.0, 3.0].choose(rng).expect("not empty");
                if v > 0.0 {
                    positive.push(name.clone());
                }
                InputKind::Fill(v)
            }
        };
        inputs.push(Input {
            name,
            rows,
            cols,
            kind,
        });
    }
    for i in 0..rng.gen_range(0..=2) {
        let v = *[0.0, 0.5, 2.0, -1.0, 1e-8].choose(rng).expect("not empty");
        inputs.push(Input {
            name: format!("s{i}"),
            rows: 1,
            cols: 1,
            kind: InputKind::Scalar(v),
        });
    }
    let env = inputs.iter().map(|i| (i.name.clone(), i.ty())).collect();
    let mut g = Gen {
        rng,
        env,
        dims,
        positive,
        sparse,
        zeros,
    };
    let mut stmts = Vec::new();
    for i in 0..g.rng.gen_range(2..=5) {
        let depth = g.rng.gen_range(1..=4);
        let (expr, ty) = if g.rng.gen_bool(0.7) {
            let r = g.dim();
            let c = g.dim();
            (g.mat(r, c, depth), Ty::Mat(r, c))
        } else {
            (g.scalar(depth), Ty::Scalar)
        };
        let name = format!("T{i}");
        g.env.push((name.clone(), ty));
        stmts.push(Stmt { name, expr });
    }
    // a loop that reassigns inputs: later iterations see other values and densities
    let mut iters = 1;
    if g.rng.gen_bool(0.25) {
        iters = g.rng.gen_range(2..=4);
        let mats: Vec<(String, usize, usize)> = inputs
            .iter()
            .filter_map(|i| match i.ty() {
                Ty::Mat(r, c) => Some((i.name.clone(), r, c)),
                Ty::Scalar => None,
            })
            .collect();
        for _ in 0..g.rng.gen_range(1..=2) {
            if let Some((name, r, c)) = mats.choose(g.rng).cloned() {
                let depth = g.rng.gen_range(1..=3);
                let expr = g.mat(r, c, depth);
                stmts.push(Stmt { name, expr });
            }
        }
    }
    Program {
        inputs,
        stmts,
        iters,
    }
}

fn b(e: E) -> Box<E> {
    Box::new(e)
}

impl Gen<'_> {
    fn dim(&mut self) -> usize {
        *self.dims.choose(self.rng).expect("not empty")
    }

    /// An inner dimension: rarely 0.
    fn inner(&mut self) -> usize {
        let d = self.dim();
        if d == 0 && self.rng.gen_bool(0.7) {
            1
        } else {
            d
        }
    }

    fn lit(&mut self) -> E {
        E::Num(*LITERALS.choose(self.rng).expect("not empty"))
    }

    fn vars_of(&self, t: Ty) -> Vec<String> {
        self.env
            .iter()
            .filter(|(_, u)| *u == t)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// A leaf of shape `r x c`: a variable, a transposed variable, or a constant fill.
    fn mat_leaf(&mut self, r: usize, c: usize) -> E {
        let direct = self.vars_of(Ty::Mat(r, c));
        let trans = self.vars_of(Ty::Mat(c, r));
        let roll = self.rng.gen_range(0..10);
        if !direct.is_empty() && roll < 7 {
            return E::Var(direct.choose(self.rng).expect("not empty").clone());
        }
        if !trans.is_empty() && roll < 9 {
            return E::T(b(E::Var(
                trans.choose(self.rng).expect("not empty").clone(),
            )));
        }
        let v = if self.rng.gen_bool(0.7) {
            self.lit()
        } else {
            self.scalar(0)
        };
        E::Fill(b(v), r, c)
    }

    /// A matrix of a value that IEEE identities of reals trip over: ±Inf, NaN, ±0.
    fn special(&mut self, r: usize, c: usize) -> E {
        let big = || E::Bin(Bin::Mul, b(E::Num(1e200)), b(E::Num(1e200)));
        let v = match self.rng.gen_range(0..5) {
            0 => big(),
            1 => E::Un(Un::Neg, b(big())),
            2 => E::Bin(Bin::Sub, b(big()), b(big())),
            3 => E::Num(-0.0),
            _ => E::Num(0.0),
        };
        E::Fill(b(v), r, c)
    }

    /// A factor of a log/division template: positive most of the time.
    fn factor(&mut self, r: usize, c: usize) -> E {
        if self.rng.gen_bool(0.7) {
            let pos: Vec<String> = self
                .positive
                .iter()
                .filter(|n| self.env.iter().any(|(m, t)| m == *n && *t == Ty::Mat(r, c)))
                .cloned()
                .collect();
            if let Some(n) = pos.choose(self.rng) {
                return E::Var(n.clone());
            }
            let v = self.rng.gen_range(1..4) as f64 * 0.5;
            return E::Fill(b(E::Num(v)), r, c);
        }
        self.mat(r, c, 1)
    }

    /// `U %*% t(V)` for an `r x c` result.
    fn uvt(&mut self, r: usize, c: usize, k: usize, positive: bool) -> E {
        let (u, v) = if positive {
            (self.factor(r, k), self.factor(c, k))
        } else {
            (self.mat(r, k, 1), self.mat(c, k, 1))
        };
        if self.rng.gen_bool(0.8) {
            E::MatMul(b(u), b(E::T(b(v))))
        } else {
            // W %*% H, the factors form
            let h = if positive {
                self.factor(k, c)
            } else {
                self.mat(k, c, 1)
            };
            E::MatMul(b(u), b(h))
        }
    }

    fn eps(&mut self) -> E {
        E::Num(*[1e-8, 0.5, 1.0, 0.0].choose(self.rng).expect("not empty"))
    }

    /// A variable among `names` of type `t`, if any.
    fn var_in(&mut self, names: &[String], t: Ty) -> Option<E> {
        let fit: Vec<&String> = names
            .iter()
            .filter(|n| self.env.iter().rev().find(|(m, _)| m == *n).map(|e| e.1) == Some(t))
            .collect();
        fit.choose(self.rng).map(|n| E::Var((*n).clone()))
    }

    /// A scalar that IEEE identities of reals trip over: ±Inf, NaN, ±0, the extremes.
    fn special_scalar(&mut self) -> E {
        let big = || E::Bin(Bin::Mul, b(E::Num(1e200)), b(E::Num(1e200)));
        match self.rng.gen_range(0..8) {
            0 => big(),
            1 => E::Un(Un::Neg, b(big())),
            2 => E::Bin(Bin::Sub, b(big()), b(big())),
            3 => E::Num(-0.0),
            4 => E::Num(0.0),
            5 => E::Num(1e-320),
            6 => E::Num(-1e308),
            _ => E::Num(1e308),
        }
    }

    /// The rarer shapes of a matrix expression `r x c`: `ifelse`, `min`/`max` with NaN, products
    /// with an all-zero sparse input, a 1x1 matrix next to a matrix or a scalar, and a sparse
    /// input under an element-wise operator with a special scalar (`X * -0`, `X * Inf`,
    /// `X / 0`, `-X`).
    fn mat_extra(&mut self, r: usize, c: usize, d: u32) -> E {
        match self.rng.gen_range(0..6) {
            0 => {
                let cond = match self.rng.gen_range(0..4) {
                    0 => E::Bin(Bin::Ne, b(self.mat(r, c, d)), b(E::Num(0.0))),
                    1 => E::Bin(Bin::Gt, b(self.mat(r, c, d)), b(self.lit())),
                    // any value, NaN included, is a condition (non-zero: the first branch)
                    2 => self.mat(r, c, d),
                    _ => self.scalar(d.min(1)),
                };
                let branch = |g: &mut Self| {
                    if g.rng.gen_bool(0.7) {
                        g.mat(r, c, d)
                    } else if g.rng.gen_bool(0.5) {
                        g.special_scalar()
                    } else {
                        g.scalar(d.min(1))
                    }
                };
                let (mut y, n) = (branch(self), branch(self));
                let env = self.env.clone();
                if type_of(&cond, &env) == Some(Ty::Scalar) && type_of(&n, &env) == Some(Ty::Scalar)
                {
                    // some operand must be the matrix
                    y = self.mat(r, c, d);
                }
                E::IfElse(b(cond), b(y), b(n))
            }
            1 => {
                let op = if self.rng.gen_bool(0.5) {
                    Bin::Min
                } else {
                    Bin::Max
                };
                let x = self.mat(r, c, d);
                let nan = if self.rng.gen_bool(0.5) {
                    self.special(r, c)
                } else {
                    self.special_scalar()
                };
                if self.rng.gen_bool(0.5) {
                    E::Bin(op, b(x), b(nan))
                } else {
                    E::Bin(op, b(nan), b(x))
                }
            }
            2 => {
                // an all-zero sparse factor against Inf, NaN or anything
                let k = self.inner();
                let other = |g: &mut Self, r: usize, c: usize| {
                    if g.rng.gen_bool(0.5) {
                        g.special(r, c)
                    } else {
                        g.mat(r, c, d)
                    }
                };
                match self.rng.gen_range(0..3) {
                    0 => {
                        let z = self
                            .var_in(&self.zeros.clone(), Ty::Mat(r, k))
                            .unwrap_or_else(|| self.mat_leaf(r, k));
                        E::MatMul(b(z), b(other(self, k, c)))
                    }
                    1 => {
                        let z = self
                            .var_in(&self.zeros.clone(), Ty::Mat(k, c))
                            .unwrap_or_else(|| self.mat_leaf(k, c));
                        E::MatMul(b(other(self, r, k)), b(z))
                    }
                    _ => {
                        let z = self
                            .var_in(&self.zeros.clone(), Ty::Mat(r, c))
                            .unwrap_or_else(|| self.mat_leaf(r, c));
                        E::Bin(Bin::Mul, b(z), b(other(self, r, c)))
                    }
                }
            }
            3 => {
                // a 1x1 matrix broadcast against a matrix, or against a scalar in a fill
                let one = self.mat(1, 1, d);
                let op = *[Bin::Add, Bin::Mul, Bin::Div, Bin::Sub, Bin::Max]
                    .choose(self.rng)
                    .expect("not empty");
                match self.rng.gen_range(0..3) {
                    0 => E::Bin(op, b(self.mat(r, c, d)), b(one)),
                    1 => E::Bin(op, b(one), b(self.mat(r, c, d))),
                    _ => {
                        let s = E::Bin(op, b(E::AsScalar(b(one))), b(self.scalar(0)));
                        E::Fill(b(s), r, c)
                    }
                }
            }
            _ => {
                let x = self
                    .var_in(&self.sparse.clone(), Ty::Mat(r, c))
                    .unwrap_or_else(|| self.mat(r, c, d));
                if self.rng.gen_bool(0.2) {
                    return E::Un(Un::Neg, b(x));
                }
                let op = *[
                    Bin::Mul,
                    Bin::Mul,
                    Bin::Div,
                    Bin::Add,
                    Bin::Sub,
                    Bin::Pow,
                    Bin::IntDiv,
                    Bin::Mod,
                ]
                .choose(self.rng)
                .expect("not empty");
                let v = self.special_scalar();
                if self.rng.gen_bool(0.7) {
                    E::Bin(op, b(x), b(v))
                } else {
                    E::Bin(op, b(v), b(x))
                }
            }
        }
    }

    /// A matrix expression of shape `r x c`.
    pub fn mat(&mut self, r: usize, c: usize, depth: u32) -> E {
        if depth == 0 {
            return self.mat_leaf(r, c);
        }
        let d = depth - 1;
        if self.rng.gen_bool(0.1) {
            return self.mat_extra(r, c, d);
        }
        match self.rng.gen_range(0..100) {
            0..=21 => {
                let op = *[
                    Bin::Add,
                    Bin::Add,
                    Bin::Sub,
                    Bin::Mul,
                    Bin::Mul,
                    Bin::Mul,
                    Bin::Div,
                    Bin::Min,
                    Bin::Max,
                    Bin::IntDiv,
                    Bin::Mod,
                ]
                .choose(self.rng)
                .expect("not empty");
                let a = self.mat(r, c, d);
                let other = match self.rng.gen_range(0..10) {
                    0..=5 => self.mat(r, c, d),
                    6..=7 => self.scalar(d.min(1)),
                    8 if c != 1 => self.mat(r, 1, d),
                    _ if r != 1 => self.mat(1, c, d),
                    _ => self.scalar(0),
                };
                if self.rng.gen_bool(0.2) {
                    E::Bin(op, b(other), b(a))
                } else {
                    E::Bin(op, b(a), b(other))
                }
            }
            22..=25 => {
                let p = *EXPONENTS.choose(self.rng).expect("not empty");
                let base = if self.rng.gen_bool(0.3) {
                    // a power of a power (`pow-pow` holds only for whole exponents)
                    let q = *NESTED.choose(self.rng).expect("not empty");
                    E::Bin(Bin::Pow, b(self.mat(r, c, d)), b(E::Num(q)))
                } else {
                    self.mat(r, c, d)
                };
                E::Bin(Bin::Pow, b(base), b(E::Num(p)))
            }
            // sums of products with a common factor, often Inf, NaN or a zero of either sign
            // (distributivity holds only for finite factors)
            93..=96 => {
                let f = if self.rng.gen_bool(0.5) {
                    self.special(r, c)
                } else {
                    self.mat(r, c, d.min(1))
                };
                let (x, y) = (self.mat(r, c, d), self.mat(r, c, d));
                let op = if self.rng.gen_bool(0.7) {
                    Bin::Add
                } else {
                    Bin::Sub
                };
                if self.rng.gen_bool(0.5) {
                    let fx = E::Bin(Bin::Mul, b(f.clone()), b(x));
                    E::Bin(op, b(fx), b(E::Bin(Bin::Mul, b(f), b(y))))
                } else {
                    E::Bin(Bin::Mul, b(f), b(E::Bin(op, b(x), b(y))))
                }
            }
            26..=33 => {
                let op = *[
                    Un::Neg,
                    Un::Neg,
                    Un::Exp,
                    Un::Log,
                    Un::Log,
                    Un::Sqrt,
                    Un::Abs,
                    Un::Sigmoid,
                    Un::Round,
                    Un::Floor,
                    Un::Ceil,
                    Un::Sign,
                ]
                .choose(self.rng)
                .expect("not empty");
                E::Un(op, b(self.mat(r, c, d)))
            }
            34..=45 => {
                let k = self.inner();
                E::MatMul(b(self.mat(r, k, d)), b(self.mat(k, c, d)))
            }
            46..=50 => E::T(b(self.mat(c, r, d))),
            51..=55 if c == 1 => {
                let k = self.inner();
                let op = *[
                    Agg::RowSums,
                    Agg::RowSums,
                    Agg::RowMeans,
                    Agg::RowMins,
                    Agg::RowMaxs,
                ]
                .choose(self.rng)
                .expect("not empty");
                let k = if matches!(op, Agg::RowMins | Agg::RowMaxs) {
                    k.max(1)
                } else {
                    k
                };
                E::Agg(op, b(self.mat(r, k, d)))
            }
            51..=55 if r == 1 => {
                let k = self.inner();
                let op = *[
                    Agg::ColSums,
                    Agg::ColSums,
                    Agg::ColMeans,
                    Agg::ColMins,
                    Agg::ColMaxs,
                ]
                .choose(self.rng)
                .expect("not empty");
                let k = if matches!(op, Agg::ColMins | Agg::ColMaxs) {
                    k.max(1)
                } else {
                    k
                };
                E::Agg(op, b(self.mat(k, c, d)))
            }
            56..=58 => E::Bin(Bin::Ne, b(self.mat(r, c, d)), b(E::Num(0.0))),
            59..=60 => E::Bin(Bin::Gt, b(self.mat(r, c, d)), b(self.lit())),
            61..=63 => E::Fill(b(self.scalar(d.min(2))), r, c),
            // fused templates
            64..=67 => {
                let k = self.inner();
                self.uvt(r, c, k, false)
            }
            68..=71 => {
                let k = self.inner();
                let x = self.mat(r, c, d.min(1));
                let uv = self.uvt(r, c, k, false);
                if self.rng.gen_bool(0.7) {
                    E::Bin(Bin::Mul, b(x), b(uv))
                } else {
                    E::Bin(Bin::Mul, b(uv), b(x))
                }
            }
            72..=74 => {
                // sigmoid derivative
                let p = self.mat(r, c, d.min(1));
                let one_minus = E::Bin(Bin::Sub, b(E::Num(1.0)), b(p.clone()));
                E::Bin(Bin::Mul, b(p), b(one_minus))
            }
            75..=77 => {
                // (X / (U %*% t(V) + eps)) %*% V: X r x n, U r x k, V n x k with k = c
                let n = self.inner();
                let x = self.mat(r, n, d.min(1));
                let u = self.factor(r, c);
                let v = self.factor(n, c);
                let uv = E::MatMul(b(u), b(E::T(b(v.clone()))));
                let den = if self.rng.gen_bool(0.6) {
                    E::Bin(Bin::Add, b(uv), b(self.eps()))
                } else {
                    uv
                };
                E::MatMul(b(E::Bin(Bin::Div, b(x), b(den))), b(v))
            }
            78..=79 => {
                // t(U) %*% (X / (U %*% t(V) + eps)): U m x r, V c x r, X m x c
                let m = self.inner();
                let x = self.mat(m, c, d.min(1));
                let u = self.factor(m, r);
                let v = self.factor(c, r);
                let uv = E::MatMul(b(u.clone()), b(E::T(b(v))));
                let den = E::Bin(Bin::Add, b(uv), b(self.eps()));
                E::MatMul(b(E::T(b(u))), b(E::Bin(Bin::Div, b(x), b(den))))
            }
            80..=82 => {
                // ((X != 0) * (U %*% t(V) - X)) %*% V: X r x n, U r x c, V n x c
                let n = self.inner();
                let x = self.mat(r, n, d.min(1));
                let u = self.mat(r, c, 0);
                let v = self.mat(n, c, 0);
                let w = E::Bin(Bin::Ne, b(x.clone()), b(E::Num(0.0)));
                let res = E::Bin(Bin::Sub, b(E::MatMul(b(u), b(E::T(b(v.clone()))))), b(x));
                E::MatMul(b(E::Bin(Bin::Mul, b(w), b(res))), b(v))
            }
            83..=86 => {
                // t(X) %*% (w * (X %*% v)): X m x r, v r x c
                let m = self.inner();
                let x = self.mat(m, r, d.min(1));
                let v = self.mat(r, c, d.min(1));
                let xv = E::MatMul(b(x.clone()), b(v));
                let inner = match self.rng.gen_range(0..4) {
                    0 => xv,
                    1 => E::Bin(Bin::Mul, b(self.scalar(0)), b(xv)),
                    2 => E::Bin(Bin::Mul, b(self.mat(m, 1, 0)), b(xv)),
                    _ => E::Bin(Bin::Mul, b(xv), b(self.mat(m, c, 0))),
                };
                E::MatMul(b(E::T(b(x))), b(inner))
            }
            87..=89 => {
                // t(A) %*% B
                let m = self.inner();
                E::MatMul(b(E::T(b(self.mat(m, r, d)))), b(self.mat(m, c, d)))
            }
            90..=92 => {
                // log(U %*% t(V) + eps), X * log(...)
                let k = self.inner();
                let uv = self.uvt(r, c, k, true);
                let l = E::Un(Un::Log, b(E::Bin(Bin::Add, b(uv), b(self.eps()))));
                E::Bin(Bin::Mul, b(self.mat(r, c, d.min(1))), b(l))
            }
            _ => self.mat_leaf(r, c),
        }
    }

    /// A scalar expression.
    pub fn scalar(&mut self, depth: u32) -> E {
        if depth == 0 {
            let vars = self.vars_of(Ty::Scalar);
            if !vars.is_empty() && self.rng.gen_bool(0.4) {
                return E::Var(vars.choose(self.rng).expect("not empty").clone());
            }
            return self.lit();
        }
        let d = depth - 1;
        if self.rng.gen_bool(0.08) {
            // `ifelse` of scalars, `min`/`max` with NaN or Inf, a 1x1 matrix's cell
            return match self.rng.gen_range(0..3) {
                0 => E::IfElse(b(self.scalar(d)), b(self.scalar(d)), b(self.scalar(d))),
                1 => {
                    let op = if self.rng.gen_bool(0.5) {
                        Bin::Min
                    } else {
                        Bin::Max
                    };
                    E::Bin(op, b(self.scalar(d)), b(self.special_scalar()))
                }
                _ => {
                    let op = *[Bin::Add, Bin::Mul, Bin::Div, Bin::Pow]
                        .choose(self.rng)
                        .expect("not empty");
                    let one = E::AsScalar(b(self.mat(1, 1, d)));
                    E::Bin(op, b(one), b(self.scalar(d)))
                }
            };
        }
        match self.rng.gen_range(0..100) {
            0..=24 => {
                let r = self.dim();
                let c = self.dim();
                let op = *[Agg::Sum, Agg::Sum, Agg::Sum, Agg::Mean, Agg::Min, Agg::Max]
                    .choose(self.rng)
                    .expect("not empty");
                let (r, c) = if matches!(op, Agg::Min | Agg::Max) {
                    (r.max(1), c.max(1))
                } else {
                    (r, c)
                };
                E::Agg(op, b(self.mat(r, c, d)))
            }
            25..=29 => E::AsScalar(b(self.mat(1, 1, d))),
            30..=49 => {
                let op = *[
                    Bin::Add,
                    Bin::Sub,
                    Bin::Mul,
                    Bin::Div,
                    Bin::Min,
                    Bin::Max,
                    Bin::IntDiv,
                    Bin::Mod,
                ]
                .choose(self.rng)
                .expect("not empty");
                E::Bin(op, b(self.scalar(d)), b(self.scalar(d)))
            }
            50..=53 => {
                let p = *EXPONENTS.choose(self.rng).expect("not empty");
                E::Bin(Bin::Pow, b(self.scalar(d)), b(E::Num(p)))
            }
            54..=61 => {
                let op = *[
                    Un::Neg,
                    Un::Exp,
                    Un::Log,
                    Un::Sqrt,
                    Un::Abs,
                    Un::Sigmoid,
                    Un::Round,
                    Un::Sign,
                ]
                .choose(self.rng)
                .expect("not empty");
                E::Un(op, b(self.scalar(d)))
            }
            62..=67 => {
                // sum((X - U %*% t(V))^2), possibly weighted
                let (r, c, k) = (self.dim(), self.dim(), self.inner());
                let x = self.mat(r, c, d.min(1));
                let uv = self.uvt(r, c, k, false);
                let diff = if self.rng.gen_bool(0.7) {
                    E::Bin(Bin::Sub, b(x), b(uv))
                } else {
                    E::Bin(Bin::Sub, b(uv), b(x))
                };
                let sq = E::Bin(Bin::Pow, b(diff), b(E::Num(2.0)));
                let body = if self.rng.gen_bool(0.3) {
                    E::Bin(Bin::Mul, b(self.mat(r, c, 0)), b(sq))
                } else {
                    sq
                };
                E::Agg(Agg::Sum, b(body))
            }
            68..=72 => {
                // sum(X * log(U %*% t(V) + eps))
                let (r, c, k) = (self.dim(), self.dim(), self.inner());
                let x = self.mat(r, c, d.min(1));
                let uv = self.uvt(r, c, k, true);
                let arg = if self.rng.gen_bool(0.7) {
                    E::Bin(Bin::Add, b(uv), b(self.eps()))
                } else {
                    uv
                };
                E::Agg(
                    Agg::Sum,
                    b(E::Bin(Bin::Mul, b(x), b(E::Un(Un::Log, b(arg))))),
                )
            }
            73..=79 => {
                // sums of products
                let (r, c, k) = (self.dim(), self.dim(), self.inner());
                E::Agg(
                    Agg::Sum,
                    b(E::MatMul(b(self.mat(r, k, d)), b(self.mat(k, c, d)))),
                )
            }
            _ => self.scalar(0),
        }
    }
}
