//! Plans as DML text: an extracted plan (a [`RecExpr`] of LA operators) printed back as DML
//! expressions and assignments, for `--explain` and for `spores emit`, which hands the plan
//! to SystemDS.
//!
//! **Precedence.** Each printed piece carries the precedence level of its outermost operator
//! (DML's, loosest first: `|`, `&`, `!`, comparisons, `+ -`, `* /`, `%/% %%`, `%*%`, unary
//! `-`, `^`, then atoms); an operand is parenthesised only when its level is looser than its
//! position allows. Binary operators associate to the left, so a right operand of the same
//! level keeps its parentheses: `A %*% (B %*% C)` is the order the plan chose, and
//! `a * (b * c)` is not `(a * b) * c` in floating point. `^` associates to the right and takes
//! only an atom on its left. For the reader, negative numbers and negations are
//! parenthesised as right operands (`a - (-b)`, `2 ^ (-1)`), and a `%*%` product as an
//! operand of `*` or `/` (`X * (U %*% t(V))`), though DML would read them the same bare.
//!
//! **Fused operators** print in one of two modes ([`Fused`]): `Named` shows them by their
//! SystemDS name (`wsloss(X, U, V)`), for people; `Expanded` writes their defining
//! expression in the form SystemDS's own rewrites recognise and fuse again
//! (`sum((X - U %*% t(V))^2)`; `nz(X)` is `X != 0`), with `t(t(V))` folded to `V` and the
//! neutral `+ 0` and `1 *` of their meanings left out (exact: a dot product summed from `+0`
//! is never `-0`, and `1 * x` is `x` for every double).
//!
//! **Sharing.** A non-leaf node used more than once (counting the operand copies an
//! expansion makes, such as the `X` of `t(X) %*% (w * (X %*% v))`) becomes a temporary,
//! assigned once before its first use; a shared output is assigned to its output name and
//! read from there. The caller names temporaries (`%1` style for `--explain`, fresh DML
//! identifiers for emitted programs) and the outputs, and maps leaves (for example barrier
//! inputs back to the expressions they stand for).

use crate::ir::Ir;
use egg::{Id, Language, RecExpr, Symbol};

/// How fused operators are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fused {
    /// by their SystemDS name with their operands, `wsloss(X, U, V)` (readable, not DML)
    Named,
    /// as their defining DML expression, which SystemDS's rewrites fuse again
    Expanded,
}

/// A plan that has no DML form (a relational operator, or an out-of-range node).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no DML form: {0}")]
pub struct DmlError(pub String);

/// Precedence levels, loosest first (the grammar's order, grammar/la.lalrpop and DML's).
mod prec {
    pub const OR: u8 = 1;
    pub const CMP: u8 = 4;
    pub const ADD: u8 = 5;
    pub const MUL: u8 = 6;
    pub const MATMUL: u8 = 8;
    pub const UNARY: u8 = 9;
    pub const POW: u8 = 10;
    pub const ATOM: u8 = 11;
}

/// A printed expression with the precedence of its outermost operator.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// the DML text
    pub text: String,
    /// its precedence level: 11 for an atom (name, number, call, parenthesised expression),
    /// lower for an operator (`Piece::atom` and `Piece::loose` make the two common cases)
    pub prec: u8,
    /// when the piece is `t(x)`: `x`, so that `t(t(x))` prints as `x`
    transposed: Option<Box<Piece>>,
}

impl Piece {
    /// A name, non-negative number, call or other expression that needs no parentheses.
    pub fn atom(text: impl Into<String>) -> Piece {
        Piece {
            text: text.into(),
            prec: prec::ATOM,
            transposed: None,
        }
    }

    /// An expression of unknown structure: parenthesised wherever it is an operand.
    pub fn loose(text: impl Into<String>) -> Piece {
        Piece {
            text: text.into(),
            prec: prec::OR - 1,
            transposed: None,
        }
    }

    fn op(text: String, prec: u8) -> Piece {
        Piece {
            text,
            prec,
            transposed: None,
        }
    }

    /// The text, parenthesised unless its level is at least `min`.
    fn at(&self, min: u8) -> String {
        if self.prec >= min {
            self.text.clone()
        } else {
            format!("({})", self.text)
        }
    }
}

/// A number as a DML literal: integers as integers, `-0.0`, `Inf`, `NaN`, others in Rust's
/// shortest round-trip form (`0.1`, `1e-8`, `1e300`), which DML and spores both read.
pub fn number(v: f64) -> Piece {
    let text = if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "Inf" } else { "-Inf" }.to_string()
    } else if v == 0.0 && v.is_sign_negative() {
        "-0.0".to_string()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    };
    if text.starts_with('-') {
        Piece::op(text, prec::UNARY)
    } else {
        Piece::atom(text)
    }
}

