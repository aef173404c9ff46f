//! User-defined functions and the library of DML scripts.
//!
//! A function is checked once per call signature: the kinds of its arguments (matrix, or
//! which scalar, or string), with every matrix dimension unknown, so one checked body serves
//! every call with the same kinds and a body is never rejected for shapes that only some
//! calls have. Inside a body the checker is lenient: a statement that does not check (a
//! shape mismatch, an unsupported construct, a variable whose kind depends on the path)
//! becomes a `Fail` statement that reports the same diagnostic if and when it runs, because a
//! branch that is never taken must not stop the program (SystemDS runs such programs). The
//! executor checks every shape when the statement runs.
//!
//! Name resolution for a call `NAME(...)`: a function of the same source file, then a
//! builtin of [`crate::builtins::TABLE`], then `m_NAME` (else `s_NAME`, SystemDS's name for a
//! builtin whose first argument is a scalar or a list, like `shapExplainer`'s model name) in
//! `NAME.dml` in the library directories (`--lib DIR`, `SPORES_LIB`), parsed on first use and
//! cached; the functions of
//! that file are visible to each other, and it may call further library functions.

use super::hir::{self, Expr, ExprKind, Range, Scalar, ScalarTy, Stmt, Ty};
use super::{builtins::bind_flags, Checked, Checker, Env, Res, VarInfo};
use crate::error::SpannedError;
use crate::syntax::ast::{self, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The functions defined in one source file.
#[derive(Default)]
pub(crate) struct Scope {
    funcs: HashMap<String, Rc<ast::Function>>,
    /// `source(path) as ns`: the namespace to the file, with the statement's span
    sources: HashMap<String, (String, Span)>,
    /// the same for a `source` inside a block (a branch, loop or function body): SystemDS
    /// reads and parses the file, but registers no function of it under the namespace
    nested: HashMap<String, (String, Span)>,
    /// the string literals of the file that could name a function (identifiers, possibly
    /// with a namespace): the library functions an `eval` of a name known only when it runs
    /// may call
    strings: std::collections::BTreeSet<String>,
}

impl Scope {
    /// The functions defined and the files sourced at the top level of `stmts`, each sourced
    /// path under the folder of the last `setwd` before it (see [`working_path`]).
    pub(crate) fn of(stmts: &[ast::Stmt]) -> Scope {
        let mut funcs = HashMap::new();
        let mut sources = HashMap::new();
        let mut nested = HashMap::new();
        let mut wd = None;
        for s in stmts {
            match &s.kind {
                ast::StmtKind::Function(f) => {
                    funcs.insert(f.name.name.clone(), Rc::new((**f).clone()));
                    nested_sources(std::slice::from_ref(s), wd, &mut nested);
                }
                ast::StmtKind::Source { path, ns } => {
                    sources.insert(ns.name.clone(), (working_path(path, wd), s.span));
                }
                _ => nested_sources(std::slice::from_ref(s), wd, &mut nested),
            }
            last_setwd(std::slice::from_ref(s), &mut wd);
        }
        Scope {
            funcs,
            sources,
            nested,
            strings: name_literals(stmts),
        }
    }

    /// Every file this scope sources (at the top level or in a block), each once, in the
    /// order of the text.
    fn all_sources(&self) -> Vec<(String, Span)> {
        let mut all: Vec<(String, Span)> = self
            .sources
            .values()
            .chain(self.nested.values())
            .cloned()
            .collect();
        all.sort_by_key(|(_, span)| (span.start, span.end));
        all.dedup_by(|a, b| a.0 == b.0);
        all
    }
}

/// The `source` statements inside the blocks of `stmts` (see [`Scope::nested`]), their paths
/// under the working folder `wd` of the top-level statement that holds them.
fn nested_sources(
    stmts: &[ast::Stmt],
    wd: Option<&str>,
    out: &mut HashMap<String, (String, Span)>,
) {
    for s in stmts {
        match &s.kind {
            ast::StmtKind::If { then, els, .. } => {
                block_sources(then, wd, out);
                block_sources(els, wd, out);
            }
            ast::StmtKind::For { body, .. } | ast::StmtKind::While { body, .. } => {
                block_sources(body, wd, out)
            }
            ast::StmtKind::Function(f) => block_sources(&f.body, wd, out),
            _ => {}
        }
    }
}

/// The `source` statements of a block and of the blocks inside it.
fn block_sources(block: &[ast::Stmt], wd: Option<&str>, out: &mut HashMap<String, (String, Span)>) {
    for s in block {
        match &s.kind {
            ast::StmtKind::Source { path, ns } => {
                out.entry(ns.name.clone())
                    .or_insert((working_path(path, wd), s.span));
            }
            _ => nested_sources(std::slice::from_ref(s), wd, out),
        }
    }
}

/// Follows the `setwd` statements of `stmts` in the text's order, at any depth (SystemDS
/// applies them while walking the parse tree, whether or not the branch runs).
fn last_setwd<'a>(stmts: &'a [ast::Stmt], wd: &mut Option<&'a str>) {
    for s in stmts {
        match &s.kind {
            ast::StmtKind::SetWd(dir) => *wd = Some(dir),
            ast::StmtKind::If { then, els, .. } => {
                last_setwd(then, wd);
                last_setwd(els, wd);
            }
            ast::StmtKind::For { body, .. } | ast::StmtKind::While { body, .. } => {
                last_setwd(body, wd)
            }
            ast::StmtKind::Function(f) => last_setwd(&f.body, wd),
            _ => {}
        }
    }
}

/// A sourced path as SystemDS's parser resolves it: under the working folder `wd` (`.`, the
/// process's folder, until a `setwd`) unless it is absolute or already starts with `wd/`.
fn working_path(path: &str, wd: Option<&str>) -> String {
    match wd {
        Some(wd) if !Path::new(path).is_absolute() && !path.starts_with(&format!("{wd}/")) => {
            format!("{wd}/{path}")
        }
        _ => path.to_string(),
    }
}

/// Library directories and the scripts loaded from them.
pub(crate) struct Library {
    dirs: Vec<PathBuf>,
    /// `NAME` to the scope of `NAME.dml` (`None`: not found)
    files: HashMap<String, Option<usize>>,
    /// a sourced file (its path as written) to its scope
    sourced: HashMap<String, usize>,
}

impl Library {
    pub(crate) fn new(dirs: Vec<PathBuf>) -> Library {
        Library {
            dirs,
            files: HashMap::new(),
            sourced: HashMap::new(),
        }
    }
}

/// The string literals of `stmts` (at any depth) that could name a function: an identifier,
/// or two joined by `::`.
fn name_literals(stmts: &[ast::Stmt]) -> std::collections::BTreeSet<String> {
    let ident = |t: &str| {
        t.split("::").count() <= 2
            && t.split("::").all(|p| {
                p.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            })
    };
    let mut out = std::collections::BTreeSet::new();
    crate::syntax::depth::for_each_expr(stmts, &mut |e| {
        if let ast::ExprKind::Str(t) = &e.kind {
            if ident(t) {
                out.insert(t.clone());
            }
        }
    });
    out
}

