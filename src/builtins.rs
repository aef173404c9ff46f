//! The builtin functions, one row each in [`TABLE`]: the name, the parameters with their
//! defaults, the type and shape rule the checker applies (folding constants where it can), the
//! evaluation on run-time values, and the optimizer operator it lowers to when the optimizer
//! reasons about it. Adding a builtin is adding a row.
//!
//! The checker binds a call's arguments (positional, then by name) to the row's parameters,
//! fills the defaults in as literals and applies the row's [`Rule`]; the checked expression is
//! `ExprKind::Builtin(row, args)` with every parameter present. The executor evaluates the
//! arguments and calls [`eval`], and the plan evaluator (`raise`) calls the same [`eval`] for
//! the operators that came from a row, so a builtin means the same thing as written and in a
//! plan. A few forms are not functions and stay in the checker: `ifdef` (it reads the script's
//! arguments), `min`/`max` with several arguments (an element-wise fold), and the statements
//! `print`, `write`, `stop`.

use crate::check::hir::{Expr, Scalar, ScalarTy, Ty};
use crate::check::shape;
use crate::error::SpannedError;
use crate::exec::Value;
use crate::syntax::ast::Span;
use spores_runtime::kernels::{self, Operand, RandSpec};
use spores_runtime::ops::{AggDir, AggOp, UnaryOp};
use spores_runtime::{io, matrix, Matrix};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

type Res<T> = Result<T, SpannedError>;

/// A parameter's default value, filled in as a literal when the call does not give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Default {
    /// the caller must give it
    Required,
    /// an integer
    Int(i64),
    /// a double
    Num(f64),
    /// a boolean
    Bool(bool),
    /// a string
    Str(&'static str),
}

/// A parameter of a builtin.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// its name, for `name=value`
    pub name: &'static str,
    /// its default
    pub default: Default,
}

const fn req(name: &'static str) -> Param {
    Param {
        name,
        default: Default::Required,
    }
}

const fn opt(name: &'static str, default: Default) -> Param {
    Param { name, default }
}

/// What the checker knows about one argument of a call.
#[derive(Clone, Debug)]
pub struct ArgInfo {
    /// its static type
    pub ty: Ty,
    /// its value, when a compile-time constant
    pub konst: Option<Scalar>,
    /// its value, when a string literal
    pub text: Option<String>,
    /// where it is written (the call, for a default)
    pub span: Span,
}

/// A call as the checker sees it: the row, the call's span and every argument.
pub struct Sig<'a> {
    /// the builtin's name
    pub name: &'static str,
    /// the whole call
    pub span: Span,
    /// one per parameter
    pub args: &'a [ArgInfo],
}

/// The type and shape rule of a row.
#[derive(Clone, Copy)]
pub enum Rule {
    /// element-wise function of a scalar or matrix (the type of a scalar result follows its
    /// folded value)
    Unary(UnaryOp),
    /// an aggregate of a matrix in a direction
    Agg(AggDir),
    /// anything else: the result type and compile-time value
    Fn(fn(&Sig) -> Res<(Ty, Option<Scalar>)>),
}

/// The evaluation of a row.
#[derive(Clone, Copy)]
pub enum Eval {
    /// element-wise function
    Unary(UnaryOp),
    /// aggregate
    Agg(AggOp, AggDir),
    /// anything else, on the values of every parameter
    Fn(fn(&mut Ctx, &[Value]) -> Res<Value>),
}

/// Run-time context of a builtin call.
pub struct Ctx<'a> {
    /// the call
    pub span: Span,
    /// the arguments (the call's span for defaults and in plans)
    pub spans: &'a [Span],
    /// calls to `rand` without a seed so far (each gets its own sequence)
    pub rand_calls: &'a mut u64,
    /// the program's start, for `time()`
    pub epoch: Instant,
}

impl Ctx<'_> {
    fn at(&self, i: usize) -> Span {
        self.spans.get(i).copied().unwrap_or(self.span)
    }
}