/// `a OP b` at level `p` (left-associative, `^` right-associative).
fn bin(op: &str, p: u8, a: &Piece, b: &Piece) -> Piece {
    // for the reader, a product `%*%` keeps its parentheses as an operand of `*` and `/`
    // (`X * (U %*% V)`), though DML binds it tighter
    let bump = |m: u8, x: &Piece| {
        if p == prec::MUL && x.prec == prec::MATMUL {
            prec::ATOM
        } else {
            m
        }
    };
    let left = bump(if p == prec::POW { prec::ATOM } else { p }, a);
    // a right operand is looser than its operator's level only in parentheses; a negation
    // there gets them too, for the reader (`a - (-b)`)
    let right = bump(
        if b.prec == prec::UNARY {
            prec::ATOM
        } else if p == prec::POW {
            prec::UNARY
        } else {
            p + 1
        },
        b,
    );
    Piece::op(format!("{} {op} {}", a.at(left), b.at(right)), p)
}

fn neg(a: &Piece) -> Piece {
    // `-(-x)` rather than `--x`
    let min = if a.text.starts_with('-') {
        prec::ATOM
    } else {
        prec::UNARY
    };
    Piece::op(format!("-{}", a.at(min)), prec::UNARY)
}

fn call(name: &str, args: &[&Piece]) -> Piece {
    let args: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    Piece::atom(format!("{name}({})", args.join(", ")))
}

fn trans(a: &Piece) -> Piece {
    match &a.transposed {
        Some(inner) => (**inner).clone(),
        None => Piece {
            transposed: Some(Box::new(a.clone())),
            ..call("t", &[a])
        },
    }
}

fn is_num(p: &Piece, v: f64) -> bool {
    p.text == number(v).text
}

fn mmul(a: &Piece, b: &Piece) -> Piece {
    bin("%*%", prec::MATMUL, a, b)
}
fn mul(a: &Piece, b: &Piece) -> Piece {
    bin("*", prec::MUL, a, b)
}
fn div(a: &Piece, b: &Piece) -> Piece {
    bin("/", prec::MUL, a, b)
}
fn add(a: &Piece, b: &Piece) -> Piece {
    bin("+", prec::ADD, a, b)
}
fn sub(a: &Piece, b: &Piece) -> Piece {
    bin("-", prec::ADD, a, b)
}
fn pow(a: &Piece, b: &Piece) -> Piece {
    bin("^", prec::POW, a, b)
}
/// `U %*% t(V)`, the low-rank product of the fused operators.
fn uvt(u: &Piece, v: &Piece) -> Piece {
    mmul(u, &trans(v))
}
/// `x + e`, without a literal `+ 0`.
fn plus_eps(x: Piece, e: &Piece) -> Piece {
    if is_num(e, 0.0) {
        x
    } else {
        add(&x, e)
    }
}

/// How many copies of each child an expanded fused operator writes (a child written twice
/// that is not a leaf becomes a temporary rather than being computed twice).
fn copies(n: &Ir, mode: Fused) -> Vec<usize> {
    let k = n.children().len();
    match (mode, n) {
        (Fused::Expanded, Ir::MMChain(_)) => vec![2, 1, 1],
        (Fused::Expanded, Ir::MMChainR(_)) => vec![2, 1, 1],
        (Fused::Expanded, Ir::SMMChain(_)) => vec![3, 3, 2],
        (Fused::Expanded, Ir::WDivMM(_)) => vec![1, 1, 2, 1],
        (Fused::Expanded, Ir::WDivMMT(_)) => vec![1, 2, 1, 1],
        (Fused::Expanded, Ir::WSubMMT(_)) => vec![1, 1, 2, 1],
        (Fused::Expanded, Ir::Sprop(_)) => vec![2],
        _ => vec![1; k],
    }
}

/// The shape of a node: `Some((rows, cols))` for a matrix, `None` for a scalar.
pub type Shape = Option<(usize, usize)>;

/// The shape of every node of a plan, given the inputs' shapes and the values of the
/// scalars that size a `matrix(v, rows, cols)`; `None` when a size is not known.
pub fn shapes(
    e: &RecExpr<Ir>,
    input: &dyn Fn(Symbol) -> Shape,
    value: &dyn Fn(Symbol) -> Option<f64>,
) -> Option<Vec<Shape>> {
    let mut out: Vec<Shape> = Vec::with_capacity(e.as_ref().len());
    for n in e.as_ref() {
        let k = |i: usize| out[usize::from(n.children()[i])];
        let whole = |i: usize| -> Option<usize> {
            let v = match &e[n.children()[i]] {
                Ir::Num(c) => c.get(),
                Ir::Symbol(s) => value(*s)?,
                _ => return None,
            };
            (v >= 0.0 && v.fract() == 0.0).then_some(v as usize)
        };
        let sh = match n {
            Ir::Num(_) => None,
            Ir::Symbol(s) => input(*s),
            Ir::MSum(_) | Ir::AsScalar(_) | Ir::WsLoss(_) | Ir::WsLossW(_) | Ir::Wcemm(_) => None,
            Ir::MMul(_) => Some((k(0)?.0, k(1)?.1)),
            Ir::TMMul(_) => Some((k(0)?.1, k(1)?.1)),
            Ir::Trans(_) => k(0).map(|(r, c)| (c, r)),
            Ir::RowSums(_) => Some((k(0)?.0, 1)),
            Ir::ColSums(_) => Some((1, k(0)?.1)),
            Ir::Fill(_) => Some((whole(1)?, whole(2)?)),
            Ir::Sddmm(_) => k(0),
            Ir::WDivMM(_) | Ir::WSubMM(_) => Some((k(0)?.0.max(k(1)?.0), k(2)?.1)),
            Ir::WDivMMT(_) => Some((k(1)?.1, k(0)?.1)),
            Ir::WSubMMT(_) => Some((k(2)?.1, k(1)?.1)),
            Ir::MMChain(_) | Ir::SMMChain(_) => Some((k(0)?.1, k(2)?.1)),
            Ir::MMChainR(_) => Some((k(0)?.1, k(1)?.1)),
            _ => {
                // element-wise: the broadcast of the operands
                let mut sh: Shape = None;
                for c in n.children() {
                    if let Some((r, cc)) = out[usize::from(*c)] {
                        let (r0, c0) = sh.unwrap_or((1, 1));
                        sh = Some((r0.max(r), c0.max(cc)));
                    }
                }
                sh
            }
        };
        out.push(sh);
    }
    Some(out)
}

