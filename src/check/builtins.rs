//! The builtin functions: argument binding (positional and named), types and shapes.

use super::hir::{Expr, ExprKind, RandArgs, ReadArgs, Scalar, ScalarTy, Ty};
use super::{shape, Checked, Checker, Env, Res};
use crate::error::SpannedError;
use crate::syntax::ast::{self, Span};
use spores_runtime::ops::{AggDir, AggOp, BinOp, UnaryOp};

/// Every function name the checker knows (for "did you mean" hints).
const BUILTINS: &[&str] = &[
    "t",
    "sum",
    "mean",
    "rowSums",
    "colSums",
    "rowMeans",
    "colMeans",
    "rowMins",
    "rowMaxs",
    "colMins",
    "colMaxs",
    "min",
    "max",
    "nrow",
    "ncol",
    "length",
    "exp",
    "log",
    "sqrt",
    "abs",
    "sigmoid",
    "round",
    "floor",
    "ceil",
    "sign",
    "ifelse",
    "as.scalar",
    "as.matrix",
    "as.double",
    "as.integer",
    "toString",
    "matrix",
    "rand",
    "read",
    "time",
    "ifdef",
    "print",
    "write",
    "stop",
];

/// The named arguments of `read` after the file name, as SystemDS has them.
const READ_PARAMS: &[&str] = &[
    "file",
    "format",
    "rows",
    "cols",
    "nnz",
    "header",
    "sep",
    "fill",
    "default",
    "naStrings",
    "data_type",
    "value_type",
];

/// The type of a `read`: a matrix unless `data_type="scalar"` is written, or the file's
/// `.mtd` says so (SystemDS reads the metadata when it compiles, too); a scalar's value type
/// from `value_type`, else the `.mtd`, else double.
fn read_type(path: &Expr, opts: &[(String, Expr)]) -> Res<Ty> {
    let literal = |key: &str| {
        opts.iter()
            .find(|(k, _)| k == key)
            .map(|(_, e)| match &e.kind {
                ExprKind::Str(s) => Some((s.to_ascii_lowercase(), e.span)),
                _ => None,
            })
    };
    let mtd = const_str(path).and_then(|p| {
        spores_runtime::io::read_metadata(std::path::Path::new(&p))
            .ok()
            .flatten()
    });
    let data_type = match literal("data_type") {
        Some(Some((d, span))) => {
            if d != "matrix" && d != "scalar" {
                return Err(
                    SpannedError::new(span, format!("unknown data_type \"{d}\" for read"))
                        .with_note("expected \"matrix\" or \"scalar\""),
                );
            }
            d
        }
        Some(None) => {
            let e = &opts
                .iter()
                .find(|(k, _)| k == "data_type")
                .expect("found")
                .1;
            return Err(SpannedError::new(
                e.span,
                "the data_type of read must be a string literal",
            ));
        }
        None => mtd
            .as_ref()
            .and_then(|m| m.data_type.clone())
            .unwrap_or_else(|| "matrix".into()),
    };
    if data_type != "scalar" {
        return Ok(Ty::Matrix(None, None));
    }
    let (vt, span) = match literal("value_type") {
        Some(Some((v, span))) => (v, Some(span)),
        Some(None) => {
            let e = &opts
                .iter()
                .find(|(k, _)| k == "value_type")
                .expect("found")
                .1;
            return Err(SpannedError::new(
                e.span,
                "the value_type of read must be a string literal",
            ));
        }
        None => (
            mtd.and_then(|m| m.value_type)
                .unwrap_or_else(|| "double".into()),
            None,
        ),
    };
    Ok(match vt.as_str() {
        "double" | "fp64" => Ty::Scalar(ScalarTy::Double),
        "int" | "int64" => Ty::Scalar(ScalarTy::Int),
        "boolean" => Ty::Scalar(ScalarTy::Bool),
        "string" => Ty::Str,
        other => {
            return Err(SpannedError::new(
                span.unwrap_or(path.span),
                format!("unknown value_type \"{other}\" for read"),
            )
            .with_note("expected \"double\", \"int\", \"boolean\" or \"string\""))
        }
    })
}