/// One builtin.
pub struct Builtin {
    /// the DML name
    pub name: &'static str,
    /// parameters in positional order
    pub params: &'static [Param],
    /// the type and shape rule
    pub rule: Rule,
    /// the evaluation
    pub eval: Eval,
    /// the optimizer's operator and how many leading arguments are its children, when the
    /// optimizer reasons about this call (given the checked arguments)
    pub lower: Option<fn(&[Expr]) -> Option<(&'static str, usize)>>,
    /// whether a statement using it is worth planning (a matrix operation)
    pub plan_op: bool,
}

impl std::fmt::Debug for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Builtin {
    /// The signature as shown in messages: `rand(rows, cols, min, ...)`.
    pub fn signature(&self) -> String {
        let names: Vec<&str> = self.params.iter().map(|p| p.name).collect();
        format!("{}({})", self.name, names.join(", "))
    }

    /// The number of parameters without a default.
    pub fn required(&self) -> usize {
        self.params
            .iter()
            .filter(|p| p.default == Default::Required)
            .count()
    }
}

const X: &[Param] = &[req("x")];

const fn row(name: &'static str, params: &'static [Param], rule: Rule, eval: Eval) -> Builtin {
    Builtin {
        name,
        params,
        rule,
        eval,
        lower: None,
        plan_op: false,
    }
}

const fn unary_row(name: &'static str, op: UnaryOp) -> Builtin {
    row(name, X, Rule::Unary(op), Eval::Unary(op))
}

const fn agg(name: &'static str, op: AggOp, dir: AggDir) -> Builtin {
    Builtin {
        plan_op: true,
        ..row(name, X, Rule::Agg(dir), Eval::Agg(op, dir))
    }
}

macro_rules! op {
    ($ir:literal, $n:literal) => {
        Some(|_: &[Expr]| Some(($ir, $n)))
    };
}

/// Every builtin.
pub static TABLE: &[Builtin] = &[
    Builtin {
        lower: op!("t", 1),
        plan_op: true,
        ..row("t", X, Rule::Fn(rule_t), Eval::Fn(eval_t))
    },
    Builtin {
        lower: op!("msum", 1),
        ..agg("sum", AggOp::Sum, AggDir::All)
    },
    agg("mean", AggOp::Mean, AggDir::All),
    Builtin {
        lower: op!("rowSums", 1),
        ..agg("rowSums", AggOp::Sum, AggDir::Row)
    },
    Builtin {
        lower: op!("colSums", 1),
        ..agg("colSums", AggOp::Sum, AggDir::Col)
    },
    agg("rowMeans", AggOp::Mean, AggDir::Row),
    agg("colMeans", AggOp::Mean, AggDir::Col),
    agg("rowMins", AggOp::Min, AggDir::Row),
    agg("rowMaxs", AggOp::Max, AggDir::Row),
    agg("colMins", AggOp::Min, AggDir::Col),
    agg("colMaxs", AggOp::Max, AggDir::Col),
    agg("min", AggOp::Min, AggDir::All),
    agg("max", AggOp::Max, AggDir::All),
    row("nrow", X, Rule::Fn(rule_dim), Eval::Fn(eval_nrow)),
    row("ncol", X, Rule::Fn(rule_dim), Eval::Fn(eval_ncol)),
    row("length", X, Rule::Fn(rule_dim), Eval::Fn(eval_length)),
    Builtin {
        lower: op!("exp", 1),
        ..unary_row("exp", UnaryOp::Exp)
    },
    Builtin {
        lower: op!("sqrt", 1),
        ..unary_row("sqrt", UnaryOp::Sqrt)
    },
    Builtin {
        lower: op!("abs", 1),
        ..unary_row("abs", UnaryOp::Abs)
    },
    Builtin {
        lower: op!("sigmoid", 1),
        ..unary_row("sigmoid", UnaryOp::Sigmoid)
    },
    unary_row("round", UnaryOp::Round),
    unary_row("floor", UnaryOp::Floor),
    unary_row("ceil", UnaryOp::Ceil),
    unary_row("sign", UnaryOp::Sign),
    Builtin {
        lower: Some(|a: &[Expr]| is_default_base(&a[1]).then_some(("log", 1))),
        ..row(
            "log",
            &[req("x"), opt("base", Default::Num(f64::NAN))],
            Rule::Fn(rule_log),
            Eval::Fn(eval_log),
        )
    },
    row(
        "ifelse",
        &[req("test"), req("yes"), req("no")],
        Rule::Fn(rule_ifelse),
        Eval::Fn(eval_ifelse),
    ),
    Builtin {
        lower: op!("as.scalar", 1),
        ..row(
            "as.scalar",
            X,
            Rule::Fn(rule_as_scalar),
            Eval::Fn(eval_as_scalar),
        )
    },
    row(
        "as.matrix",
        X,
        Rule::Fn(rule_as_matrix),
        Eval::Fn(eval_as_matrix),
    ),
    row(
        "as.double",
        X,
        Rule::Fn(rule_as_number),
        Eval::Fn(eval_as_double),
    ),
    row(
        "as.integer",
        X,
        Rule::Fn(rule_as_number),
        Eval::Fn(eval_as_integer),
    ),
    row(
        "toString",
        X,
        Rule::Fn(rule_to_string),
        Eval::Fn(eval_to_string),
    ),
    Builtin {
        lower: Some(|a: &[Expr]| {
            (matches!(a[0].ty, Ty::Scalar(_)) && is_true(&a[3])).then_some(("fill", 3))
        }),
        ..row(
            "matrix",
            &[
                req("data"),
                req("rows"),
                req("cols"),
                opt("byrow", Default::Bool(true)),
            ],
            Rule::Fn(rule_matrix),
            Eval::Fn(eval_matrix),
        )
    },
    row(
        "rand",
        &[
            req("rows"),
            req("cols"),
            opt("min", Default::Num(0.0)),
            opt("max", Default::Num(1.0)),
            opt("sparsity", Default::Num(1.0)),
            opt("seed", Default::Int(-1)),
            opt("pdf", Default::Str("uniform")),
        ],
        Rule::Fn(rule_rand),
        Eval::Fn(eval_rand),
    ),
    row(
        "read",
        &[
            req("file"),
            opt("format", Default::Str("")),
            opt("rows", Default::Int(-1)),
            opt("cols", Default::Int(-1)),
            opt("nnz", Default::Int(-1)),
        ],
        Rule::Fn(rule_read),
        Eval::Fn(eval_read),
    ),
    row("time", &[], Rule::Fn(rule_time), Eval::Fn(eval_time)),
];

/// The row of a builtin name.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    TABLE.iter().find(|b| b.name == name)
}