/// `a OP b` element-wise in the forms SystemDS accepts: it broadcasts a vector only on the
/// right (or a column against a row), so a broadcast left operand is swapped to the right
/// when the operator commutes (exact in IEEE arithmetic) and otherwise replicated first
/// (`matrix(1, rows=r, cols=c) * v`, exact); a 1x1 matrix against a larger one is taken
/// as a scalar.
fn elementwise(op: &str, p: u8, k: &[Piece], sh: Option<(&[Shape], Shape)>) -> Piece {
    let (a, b) = (&k[0], &k[1]);
    let Some((kids, Some(out))) = sh else {
        return bin(op, p, a, b);
    };
    let scalar = |x: &Piece, s: Shape| match s {
        Some((1, 1)) if out != (1, 1) => (call("as.scalar", &[x]), None),
        _ => (x.clone(), s),
    };
    let (a, sa) = scalar(a, kids[0]);
    let (b, sb) = scalar(b, kids[1]);
    let outer = matches!((sa, sb), (Some((_, 1)), Some((1, _))));
    match sa {
        Some(s) if s != out && !outer => {
            if matches!(op, "*" | "+") && (sb.is_none() || sb == Some(out)) {
                bin(op, p, &b, &a)
            } else {
                let ones = Piece::atom(format!("matrix(1, rows={}, cols={})", out.0, out.1));
                bin(op, p, &mul(&ones, &a), &b)
            }
        }
        _ => bin(op, p, &a, &b),
    }
}