/// A function instance: the scope, the function's name and its argument kinds.
/// (scope, name, argument kinds, the constant texts of string arguments a function that
/// calls `eval` gets: each function name it is passed is an instance of its own)
pub(crate) type InstanceKey = (usize, String, Vec<Ty>, Vec<Option<Rc<str>>>);

/// Whether a function's body calls `eval` (then its string arguments are part of its
/// instance: `eval(fn, ..)` with `fn` a parameter resolves per call).
fn calls_eval(def: &ast::Function) -> bool {
    // the body's calls, read from its printed syntax tree: a walk over every statement
    // and expression kind for one name
    format!("{:?}", def.body).contains("name: \"eval\"")
}

/// The names a statement list assigns (at any depth).
pub(crate) fn assigned(stmts: &[ast::Stmt], out: &mut Vec<String>) {
    for s in stmts {
        match &s.kind {
            ast::StmtKind::Assign { target, .. } | ast::StmtKind::IndexAssign { target, .. } => {
                out.push(target.name.clone())
            }
            ast::StmtKind::MultiAssign { targets, .. } => {
                out.extend(targets.iter().map(|t| t.name.clone()))
            }
            ast::StmtKind::If { then, els, .. } => {
                assigned(then, out);
                assigned(els, out);
            }
            ast::StmtKind::For { var, body, .. } => {
                out.push(var.name.clone());
                assigned(body, out);
            }
            ast::StmtKind::While { body, .. } => assigned(body, out),
            _ => {}
        }
    }
}

/// A constant argument's value as the parameter's type holds it (`None`: not a number the
/// conversion keeps exactly).
fn converted(k: Scalar, had: Ty, want: Ty) -> Option<Scalar> {
    match (k, want) {
        _ if had == want => Some(k),
        (Scalar::Int(i), Ty::Scalar(ScalarTy::Double)) => Some(Scalar::Double(i as f64)),
        (Scalar::Double(d), Ty::Scalar(ScalarTy::Int)) if d.fract() == 0.0 && d.abs() < 9e15 => {
            Some(Scalar::Int(d as i64))
        }
        _ => None,
    }
}

/// An eval's function name when the checker knows it: a string known here, or a
/// concatenation of such (`ns + "::f"`).
fn eval_text(env: &Env, e: &ast::Expr) -> Option<String> {
    match &e.kind {
        ast::ExprKind::Binary(ast::BinOp::Add, a, b) => {
            Some(eval_text(env, a)? + &eval_text(env, b)?)
        }
        _ => super::const_text(env, e).map(|t| t.to_string()),
    }
}

/// The kind of an argument as far as an instance depends on it.
/// `entry` (an entry of a list an `eval` binds to a parameter) as a value of type `ty`:
/// `as.matrix(entry)` for a matrix, `as.scalar(entry)` for a scalar or string, the entry
/// itself for a list.
fn cast_to(ty: Ty, entry: ast::Expr, at: Span) -> ast::Expr {
    let name = match ty {
        Ty::Matrix(..) => "as.matrix",
        Ty::Scalar(_) | Ty::Str => "as.scalar",
        Ty::List => return entry,
    };
    ast::Expr {
        kind: ast::ExprKind::Call(ast::Call {
            func: ast::Ident {
                name: name.to_string(),
                span: at,
            },
            args: vec![ast::Arg {
                name: None,
                value: entry,
            }],
        }),
        span: at,
    }
}

fn kind(t: Ty) -> Ty {
    match t {
        Ty::Matrix(..) => Ty::Matrix(None, None),
        t => t,
    }
}

/// The type a declared parameter or output has (`None`: a type spores does not support).
fn declared(t: &ast::TypeName) -> Option<Ty> {
    let base = t.base.name.to_ascii_lowercase();
    Some(match base.as_str() {
        "matrix" => Ty::Matrix(None, None),
        "double" => Ty::Scalar(ScalarTy::Double),
        "integer" | "int" => Ty::Scalar(ScalarTy::Int),
        "boolean" | "bool" => Ty::Scalar(ScalarTy::Bool),
        "string" => Ty::Str,
        "list" => Ty::List,
        // `Scalar[int]`: a scalar of the value type in brackets (a double without one)
        "scalar" => match t
            .elem
            .as_ref()
            .map(|e| e.name.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("double") => Ty::Scalar(ScalarTy::Double),
            Some("integer" | "int") => Ty::Scalar(ScalarTy::Int),
            Some("boolean" | "bool") => Ty::Scalar(ScalarTy::Bool),
            Some("string") => Ty::Str,
            Some(_) => return None,
        },
        _ => return None,
    })
}

/// The namespace of the main program's functions (SystemDS's `DMLProgram.DEFAULT_NAMESPACE`),
/// by which an `eval` in a library function names a function of the main program.
const MAIN_NS: &str = ".defaultNS";