/// The row whose optimizer operator is `op` (for evaluating plans).
pub fn by_operator(op: &str, arity: usize) -> Option<&'static Builtin> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static MAP: OnceLock<HashMap<&'static str, &'static Builtin>> = OnceLock::new();
    let map = MAP.get_or_init(|| {
        let mut m = HashMap::new();
        for b in TABLE {
            if let Some(f) = b.lower {
                if let Some((op, _)) = f(&probe(b)) {
                    m.entry(op).or_insert(b);
                }
            }
        }
        m
    });
    map.get(op).copied().filter(|b| arity <= b.params.len())
}

/// Arguments that make every row's lowering apply: scalars for the data of `matrix`, its
/// defaults for the rest (only used to build the operator map).
fn probe(b: &Builtin) -> Vec<Expr> {
    b.params
        .iter()
        .map(|p| {
            let s = match p.default {
                Default::Required | Default::Num(_) => Scalar::Double(f64::NAN),
                Default::Int(i) => Scalar::Int(i),
                Default::Bool(v) => Scalar::Bool(v),
                Default::Str(_) => Scalar::Int(0),
            };
            Expr {
                kind: crate::check::hir::ExprKind::Lit(s),
                ty: Ty::Scalar(s.ty()),
                span: Span::default(),
            }
        })
        .collect()
}

fn is_true(e: &Expr) -> bool {
    matches!(&e.kind, crate::check::hir::ExprKind::Lit(s) if s.as_f64() != 0.0)
}

fn is_default_base(e: &Expr) -> bool {
    matches!(&e.kind, crate::check::hir::ExprKind::Lit(s) if s.as_f64().is_nan())
}

/// The literal of a parameter's default, at `span`.
pub fn default_expr(d: Default, span: Span) -> Option<Expr> {
    use crate::check::hir::ExprKind;
    let (kind, ty) = match d {
        Default::Required => return None,
        Default::Int(i) => (ExprKind::Lit(Scalar::Int(i)), Ty::Scalar(ScalarTy::Int)),
        Default::Num(v) => (
            ExprKind::Lit(Scalar::Double(v)),
            Ty::Scalar(ScalarTy::Double),
        ),
        Default::Bool(b) => (ExprKind::Lit(Scalar::Bool(b)), Ty::Scalar(ScalarTy::Bool)),
        Default::Str(s) => (ExprKind::Str(s.to_string()), Ty::Str),
    };
    Some(Expr { kind, ty, span })
}