/// One node given its children's pieces (and the shapes of the node and its children, when
/// known, for the broadcasting SystemDS accepts).
fn node_text(
    n: &Ir,
    k: &[Piece],
    mode: Fused,
    sh: Option<(&[Shape], Shape)>,
) -> Result<Piece, DmlError> {
    let expanded = mode == Fused::Expanded;
    Ok(match n {
        Ir::Num(c) => number(c.get()),
        Ir::Symbol(s) => Piece::atom(s.as_str()),
        Ir::MMul(_) => mmul(&k[0], &k[1]),
        // the scalar forms of the relational operators evaluate as their elementwise
        // counterparts (raise/mod.rs), and a plan holds them only on scalars
        Ir::EMul(_) | Ir::Join(_) => elementwise("*", prec::MUL, k, sh),
        Ir::EAdd(_) | Ir::Union(_) => elementwise("+", prec::ADD, k, sh),
        Ir::ESub(_) => elementwise("-", prec::ADD, k, sh),
        Ir::EDiv(_) => elementwise("/", prec::MUL, k, sh),
        Ir::EPow(_) | Ir::Pow(_) => elementwise("^", prec::POW, k, sh),
        Ir::Neg(_) => neg(&k[0]),
        // written as planned (a round trip keeps it), but marked so that an expansion over
        // it folds `t(t(x))`
        Ir::Trans(_) => Piece {
            transposed: Some(Box::new(k[0].clone())),
            ..call("t", &[&k[0]])
        },
        Ir::Nz(_) => bin("!=", prec::CMP, &k[0], &number(0.0)),
        Ir::Fill(_) => Piece::atom(format!(
            "matrix({}, rows={}, cols={})",
            k[0].text, k[1].text, k[2].text
        )),
        Ir::MSum(_)
        | Ir::RowSums(_)
        | Ir::ColSums(_)
        | Ir::AsScalar(_)
        | Ir::Exp(_)
        | Ir::Log(_)
        | Ir::Sqrt(_)
        | Ir::Abs(_)
        | Ir::Sigmoid(_) => {
            let name = crate::builtins::by_operator(&n.to_string(), 1)
                .map(|b| b.name)
                .ok_or_else(|| DmlError(format!("`{n}` has no builtin")))?;
            call(name, &[&k[0]])
        }
        Ir::TMMul(_) if expanded => mmul(&trans(&k[0]), &k[1]),
        Ir::Sddmm(_) if expanded => mul(&k[0], &uvt(&k[1], &k[2])),
        Ir::WsLoss(_) if expanded => call(
            "sum",
            &[&pow(&sub(&k[0], &uvt(&k[1], &k[2])), &number(2.0))],
        ),
        Ir::WsLossW(_) if expanded => call(
            "sum",
            &[&mul(
                &k[0],
                &pow(&sub(&k[1], &uvt(&k[2], &k[3])), &number(2.0)),
            )],
        ),
        Ir::Wcemm(_) if expanded => call(
            "sum",
            &[&mul(
                &k[0],
                &call("log", &[&plus_eps(uvt(&k[1], &k[2]), &k[3])]),
            )],
        ),
        Ir::WDivMM(_) if expanded => mmul(&div(&k[0], &plus_eps(uvt(&k[1], &k[2]), &k[3])), &k[2]),
        Ir::WDivMMT(_) if expanded => mmul(
            &trans(&k[1]),
            &div(&k[0], &plus_eps(uvt(&k[1], &k[2]), &k[3])),
        ),
        Ir::WSubMM(_) if expanded => mmul(&mul(&k[0], &sub(&uvt(&k[2], &k[3]), &k[1])), &k[3]),
        Ir::WSubMMT(_) if expanded => {
            mmul(&trans(&k[2]), &mul(&k[0], &sub(&uvt(&k[2], &k[3]), &k[1])))
        }
        Ir::MMChain(_) if expanded => {
            let xv = mmul(&k[0], &k[2]);
            let inner = if is_num(&k[1], 1.0) {
                xv
            } else {
                mul(&k[1], &xv)
            };
            mmul(&trans(&k[0]), &inner)
        }
        Ir::MMChainR(_) if expanded => mmul(&trans(&k[0]), &sub(&mmul(&k[0], &k[1]), &k[2])),
        Ir::SMMChain(_) if expanded => {
            let q = mul(&k[1], &mmul(&k[0], &k[2]));
            let r = sub(&q, &mul(&k[1], &call("rowSums", &[&q])));
            mmul(&trans(&k[0]), &r)
        }
        Ir::Sprop(_) if expanded => mul(&k[0], &sub(&number(1.0), &k[0])),
        Ir::TMMul(_)
        | Ir::Sddmm(_)
        | Ir::WsLoss(_)
        | Ir::WsLossW(_)
        | Ir::Wcemm(_)
        | Ir::WDivMM(_)
        | Ir::WDivMMT(_)
        | Ir::WSubMM(_)
        | Ir::WSubMMT(_)
        | Ir::MMChain(_)
        | Ir::MMChainR(_)
        | Ir::SMMChain(_)
        | Ir::Sprop(_) => {
            let refs: Vec<&Piece> = k.iter().collect();
            call(&n.to_string(), &refs)
        }
        Ir::Bind(_) | Ir::Unbind(_) | Ir::Agg(_) | Ir::Subst(_) | Ir::Dim(_) => {
            return Err(DmlError(format!("relational operator `{n}`")))
        }
    })
}

/// What one assignment of a printed plan assigns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// a temporary with this name
    Temp(String),
    /// the output with this index (its name is the caller's)
    Output(usize),
}

/// One assignment of a printed plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// what it assigns
    pub target: Target,
    /// the expression
    pub value: Piece,
    /// the leaf symbols it reads directly (not through an earlier line), for the caller's
    /// check that no line reads a variable after an earlier line reassigned it
    pub reads: Vec<Symbol>,
}

/// The leaves of a plan as the caller prints them.
pub trait Leaves {
    /// The piece for a symbol of the plan and the variables it reads; `None`: the symbol
    /// itself, reading itself.
    fn leaf(&self, s: Symbol) -> Option<(Piece, Vec<Symbol>)>;
}

/// Symbols print as themselves.
pub struct Plain;

impl Leaves for Plain {
    fn leaf(&self, _: Symbol) -> Option<(Piece, Vec<Symbol>)> {
        None
    }
}

/// Prints the outputs `roots` of a plan as assignments in dependency order: one line per
/// temporary (named by `temp`) and one per output (`names[i]` is how later lines refer to
/// output `i`), each shared subterm computed once.
pub fn print_roots(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    names: &[String],
    mode: Fused,
    leaves: &dyn Leaves,
    temp: &mut dyn FnMut() -> String,
) -> Result<Vec<Line>, DmlError> {
    print_roots_shaped(expr, roots, names, mode, leaves, temp, None)
}