/// The value of a string expression made of literals (script arguments are literals by now)
/// and `+`, as SystemDS folds file names when it compiles.
fn const_str(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Str(s) => Some(s.clone()),
        ExprKind::Lit(Scalar::Int(i)) => Some(i.to_string()),
        ExprKind::Lit(Scalar::Double(d)) => Some(spores_runtime::format::java_double(*d)),
        ExprKind::Lit(Scalar::Bool(b)) => Some(if *b { "TRUE" } else { "FALSE" }.into()),
        ExprKind::Concat(a, b) => Some(const_str(a)? + &const_str(b)?),
        _ => None,
    }
}

/// Binds a call's arguments to `params` by position and name; the first `required` params
/// must be given.
pub(crate) fn bind<'a>(
    call: &'a ast::Call,
    span: Span,
    params: &[&str],
    required: usize,
) -> Res<Vec<Option<&'a ast::Expr>>> {
    let f = &call.func.name;
    let sig = || format!("{f}({})", params.join(", "));
    let mut out: Vec<Option<&ast::Expr>> = vec![None; params.len()];
    let mut pos = 0;
    for a in &call.args {
        let slot = match &a.name {
            None => {
                if pos >= params.len() {
                    return Err(SpannedError::new(
                        a.value.span,
                        format!(
                            "too many arguments for {f}: it takes at most {}",
                            params.len()
                        ),
                    )
                    .with_note(format!("expected {}", sig())));
                }
                pos += 1;
                pos - 1
            }
            Some(n) => match params.iter().position(|p| *p == n.name) {
                Some(i) => i,
                None => {
                    let mut e =
                        SpannedError::new(n.span, format!("unknown argument `{}` for {f}", n.name))
                            .with_note(format!("expected {}", sig()));
                    if let Some(s) = closest(&n.name, params.iter().copied()) {
                        e = e.with_note(format!("did you mean `{s}`?"));
                    }
                    return Err(e);
                }
            },
        };
        if out[slot].is_some() {
            return Err(SpannedError::new(
                a.value.span,
                format!("argument `{}` of {f} given twice", params[slot]),
            ));
        }
        out[slot] = Some(&a.value);
    }
    if let Some(missing) = (0..required).find(|&i| out[i].is_none()) {
        return Err(SpannedError::new(
            span,
            format!("missing argument `{}` for {f}", params[missing]),
        )
        .with_note(format!("expected {}", sig())));
    }
    Ok(out)
}

/// The closest name by edit distance, if close enough to be a likely typo.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .map(|c| (levenshtein(name, c), c))
        .filter(|(d, c)| *d <= 2.max(name.len() / 3) && *d < c.len().max(name.len()))
        .min()
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

fn mk(kind: ExprKind, ty: Ty, span: Span) -> Checked {
    (Expr { kind, ty, span }, None)
}

fn want_matrix(f: &str, x: &Expr) -> Res<(Option<usize>, Option<usize>)> {
    match x.ty {
        Ty::Matrix(r, c) => Ok((r, c)),
        _ => Err(
            SpannedError::new(x.span, format!("{f} needs a matrix argument"))
                .with_label(format!("this is {}", x.ty)),
        ),
    }
}

fn want_scalar(f: &str, what: &str, x: &Expr) -> Res<()> {
    match x.ty {
        Ty::Scalar(_) => Ok(()),
        _ => Err(
            SpannedError::new(x.span, format!("{what} of {f} must be a number"))
                .with_label(format!("this is {}", x.ty)),
        ),
    }
}

/// A size argument (`rows=`, `cols=`): a non-negative integer; its value if known.
fn size_arg(f: &str, what: &str, (x, k): &Checked) -> Res<Option<usize>> {
    want_scalar(f, what, x)?;
    match k.map(Scalar::as_f64) {
        Some(v) if v < 0.0 || v.fract() != 0.0 || !v.is_finite() => Err(SpannedError::new(
            x.span,
            format!("{what} of {f} must be a non-negative integer, found {v}"),
        )),
        Some(v) => Ok(Some(v as usize)),
        None => Ok(None),
    }
}