// ---- checking ---------------------------------------------------------------------------

/// Applies a row's rule.
pub fn check(b: &'static Builtin, sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    match b.rule {
        Rule::Unary(op) => {
            let a = &sig.args[0];
            let ty = match a.ty {
                Ty::Str => return Err(type_err(sig.span, sig.name, a)),
                Ty::Matrix(..) => a.ty,
                Ty::Scalar(_) => Ty::Scalar(
                    a.konst
                        .map_or(ScalarTy::Double, |k| unary_scalar(op, k).ty()),
                ),
            };
            let k = a.konst.map(|k| unary_scalar(op, k));
            Ok((ty, k))
        }
        Rule::Agg(dir) => {
            let (r, c) = want_matrix(sig, 0)?;
            Ok((
                match dir {
                    AggDir::All => Ty::Scalar(ScalarTy::Double),
                    AggDir::Row => Ty::Matrix(r, Some(1)),
                    AggDir::Col => Ty::Matrix(Some(1), c),
                },
                None,
            ))
        }
        Rule::Fn(f) => f(sig),
    }
}

fn unary_scalar(op: UnaryOp, k: Scalar) -> Scalar {
    crate::check::scalar::unary(op, k)
}

fn type_err(span: Span, what: &str, x: &ArgInfo) -> SpannedError {
    SpannedError::new(span, format!("{what} cannot be applied to {}", x.ty))
        .with_label(format!("this is {}", x.ty))
}

fn want_matrix(sig: &Sig, i: usize) -> Res<(Option<usize>, Option<usize>)> {
    let x = &sig.args[i];
    match x.ty {
        Ty::Matrix(r, c) => Ok((r, c)),
        _ => Err(
            SpannedError::new(x.span, format!("{} needs a matrix argument", sig.name))
                .with_label(format!("this is {}", x.ty)),
        ),
    }
}

fn want_scalar(sig: &Sig, i: usize, what: &str) -> Res<()> {
    let x = &sig.args[i];
    match x.ty {
        Ty::Scalar(_) => Ok(()),
        _ => Err(
            SpannedError::new(x.span, format!("{what} of {} must be a number", sig.name))
                .with_label(format!("this is {}", x.ty)),
        ),
    }
}

/// A size argument (`rows=`, `cols=`): a non-negative integer; its value if known.
fn size_arg(sig: &Sig, i: usize, what: &str) -> Res<Option<usize>> {
    want_scalar(sig, i, what)?;
    let x = &sig.args[i];
    match x.konst.map(Scalar::as_f64) {
        Some(v) if v < 0.0 || v.fract() != 0.0 || !v.is_finite() => Err(SpannedError::new(
            x.span,
            format!(
                "{what} of {} must be a non-negative integer, found {v}",
                sig.name
            ),
        )),
        Some(v) => Ok(Some(v as usize)),
        None => Ok(None),
    }
}

fn rule_t(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    Ok((Ty::Matrix(c, r), None))
}

fn rule_dim(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    let k = match sig.name {
        "nrow" => r,
        "ncol" => c,
        _ => r.zip(c).map(|(r, c)| r * c),
    };
    Ok((Ty::Scalar(ScalarTy::Int), k.map(|k| Scalar::Int(k as i64))))
}

fn rule_log(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (x, b) = (&sig.args[0], &sig.args[1]);
    if x.ty == Ty::Str {
        return Err(type_err(sig.span, "log", x));
    }
    want_scalar(sig, 1, "the base")?;
    let ty = match x.ty {
        Ty::Matrix(..) => x.ty,
        _ => Ty::Scalar(ScalarTy::Double),
    };
    let k = match (x.konst, b.konst) {
        (Some(x), Some(b)) => Some(Scalar::Double(log_base(x.as_f64(), b.as_f64()))),
        _ => None,
    };
    Ok((ty, k))
}

fn log_base(x: f64, b: f64) -> f64 {
    if b.is_nan() {
        x.ln()
    } else {
        x.ln() / b.ln()
    }
}

