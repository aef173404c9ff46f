//! A plan as a Graphviz DOT graph (`--dot DIR`): one node per operator of the plan with its
//! shape, estimated non-zeros and estimated time, drawn once however many operators read it
//! (the plan is a DAG: each shared subexpression is one node), fused operators filled, inputs
//! as ellipses (a barrier input labelled with its source text), and each output as a box
//! fed by the operator that computes it. Edges follow the data: from an operand to the
//! operator that reads it. Render with `dot -Tsvg FILE.dot > FILE.svg`.

use super::{source, time};
use crate::ir::Ir;
use crate::optimize::segment::Segment;
use crate::optimize::Plan;
use egg::Language;
use std::fmt::Write;

/// Whether an operator is one of the fused operators (a kernel of its own that replaces
/// several LA operators).
pub fn is_fused(node: &Ir) -> bool {
    matches!(
        node,
        Ir::Sddmm(_)
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
            | Ir::Sprop(_)
            | Ir::TMMul(_)
    )
}

/// A DOT string literal: quotes and backslashes escaped, newlines as `\n`.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The plan of a segment of block `block` as a DOT digraph.
pub fn plan(block: usize, seg: &Segment, plan: &Plan) -> String {
    let nodes = plan.expr.as_ref();
    // the nodes reachable from the roots (a plan holds no others, but stay exact)
    let mut live = vec![false; nodes.len()];
    for r in &plan.roots {
        live[usize::from(*r)] = true;
    }
    for i in (0..nodes.len()).rev() {
        if live[i] {
            for c in nodes[i].children() {
                live[usize::from(*c)] = true;
            }
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "digraph block{block} {{");
    let _ = writeln!(out, "  rankdir=TB;");
    let _ = writeln!(
        out,
        "  node [fontname=\"Helvetica\", fontsize=10, shape=box, style=rounded];"
    );
    for (i, node) in nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        let note = &plan.notes[i];
        let shape = match note.shape {
            Some((r, c)) => format!("{r}x{c}"),
            None => "scalar".into(),
        };
        let attrs = match node {
            Ir::Symbol(s) => {
                let name = s.as_str();
                let label = match seg.barriers.iter().find(|(b, _)| b == name) {
                    Some((_, e)) => source(e).unwrap_or_else(|| name.to_string()),
                    None => name.to_string(),
                };
                format!(
                    "label={}, shape=ellipse, style=\"\"",
                    quoted(&format!("{label}\n{shape}, nnz ~{:.3e}", note.nnz))
                )
            }
            Ir::Num(v) => format!(
                "label={}, shape=plaintext, style=\"\"",
                quoted(&v.to_string())
            ),
            _ => {
                // operators by their DML names, fused operators by their SystemDS names
                let op = if is_fused(node) {
                    node.to_string()
                } else {
                    crate::raise::op_name(node).to_string()
                };
                let label = format!("{op}\n{shape}, nnz ~{:.3e}\n{}", note.nnz, time(note.cost));
                if is_fused(node) {
                    format!(
                        "label={}, style=\"rounded,filled,bold\", fillcolor=\"#ffe8a8\"",
                        quoted(&format!("{label}\n(fused)"))
                    )
                } else {
                    format!("label={}", quoted(&label))
                }
            }
        };
        let _ = writeln!(out, "  n{i} [{attrs}];");
    }
    for (i, node) in nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        for c in node.children() {
            let _ = writeln!(out, "  n{} -> n{i};", usize::from(*c));
        }
    }
    for (k, (o, root)) in seg.outputs.iter().zip(&plan.roots).enumerate() {
        let _ = writeln!(
            out,
            "  out{k} [label={}, shape=box, style=\"bold\"];",
            quoted(&o.var)
        );
        let _ = writeln!(out, "  n{} -> out{k};", usize::from(*root));
    }
    let _ = writeln!(out, "}}");
    out
}