impl Checker<'_> {
    /// `eval("f", a, b)` as the call `f(a, b)` it stands for, when the function's name is a
    /// string known at check time (a literal, or a variable or argument holding one on every
    /// path); `Ok(None)` for any other call. SystemDS looks the name up when the call runs:
    /// a name only known then is a diagnostic here.
    pub(crate) fn eval_call(&mut self, env: &Env, call: &ast::Call) -> Res<Option<ast::Call>> {
        if call.func.name != "eval" || self.scopes[self.scope].funcs.contains_key("eval") {
            return Ok(None);
        }
        self.eval_target(env, call).map(Some)
    }

    /// Whether this file defines a function `name` (which then hides a builtin of the name,
    /// as in SystemDS).
    pub(crate) fn defines(&self, name: &str) -> bool {
        self.scopes[self.scope].funcs.contains_key(name)
    }

    /// Whether `call` calls a function without outputs (`x = f(..)` then only runs it, as
    /// in SystemDS).
    pub(crate) fn returns_nothing(&mut self, call: &ast::Call) -> bool {
        call.func.name != "eval"
            && matches!(self.resolve(&call.func.name, call.func.span), Ok(Some((_, def))) if def.returns.is_empty())
    }

    /// `evalList("f", args..)` (as [`Self::eval_call`] resolves `eval`): every output of the
    /// function, in a list named by its outputs, as SystemDS; `None` for any other call.
    pub(crate) fn eval_list(
        &mut self,
        env: &Env,
        call: &ast::Call,
        span: Span,
    ) -> Res<Option<Checked>> {
        if call.func.name != "evalList" || self.scopes[self.scope].funcs.contains_key("evalList") {
            return Ok(None);
        }
        let target = self.eval_target(env, call)?;
        Ok(Some((self.outputs_list(env, &target, span)?, None)))
    }

    /// Every output of the function `target` calls, in a list named by its outputs
    /// (`evalList`'s value).
    fn outputs_list(&mut self, env: &Env, target: &ast::Call, span: Span) -> Res<Expr> {
        let Some((scope, def)) = self.resolve(&target.func.name, target.func.span)? else {
            return Err(SpannedError::new(
                target.func.span,
                format!(
                    "not supported: evalList of the builtin `{}` (only of functions written \
                     in DML)",
                    target.func.name
                ),
            ));
        };
        let (idx, args, _) = self.call_function(env, scope, &def, target, span)?;
        Ok(Expr {
            kind: ExprKind::Outputs(idx, args),
            ty: Ty::List,
            span,
        })
    }

    /// The call `eval(name, args..)` or `evalList(name, args..)` stands for (see
    /// [`Self::eval_call`]).
    pub(crate) fn eval_target(&mut self, env: &Env, call: &ast::Call) -> Res<ast::Call> {
        let Some(first) = call.args.first().filter(|a| a.name.is_none()) else {
            return Err(SpannedError::new(
                call.func.span,
                format!(
                    "{} takes the function's name first, then its arguments",
                    call.func.name
                ),
            ));
        };
        let Some(name) = eval_text(env, &first.value) else {
            return Err(SpannedError::new(
                first.value.span,
                "not supported here: eval of a function whose name is not a string known when \
                 the program is checked (spores calls such a name as `x = eval(name, ..)` or \
                 `L = evalList(name, ..)`)",
            ));
        };
        self.eval_target_named(env, call, name)
    }

    /// `eval(name, args..)` or `evalList(name, args..)` of a name known only when it runs,
    /// as SystemDS runs it: the function the string names when the call runs, among the main
    /// program's functions, this file's, those of the files it sources (`ns::f`) and the
    /// library functions the program or this file names in a string literal; its first
    /// output converted to a matrix (a scalar to a 1x1 matrix) for `eval`, all its outputs
    /// in a list for `evalList`. Each candidate is checked for these arguments; one that
    /// does not take them fails only if the call runs with its name, as does a name without
    /// a function. `None`: another call, or a name known here (see [`Self::eval_call`]).
    pub(crate) fn eval_dynamic(
        &mut self,
        env: &Env,
        call: &ast::Call,
        span: Span,
    ) -> Res<Option<Checked>> {
        let list = match call.func.name.as_str() {
            "eval" => false,
            "evalList" => true,
            _ => return Ok(None),
        };
        if self.defines(&call.func.name) {
            return Ok(None);
        }
        let Some(first) = call.args.first().filter(|a| a.name.is_none()) else {
            return Ok(None);
        };
        if eval_text(env, &first.value).is_some() {
            return Ok(None);
        }
        let (name, _) = self.expr(env, &first.value)?;
        if name.ty != Ty::Str {
            return Err(SpannedError::new(
                name.span,
                format!(
                    "{} takes the function's name as a string, found {}",
                    call.func.name, name.ty
                ),
            ));
        }
        let mut names: Vec<String> = Vec::new();
        let mut sorted = |keys: Vec<&String>| {
            let mut keys: Vec<String> = keys.into_iter().cloned().collect();
            keys.sort();
            for k in keys {
                if !names.contains(&k) {
                    names.push(k);
                }
            }
        };
        sorted(self.scopes[0].funcs.keys().collect());
        sorted(self.scopes[self.scope].funcs.keys().collect());
        let mut sources: Vec<(String, (String, Span))> = self.scopes[self.scope]
            .sources
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        sources.sort_by(|a, b| a.0.cmp(&b.0));
        for (ns, (path, at)) in sources {
            // a file that does not load is the `source`'s error elsewhere
            if let Ok(scope) = self.sourced_file(&path, at) {
                let mut fs: Vec<String> = self.scopes[scope]
                    .funcs
                    .keys()
                    .map(|f| format!("{ns}::{f}"))
                    .collect();
                fs.sort();
                names.extend(fs);
            }
        }
        let literals: Vec<String> = self.scopes[0]
            .strings
            .iter()
            .chain(&self.scopes[self.scope].strings)
            .filter(|n| !n.contains("::") && !names.contains(n))
            .cloned()
            .collect();
        for n in literals {
            let builtin = crate::builtins::lookup(&n).is_some();
            // the same literal can stand in both files
            if !builtin && !names.contains(&n) && matches!(self.library_file(&n, span), Ok(Some(_)))
            {
                names.push(n);
            }
        }
        let mut cases = Vec::new();
        let mut missing = Vec::new();
        for n in names {
            let mark = self.functions.len();
            let checked = self
                .eval_target_named(env, call, n.clone())
                .and_then(|target| self.dispatch_case(env, &target, list, span));
            match checked {
                Ok(e) => cases.push((n, e)),
                Err(e) => {
                    // the instances checked for this candidate go with it
                    self.functions.truncate(mark);
                    self.outputs.truncate(mark);
                    self.instances.retain(|_, i| *i < mark);
                    missing.push((n, e));
                }
            }
        }
        let ty = if list {
            Ty::List
        } else {
            Ty::Matrix(None, None)
        };
        Ok(Some((
            Expr {
                kind: ExprKind::Dispatch {
                    name: Box::new(name),
                    cases,
                    missing,
                },
                ty,
                span,
            },
            None,
        )))
    }

    /// One case of [`Self::eval_dynamic`]: the call `target` (a function's first output as a
    /// matrix, or with `list` all its outputs in a list).
    fn dispatch_case(
        &mut self,
        env: &Env,
        target: &ast::Call,
        list: bool,
        span: Span,
    ) -> Res<Expr> {
        if list {
            return self.outputs_list(env, target, span);
        }
        let (e, _) = self.call(env, target, span)?;
        match e.ty {
            Ty::Matrix(..) => Ok(e),
            // SystemDS converts a scalar output to a 1x1 matrix
            Ty::Scalar(_) => {
                let row = crate::builtins::lookup("as.matrix").expect("a row of the table");
                Ok(self.apply(row, vec![(e, None)], span)?.0)
            }
            ty => Err(SpannedError::new(
                span,
                format!(
                    "invalid eval return type: `{}` returns {ty} (eval of a name known only \
                     when it runs returns a matrix, or a scalar converted to one)",
                    target.func.name
                ),
            )),
        }
    }

    /// [`Self::eval_target`] for the function `name`.
    fn eval_target_named(&mut self, env: &Env, call: &ast::Call, name: String) -> Res<ast::Call> {
        let first = &call.args[0];
        // SystemDS looks an eval's name up in the main program when the call runs, so a
        // library function evaluates the caller's model (shapExplainer's `dummyModel`): a
        // name this scope does not define but the main program does is the main program's
        let name = if self.scope != 0
            && !name.contains("::")
            && !self.scopes[self.scope].funcs.contains_key(&name)
            && self.scopes[0].funcs.contains_key(&name)
        {
            format!("{MAIN_NS}::{name}")
        } else {
            name
        };
        // a single list written in place, `eval("f", list(a, b))`, gives the arguments,
        // unless the function takes one list (as SystemDS binds them)
        let takes_list = self.scopes[self.scope]
            .funcs
            .get(&name)
            .is_some_and(|f| f.params.len() == 1 && declared(&f.params[0].ty) == Some(Ty::List));
        let args = match &call.args[1..] {
            [ast::Arg {
                name: None,
                value:
                    ast::Expr {
                        kind: ast::ExprKind::Call(l),
                        ..
                    },
            }] if l.func.name == "list" && !takes_list => l.args.clone(),
            [ast::Arg {
                name: None,
                value:
                    ast::Expr {
                        kind: ast::ExprKind::Var(v),
                        span: vspan,
                    },
            }] if !takes_list && env.get(v).is_some_and(|i| i.ty == Ty::List) => {
                // a list variable: its entries, bound by name when named, as SystemDS binds
                // them when the call runs; spores binds them here, so it must know them
                let Some(items) = env.get(v).and_then(|i| i.items.clone()) else {
                    if let Some(args) = self.runtime_list_args(&name, v, *vspan) {
                        return Ok(ast::Call {
                            func: ast::Ident {
                                name,
                                span: first.value.span,
                            },
                            args,
                        });
                    }
                    return Err(SpannedError::new(
                        *vspan,
                        format!(
                            "not supported: eval with the list `{v}` whose entries are not known \
                             when the program is checked"
                        ),
                    )
                    .with_note(
                        "spores binds eval's list when the list is written in place or assigned \
                         from `list(...)` on every path and not changed since",
                    ));
                };
                let at = *vspan;
                let ex = |kind| ast::Expr { kind, span: at };
                items
                    .iter()
                    .enumerate()
                    .map(|(i, (n, ty))| {
                        let entry = ex(ast::ExprKind::Index {
                            base: Box::new(ex(ast::ExprKind::Var(v.clone()))),
                            rows: ast::IndexRange::At(Box::new(ex(ast::ExprKind::Int(
                                i as i64 + 1,
                            )))),
                            cols: ast::IndexRange::All,
                        });
                        let value = cast_to(*ty, entry, at);
                        ast::Arg {
                            name: n.as_ref().map(|n| ast::Ident {
                                name: n.clone(),
                                span: at,
                            }),
                            value,
                        }
                    })
                    .collect()
            }
            rest => rest.to_vec(),
        };
        Ok(ast::Call {
            func: ast::Ident {
                name,
                span: first.value.span,
            },
            args,
        })
    }

    /// The arguments of `eval(name, v)` for a list `v` whose entries are known only when it
    /// runs and a function `name` (of this file, a sourced file or the library) whose
    /// parameters all have declared types and at most literal defaults: one argument per
    /// parameter, bound from the list when the call runs (see [`crate::builtins::EVAL_ARG`])
    /// and cast to the declared kind; `None` otherwise.
    fn runtime_list_args(&mut self, name: &str, v: &str, at: Span) -> Option<Vec<ast::Arg>> {
        // a function of this file, of a sourced file or of the library (`normalizeApply`)
        let (_, def) = self.resolve(name, at).ok().flatten()?;
        let ex = |kind| ast::Expr { kind, span: at };
        let n = def.params.len() as i64;
        let mut args = Vec::new();
        for (i, p) in def.params.iter().enumerate() {
            let literal = |e: &ast::Expr| {
                matches!(
                    e.kind,
                    ast::ExprKind::Int(_)
                        | ast::ExprKind::Double(_)
                        | ast::ExprKind::Bool(_)
                        | ast::ExprKind::Str(_)
                )
            };
            let mut call_args = vec![
                ex(ast::ExprKind::Var(v.to_string())),
                ex(ast::ExprKind::Int(i as i64 + 1)),
                ex(ast::ExprKind::Str(p.name.name.clone())),
                ex(ast::ExprKind::Int(n)),
            ];
            match &p.default {
                Some(d) if literal(d) => {
                    call_args.push(ex(ast::ExprKind::Bool(true)));
                    call_args.push(d.clone());
                }
                Some(_) => return None,
                None => {}
            }
            let entry = ex(ast::ExprKind::Call(ast::Call {
                func: ast::Ident {
                    name: crate::builtins::EVAL_ARG.to_string(),
                    span: at,
                },
                args: call_args
                    .into_iter()
                    .map(|value| ast::Arg { name: None, value })
                    .collect(),
            }));
            let value = cast_to(declared(&p.ty)?, entry, at);
            args.push(ast::Arg { name: None, value });
        }
        Some(args)
    }

    /// The function a call refers to, by the resolution order of the module doc; `None` for
    /// a builtin.
    pub(crate) fn resolve(
        &mut self,
        name: &str,
        span: Span,
    ) -> Res<Option<(usize, Rc<ast::Function>)>> {
        if let Some(f) = self.scopes[self.scope].funcs.get(name) {
            return Ok(Some((self.scope, f.clone())));
        }
        if let Some(f) = name
            .strip_prefix(MAIN_NS)
            .and_then(|n| n.strip_prefix("::"))
            .and_then(|n| self.scopes[0].funcs.get(n))
        {
            return Ok(Some((0, f.clone())));
        }
        if let Some((ns, f)) = name.rsplit_once("::") {
            // SystemDS also names a sourced file's functions by the file's path
            // (`eval(path + "::f")`): the path as `source` wrote it, or the same file
            let sources = &self.scopes[self.scope].sources;
            let by_path = || {
                let want = std::fs::canonicalize(ns).ok();
                sources.values().find(|(p, _)| {
                    p == ns || (want.is_some() && std::fs::canonicalize(p).ok() == want)
                })
            };
            let Some((path, at)) = sources.get(ns).or_else(by_path).cloned() else {
                if let Some((path, _)) = self.scopes[self.scope].nested.get(ns) {
                    // SystemDS's compile-time error
                    return Err(SpannedError::new(
                        span,
                        format!("function {f} is undefined in namespace {path}"),
                    )
                    .with_note(format!(
                        "`{ns}` is sourced only inside a block: SystemDS registers the functions \
                         of a `source` at the top level of a file only"
                    )));
                }
                return Err(SpannedError::new(
                    span,
                    format!("unknown namespace `{ns}` (no `source(...) as {ns}` in this file)"),
                ));
            };
            let scope = self.sourced_file(&path, at)?;
            return match self.scopes[scope].funcs.get(f) {
                Some(def) => Ok(Some((scope, def.clone()))),
                None => Err(SpannedError::new(
                    span,
                    format!("the file {path}, sourced as `{ns}`, does not define `{f}`"),
                )),
            };
        }
        if crate::builtins::lookup(name).is_some()
            || matches!(
                name,
                "min"
                    | "max"
                    | "pmin"
                    | "pmax"
                    | "ifdef"
                    | "print"
                    | "write"
                    | "stop"
                    | "assert"
                    | "list"
                    | "exists"
            )
        {
            return Ok(None);
        }
        let Some(scope) = self.library_file(name, span)? else {
            return Ok(None);
        };
        // SystemDS picks the prefix by the first argument's data type (a matrix `m_`, a
        // scalar or list `s_`); the library's files define one of them (sigmoid, which has
        // both, is a builtin here)
        let (m, s) = (format!("m_{name}"), format!("s_{name}"));
        let funcs = &self.scopes[scope].funcs;
        match funcs.get(&m).or_else(|| funcs.get(&s)) {
            Some(f) => Ok(Some((scope, f.clone()))),
            None => Err(SpannedError::new(
                span,
                format!("the library file {name}.dml defines neither `{m}` nor `{s}`"),
            )),
        }
    }

    /// The scope of `NAME.dml` from the library directories, loaded on first use.
    fn library_file(&mut self, name: &str, span: Span) -> Res<Option<usize>> {
        if let Some(s) = self.lib.files.get(name) {
            return Ok(*s);
        }
        let path = self
            .lib
            .dirs
            .iter()
            .map(|d| d.join(format!("{name}.dml")))
            .find(|p| p.is_file());
        let Some(path) = path else {
            self.lib.files.insert(name.to_string(), None);
            return Ok(None);
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| SpannedError::new(span, format!("cannot read {}: {e}", path.display())))?;
        let shown = path.display().to_string();
        let base = crate::syntax::sources::register(&shown, &text);
        let prog = crate::syntax::parse_program_at(&text, base).map_err(|e| {
            SpannedError::new(e.span, format!("syntax error: {}", e.message))
                .with_note(format!("in the library file {shown}, used here"))
        })?;
        self.scopes.push(Scope::of(&prog.stmts));
        let scope = self.scopes.len() - 1;
        self.lib.files.insert(name.to_string(), Some(scope));
        Ok(Some(scope))
    }

    /// Reads and parses every file the scope `scope` sources, at any depth, and the files
    /// those files source, as SystemDS's parser does before anything runs: a missing file or
    /// a syntax error in one is a diagnostic (at the `source` statement that names it) even
    /// when no function of it is called.
    pub(crate) fn load_sources(&mut self, scope: usize) -> Res<()> {
        for (path, span) in self.scopes[scope].all_sources() {
            let known = self.lib.sourced.contains_key(&path);
            let sourced = self.sourced_file(&path, span)?;
            if !known {
                // each file once: a file that sources itself (or a cycle) ends here
                self.load_sources(sourced)?;
            }
        }
        Ok(())
    }

    /// The scope of a file of `source(path) as ns`, parsed on first use. The file is found as
    /// SystemDS finds it: the path relative to the working folder, else under `scripts/` there
    /// (SystemDS's tests run from its repository's root), else beside the library directories
    /// (SystemDS reads the packages its jar holds beside `scripts/builtin`, like `nn/..`).
    fn sourced_file(&mut self, path: &str, span: Span) -> Res<usize> {
        if let Some(&s) = self.lib.sourced.get(path) {
            return Ok(s);
        }
        let found = std::iter::once(PathBuf::from(path))
            .chain(std::iter::once(Path::new("scripts").join(path)))
            .chain(
                self.lib
                    .dirs
                    .iter()
                    .filter_map(|d| d.parent().map(|p| p.join(path))),
            )
            .find(|p| p.is_file());
        let text = std::fs::read_to_string(found.as_deref().unwrap_or(Path::new(path)))
            .map_err(|e| SpannedError::new(span, format!("cannot read {path}: {e}")))?;
        let base = crate::syntax::sources::register(path, &text);
        let prog = crate::syntax::parse_program_at(&text, base).map_err(|e| {
            SpannedError::new(e.span, format!("syntax error: {}", e.message))
                .with_note(format!("in the file {path}, sourced here"))
        })?;
        self.scopes.push(Scope::of(&prog.stmts));
        let scope = self.scopes.len() - 1;
        self.lib.sourced.insert(path.to_string(), scope);
        Ok(scope)
    }

    /// The error for a name that is no function anywhere.
    pub(crate) fn unknown_function(&self, call: &ast::Call) -> SpannedError {
        let f = &call.func.name;
        if UNSUPPORTED.contains(&f.as_str()) || f.contains("::") {
            return SpannedError::new(call.func.span, format!("not supported: `{f}`"));
        }
        let mut e = SpannedError::new(call.func.span, format!("unknown function `{f}`"));
        let names = crate::builtins::TABLE
            .iter()
            .map(|b| b.name)
            .chain(["ifdef", "print", "write", "stop"])
            .chain(self.scopes[self.scope].funcs.keys().map(String::as_str));
        if let Some(s) = super::builtins::closest(f, names) {
            e = e.with_note(format!("did you mean `{s}`?"));
        }
        if self.lib.dirs.is_empty() {
            e.with_note(format!(
                "no library directory was given to look for {f}.dml (use --lib DIR or SPORES_LIB)"
            ))
        } else {
            let dirs: Vec<String> = self
                .lib
                .dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            e.with_note(format!(
                "not a builtin, and no {f}.dml in the library directories: {}",
                dirs.join(", ")
            ))
        }
    }

    /// Checks a call of a function: binds the arguments, instantiates the function for their
    /// kinds; returns the instance, the arguments (one per parameter) and the output types.
    pub(crate) fn call_function(
        &mut self,
        env: &Env,
        scope: usize,
        def: &Rc<ast::Function>,
        call: &ast::Call,
        span: Span,
    ) -> Res<(usize, Vec<Expr>, Vec<Ty>)> {
        let names: Vec<&str> = def.params.iter().map(|p| p.name.name.as_str()).collect();
        let required: Vec<bool> = def.params.iter().map(|p| p.default.is_none()).collect();
        let at_def = |e: SpannedError| {
            e.with_note(format!(
                "`{}` is defined at {}",
                def.name.name,
                crate::diagnostics::describe_span(def.name.span)
            ))
        };
        let bound = bind_flags(call, span, &names, &required, true).map_err(at_def)?;
        let mut args = Vec::with_capacity(names.len());
        // what is known of each argument, for the outputs' shapes (`self.ipa`)
        let mut facts = Vec::with_capacity(names.len());
        // string arguments of a function that calls `eval` (an instance per name)
        let mut texts = Vec::new();
        let by_text =
            def.params.iter().any(|p| declared(&p.ty) == Some(Ty::Str)) && calls_eval(def);
        for (p, a) in def.params.iter().zip(bound) {
            let Some(want) = declared(&p.ty) else {
                return Err(at_def(SpannedError::new(
                    p.ty.base.span,
                    format!("not supported: parameters of type {}", p.ty.base.name),
                )));
            };
            texts.push(match a {
                Some(e) if by_text && want == Ty::Str => super::const_text(env, e),
                None if by_text && want == Ty::Str => {
                    super::const_text(&Env::new(), p.default.as_ref().expect("bound"))
                }
                _ => None,
            });
            let ((e, k), text) = match a {
                Some(e) => (self.expr(env, e)?, super::const_text(env, e)),
                None => {
                    // defaults are evaluated in the function's file, without variables
                    let saved = std::mem::replace(&mut self.scope, scope);
                    let d = p.default.as_ref().expect("bound");
                    let r = self.expr(&Env::new(), d);
                    self.scope = saved;
                    (r?, super::const_text(&Env::new(), d))
                }
            };
            let had = e.ty;
            let e = self.convert(e, want, &p.name.name, &def.name.name)?;
            facts.push(VarInfo {
                ty: e.ty,
                konst: k.and_then(|k| converted(k, had, e.ty)),
                text: if e.ty == Ty::Str && had == Ty::Str {
                    text
                } else {
                    None
                },
                always: true,
                span: p.name.span,
                items: None,
            });
            args.push(e);
        }
        let kinds: Vec<Ty> = args.iter().map(|a| kind(a.ty)).collect();
        let key = (scope, def.name.name.clone(), kinds.clone(), texts.clone());
        if let Some(&i) = self.instances.get(&key) {
            let outs = self.outputs[i].clone();
            // a call from inside its own body (recursion) keeps the declared outputs
            let outs = if self.functions[i].is_some() {
                self.ipa_outputs(scope, def, &facts, outs)
            } else {
                outs
            };
            return Ok((i, args, outs));
        }
        let mut outs = Vec::new();
        for r in &def.returns {
            outs.push(declared(&r.ty).ok_or_else(|| {
                SpannedError::new(
                    r.ty.base.span,
                    format!("not supported: outputs of type {}", r.ty.base.name),
                )
            })?);
        }
        let idx = self.functions.len();
        self.functions.push(None);
        self.outputs.push(outs.clone());
        self.instances.insert(key, idx);
        let mut fenv = Env::new();
        for (i, (p, k)) in def.params.iter().zip(&kinds).enumerate() {
            fenv.insert(
                p.name.name.clone(),
                VarInfo {
                    ty: *k,
                    konst: None,
                    text: texts.get(i).cloned().flatten(),
                    always: true,
                    span: p.name.span,
                    items: None,
                },
            );
        }
        let saved = (
            std::mem::replace(&mut self.scope, scope),
            std::mem::replace(&mut self.lenient, true),
        );
        let body = self.stmts(&mut fenv, &def.body);
        (self.scope, self.lenient) = saved;
        let body = body?;
        self.functions[idx] = Some(hir::Function {
            name: def.name.name.clone(),
            params: names.iter().map(|n| n.to_string()).collect(),
            outputs: def.returns.iter().map(|r| r.name.name.clone()).collect(),
            output_types: outs.clone(),
            body,
            span: def.name.span,
        });
        let outs = self.ipa_outputs(scope, def, &facts, outs);
        Ok((idx, args, outs))
    }

    /// With `self.ipa`, the output types of a call whose arguments are `facts`: the body
    /// checked again with its parameters bound to them (leniently, as every body), each
    /// output's type where the body defines it on every path with the declared kind, the
    /// declared type otherwise. Without `self.ipa`, for a recursive call, or when the body
    /// does not check, `declared`. Cached per function and argument facts.
    fn ipa_outputs(
        &mut self,
        scope: usize,
        def: &Rc<ast::Function>,
        facts: &[VarInfo],
        declared: Vec<Ty>,
    ) -> Vec<Ty> {
        /// nested calls checked for their arguments at once, at most
        const DEPTH: usize = 16;
        let me = (scope, def.name.name.clone());
        if !self.ipa || self.ipa_stack.contains(&me) || self.ipa_stack.len() >= DEPTH {
            return declared;
        }
        let known = facts.iter().any(|f| {
            f.konst.is_some()
                || f.text.is_some()
                || matches!(f.ty, Ty::Matrix(Some(_), _) | Ty::Matrix(_, Some(_)))
        });
        if !known {
            // nothing more is known than the kinds the instance was checked for
            return declared;
        }
        let key = format!(
            "{scope}/{}/{:?}",
            def.name.name,
            facts
                .iter()
                .map(|f| (f.ty, f.konst, f.text.clone()))
                .collect::<Vec<_>>()
        );
        if let Some(o) = self.ipa_outputs.get(&key) {
            return o.clone();
        }
        let mut fenv = Env::new();
        for (p, f) in def.params.iter().zip(facts) {
            fenv.insert(p.name.name.clone(), f.clone());
        }
        self.ipa_stack.push(me);
        let saved = (
            std::mem::replace(&mut self.scope, scope),
            std::mem::replace(&mut self.lenient, true),
            std::mem::take(&mut self.maybe_not_run),
            self.deferred.clone(),
            self.list_dead,
            self.if_dead,
        );
        let body = self.stmts(&mut fenv, &def.body);
        (
            self.scope,
            self.lenient,
            self.maybe_not_run,
            self.deferred,
            self.list_dead,
            self.if_dead,
        ) = saved;
        self.ipa_stack.pop();
        let outs = match body {
            Ok(_) => def
                .returns
                .iter()
                .zip(&declared)
                .map(|(r, d)| match fenv.get(&r.name.name) {
                    Some(v) if v.always && kind(v.ty) == kind(*d) => v.ty,
                    _ => *d,
                })
                .collect(),
            Err(_) => declared,
        };
        self.ipa_outputs.insert(key, outs.clone());
        outs
    }

    /// Checks a function of scope 0 with arguments of its declared types.
    pub(crate) fn check_declared(&mut self, def: &ast::Function) -> Res<()> {
        let def = Rc::new(def.clone());
        let mut env = Env::new();
        let mut args = Vec::new();
        for p in &def.params {
            let Some(ty) = declared(&p.ty) else {
                return Err(SpannedError::new(
                    p.ty.base.span,
                    format!("not supported: parameters of type {}", p.ty.base.name),
                ));
            };
            let name = format!(".arg.{}", p.name.name);
            env.insert(
                name.clone(),
                VarInfo {
                    ty,
                    konst: None,
                    text: None,
                    always: true,
                    span: p.name.span,
                    items: None,
                },
            );
            args.push(ast::Arg {
                name: Some(p.name.clone()),
                value: ast::Expr {
                    kind: ast::ExprKind::Var(name),
                    span: p.name.span,
                },
            });
        }
        let call = ast::Call {
            func: def.name.clone(),
            args,
        };
        self.call_function(&env, 0, &def, &call, def.name.span)?;
        Ok(())
    }

    /// An argument converted to a parameter's declared type.
    fn convert(&mut self, e: Expr, want: Ty, param: &str, f: &str) -> Res<Expr> {
        let mismatch = |e: &Expr| {
            SpannedError::new(
                e.span,
                format!(
                    "argument `{param}` of {f} must be {}, found {}",
                    kind_name(want),
                    e.ty
                ),
            )
            .with_label(format!("this is {}", e.ty))
        };
        match (want, e.ty) {
            (Ty::Matrix(..), Ty::Matrix(..)) | (Ty::Str, Ty::Str) | (Ty::List, Ty::List) => Ok(e),
            (Ty::Scalar(w), Ty::Scalar(have)) if w == have => Ok(e),
            (Ty::Scalar(w), Ty::Scalar(_)) => {
                let name = match w {
                    ScalarTy::Double => "as.double",
                    ScalarTy::Int => "as.integer",
                    ScalarTy::Bool => return Ok(e),
                };
                let row = crate::builtins::lookup(name).expect("a row of the table");
                let span = e.span;
                Ok(self.apply(row, vec![(e, None)], span)?.0)
            }
            // SystemDS passes a number to a String parameter as its text
            (Ty::Str, Ty::Scalar(_)) => {
                let row = crate::builtins::lookup("toString").expect("a row of the table");
                let span = e.span;
                Ok(self.apply(row, vec![(e, None)], span)?.0)
            }
            (Ty::Scalar(_), Ty::Str) | (Ty::Str, _) | (Ty::Scalar(_), Ty::Matrix(..)) => {
                Err(mismatch(&e))
            }
            (Ty::Matrix(..) | Ty::List, _) | (Ty::Scalar(_), Ty::List) => Err(mismatch(&e)),
        }
    }

    /// `f(..)` as an expression: its first output.
    pub(crate) fn function_expr(
        &mut self,
        env: &Env,
        scope: usize,
        def: &Rc<ast::Function>,
        call: &ast::Call,
        span: Span,
    ) -> Res<Checked> {
        let (idx, args, outs) = self.call_function(env, scope, def, call, span)?;
        let Some(&ty) = outs.first() else {
            return Err(SpannedError::new(
                span,
                format!("`{}` has no output to use as a value", def.name.name),
            ));
        };
        Ok((
            Expr {
                kind: ExprKind::Call(idx, args),
                ty,
                span,
            },
            None,
        ))
    }

    /// `f(..)` as a statement, when `f` is a function (`None`: a builtin).
    pub(crate) fn function_stmt(
        &mut self,
        env: &Env,
        call: &ast::Call,
        span: Span,
    ) -> Res<Option<Stmt>> {
        // `eval(..)` on its own is a builtin's value left unused (SystemDS: "Missing variable
        // assignment"), whatever the function it names returns
        if matches!(call.func.name.as_str(), "eval" | "evalList") && !self.defines(&call.func.name)
        {
            return Ok(None);
        }
        let Some((scope, def)) = self.resolve(&call.func.name, call.func.span)? else {
            return Ok(None);
        };
        let (func, args, _) = self.call_function(env, scope, &def, call, span)?;
        Ok(Some(Stmt::Call {
            outputs: vec![],
            func,
            args,
            span,
        }))
    }

    /// `[a, b] = f(..)`.
    pub(crate) fn multi_assign(
        &mut self,
        env: &mut Env,
        targets: &[ast::Ident],
        call: &ast::Call,
        span: Span,
    ) -> Res<Stmt> {
        // SystemDS's `eval` and `evalList` are builtins of one output (a matrix, a list),
        // whatever function they call, and a multi-assignment takes only functions and
        // multi-return builtins: `[a, b] = eval(name, ..)` is its validation error, with a
        // name known at check time as with one computed when the call runs
        if matches!(call.func.name.as_str(), "eval" | "evalList") && !self.defines(&call.func.name)
        {
            return Err(SpannedError::new(
                span,
                format!(
                    "can only use user-defined functions with multi-assignment statement \
                     (`{}` returns one value; SystemDS rejects `[a, b] = {}(..)`)",
                    call.func.name, call.func.name
                ),
            )
            .with_note(
                "`L = evalList(name, ..)` gives every output of the function in a list \
                 (`as.matrix(L[1])`, `as.scalar(L[2])`)",
            ));
        }
        let Some((scope, def)) = self.resolve(&call.func.name, call.func.span)? else {
            if let Some(row) =
                crate::builtins::lookup(&call.func.name).filter(|r| r.multi.is_some())
            {
                let args = self.builtin_args(env, row, call, span)?;
                // the row's rule checks the arguments (its type is the first output's)
                let (first, _) = self.apply(row, args, span)?;
                // the outputs are lists when the first one is (`remove`), matrices otherwise
                let ty = match first.ty {
                    Ty::List => Ty::List,
                    _ => Ty::Matrix(None, None),
                };
                let ExprKind::Builtin(_, args) = first.kind else {
                    unreachable!("apply builds a builtin call")
                };
                for t in targets {
                    env.insert(
                        t.name.clone(),
                        VarInfo {
                            ty,
                            konst: None,
                            text: None,
                            always: true,
                            span,
                            items: None,
                        },
                    );
                }
                return Ok(Stmt::MultiBuiltin {
                    outputs: targets.iter().map(|t| t.name.clone()).collect(),
                    row,
                    args,
                    span,
                });
            }
            if crate::builtins::lookup(&call.func.name).is_some() {
                return Err(SpannedError::new(
                    span,
                    format!(
                        "not supported: several outputs of the builtin `{}`",
                        call.func.name
                    ),
                ));
            }
            return Err(self.unknown_function(call));
        };
        let (func, args, outs) = self.call_function(env, scope, &def, call, span)?;
        if targets.len() > outs.len() {
            return Err(SpannedError::new(
                span,
                format!(
                    "{} variables assigned from `{}`, which has {} outputs",
                    targets.len(),
                    def.name.name,
                    outs.len()
                ),
            ));
        }
        for (t, ty) in targets.iter().zip(&outs) {
            env.insert(
                t.name.clone(),
                VarInfo {
                    ty: *ty,
                    konst: None,
                    text: None,
                    always: true,
                    span,
                    items: None,
                },
            );
        }
        Ok(Stmt::Call {
            outputs: targets.iter().map(|t| t.name.clone()).collect(),
            func,
            args,
            span,
        })
    }

    /// `X[rows, cols] = value`.
    pub(crate) fn index_assign(
        &mut self,
        env: &mut Env,
        target: &ast::Ident,
        rows: &ast::IndexRange,
        cols: &ast::IndexRange,
        value: &ast::Expr,
        span: Span,
    ) -> Res<Stmt> {
        let Some(info) = env.get(&target.name).cloned() else {
            return Err(SpannedError::new(
                target.span,
                format!("undefined variable `{}`", target.name),
            )
            .with_label("indexed before any assignment"));
        };
        if info.ty == Ty::List {
            // `L[i] = v`, `L["name"] = v`: an entry replaced by a value of any type
            let rows = self.list_range(env, rows, cols)?;
            let (value, _) = self.expr(env, value)?;
            // the entries may change kind or number: no longer known
            if let Some(v) = env.get_mut(&target.name) {
                v.items = None;
            }
            return Ok(Stmt::IndexAssign {
                var: target.name.clone(),
                rows,
                cols: Range::All,
                value,
                span,
            });
        }
        let Ty::Matrix(r, c) = info.ty else {
            return Err(
                SpannedError::new(target.span, "only matrices and lists can be indexed")
                    .with_label(format!("this is {}", info.ty)),
            );
        };
        let (rows, _) = self.range(env, rows, r, "row")?;
        let (cols, _) = self.range(env, cols, c, "column")?;
        let (value, _) = self.expr(env, value)?;
        if value.ty == Ty::Str {
            return Err(
                SpannedError::new(value.span, "a string cannot be stored in a matrix")
                    .with_label("this is a string"),
            );
        }
        env.insert(
            target.name.clone(),
            VarInfo {
                ty: info.ty,
                konst: None,
                text: None,
                always: info.always,
                span,
                items: None,
            },
        );
        Ok(Stmt::IndexAssign {
            var: target.name.clone(),
            rows,
            cols,
            value,
            span,
        })
    }

    /// The range of a `for`: `from:to`, or `seq(from, to[, step])`.
    pub(crate) fn for_range(
        &mut self,
        env: &Env,
        from: &ast::Expr,
        to: Option<&ast::Expr>,
    ) -> Res<(Expr, Expr, Option<Expr>)> {
        if let Some(to) = to {
            let (a, _) = self.expr(env, from)?;
            let (b, _) = self.expr(env, to)?;
            return Ok((a, b, None));
        }
        let ast::ExprKind::Call(call) = &from.kind else {
            return Err(SpannedError::new(
                from.span,
                "not supported: a for loop over this expression",
            )
            .with_note("write the range as from:to or seq(from, to, step)"));
        };
        if call.func.name != "seq" {
            return Err(SpannedError::new(
                from.span,
                "not supported: a for loop over this expression",
            )
            .with_note("write the range as from:to or seq(from, to, step)"));
        }
        let a = super::builtins::bind(call, from.span, &["from", "to", "incr"], 2)?;
        let (x, _) = self.expr(env, a[0].expect("required"))?;
        let (y, _) = self.expr(env, a[1].expect("required"))?;
        let step = match a[2] {
            Some(e) => Some(self.expr(env, e)?.0),
            None => None,
        };
        Ok((x, y, step))
    }

    /// A `parfor`'s options that change its results (`opt=`, `par=`), or `None` for a `for`.
    /// The others (`check=`, `mode=`, `taskpartitioner=`, ...) only schedule the iterations,
    /// which run in order here. An `opt=` spores does not know is `RULEBASED`, SystemDS's
    /// default, and a `par=` that is not a number is left out.
    pub(crate) fn parfor_options(
        &mut self,
        env: &Env,
        parallel: bool,
        options: &[ast::Arg],
    ) -> Option<hir::Parfor> {
        if !parallel {
            return None;
        }
        let mut out = hir::Parfor {
            opt: hir::ParforOpt::RuleBased,
            par: None,
        };
        for a in options {
            match a.name.as_ref().map(|n| n.name.as_str()) {
                Some("opt") => {
                    let word = match &a.value.kind {
                        ast::ExprKind::Var(v) => v.to_ascii_uppercase(),
                        ast::ExprKind::Str(s) => s.to_ascii_uppercase(),
                        _ => String::new(),
                    };
                    out.opt = match word.as_str() {
                        "NONE" => hir::ParforOpt::None,
                        "CONSTRAINED" => hir::ParforOpt::Constrained,
                        _ => hir::ParforOpt::RuleBased,
                    };
                }
                Some("par") => {
                    out.par = self
                        .expr(env, &a.value)
                        .ok()
                        .filter(|(e, _)| matches!(e.ty, Ty::Scalar(_)))
                        .map(|(e, _)| Box::new(e));
                }
                _ => {}
            }
        }
        Some(out)
    }
}