fn rule_ifelse(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (c, y, n) = (&sig.args[0], &sig.args[1], &sig.args[2]);
    if c.ty == Ty::Str {
        return Err(type_err(c.span, "ifelse", c));
    }
    match (c.ty, y.ty, n.ty) {
        (Ty::Scalar(_), Ty::Str, Ty::Str) => Ok((Ty::Str, None)),
        (Ty::Scalar(_), Ty::Scalar(_), Ty::Scalar(_)) => {
            let k = c
                .konst
                .and_then(|c| if c.as_f64() != 0.0 { y.konst } else { n.konst });
            let ty = crate::check::join_ty(y.ty, n.ty).unwrap_or(Ty::Scalar(ScalarTy::Double));
            Ok((ty, k))
        }
        _ => {
            for x in [c, y, n] {
                if x.ty == Ty::Str {
                    return Err(type_err(x.span, "ifelse", x));
                }
            }
            let s = |t: Ty| match t {
                Ty::Matrix(r, c) => (r, c),
                _ => (Some(1), Some(1)),
            };
            let yn = shape::elementwise("ifelse", s(y.ty), s(n.ty))
                .map_err(|m| SpannedError::new(sig.span, m))?;
            let (r, cc) = shape::elementwise("ifelse", s(c.ty), yn)
                .map_err(|m| SpannedError::new(sig.span, m))?;
            Ok((Ty::Matrix(r, cc), None))
        }
    }
}

fn rule_as_scalar(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let x = &sig.args[0];
    match x.ty {
        Ty::Matrix(r, c) => {
            shape::as_scalar((r, c))
                .map_err(|m| SpannedError::new(sig.span, m).with_label("this is not 1x1"))?;
            Ok((Ty::Scalar(ScalarTy::Double), None))
        }
        Ty::Scalar(_) => Ok((x.ty, x.konst)),
        Ty::Str => Err(type_err(sig.span, sig.name, x)),
    }
}

fn rule_as_matrix(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let x = &sig.args[0];
    match x.ty {
        Ty::Matrix(..) => Ok((x.ty, None)),
        Ty::Scalar(_) => Ok((Ty::Matrix(Some(1), Some(1)), None)),
        Ty::Str => Err(type_err(sig.span, sig.name, x)),
    }
}

fn rule_as_number(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let x = &sig.args[0];
    match x.ty {
        Ty::Matrix(r, c) => {
            shape::as_scalar((r, c)).map_err(|m| SpannedError::new(sig.span, m))?;
        }
        Ty::Str => return Err(type_err(sig.span, sig.name, x)),
        Ty::Scalar(_) => {}
    }
    Ok(if sig.name == "as.double" {
        (
            Ty::Scalar(ScalarTy::Double),
            x.konst.map(|k| Scalar::Double(k.as_f64())),
        )
    } else {
        (
            Ty::Scalar(ScalarTy::Int),
            x.konst.map(|k| Scalar::Int(k.as_f64() as i64)),
        )
    })
}

fn rule_to_string(_: &Sig) -> Res<(Ty, Option<Scalar>)> {
    Ok((Ty::Str, None))
}

fn rule_matrix(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let v = &sig.args[0];
    let nr = size_arg(sig, 1, "rows")?;
    let nc = size_arg(sig, 2, "cols")?;
    match v.ty {
        Ty::Scalar(_) => {}
        Ty::Matrix(r, c) => {
            shape::reshape((r, c), nr, nc).map_err(|m| SpannedError::new(sig.span, m))?;
        }
        Ty::Str => {
            return Err(SpannedError::new(
                v.span,
                "matrix from a string of values is not supported",
            )
            .with_note("give a scalar to fill with, or a matrix to reshape"))
        }
    }
    Ok((Ty::Matrix(nr, nc), None))
}