/// [`print_roots`] with the shape of every node ([`shapes`]), so that element-wise
/// operators broadcast the way SystemDS accepts.
pub fn print_roots_shaped(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    names: &[String],
    mode: Fused,
    leaves: &dyn Leaves,
    temp: &mut dyn FnMut() -> String,
    shapes: Option<&[Shape]>,
) -> Result<Vec<Line>, DmlError> {
    let nodes = expr.as_ref();
    let n = nodes.len();
    let shapes = shapes.filter(|s| s.len() == n);
    if let Some(r) = roots.iter().find(|r| usize::from(**r) >= n) {
        return Err(DmlError(format!("root {r} out of range")));
    }
    // uses of each node reachable from the roots (each parent counted with its copies)
    let mut reachable = vec![false; n];
    for r in roots {
        reachable[usize::from(*r)] = true;
    }
    let mut uses = vec![0usize; n];
    for i in (0..n).rev() {
        if !reachable[i] {
            continue;
        }
        for (c, times) in nodes[i].children().iter().zip(copies(&nodes[i], mode)) {
            let c = usize::from(*c);
            if c >= i {
                return Err(DmlError(format!("node {i} reads a later node {c}")));
            }
            reachable[c] = true;
            uses[c] += times;
        }
    }
    let mut output_of: Vec<Option<usize>> = vec![None; n];
    for (k, r) in roots.iter().enumerate() {
        let r = usize::from(*r);
        uses[r] += 1;
        output_of[r].get_or_insert(k);
    }

    // pieces of the nodes printed so far (a named node prints as its name), with the
    // symbols their text reads
    let mut done: Vec<Option<(Piece, Vec<Symbol>)>> = vec![None; n];
    let mut lines = Vec::new();
    #[allow(clippy::too_many_arguments)]
    fn visit(
        i: usize,
        nodes: &[Ir],
        shapes: Option<&[Shape]>,
        mode: Fused,
        leaves: &dyn Leaves,
        temp: &mut dyn FnMut() -> String,
        names: &[String],
        uses: &[usize],
        output_of: &[Option<usize>],
        done: &mut Vec<Option<(Piece, Vec<Symbol>)>>,
        lines: &mut Vec<Line>,
    ) -> Result<(), DmlError> {
        if done[i].is_some() {
            return Ok(());
        }
        let node = &nodes[i];
        let (piece, reads) = match node {
            Ir::Symbol(s) => leaves
                .leaf(*s)
                .unwrap_or_else(|| (Piece::atom(s.as_str()), vec![*s])),
            _ => {
                let mut kids = Vec::new();
                let mut reads: Vec<Symbol> = Vec::new();
                for c in node.children() {
                    let c = usize::from(*c);
                    visit(
                        c, nodes, shapes, mode, leaves, temp, names, uses, output_of, done, lines,
                    )?;
                    let (p, r) = done[c].clone().expect("just visited");
                    kids.push(p);
                    for s in r {
                        if !reads.contains(&s) {
                            reads.push(s);
                        }
                    }
                }
                let sh = shapes.map(|sh| {
                    let kids: Vec<Shape> = node
                        .children()
                        .iter()
                        .map(|c| sh[usize::from(*c)])
                        .collect();
                    (kids, sh[i])
                });
                let sh = sh.as_ref().map(|(k, s)| (k.as_slice(), *s));
                (node_text(node, &kids, mode, sh)?, reads)
            }
        };
        // leaves, and transposes of leaves (cheap, and kept in place so SystemDS sees the
        // patterns it fuses), are never temporaries
        let leaf = |i: usize| matches!(nodes[i], Ir::Num(_) | Ir::Symbol(_));
        let leaf = leaf(i) || matches!(node, Ir::Trans(c) if leaf(usize::from(*c)));
        let name = match output_of[i] {
            Some(k) if uses[i] > 1 => Some((Target::Output(k), names[k].clone())),
            _ if uses[i] > 1 && !leaf => {
                let t = temp();
                Some((Target::Temp(t.clone()), t))
            }
            _ => None,
        };
        done[i] = Some(match name {
            Some((target, name)) => {
                lines.push(Line {
                    target,
                    value: piece,
                    reads,
                });
                (Piece::atom(name), vec![])
            }
            None => (piece, reads),
        });
        Ok(())
    }
    for (k, r) in roots.iter().enumerate() {
        let r = usize::from(*r);
        visit(
            r, nodes, shapes, mode, leaves, temp, names, &uses, &output_of, &mut done, &mut lines,
        )?;
        if !lines.iter().any(|l| l.target == Target::Output(k)) {
            // an output not assigned while printing (used once, a leaf, or a repeated root,
            // which reads the first): its own line
            let (value, reads) = done[r].clone().expect("just visited");
            lines.push(Line {
                target: Target::Output(k),
                value,
                reads,
            });
        }
    }
    Ok(lines)
}