/// A type's kind with its article, without dimensions: "a matrix", "a double".
fn kind_name(t: Ty) -> String {
    match t {
        Ty::Matrix(..) => "a matrix".into(),
        t => t.to_string(),
    }
}

/// DML builtins spores does not implement (a call gets "not supported" instead of "unknown").
const UNSUPPORTED: &[&str] = &[
    "as.frame",
    "frame",
    "transformencode",
    "transformapply",
    "transformdecode",
    "transformcolmap",
    "transformmeta",
    "detectSchema",
    "paramserv",
    "federated",
    "map",
    "tokenize",
    "sql",
];

#[cfg(test)]
mod tests {
    use super::super::{check_program_opts, hir, ScriptArgs};

    /// The type each top-level assignment gives its variable (the last one wins).
    fn types(src: &str, ipa: bool) -> std::collections::HashMap<String, hir::Ty> {
        let ast = crate::syntax::parse_program(src).expect("parses");
        let prog = check_program_opts(&ast, &ScriptArgs::new(), &[], ipa).expect("checks");
        let mut out = std::collections::HashMap::new();
        fn walk(blocks: &[hir::Block], out: &mut std::collections::HashMap<String, hir::Ty>) {
            for b in blocks {
                match b {
                    hir::Block::Basic(bb) => {
                        for s in &bb.stmts {
                            if let hir::Stmt::Assign { var, value, .. } = s {
                                out.insert(var.clone(), value.ty);
                            }
                        }
                    }
                    hir::Block::If { then, els, .. } => {
                        walk(then, out);
                        walk(els, out);
                    }
                    hir::Block::For { body, .. } | hir::Block::While { body, .. } => {
                        walk(body, out)
                    }
                }
            }
        }
        walk(&prog.blocks, &mut out);
        out
    }