fn rule_rand(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let nr = size_arg(sig, 0, "rows")?;
    let nc = size_arg(sig, 1, "cols")?;
    want_scalar(sig, 2, "min")?;
    want_scalar(sig, 3, "max")?;
    want_scalar(sig, 4, "sparsity")?;
    want_scalar(sig, 5, "seed")?;
    let pdf = &sig.args[6];
    if pdf.text.as_deref() != Some("uniform") {
        return Err(SpannedError::new(pdf.span, "unsupported pdf for rand")
            .with_note("only pdf=\"uniform\" is supported"));
    }
    let sparsity = &sig.args[4];
    if let Some(s) = sparsity.konst.map(Scalar::as_f64) {
        if !(0.0..=1.0).contains(&s) {
            return Err(SpannedError::new(
                sparsity.span,
                format!("sparsity of rand must be between 0 and 1, found {s}"),
            ));
        }
    }
    let (min, max) = (&sig.args[2], &sig.args[3]);
    if let (Some(lo), Some(hi)) = (min.konst.map(Scalar::as_f64), max.konst.map(Scalar::as_f64)) {
        if lo > hi {
            return Err(SpannedError::new(
                sig.span,
                format!("min of rand ({lo}) is larger than max ({hi})"),
            ));
        }
    }
    Ok((Ty::Matrix(nr, nc), None))
}

fn rule_read(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let p = &sig.args[0];
    if p.ty != Ty::Str {
        return Err(
            SpannedError::new(p.span, "the file name of read must be a string")
                .with_label(format!("this is {}", p.ty)),
        );
    }
    Ok((Ty::Matrix(None, None), None))
}

fn rule_time(_: &Sig) -> Res<(Ty, Option<Scalar>)> {
    Ok((Ty::Scalar(ScalarTy::Int), None))
}

// ---- evaluation -------------------------------------------------------------------------

/// Evaluates a row on the values of all its parameters.
pub fn eval(b: &'static Builtin, ctx: &mut Ctx, args: &[Value]) -> Res<Value> {
    match b.eval {
        Eval::Unary(op) => match &args[0] {
            Value::Scalar(s) => Ok(Value::Scalar(unary_scalar(op, *s))),
            Value::Matrix(m) => Ok(Value::matrix(kernels::unary(op, m))),
            Value::Str(_) => Err(SpannedError::new(
                ctx.at(0),
                format!("{} cannot be applied to a string", b.name),
            )),
        },
        Eval::Agg(op, dir) => {
            let m = matrix_arg(ctx, args, 0)?;
            Ok(match dir {
                AggDir::All => Value::double(kernels::aggregate_all(op, &m)),
                _ => Value::matrix(kernels::aggregate_dir(op, dir, &m)),
            })
        }
        Eval::Fn(f) => f(ctx, args),
    }
}

fn matrix_arg(ctx: &Ctx, args: &[Value], i: usize) -> Res<Arc<Matrix>> {
    match &args[i] {
        Value::Matrix(m) => Ok(m.clone()),
        _ => Err(SpannedError::new(ctx.at(i), "expected a matrix")),
    }
}

fn scalar_arg(ctx: &Ctx, args: &[Value], i: usize) -> Res<Scalar> {
    match &args[i] {
        Value::Scalar(s) => Ok(*s),
        Value::Matrix(m) => Err(SpannedError::new(
            ctx.at(i),
            format!(
                "expected a scalar, found a {}x{} matrix",
                m.rows(),
                m.cols()
            ),
        )),
        Value::Str(_) => Err(SpannedError::new(
            ctx.at(i),
            "expected a number, found a string",
        )),
    }
}

fn size_value(ctx: &Ctx, args: &[Value], i: usize, what: &str) -> Res<usize> {
    let v = scalar_arg(ctx, args, i)?.as_f64();
    if v < 0.0 || v.fract() != 0.0 || !v.is_finite() {
        return Err(SpannedError::new(
            ctx.at(i),
            format!("{what} must be a non-negative integer, found {v}"),
        ));
    }
    Ok(v as usize)
}

fn dims(m: &Matrix) -> shape::Shape {
    (Some(m.rows()), Some(m.cols()))
}

fn eval_t(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::matrix(kernels::transpose(&*matrix_arg(ctx, a, 0)?)))
}

fn eval_nrow(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Int(
        matrix_arg(ctx, a, 0)?.rows() as i64
    )))
}

fn eval_ncol(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Int(
        matrix_arg(ctx, a, 0)?.cols() as i64
    )))
}

fn eval_length(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Int(
        matrix_arg(ctx, a, 0)?.cells() as i64
    )))
}