/// A whole term (its root is the last node) as DML text: one `name = value` line per
/// temporary, then the expression. Temporaries are named `%1`, `%2`, ... in `Named` mode
/// (for people) and `tmp1`, `tmp2`, ... in `Expanded` mode (valid DML, for tests; emitted
/// programs name them with [`print_roots`]).
pub fn to_dml(expr: &RecExpr<Ir>, mode: Fused) -> Result<String, DmlError> {
    let root = Id::from(
        expr.as_ref()
            .len()
            .checked_sub(1)
            .ok_or_else(|| DmlError("empty term".into()))?,
    );
    let mut count = 0;
    let mut temp = || {
        count += 1;
        match mode {
            Fused::Named => format!("%{count}"),
            Fused::Expanded => format!("tmp{count}"),
        }
    };
    let lines = print_roots(expr, &[root], &["out".to_string()], mode, &Plain, &mut temp)?;
    let mut out = String::new();
    for l in &lines {
        match &l.target {
            Target::Temp(t) => out.push_str(&format!("{t} = {}\n", l.value.text)),
            Target::Output(_) => out.push_str(&l.value.text),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The term of `s` with equal subterms shared, as extraction builds plans.
    fn term(s: &str) -> RecExpr<Ir> {
        let e: RecExpr<Ir> = s.parse().unwrap();
        let mut out = RecExpr::default();
        let mut seen = std::collections::HashMap::new();
        let mut map: Vec<Id> = Vec::new();
        for n in e.as_ref() {
            let n = n.clone().map_children(|c| map[usize::from(c)]);
            let id = *seen.entry(n.clone()).or_insert_with(|| out.add(n));
            map.push(id);
        }
        out
    }

    fn dml(s: &str, mode: Fused) -> String {
        to_dml(&term(s), mode).unwrap()
    }

    #[test]
    fn minimal_parentheses() {
        let e = Fused::Expanded;
        assert_eq!(dml("(mmul A (mmul B C))", e), "A %*% (B %*% C)");
        assert_eq!(dml("(mmul (mmul A B) C)", e), "A %*% B %*% C");
        assert_eq!(dml("(m- a (m- b c))", e), "a - (b - c)");
        assert_eq!(dml("(m- (m- a b) c)", e), "a - b - c");
        assert_eq!(dml("(m* (m+ a b) c)", e), "(a + b) * c");
        assert_eq!(dml("(m+ (m* a b) c)", e), "a * b + c");
        assert_eq!(dml("(m^ (m^ a b) c)", e), "(a ^ b) ^ c");
        assert_eq!(dml("(m^ a (m^ b c))", e), "a ^ b ^ c");
        assert_eq!(dml("(neg (m^ a 2))", e), "-a ^ 2");
        assert_eq!(dml("(m^ (neg a) 2)", e), "(-a) ^ 2");
        assert_eq!(dml("(m^ 2 -1)", e), "2 ^ (-1)");
        assert_eq!(dml("(m- a (neg b))", e), "a - (-b)");
        assert_eq!(dml("(neg (neg b))", e), "-(-b)");
        assert_eq!(dml("(mmul (neg A) B)", e), "-A %*% B");
        assert_eq!(dml("(neg (mmul A B))", e), "-(A %*% B)");
        assert_eq!(dml("(m* (nz X) Y)", e), "(X != 0) * Y");
        assert_eq!(dml("(t (t A))", e), "t(t(A))");
        assert_eq!(dml("(sddmm X U (t H))", e), "X * (U %*% H)");
        assert_eq!(
            dml("(fill 0 3 4)", e),
            "matrix(0, rows=3, cols=4)".to_string()
        );
        assert_eq!(dml("(m* -0 (m+ 1e-8 1e300))", e), "-0.0 * (1e-8 + 1e300)");
    }

    #[test]
    fn fused_named_and_expanded() {
        let s = "(m+ (wsloss X U (t H)) (wcemm X U V 0))";
        assert_eq!(
            dml(s, Fused::Named),
            "wsloss(X, U, t(H)) + wcemm(X, U, V, 0)"
        );
        assert_eq!(
            dml(s, Fused::Expanded),
            "sum((X - U %*% H) ^ 2) + sum(X * log(U %*% t(V)))"
        );
        assert_eq!(
            dml("(mmchain X 1 v)", Fused::Expanded),
            "t(X) %*% (X %*% v)"
        );
        assert_eq!(
            dml("(wsubmm (nz X) X U V)", Fused::Expanded),
            "((X != 0) * (U %*% t(V) - X)) %*% V"
        );
    }

    #[test]
    fn shared_subterms_become_temporaries() {
        let s = "(m+ (mmul A (mmul B C)) (t (mmul B C)))";
        assert_eq!(dml(s, Fused::Named), "%1 = B %*% C\nA %*% %1 + t(%1)");
        // an expansion that writes an operand twice shares it
        assert_eq!(
            dml("(mmchain (m+ X 1) w v)", Fused::Expanded),
            "tmp1 = X + 1\nt(tmp1) %*% (w * (tmp1 %*% v))"
        );
    }

    #[test]
    fn relational_operators_have_no_dml_form() {
        let e: RecExpr<Ir> = "(ub @i @j (b @i @j X))".parse().unwrap();
        assert!(to_dml(&e, Fused::Expanded).is_err());
    }

    use crate::check::hir::{self, ExprKind, Stmt};
    use crate::exec::{Executor, Value};
    use crate::optimize::{Input, Optimizer, Planned};
    use std::collections::HashMap;

    /// Assignments of a generated program whose expression the optimizer takes whole (no
    /// barrier) and whose inputs keep their values to the end of the program.
    fn plannable(prog: &hir::Program) -> Vec<hir::Expr> {
        let mut assigns: Vec<(String, hir::Expr)> = Vec::new();
        for b in &prog.blocks {
            if let hir::Block::Basic(bb) = b {
                for s in &bb.stmts {
                    if let Stmt::Assign { var, value, .. } = s {
                        assigns.push((var.clone(), value.clone()));
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (k, (_, e)) in assigns.iter().enumerate() {
            let mut reads = Vec::new();
            crate::check::visit(e, &mut |x| {
                if let ExprKind::Var(n) = &x.kind {
                    reads.push(n.clone());
                }
            });
            let stable = !assigns[k..].iter().any(|(v, _)| reads.contains(v));
            let mut t = RecExpr::default();
            if stable && crate::lower::lower_expr(e, &mut t).is_ok() && t.as_ref().len() > 1 {
                out.push(e.clone());
            }
        }
        out
    }

    fn run(src: &str) -> (Vec<u8>, hir::Program) {
        let prog = crate::driver::compile(src, &Default::default()).expect("compiles");
        (Vec::new(), prog)
    }

    fn var(name: &str) -> hir::Expr {
        hir::Expr {
            kind: ExprKind::Var(name.into()),
            ty: hir::Ty::Scalar(hir::ScalarTy::Double),
            span: Default::default(),
        }
    }

    /// Appends the printed lines to `text` (the output named `out`), runs it and returns the
    /// value of `out`.
    fn run_printed(text: &mut String, lines: &[Line], out: &str) -> Val {
        for l in lines {
            let name = match &l.target {
                Target::Temp(t) => t.clone(),
                Target::Output(_) => out.to_string(),
            };
            text.push_str(&format!("{name} = {}\n", l.value.text));
        }
        // read after the run: a program's assignments that nothing reads do not run
        let mut read = text.clone();
        read.push_str(&format!("print(toString({out}))\n"));
        let (mut sink, prog) = run(&read);
        let mut exec = Executor::new(&mut sink, false);
        exec.run(&prog).expect("the printed plan runs");
        match exec.eval(&var(out)).unwrap() {
            Value::Matrix(m) => Val::Matrix(m),
            Value::Scalar(x) => Val::Scalar(x.as_f64()),
            Value::Str(_) | Value::List(_) => unreachable!(),
        }
    }

    fn cells(v: &Val) -> Vec<f64> {
        match v {
            Val::Scalar(x) => vec![*x],
            Val::Matrix(m) => m.to_dense().into_raw_vec_and_offset().0,
        }
    }

    use super::super::Val;

    /// Whether the plan reaches the README's fused-operator exception (cells outside a
    /// sparse input's pattern are exact zeros): some fused operator whose kernel streams over
    /// the non-zeros of its driver (first operand) has an expansion that is not exactly zero
    /// over an all-zero driver, so a zero cell of the driver gives `0 / 0`, `0 * log(0)` or
    /// `0 * Inf` (NaN or Inf) in the expansion where the kernel adds nothing. Each such
    /// operator's expansion, with the driver replaced by zeros of its shape, is printed and
    /// run by the interpreter after the program `src`. (The probe reads every cell of the
    /// driver, not only its zeros; where a non-zero cell of the driver meets the same
    /// non-finite factor, both forms are non-finite there anyway.)
    fn pattern_exception(src: &str, expr: &RecExpr<Ir>, vals: &HashMap<Symbol, Val>) -> bool {
        let nodes = expr.as_ref();
        nodes.iter().enumerate().any(|(i, node)| {
            let streams = matches!(
                node,
                Ir::Sddmm(_)
                    | Ir::WsLossW(_)
                    | Ir::Wcemm(_)
                    | Ir::WDivMM(_)
                    | Ir::WDivMMT(_)
                    | Ir::WSubMM(_)
                    | Ir::WSubMMT(_)
                    | Ir::MMChain(_)
                    | Ir::MMChainR(_)
            );
            if !streams {
                return false;
            }
            let driver = node.children()[0];
            let Ok(mut d) = crate::raise::eval_roots(expr, &[driver], vals, &mut |_, _| {}) else {
                return false;
            };
            let Val::Matrix(d) = d.remove(0) else {
                return false;
            };
            // the fused node alone, its driver a symbol bound to zeros
            fn copy(nodes: &[Ir], i: Id, driver: Id, out: &mut RecExpr<Ir>) -> Id {
                if i == driver {
                    return out.add(Ir::Symbol("sp_probe_zero".into()));
                }
                let n = nodes[usize::from(i)]
                    .clone()
                    .map_children(|c| copy(nodes, c, driver, out));
                out.add(n)
            }
            let mut probe = RecExpr::default();
            let root = copy(nodes, Id::from(i), driver, &mut probe);
            let mut count = 0;
            let Ok(lines) = print_roots(
                &probe,
                &[root],
                &["sp_probe".to_string()],
                Fused::Expanded,
                &Plain,
                &mut || {
                    count += 1;
                    format!("sp_probe_tmp{count}")
                },
            ) else {
                return false;
            };
            let mut text = format!(
                "{src}sp_probe_zero = matrix(0, rows={}, cols={})\n",
                d.rows(),
                d.cols()
            );
            let v = run_printed(&mut text, &lines, "sp_probe");
            cells(&v).iter().any(|x| *x != 0.0)
        })
    }

    /// Differential: each plan of the optimizer on generated programs, printed as DML
    /// (fused operators expanded), parsed, checked and run as written by the interpreter,
    /// gives the plan's own value (fused kernels, 1e-9 relative to the largest magnitude;
    /// NaN and infinities exactly), except where the plan reaches the README's fused-operator
    /// exception ([`pattern_exception`]); at most one plan in ten may.
    #[test]
    fn printed_plans_evaluate_to_the_plans_value() {
        let mut opt = Optimizer::new().unwrap();
        let (mut checked, mut fused, mut excused) = (0, 0, 0);
        for index in 0..60 {
            let p = crate::fuzz::program(7, index);
            if p.iters > 1 {
                continue;
            }
            let src = p.render();
            let (mut sink, prog) = run(&src);
            let mut exec = Executor::new(&mut sink, false);
            exec.run(&prog).expect("generated programs run");
            for (k, e) in plannable(&prog).iter().enumerate() {
                let mut term = RecExpr::default();
                let root = crate::lower::lower_expr(e, &mut term).unwrap();
                let mut vals = HashMap::new();
                let mut inputs = Vec::new();
                for n in term.as_ref() {
                    let Ir::Symbol(s) = n else { continue };
                    if vals.contains_key(s) {
                        continue;
                    }
                    let (input, val) = match exec.eval(&var(s.as_str())).unwrap() {
                        Value::Matrix(m) => (
                            Input::Matrix {
                                rows: m.rows(),
                                cols: m.cols(),
                                nnz: m.nnz(),
                                finite: m.all_finite(),
                            },
                            Val::Matrix(m),
                        ),
                        Value::Scalar(x) => {
                            (Input::Scalar(Some(x.as_f64())), Val::Scalar(x.as_f64()))
                        }
                        Value::Str(_) | Value::List(_) => {
                            unreachable!("plans have no strings or lists")
                        }
                    };
                    vals.insert(*s, val);
                    inputs.push((s.to_string(), input));
                }
                let (expr, roots) = match opt.plan(index as usize, k, &term, &[root], &inputs) {
                    Planned::Plan(p) => (p.expr.clone(), p.roots.clone()),
                    _ => (term.clone(), vec![root]),
                };
                let want = crate::raise::eval_roots(&expr, &roots, &vals, &mut |_, _| {})
                    .unwrap()
                    .remove(0);
                let mut count = 0;
                let lines = print_roots(
                    &expr,
                    &roots,
                    &["emitted".to_string()],
                    Fused::Expanded,
                    &Plain,
                    &mut || {
                        count += 1;
                        format!("emittmp{count}")
                    },
                )
                .unwrap();
                let mut text = src.clone();
                let got = run_printed(&mut text, &lines, "emitted");
                let (a, b) = (cells(&want), cells(&got));
                assert_eq!(a.len(), b.len(), "{text}");
                if a != b && pattern_exception(&src, &expr, &vals) {
                    // the README's fused-operator exception: documented, not compared
                    excused += 1;
                    continue;
                }
                let scale = a
                    .iter()
                    .chain(&b)
                    .filter(|x| x.is_finite())
                    .fold(0.0f64, |m, x| m.max(x.abs()));
                for (x, y) in a.iter().zip(&b) {
                    let same = (x.is_nan() && y.is_nan())
                        || x == y
                        || (x.is_finite() && y.is_finite() && (x - y).abs() <= 1e-9 * scale);
                    assert!(same, "{x} vs {y}\nplan {expr}\nprinted:\n{text}");
                }
                checked += 1;
                fused += usize::from(expr.as_ref().iter().any(crate::explain::dot::is_fused));
            }
        }
        println!("{checked} plans checked, {fused} with fused operators, {excused} excused");
        assert!(
            checked >= 30 && fused >= 5 && excused * 10 <= checked,
            "{checked} plans, {fused} fused, {excused} excused"
        );
    }

    /// Round trip: a lowered expression printed and parsed again lowers to the same term
    /// (precedence and parentheses are right).
    #[test]
    fn printed_terms_parse_back_to_the_same_term() {
        let mut n = 0;
        for index in 0..200 {
            let p = crate::fuzz::program(11, index);
            let prog = crate::driver::compile(&p.render(), &Default::default()).unwrap();
            let env = p.env();
            for e in plannable(&prog) {
                let mut term = RecExpr::default();
                crate::lower::lower_expr(&e, &mut term).unwrap();
                let text = to_dml(&term, Fused::Expanded).unwrap();
                let vars: Vec<(String, hir::Ty)> = env
                    .iter()
                    .map(|(v, t)| {
                        let ty = match t {
                            crate::fuzz::gen::Ty::Scalar => hir::Ty::Scalar(hir::ScalarTy::Double),
                            crate::fuzz::gen::Ty::Mat(r, c) => hir::Ty::Matrix(Some(*r), Some(*c)),
                        };
                        (v.clone(), ty)
                    })
                    .collect();
                let ast = crate::syntax::parse_expr(&text).unwrap();
                let back = crate::check::check_expr(&ast, &vars).unwrap();
                let mut again = RecExpr::default();
                crate::lower::lower_expr(&back, &mut again).unwrap();
                assert_eq!(again.to_string(), term.to_string(), "{text}");
                n += 1;
            }
        }
        assert!(n >= 100, "{n} terms");
    }
}