impl Checker<'_> {
    pub(crate) fn call(&mut self, env: &Env, call: &ast::Call, span: Span) -> Res<Checked> {
        let f = call.func.name.as_str();
        let arg = |c: &mut Self, e: Option<&ast::Expr>| -> Res<Option<Checked>> {
            e.map(|e| c.expr(env, e)).transpose()
        };
        let one = |c: &mut Self| -> Res<Checked> {
            let a = bind(call, span, &["x"], 1)?;
            c.expr(env, a[0].expect("required"))
        };
        let agg = |c: &mut Self, op: AggOp, dir: AggDir| -> Res<Checked> {
            let (x, _) = one(c)?;
            let (r, cc) = want_matrix(f, &x)?;
            let ty = match dir {
                AggDir::All => Ty::Scalar(ScalarTy::Double),
                AggDir::Row => Ty::Matrix(r, Some(1)),
                AggDir::Col => Ty::Matrix(Some(1), cc),
            };
            Ok(mk(ExprKind::Agg(op, dir, Box::new(x)), ty, span))
        };
        match f {
            "t" => {
                let (x, _) = one(self)?;
                let (r, c) = want_matrix(f, &x)?;
                Ok(mk(ExprKind::Transpose(Box::new(x)), Ty::Matrix(c, r), span))
            }
            "sum" => agg(self, AggOp::Sum, AggDir::All),
            "mean" => agg(self, AggOp::Mean, AggDir::All),
            "rowSums" => agg(self, AggOp::Sum, AggDir::Row),
            "colSums" => agg(self, AggOp::Sum, AggDir::Col),
            "rowMeans" => agg(self, AggOp::Mean, AggDir::Row),
            "colMeans" => agg(self, AggOp::Mean, AggDir::Col),
            "rowMins" => agg(self, AggOp::Min, AggDir::Row),
            "rowMaxs" => agg(self, AggOp::Max, AggDir::Row),
            "colMins" => agg(self, AggOp::Min, AggDir::Col),
            "colMaxs" => agg(self, AggOp::Max, AggDir::Col),
            "min" | "max" => {
                let (aop, bop) = if f == "min" {
                    (AggOp::Min, BinOp::Min)
                } else {
                    (AggOp::Max, BinOp::Max)
                };
                if call.args.len() == 1 && call.args[0].name.is_none() {
                    let (x, k) = self.expr(env, &call.args[0].value)?;
                    if x.ty.is_matrix() {
                        return agg(self, aop, AggDir::All);
                    }
                    return Ok((x, k));
                }
                if call.args.is_empty() || call.args.iter().any(|a| a.name.is_some()) {
                    return Err(SpannedError::new(
                        span,
                        format!("{f} takes one matrix, or two or more positional values"),
                    ));
                }
                let mut acc = self.expr(env, &call.args[0].value)?;
                for a in &call.args[1..] {
                    let b = self.expr(env, &a.value)?;
                    acc = self.elementwise(span, bop, f, acc, b)?;
                }
                Ok(acc)
            }
            "nrow" | "ncol" | "length" => {
                let (x, _) = one(self)?;
                let (r, c) = want_matrix(f, &x)?;
                let k = match f {
                    "nrow" => r,
                    "ncol" => c,
                    _ => r.zip(c).map(|(r, c)| r * c),
                };
                let kind = match f {
                    "nrow" => ExprKind::Nrow(Box::new(x)),
                    "ncol" => ExprKind::Ncol(Box::new(x)),
                    _ => ExprKind::Length(Box::new(x)),
                };
                Ok((
                    Expr {
                        kind,
                        ty: Ty::Scalar(ScalarTy::Int),
                        span,
                    },
                    k.map(|k| Scalar::Int(k as i64)),
                ))
            }
            "exp" | "sqrt" | "abs" | "sigmoid" | "round" | "floor" | "ceil" | "sign" => {
                let op = match f {
                    "exp" => UnaryOp::Exp,
                    "sqrt" => UnaryOp::Sqrt,
                    "abs" => UnaryOp::Abs,
                    "sigmoid" => UnaryOp::Sigmoid,
                    "round" => UnaryOp::Round,
                    "floor" => UnaryOp::Floor,
                    "ceil" => UnaryOp::Ceil,
                    _ => UnaryOp::Sign,
                };
                let x = one(self)?;
                let (e, k) = self.unary(span, op, f, x)?;
                let ty = match e.ty {
                    Ty::Scalar(_) => Ty::Scalar(k.map_or(ScalarTy::Double, |k| k.ty())),
                    t => t,
                };
                Ok((Expr { ty, ..e }, k))
            }
            "log" => {
                let a = bind(call, span, &["x", "base"], 1)?;
                let x = self.expr(env, a[0].expect("required"))?;
                let lx = self.unary(span, UnaryOp::Log, f, x)?;
                match arg(self, a[1])? {
                    None => Ok(lx),
                    Some(b) => {
                        want_scalar(f, "the base", &b.0)?;
                        let bspan = b.0.span;
                        let lb = self.unary(bspan, UnaryOp::Log, f, b)?;
                        self.elementwise(span, BinOp::Div, "log", lx, lb)
                    }
                }
            }
            "ifelse" => {
                let a = bind(call, span, &["test", "yes", "no"], 3)?;
                let c = self.expr(env, a[0].expect("required"))?;
                let y = self.expr(env, a[1].expect("required"))?;
                let n = self.expr(env, a[2].expect("required"))?;
                let (ty, k) = match (c.0.ty, y.0.ty, n.0.ty) {
                    (Ty::Scalar(_), Ty::Scalar(_), Ty::Scalar(_)) => {
                        let k = c.1.and_then(|c| if c.as_f64() != 0.0 { y.1 } else { n.1 });
                        let ty =
                            super::join_ty(y.0.ty, n.0.ty).unwrap_or(Ty::Scalar(ScalarTy::Double));
                        (ty, k)
                    }
                    _ => {
                        for x in [&c.0, &y.0, &n.0] {
                            if x.ty == Ty::Str {
                                return Err(super::type_err(x.span, "ifelse", x));
                            }
                        }
                        let s = |t: Ty| match t {
                            Ty::Matrix(r, c) => (r, c),
                            _ => (Some(1), Some(1)),
                        };
                        let yn = shape::elementwise("ifelse", s(y.0.ty), s(n.0.ty))
                            .map_err(|m| SpannedError::new(span, m))?;
                        let (r, cc) = shape::elementwise("ifelse", s(c.0.ty), yn)
                            .map_err(|m| SpannedError::new(span, m))?;
                        (Ty::Matrix(r, cc), None)
                    }
                };
                Ok((
                    Expr {
                        kind: ExprKind::IfElse(Box::new(c.0), Box::new(y.0), Box::new(n.0)),
                        ty,
                        span,
                    },
                    k,
                ))
            }
            "as.scalar" => {
                let (x, k) = one(self)?;
                match x.ty {
                    Ty::Matrix(r, c) => {
                        shape::as_scalar((r, c)).map_err(|m| {
                            SpannedError::new(span, m).with_label("this is not 1x1")
                        })?;
                        Ok(mk(
                            ExprKind::AsScalar(Box::new(x)),
                            Ty::Scalar(ScalarTy::Double),
                            span,
                        ))
                    }
                    Ty::Scalar(_) => Ok((x, k)),
                    Ty::Str => Err(super::type_err(span, f, &x)),
                }
            }
            "as.matrix" => {
                let (x, _) = one(self)?;
                match x.ty {
                    Ty::Matrix(..) => Ok((x, None)),
                    Ty::Scalar(_) => Ok(mk(
                        ExprKind::AsMatrix(Box::new(x)),
                        Ty::Matrix(Some(1), Some(1)),
                        span,
                    )),
                    Ty::Str => Err(super::type_err(span, f, &x)),
                }
            }
            "as.double" | "as.integer" => {
                let (x, k) = one(self)?;
                let x = if x.ty.is_matrix() {
                    shape::as_scalar(want_matrix(f, &x)?)
                        .map_err(|m| SpannedError::new(span, m))?;
                    Expr {
                        kind: ExprKind::AsScalar(Box::new(x)),
                        ty: Ty::Scalar(ScalarTy::Double),
                        span,
                    }
                } else if x.ty == Ty::Str {
                    return Err(super::type_err(span, f, &x));
                } else {
                    x
                };
                if f == "as.double" {
                    let k = k.map(|k| Scalar::Double(k.as_f64()));
                    Ok((
                        Expr {
                            kind: ExprKind::AsDouble(Box::new(x)),
                            ty: Ty::Scalar(ScalarTy::Double),
                            span,
                        },
                        k,
                    ))
                } else {
                    let k = k.map(|k| Scalar::Int(k.as_f64() as i64));
                    Ok((
                        Expr {
                            kind: ExprKind::AsInteger(Box::new(x)),
                            ty: Ty::Scalar(ScalarTy::Int),
                            span,
                        },
                        k,
                    ))
                }
            }
            "toString" => {
                let (x, _) = one(self)?;
                Ok(mk(ExprKind::ToString(Box::new(x)), Ty::Str, span))
            }
            "matrix" => {
                let a = bind(call, span, &["data", "rows", "cols"], 3)?;
                let (v, _) = self.expr(env, a[0].expect("required"))?;
                let rows = self.expr(env, a[1].expect("required"))?;
                let cols = self.expr(env, a[2].expect("required"))?;
                let nr = size_arg(f, "rows", &rows)?;
                let nc = size_arg(f, "cols", &cols)?;
                let (rows, cols) = (Box::new(rows.0), Box::new(cols.0));
                let kind = match v.ty {
                    Ty::Scalar(_) => ExprKind::Fill {
                        value: Box::new(v),
                        rows,
                        cols,
                    },
                    Ty::Matrix(r, c) => {
                        shape::reshape((r, c), nr, nc).map_err(|m| SpannedError::new(span, m))?;
                        ExprKind::Reshape {
                            value: Box::new(v),
                            rows,
                            cols,
                        }
                    }
                    Ty::Str => {
                        return Err(SpannedError::new(
                            v.span,
                            "matrix from a string of values is not supported",
                        )
                        .with_note("give a scalar to fill with, or a matrix to reshape"))
                    }
                };
                Ok(mk(kind, Ty::Matrix(nr, nc), span))
            }
            "rand" => {
                let a = bind(
                    call,
                    span,
                    &["rows", "cols", "min", "max", "sparsity", "seed", "pdf"],
                    2,
                )?;
                let rows = self.expr(env, a[0].expect("required"))?;
                let cols = self.expr(env, a[1].expect("required"))?;
                let nr = size_arg(f, "rows", &rows)?;
                let nc = size_arg(f, "cols", &cols)?;
                let lit = |v: f64, sp: Span| Expr {
                    kind: ExprKind::Lit(Scalar::Double(v)),
                    ty: Ty::Scalar(ScalarTy::Double),
                    span: sp,
                };
                let num =
                    |c: &mut Self, e: Option<&ast::Expr>, what: &str, def: f64| -> Res<Checked> {
                        match e {
                            None => Ok((lit(def, span), Some(Scalar::Double(def)))),
                            Some(e) => {
                                let x = c.expr(env, e)?;
                                want_scalar(f, what, &x.0)?;
                                Ok(x)
                            }
                        }
                    };
                let min = num(self, a[2], "min", 0.0)?;
                let max = num(self, a[3], "max", 1.0)?;
                let sparsity = num(self, a[4], "sparsity", 1.0)?;
                let seed = match a[5] {
                    None => None,
                    Some(e) => {
                        let x = self.expr(env, e)?;
                        want_scalar(f, "seed", &x.0)?;
                        // DML's seed -1 means "choose one"
                        if x.1.map(Scalar::as_f64) == Some(-1.0) {
                            None
                        } else {
                            Some(x.0)
                        }
                    }
                };
                if let Some(p) = a[6] {
                    let (p, _) = self.expr(env, p)?;
                    match &p.kind {
                        ExprKind::Str(s) if s == "uniform" => {}
                        _ => {
                            return Err(SpannedError::new(p.span, "unsupported pdf for rand")
                                .with_note("only pdf=\"uniform\" is supported"))
                        }
                    }
                }
                if let Some(s) = sparsity.1.map(Scalar::as_f64) {
                    if !(0.0..=1.0).contains(&s) {
                        return Err(SpannedError::new(
                            sparsity.0.span,
                            format!("sparsity of rand must be between 0 and 1, found {s}"),
                        ));
                    }
                }
                if let (Some(lo), Some(hi)) = (min.1.map(Scalar::as_f64), max.1.map(Scalar::as_f64))
                {
                    if lo > hi {
                        return Err(SpannedError::new(
                            span,
                            format!("min of rand ({lo}) is larger than max ({hi})"),
                        ));
                    }
                }
                Ok(mk(
                    ExprKind::Rand(Box::new(RandArgs {
                        rows: rows.0,
                        cols: cols.0,
                        min: min.0,
                        max: max.0,
                        sparsity: sparsity.0,
                        seed,
                    })),
                    Ty::Matrix(nr, nc),
                    span,
                ))
            }
            "read" => {
                let a = bind(call, span, READ_PARAMS, 1)?;
                let (path, _) = self.expr(env, a[0].expect("required"))?;
                self.want_str(&path, "the file name of read")?;
                let mut opts = Vec::new();
                let mut dims = [None, None];
                for (name, e) in READ_PARAMS.iter().zip(&a).skip(1) {
                    let Some(e) = e else { continue };
                    let (x, k) = self.expr(env, e)?;
                    // constant rows and cols are the shape: the reader enforces them
                    let whole = k
                        .map(|k| k.as_f64())
                        .filter(|v| *v >= 0.0 && v.fract() == 0.0);
                    match *name {
                        "rows" => dims[0] = whole.map(|v| v as usize),
                        "cols" => dims[1] = whole.map(|v| v as usize),
                        _ => {}
                    }
                    match *name {
                        "format" | "sep" | "naStrings" | "data_type" | "value_type" => {
                            self.want_str(&x, &format!("the {name} of read"))?
                        }
                        _ => self.want_scalar(&x, &format!("the {name} of read"))?,
                    }
                    opts.push((name.to_string(), x));
                }
                let ty = match read_type(&path, &opts)? {
                    Ty::Matrix(..) => Ty::Matrix(dims[0], dims[1]),
                    t => t,
                };
                Ok(mk(
                    ExprKind::Read(Box::new(ReadArgs { path, opts })),
                    ty,
                    span,
                ))
            }
            "time" => {
                bind(call, span, &[], 0)?;
                Ok(mk(ExprKind::Time, Ty::Scalar(ScalarTy::Int), span))
            }
            "ifdef" => {
                let a = bind(call, span, &["arg", "default"], 2)?;
                let x = a[0].expect("required");
                let ast::ExprKind::ScriptArg(name) = &x.kind else {
                    return Err(SpannedError::new(
                        x.span,
                        "the first argument of ifdef must be a script argument such as $n",
                    ));
                };
                self.used.insert(name.clone());
                if self.args.contains_key(name) {
                    self.expr(env, x)
                } else {
                    self.expr(env, a[1].expect("required"))
                }
            }
            "print" | "write" | "stop" => Err(SpannedError::new(
                span,
                format!("{f} is a statement and has no value"),
            )),
            _ => {
                let mut e = SpannedError::new(call.func.span, format!("unknown function `{f}`"));
                if let Some(s) = closest(f, BUILTINS.iter().copied()) {
                    e = e.with_note(format!("did you mean `{s}`?"));
                }
                Err(e)
            }
        }
    }
}