fn eval_log(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let b = scalar_arg(ctx, a, 1)?.as_f64();
    match &a[0] {
        Value::Scalar(s) => Ok(Value::double(log_base(s.as_f64(), b))),
        Value::Matrix(m) => {
            let l = kernels::unary(UnaryOp::Log, m);
            if b.is_nan() {
                Ok(Value::matrix(l))
            } else {
                Ok(Value::matrix(kernels::binary(
                    spores_runtime::ops::BinOp::Div,
                    Operand::Matrix(&l),
                    Operand::Scalar(b.ln()),
                )))
            }
        }
        Value::Str(_) => Err(SpannedError::new(
            ctx.at(0),
            "log cannot be applied to a string",
        )),
    }
}

fn operand(v: &Value) -> Operand<'_> {
    match v {
        Value::Scalar(s) => Operand::Scalar(s.as_f64()),
        Value::Matrix(m) => Operand::Matrix(m),
        Value::Str(_) => unreachable!("the rule rejects strings here"),
    }
}

fn op_dims(o: &Operand<'_>) -> shape::Shape {
    match o {
        Operand::Scalar(_) => (Some(1), Some(1)),
        Operand::Matrix(m) => dims(m),
    }
}

fn eval_ifelse(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    match (&a[0], &a[1], &a[2]) {
        (Value::Scalar(c), y, n)
            if !matches!(y, Value::Matrix(_)) && !matches!(n, Value::Matrix(_)) =>
        {
            Ok(if c.as_f64() != 0.0 {
                y.clone()
            } else {
                n.clone()
            })
        }
        _ => {
            let (oc, oa, ob) = (operand(&a[0]), operand(&a[1]), operand(&a[2]));
            let ab = shape::elementwise("ifelse", op_dims(&oa), op_dims(&ob))
                .map_err(|m| SpannedError::new(ctx.span, m))?;
            shape::elementwise("ifelse", op_dims(&oc), ab)
                .map_err(|m| SpannedError::new(ctx.span, m))?;
            Ok(Value::matrix(kernels::ifelse(oc, oa, ob)))
        }
    }
}

fn eval_as_scalar(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    match &a[0] {
        Value::Matrix(m) => {
            shape::as_scalar(dims(m)).map_err(|msg| SpannedError::new(ctx.span, msg))?;
            Ok(Value::double(m.get(0, 0)))
        }
        v => Ok(v.clone()),
    }
}

fn eval_as_matrix(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    match &a[0] {
        Value::Matrix(_) => Ok(a[0].clone()),
        _ => {
            let s = scalar_arg(ctx, a, 0)?;
            Ok(Value::matrix(Matrix::filled(1, 1, s.as_f64())))
        }
    }
}

fn number(ctx: &Ctx, a: &[Value]) -> Res<f64> {
    match &a[0] {
        Value::Matrix(m) => {
            shape::as_scalar(dims(m)).map_err(|msg| SpannedError::new(ctx.span, msg))?;
            Ok(m.get(0, 0))
        }
        _ => Ok(scalar_arg(ctx, a, 0)?.as_f64()),
    }
}

fn eval_as_double(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::double(number(ctx, a)?))
}

fn eval_as_integer(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Int(number(ctx, a)? as i64)))
}

fn eval_to_string(_: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Str(match &a[0] {
        Value::Matrix(m) => spores_runtime::format::matrix_to_string(m),
        v => v.to_string(),
    }))
}

fn eval_matrix(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let r = size_value(ctx, a, 1, "rows of matrix")?;
    let c = size_value(ctx, a, 2, "cols of matrix")?;
    let byrow = scalar_arg(ctx, a, 3)?.as_f64() != 0.0;
    match &a[0] {
        Value::Matrix(m) => {
            shape::reshape(dims(m), Some(r), Some(c))
                .map_err(|msg| SpannedError::new(ctx.span, msg))?;
            // the cells in row order; byrow=FALSE fills the result column by column
            let cells: Vec<f64> = m.to_dense().iter().copied().collect();
            let arr = if byrow {
                matrix::Dense::from_shape_vec((r, c), cells)
            } else {
                matrix::Dense::from_shape_vec((c, r), cells).map(|x| x.reversed_axes())
            }
            .expect("reshape keeps the cell count");
            Ok(Value::matrix(Matrix::from_dense(
                arr.as_standard_layout().to_owned(),
            )))
        }
        _ => {
            let v = scalar_arg(ctx, a, 0)?.as_f64();
            // a matrix of zeros is stored sparse; anything else needs every cell
            check_alloc(ctx.span, r, c, if v == 0.0 { 0.0 } else { 1.0 })?;
            Ok(Value::matrix(kernels::constant(r, c, v)))
        }
    }
}

