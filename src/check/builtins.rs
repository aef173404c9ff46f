//! Calls of builtins: argument binding (positional and named) to a row of
//! [`crate::builtins::TABLE`], and the forms that are not table rows (`ifdef`, `min`/`max` of
//! several values).

use super::hir::{Expr, ExprKind};
use super::{Checked, Checker, Env, Res};
use crate::builtins;
use crate::error::SpannedError;
use crate::syntax::ast::{self, Span};
use spores_runtime::ops::BinOp;

/// Binds a call's arguments to `params` by position and name; the first `required` params
/// must be given.
pub(crate) fn bind<'a>(
    call: &'a ast::Call,
    span: Span,
    params: &[&str],
    required: usize,
) -> Res<Vec<Option<&'a ast::Expr>>> {
    let flags: Vec<bool> = (0..params.len()).map(|i| i < required).collect();
    bind_flags(call, span, params, &flags, false)
}

/// Binds a call's arguments to `params` by position and name; `required[i]` says whether
/// parameter `i` must be given. An unnamed argument takes the next parameter not taken by
/// an earlier unnamed one, or, with `by_index` (calls of the program's own functions), the
/// parameter at its own position in the call, as SystemDS binds a call that mixes named
/// and unnamed arguments (`f(96, C, Hf=11, Wf=11, 42)` gives 42 to the fifth parameter).
pub(crate) fn bind_flags<'a>(
    call: &'a ast::Call,
    span: Span,
    params: &[&str],
    required: &[bool],
    by_index: bool,
) -> Res<Vec<Option<&'a ast::Expr>>> {
    let f = &call.func.name;
    let sig = || format!("{f}({})", params.join(", "));
    let mut out: Vec<Option<&ast::Expr>> = vec![None; params.len()];
    let mut pos = 0;
    for (k, a) in call.args.iter().enumerate() {
        let slot = match &a.name {
            None => {
                if by_index {
                    pos = k;
                }
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
            // DML's own scripts name some arguments in another case (`sigmoid(X=X)`)
            Some(n) => match params
                .iter()
                .position(|p| *p == n.name)
                .or_else(|| params.iter().position(|p| p.eq_ignore_ascii_case(&n.name)))
            {
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
    if let Some(missing) = (0..params.len()).find(|&i| required[i] && out[i].is_none()) {
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

impl Checker<'_> {
    pub(crate) fn call(&mut self, env: &Env, call: &ast::Call, span: Span) -> Res<Checked> {
        if let Some(dispatch) = self.eval_dynamic(env, call, span)? {
            return Ok(dispatch);
        }
        if let Some(target) = self.eval_call(env, call)? {
            return self.call(env, &target, span);
        }
        let f = call.func.name.as_str();
        if let Some(list) = self.eval_list(env, call, span)? {
            return Ok(list);
        }
        if self.defines(&call.func.name) {
            // a function of this file hides the builtin of its name (`min`, `rand`)
            let (scope, def) = self
                .resolve(&call.func.name, call.func.span)?
                .expect("defined");
            return self.function_expr(env, scope, &def, call, span);
        }
        if let Some(cmp) = self.scalar_comparison(env, call)? {
            // a boolean when it runs (printed `TRUE`), typed as the double `as.scalar` (or
            // the aggregate) SystemDS typed before rewriting it: arithmetic on it gives a
            // double, as there. Wrapped in `as.scalar` of the scalar, so the comparison
            // itself keeps its boolean type.
            let wrapped = ast::Call {
                func: ast::Ident {
                    name: "as.scalar".to_string(),
                    span: call.func.span,
                },
                args: vec![ast::Arg {
                    name: None,
                    value: cmp,
                }],
            };
            let (mut e, _) = self.call(env, &wrapped, span)?;
            e.ty = super::hir::Ty::Scalar(super::hir::ScalarTy::Double);
            return Ok((e, None));
        }
        if let Some(len) = self.sum_of_table(env, call)? {
            // the integer length, typed as the double sum SystemDS typed before rewriting
            // it: printed as an integer, but arithmetic on it gives doubles, as there
            let (mut e, _) = self.call(env, &len, span)?;
            e.ty = super::hir::Ty::Scalar(super::hir::ScalarTy::Double);
            return Ok((e, None));
        }
        match f {
            "pmin" | "pmax" | "min" | "max"
                if f.starts_with('p') || !(call.args.len() == 1 && call.args[0].name.is_none()) =>
            {
                // element-wise over two or more values (`pmin`/`pmax` always)
                let bop = if f.ends_with("min") {
                    BinOp::Min
                } else {
                    BinOp::Max
                };
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
                return Ok(acc);
            }
            "min" | "max" => {
                // one argument: the aggregate of a matrix, a scalar itself
                let (x, k) = self.expr(env, &call.args[0].value)?;
                if !x.ty.is_matrix() {
                    return Ok((x, k));
                }
                let row = builtins::lookup(f).expect("a row of the table");
                return self.apply(row, vec![(x, k)], span);
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
                return if self.args.contains_key(name) {
                    self.expr(env, x)
                } else {
                    self.expr(env, a[1].expect("required"))
                };
            }
            "exists" => {
                // SystemDS: a matrix or list variable by its name, a scalar or string by its
                // value (`exists("X")`); a variable not defined here (in no branch taken
                // so far) by its name, FALSE when it runs unless defined by then
                let [a] = call.args.as_slice() else {
                    return Err(SpannedError::new(span, "exists takes one argument"));
                };
                let name = |n: &str| Expr {
                    kind: ExprKind::Str(n.to_string()),
                    ty: super::hir::Ty::Str,
                    span: a.value.span,
                };
                let x = match &a.value.kind {
                    ast::ExprKind::Var(n)
                        if env.get(n).is_none_or(|v| {
                            matches!(v.ty, super::hir::Ty::Matrix(..) | super::hir::Ty::List)
                        }) =>
                    {
                        name(n)
                    }
                    _ => {
                        let (x, _) = self.expr(env, &a.value)?;
                        if !matches!(x.ty, super::hir::Ty::Scalar(_) | super::hir::Ty::Str) {
                            return Err(SpannedError::new(
                                x.span,
                                "exists takes a variable or a name",
                            ));
                        }
                        x
                    }
                };
                return Ok((
                    Expr {
                        kind: ExprKind::Exists(Box::new(x)),
                        ty: super::hir::Ty::Scalar(super::hir::ScalarTy::Bool),
                        span,
                    },
                    None,
                ));
            }
            "list" => {
                // entries all named or all unnamed, as SystemDS requires
                let named = call.args.iter().filter(|a| a.name.is_some()).count();
                if named != 0 && named != call.args.len() {
                    return Err(SpannedError::new(
                        span,
                        "a list's entries must be all named or all unnamed",
                    ));
                }
                let mut items = Vec::with_capacity(call.args.len());
                for a in &call.args {
                    let (e, _) = self.expr(env, &a.value)?;
                    items.push((a.name.as_ref().map(|n| n.name.clone()), e));
                }
                return Ok((
                    Expr {
                        kind: ExprKind::List(items),
                        ty: super::hir::Ty::List,
                        span,
                    },
                    None,
                ));
            }
            "print" | "write" | "stop" => {
                return Err(SpannedError::new(
                    span,
                    format!("{f} is a statement and has no value"),
                ))
            }
            _ => {}
        }
        if let Some((scope, def)) = self.resolve(f, call.func.span)? {
            return self.function_expr(env, scope, &def, call, span);
        }
        let Some(row) = builtins::lookup(f) else {
            return Err(self.unknown_function(call));
        };
        let args = self.builtin_args(env, row, call, span)?;
        self.apply(row, args, span)
    }

    /// `as.scalar(A < B)` (any comparison, with a matrix operand) as the scalar comparison
    /// `as.scalar(A) < as.scalar(B)` SystemDS's static rewrite `simplifyBinaryMatrixScalar
    /// Operation` makes of it, so the value is a boolean (printed `TRUE`), as there; the same
    /// for `sum`, `min`, `max`, `prod` and `trace` of a comparison known to be 1x1 (the
    /// dynamic rewrite `simplifyUnnecessaryAggregate` makes them `as.scalar` first), and
    /// through a transpose (removed from a 1x1 matrix). Arithmetic operators are pushed down
    /// there too, with the value type they have here (a double); `&`, `|` (pushed down only
    /// one level there, so a double but for SystemDS's later passes), `xor` and `!` stay
    /// matrix operations. `None` for any other call.
    fn scalar_comparison(&mut self, env: &Env, call: &ast::Call) -> Res<Option<ast::Expr>> {
        let f = call.func.name.as_str();
        let [ast::Arg { name: None, value }] = call.args.as_slice() else {
            return Ok(None);
        };
        let aggregate = matches!(f, "sum" | "min" | "max" | "prod" | "trace");
        if !(aggregate || matches!(f, "as.scalar" | "castAsScalar")) || self.defines(f) {
            return Ok(None);
        }
        // through transposes, and row or column sums of a 1x1 matrix (SystemDS removes them:
        // `simplifyRowwiseAggregate` and the like)
        let mut x = value;
        let mut peeled_sums = false;
        while let ast::ExprKind::Call(t) = &x.kind {
            let g = t.func.name.as_str();
            match t.args.as_slice() {
                [ast::Arg { name: None, value }]
                    if matches!(g, "t" | "rowSums" | "colSums") && !self.defines(g) =>
                {
                    peeled_sums |= g != "t";
                    x = value
                }
                _ => break,
            }
        }
        // a variable assigned a comparison earlier in the block is that comparison
        // (SystemDS's block is one expression DAG): its value as a boolean
        let copy;
        if let ast::ExprKind::Var(n) = &x.kind {
            if !self.block_comparisons.contains(n) {
                return Ok(None);
            }
            copy = ast::Expr {
                kind: ast::ExprKind::Binary(
                    ast::BinOp::Ne,
                    // `Z[, ]`: the variable, in a form not expanded again
                    Box::new(ast::Expr {
                        kind: ast::ExprKind::Index {
                            base: Box::new(x.clone()),
                            rows: ast::IndexRange::All,
                            cols: ast::IndexRange::All,
                        },
                        span: x.span,
                    }),
                    Box::new(ast::Expr {
                        kind: ast::ExprKind::Int(0),
                        span: x.span,
                    }),
                ),
                span: x.span,
            };
            x = &copy;
        }
        let ast::ExprKind::Binary(op, a, b) = &x.kind else {
            return Ok(None);
        };
        use ast::BinOp::*;
        if !matches!(op, Lt | Le | Gt | Ge | Eq | Ne) {
            return Ok(None);
        }
        let (ca, _) = self.expr(env, a)?;
        let (cb, _) = self.expr(env, b)?;
        if !ca.ty.is_matrix() && !cb.ty.is_matrix() {
            return Ok(None);
        }
        if aggregate || peeled_sums {
            // only an operand known to be 1x1 makes the aggregate an `as.scalar`
            let one = |t: &super::hir::Ty| {
                matches!(
                    t,
                    super::hir::Ty::Matrix(Some(1), Some(1)) | super::hir::Ty::Scalar(_)
                )
            };
            if !one(&ca.ty) || !one(&cb.ty) {
                return Ok(None);
            }
        }
        let scalar = |e: &ast::Expr, ty: &super::hir::Ty| -> ast::Expr {
            if !ty.is_matrix() {
                return e.clone();
            }
            ast::Expr {
                kind: ast::ExprKind::Call(ast::Call {
                    func: ast::Ident {
                        name: "as.scalar".to_string(),
                        span: call.func.span,
                    },
                    args: vec![ast::Arg {
                        name: None,
                        value: e.clone(),
                    }],
                }),
                span: e.span,
            }
        };
        Ok(Some(ast::Expr {
            kind: ast::ExprKind::Binary(
                *op,
                Box::new(scalar(a, &ca.ty)),
                Box::new(scalar(b, &cb.ty)),
            ),
            span: x.span,
        }))
    }

    /// `sum(table(A, B))` without weights (or with the literal weight 1) as the call
    /// `length(A)` SystemDS's static rewrite `removeUnnecessaryCTable` makes of it (`nrow(A)`
    /// when A is known to be a column: the same number), so that table's checks of its
    /// inputs (values >= 1) never run, as there; `None` for any other call.
    fn sum_of_table(&mut self, env: &Env, call: &ast::Call) -> Res<Option<ast::Call>> {
        let [ast::Arg {
            name: None,
            value:
                ast::Expr {
                    kind: ast::ExprKind::Call(t),
                    ..
                },
        }] = call.args.as_slice()
        else {
            return Ok(None);
        };
        let one = |e: &ast::Expr| match e.kind {
            ast::ExprKind::Int(i) => i == 1,
            ast::ExprKind::Double(x) => x == 1.0,
            _ => false,
        };
        let plain = t.args.iter().all(|a| a.name.is_none())
            && (t.args.len() == 2 || (t.args.len() == 3 && one(&t.args[2].value)));
        if call.func.name != "sum" || t.func.name != "table" || !plain || self.defines("table") {
            return Ok(None);
        }
        let (a, _) = self.expr(env, &t.args[0].value)?;
        if !a.ty.is_matrix() {
            return Ok(None);
        }
        Ok(Some(ast::Call {
            func: ast::Ident {
                name: "length".to_string(),
                span: t.func.span,
            },
            args: vec![t.args[0].clone()],
        }))
    }

    /// Checks a builtin call's arguments: one per parameter with the defaults filled in, or
    /// every positional argument of a variadic row.
    pub(crate) fn builtin_args(
        &mut self,
        env: &Env,
        row: &'static builtins::Builtin,
        call: &ast::Call,
        span: Span,
    ) -> Res<Vec<Checked>> {
        if row.variadic {
            // named arguments (`odim1=`) follow the positional ones in the order written
            if let Some(w) = call
                .args
                .windows(2)
                .find(|w| w[0].name.is_some() && w[1].name.is_none())
            {
                return Err(SpannedError::new(
                    w[1].value.span,
                    format!("a positional argument of {} after a named one", row.name),
                ));
            }
            let args: Vec<Checked> = call
                .args
                .iter()
                .map(|a| self.expr(env, &a.value))
                .collect::<Res<_>>()?;
            // one list stands for its entries (`cbind(L)`; the row's rule decides)
            let one_list = matches!(args.as_slice(), [(e, _)] if e.ty == super::hir::Ty::List);
            if args.len() < row.required() && !one_list {
                return Err(SpannedError::new(
                    span,
                    format!("{} needs at least {} arguments", row.name, row.required()),
                )
                .with_note(format!("expected {}", row.signature())));
            }
            return Ok(args);
        }
        let names: Vec<&str> = row.params.iter().map(|p| p.name).collect();
        let bound = bind(call, span, &names, row.required())?;
        let mut args = Vec::with_capacity(bound.len());
        for (p, a) in row.params.iter().zip(bound) {
            args.push(match a {
                Some(e) => self.expr(env, e)?,
                None => {
                    let d = builtins::default_expr(p.default, span)
                        .expect("bind checked the required parameters");
                    let k = match &d.kind {
                        ExprKind::Lit(s) => Some(*s),
                        _ => None,
                    };
                    (d, k)
                }
            });
        }
        Ok(args)
    }

    /// Applies a row's rule to checked arguments (one per parameter).
    pub(crate) fn apply(
        &mut self,
        row: &'static builtins::Builtin,
        args: Vec<Checked>,
        span: Span,
    ) -> Res<Checked> {
        let info: Vec<builtins::ArgInfo> = args
            .iter()
            .map(|(e, k)| builtins::ArgInfo {
                ty: e.ty,
                konst: *k,
                text: match &e.kind {
                    ExprKind::Str(s) => Some(s.clone()),
                    _ => None,
                },
                span: e.span,
            })
            .collect();
        let sig = builtins::Sig {
            name: row.name,
            span,
            args: &info,
        };
        let (ty, k) = builtins::check(row, &sig)?;
        let args = args.into_iter().map(|(e, _)| e).collect();
        Ok((
            Expr {
                kind: ExprKind::Builtin(row, args),
                ty,
                span,
            },
            k,
        ))
    }
}