    const M: fn(usize, usize) -> hir::Ty = |r, c| hir::Ty::Matrix(Some(r), Some(c));
    const UNKNOWN: hir::Ty = hir::Ty::Matrix(None, None);

    /// Argument shapes and constants go into the body, output shapes come out, per call:
    /// two calls with different shapes each get their own; a constant argument selects a
    /// branch; without `ipa` (what `spores check` uses) outputs stay unknown.
    #[test]
    fn output_shapes_follow_each_call() {
        let src = "f = function(Matrix[Double] X, Integer k, String how) \
                   return (Matrix[Double] Y, Matrix[Double] S) {\n\
                   if (how == \"wide\") { Y = cbind(X, X) } else { Y = X[, 1:k] }\n\
                   S = colSums(Y)\n}\n\
                   A = rand(rows=10, cols=4, seed=1)\nB = rand(rows=7, cols=3, seed=2)\n\
                   [Y1, S1] = f(A, 2, \"wide\")\n[Y2, S2] = f(B, 2, \"narrow\")\n\
                   P = Y1 %*% t(Y1)\nQ = S2 %*% t(Y2)\nR = Y2 + 1\n";
        let t = types(src, true);
        assert_eq!(t["P"], M(10, 10));
        assert_eq!(t["Q"], M(1, 7));
        assert_eq!(t["R"], M(7, 2));
        let t = types(src, false);
        assert_eq!(t["P"], UNKNOWN);
        assert_eq!(t["R"], UNKNOWN);
    }

