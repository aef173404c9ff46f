//! Delta debugging of a failing program: repeatedly try smaller candidates and keep the first
//! that still fails the same way and is smaller (fewer nodes, statements, inputs), until none
//! does. Candidates, in order: run the loop once;
//! drop an assignment (its readers reading a constant instead); drop an unused input; replace a subexpression
//! (outermost first) by one of its operands of the same type (of any type for an assignment
//! nothing reads), or by a leaf of the same type
//! (`0.0`, `1.0`, an input variable, `matrix(1, ...)`, `matrix(0, ...)`); make a `rand` input a
//! constant fill. Every candidate is type-checked with [`gen::type_of`] before it is run.

use super::gen::{self, InputKind, Program, Ty, E};
use super::FailKind;

/// Whether the statements read variable `n`.
fn reads(e: &E, n: &str) -> bool {
    match e {
        E::Num(_) => false,
        E::Var(m) => m == n,
        E::Bin(_, a, b) | E::MatMul(a, b) => reads(a, n) || reads(b, n),
        E::Un(_, a) | E::T(a) | E::Agg(_, a) | E::AsScalar(a) | E::Fill(a, ..) => reads(a, n),
        E::IfElse(c, a, b) => reads(c, n) || reads(a, n) || reads(b, n),
    }
}

/// Replaces every read of variable `n` by `leaf`.
fn substitute(e: &mut E, n: &str, leaf: &E) {
    match e {
        E::Var(m) if m == n => *e = leaf.clone(),
        E::Num(_) | E::Var(_) => {}
        E::Bin(_, a, b) | E::MatMul(a, b) => {
            substitute(a, n, leaf);
            substitute(b, n, leaf);
        }
        E::Un(_, a) | E::T(a) | E::Agg(_, a) | E::AsScalar(a) | E::Fill(a, ..) => {
            substitute(a, n, leaf)
        }
        E::IfElse(c, a, b) => {
            substitute(c, n, leaf);
            substitute(a, n, leaf);
            substitute(b, n, leaf);
        }
    }
}

fn well_typed(p: &Program) -> bool {
    let mut env: Vec<(String, Ty)> = p.inputs.iter().map(|i| (i.name.clone(), i.ty())).collect();
    for s in &p.stmts {
        match gen::type_of(&s.expr, &env) {
            Some(t) => env.push((s.name.clone(), t)),
            None => return false,
        }
    }
    !p.stmts.is_empty()
}

fn children(e: &E) -> Vec<&E> {
    match e {
        E::Num(_) | E::Var(_) => vec![],
        E::Bin(_, a, b) | E::MatMul(a, b) => vec![a, b],
        E::Un(_, a) | E::T(a) | E::Agg(_, a) | E::AsScalar(a) | E::Fill(a, ..) => vec![a],
        E::IfElse(c, a, b) => vec![c, a, b],
    }
}

fn child_mut(e: &mut E, k: usize) -> &mut E {
    match e {
        E::Bin(_, a, b) | E::MatMul(a, b) => {
            if k == 0 {
                a
            } else {
                b
            }
        }
        E::Un(_, a) | E::T(a) | E::Agg(_, a) | E::AsScalar(a) | E::Fill(a, ..) => a,
        E::IfElse(c, a, b) => match k {
            0 => c,
            1 => a,
            _ => b,
        },
        E::Num(_) | E::Var(_) => unreachable!("leaves have no children"),
    }
}

/// Paths to every node, outermost first.
fn paths(e: &E, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(prefix.clone());
    for (k, c) in children(e).into_iter().enumerate() {
        prefix.push(k);
        paths(c, prefix, out);
        prefix.pop();
    }
}

fn at<'e>(e: &'e E, path: &[usize]) -> &'e E {
    path.iter().fold(e, |e, &k| children(e)[k])
}

fn at_mut<'e>(e: &'e mut E, path: &[usize]) -> &'e mut E {
    path.iter().fold(e, |e, &k| child_mut(e, k))
}