fn eval_rand(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let rows = size_value(ctx, a, 0, "rows of rand")?;
    let cols = size_value(ctx, a, 1, "cols of rand")?;
    let min = scalar_arg(ctx, a, 2)?.as_f64();
    let max = scalar_arg(ctx, a, 3)?.as_f64();
    let sparsity = scalar_arg(ctx, a, 4)?.as_f64();
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(SpannedError::new(
            ctx.at(4),
            format!("sparsity of rand must be between 0 and 1, found {sparsity}"),
        ));
    }
    if min > max || !min.is_finite() || !max.is_finite() {
        return Err(SpannedError::new(
            ctx.span,
            format!("rand needs finite min <= max, found min {min} and max {max}"),
        ));
    }
    *ctx.rand_calls += 1;
    let seed = scalar_arg(ctx, a, 5)?.as_f64();
    // DML's seed -1 means "choose one": a fixed, per-call-site sequence, so runs are
    // reproducible
    let seed = if seed == -1.0 {
        splitmix(((ctx.span.start as u64) << 32) ^ *ctx.rand_calls)
    } else {
        seed as i64 as u64
    };
    check_alloc(ctx.span, rows, cols, sparsity)?;
    Ok(Value::matrix(kernels::rand_matrix(&RandSpec {
        rows,
        cols,
        min,
        max,
        sparsity,
        seed,
    })))
}

fn eval_read(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let path = a[0].to_string();
    let m = io::read_matrix_market(Path::new(&path))
        .map_err(|e| SpannedError::new(ctx.span, format!("cannot read matrix: {e}")))?;
    Ok(Value::matrix(m))
}

fn eval_time(ctx: &mut Ctx, _: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Int(
        ctx.epoch.elapsed().as_nanos() as i64
    )))
}

/// The most memory a generated matrix may take (64 GiB): beyond that, a diagnostic instead
/// of an allocation failure that would abort the process.
const MAX_MATRIX_BYTES: f64 = (1u64 << 36) as f64;

/// Rejects a generated matrix whose cells overflow or whose storage would not fit.
pub fn check_alloc(span: Span, rows: usize, cols: usize, density: f64) -> Res<()> {
    let cells = rows as f64 * cols as f64;
    // dense storage takes 8 bytes a cell; CSR about 16 bytes a non-zero plus the row pointers
    let bytes = if density >= matrix::SPARSE_THRESHOLD || cols <= 1 {
        8.0 * cells
    } else {
        16.0 * density * cells + 8.0 * rows as f64
    };
    if rows.checked_mul(cols).is_none() || bytes > MAX_MATRIX_BYTES {
        return Err(SpannedError::new(
            span,
            format!(
                "a {rows}x{cols} matrix is too large (about {:.1e} bytes)",
                bytes
            ),
        )
        .with_note("the runtime keeps matrices in memory; the limit is 64 GiB"));
    }
    Ok(())
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

// ---- operators --------------------------------------------------------------------------

/// `op x` on a scalar or every cell of a matrix.
pub fn unary(op: UnaryOp, x: &Value) -> Value {
    match x {
        Value::Scalar(s) => Value::Scalar(unary_scalar(op, *s)),
        Value::Matrix(m) => Value::matrix(kernels::unary(op, m)),
        Value::Str(_) => unreachable!("the checker rejects strings in arithmetic"),
    }
}

/// `a op b` on scalars, or element-wise with broadcasting (shapes checked by the caller).
pub fn binary(op: spores_runtime::ops::BinOp, a: &Value, b: &Value) -> Value {
    if let (Value::Scalar(x), Value::Scalar(y)) = (a, b) {
        return Value::Scalar(crate::check::scalar::binary(op, *x, *y));
    }
    Value::matrix(kernels::binary(op, operand(a), operand(b)))
}

/// The value of a parameter's default (for operators of a plan, which carry only the
/// leading arguments).
pub fn default_value(d: Default) -> Option<Value> {
    Some(match d {
        Default::Required => return None,
        Default::Int(i) => Value::Scalar(Scalar::Int(i)),
        Default::Num(v) => Value::double(v),
        Default::Bool(b) => Value::Scalar(Scalar::Bool(b)),
        Default::Str(s) => Value::Str(s.to_string()),
    })
}