    /// What the body does not determine stays unknown: a branch on data, a recursive call,
    /// a size read from the data.
    #[test]
    fn output_shapes_stay_unknown_when_the_body_does_not_fix_them() {
        let src = "g = function(Matrix[Double] X) return (Matrix[Double] Y) {\n\
                   if (sum(X) > 0) { Y = X } else { Y = t(X) }\n}\n\
                   h = function(Matrix[Double] X, Integer n) return (Matrix[Double] Y) {\n\
                   if (n > 0) { Y = h(cbind(X, X), n - 1) } else { Y = X }\n}\n\
                   k = function(Matrix[Double] X) return (Matrix[Double] Y) {\n\
                   Y = matrix(0, rows=max(X), cols=2)\n}\n\
                   A = rand(rows=5, cols=3, seed=1)\n\
                   G = g(A) + 0\nH = h(A, 2) + 0\nK = k(A) + 0\nL = t(k(A))\n";
        let t = types(src, true);
        for v in ["G", "H"] {
            assert_eq!(t[v], UNKNOWN, "{v}");
        }
        // the rows of k's output are data; its 2 columns are known
        assert_eq!(t["K"], hir::Ty::Matrix(None, Some(2)));
        assert_eq!(t["L"], hir::Ty::Matrix(Some(2), None));
    }

    /// A shape known only through a call never makes `check` (no `ipa`) reject a program:
    /// a mismatch after the call is the executor's to report when the statement runs.
    #[test]
    fn check_acceptance_does_not_depend_on_call_shapes() {
        let src = "f = function(Matrix[Double] X) return (Matrix[Double] Y) { Y = t(X) }\n\
                   A = rand(rows=5, cols=3, seed=1)\nY = f(A)\nZ = Y + A\n";
        let ast = crate::syntax::parse_program(src).expect("parses");
        assert!(check_program_opts(&ast, &ScriptArgs::new(), &[], false).is_ok());
        let err = check_program_opts(&ast, &ScriptArgs::new(), &[], true).unwrap_err();
        assert!(
            err.message.contains("3x5") || err.message.contains("5x3"),
            "{}",
            err.message
        );
    }
}