/// Smaller candidates for one program, smallest changes last.
fn candidates(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    if p.iters > 1 {
        out.push(Program {
            iters: 1,
            ..p.clone()
        });
    }
    // drop a statement, its readers reading a constant of its type instead
    let env = p.env();
    for i in 0..p.stmts.len() {
        let name = p.stmts[i].name.clone();
        let leaf = match env.iter().rev().find(|(n, _)| *n == name).map(|e| e.1) {
            Some(Ty::Mat(r, c)) => E::Fill(Box::new(E::Num(1.0)), r, c),
            _ => E::Num(1.0),
        };
        let mut q = p.clone();
        q.stmts.remove(i);
        for s in &mut q.stmts {
            substitute(&mut s.expr, &name, &leaf);
        }
        out.push(q);
    }
    // drop a statement (later readers may fall back on an input of the same name and type)
    for i in 0..p.stmts.len() {
        let mut q = p.clone();
        q.stmts.remove(i);
        out.push(q);
    }
    // drop unused inputs
    for i in 0..p.inputs.len() {
        let name = &p.inputs[i].name;
        if !p.stmts.iter().any(|s| reads(&s.expr, name)) {
            let mut q = p.clone();
            q.inputs.remove(i);
            out.push(q);
        }
    }
    // replace subexpressions
    let mut env: Vec<(String, Ty)> = p.inputs.iter().map(|i| (i.name.clone(), i.ty())).collect();
    for (si, s) in p.stmts.iter().enumerate() {
        let mut ps = Vec::new();
        paths(&s.expr, &mut Vec::new(), &mut ps);
        for path in ps {
            let node = at(&s.expr, &path);
            let Some(t) = gen::type_of(node, &env) else {
                continue;
            };
            // a statement nothing later reads may change its type
            let unread = path.is_empty()
                && !p.stmts[si + 1..].iter().any(|s2| reads(&s2.expr, &s.name))
                && (p.iters == 1 || !p.stmts.iter().any(|s2| reads(&s2.expr, &s.name)));
            let mut repl: Vec<E> = children(node)
                .into_iter()
                .filter(|c| unread || gen::type_of(c, &env) == Some(t))
                .cloned()
                .collect();
            match t {
                Ty::Scalar => {
                    repl.extend([E::Num(0.0), E::Num(1.0)]);
                }
                Ty::Mat(r, c) => {
                    repl.extend(
                        p.inputs
                            .iter()
                            .filter(|i| i.ty() == t)
                            .map(|i| E::Var(i.name.clone())),
                    );
                    repl.push(E::Fill(Box::new(E::Num(1.0)), r, c));
                    repl.push(E::Fill(Box::new(E::Num(0.0)), r, c));
                }
            }
            for r in repl {
                if *node == r {
                    continue;
                }
                let mut q = p.clone();
                *at_mut(&mut q.stmts[si].expr, &path) = r;
                out.push(q);
            }
        }
        if let Some(t) = gen::type_of(&s.expr, &env) {
            env.push((s.name.clone(), t));
        }
    }
    // make rand inputs constant fills
    for i in 0..p.inputs.len() {
        if let InputKind::Rand { .. } = p.inputs[i].kind {
            for v in [1.0, 0.0] {
                let mut q = p.clone();
                q.inputs[i].kind = InputKind::Fill(v);
                out.push(q);
            }
        }
    }
    out.retain(well_typed);
    out
}

fn nodes(e: &E) -> usize {
    1 + children(e).into_iter().map(nodes).sum::<usize>()
}

/// The size the shrinker decreases: expression nodes, statements, inputs (a `rand` input
/// counts more than a fill), and the loop.
fn weight(p: &Program) -> usize {
    let rands = p
        .inputs
        .iter()
        .filter(|i| matches!(i.kind, InputKind::Rand { .. }))
        .count();
    p.stmts.iter().map(|s| nodes(&s.expr) + 1).sum::<usize>()
        + 2 * p.inputs.len()
        + rands
        + usize::from(p.iters > 1)
}

/// Shrinks a program that fails with `kind` to a smaller one that fails the same way;
/// `fails` runs a candidate. Stops after `budget` candidate runs.
pub fn shrink(
    p: &Program,
    kind: FailKind,
    budget: usize,
    fails: &dyn Fn(&Program) -> Option<FailKind>,
) -> Program {
    let mut best = p.clone();
    let mut runs = 0;
    // passes over the candidates; after a success the next candidates of the smaller program
    // are tried from the same position, and a pass without success ends the search
    loop {
        let mut progressed = false;
        let mut k = 0;
        loop {
            let cands = candidates(&best);
            let Some(q) = cands.into_iter().nth(k) else {
                break;
            };
            if runs >= budget {
                return best;
            }
            runs += 1;
            if weight(&q) < weight(&best) && fails(&q) == Some(kind) {
                best = q;
                progressed = true;
            } else {
                k += 1;
            }
        }
        if !progressed {
            return best;
        }
    }
}
