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
use crate::exec::{List, Value};
use crate::syntax::ast::Span;
use spores_runtime::kernels::math::MathFn;
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
    /// a cell-wise function of the runtime's math family (predicates give booleans on
    /// scalars)
    Math(MathFn),
    /// anything else: the result type and compile-time value
    Fn(RuleFn),
}

/// A row's type rule: the result type and its compile-time value, if any.
pub type RuleFn = fn(&Sig) -> Res<(Ty, Option<Scalar>)>;

/// When the optimizer reasons about a call (given its checked arguments): its operator and
/// how many leading arguments are the operator's children.
pub type LowerFn = fn(&[Expr]) -> Option<(&'static str, usize)>;

/// The evaluation of a builtin with several outputs.
pub type MultiFn = fn(&mut Ctx, &[Value]) -> Res<Vec<Value>>;

type Dims = (Option<usize>, Option<usize>);

/// The evaluation of a row.
#[derive(Clone, Copy)]
pub enum Eval {
    /// element-wise function
    Unary(UnaryOp),
    /// aggregate
    Agg(AggOp, AggDir),
    /// a cell-wise function of the runtime's math family
    Math(MathFn),
    /// anything else, on the values of every parameter
    Fn(fn(&mut Ctx, &[Value]) -> Res<Value>),
}

/// Run-time context of a builtin call.
pub struct Ctx<'a> {
    /// the builtin's name (rows that share an evaluation tell themselves apart by it)
    pub name: &'static str,
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
    pub lower: Option<LowerFn>,
    /// whether a statement using it is worth planning (a matrix operation)
    pub plan_op: bool,
    /// takes any number of positional arguments (`cbind(A, B, C)`); `params` name the
    /// first ones for messages
    pub variadic: bool,
    /// the evaluation of `[a, b] = f(..)` for a builtin with several outputs
    pub multi: Option<MultiFn>,
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
        variadic: false,
        multi: None,
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

/// A distribution parameter that is not given.
const NO_PARAM: Default = Default::Num(f64::NAN);
const LOWER_TAIL: Param = opt("lower.tail", Default::Bool(true));
const CDF_PARAMS: &[Param] = &[
    req("target"),
    req("dist"),
    opt("mean", NO_PARAM),
    opt("sd", NO_PARAM),
    opt("rate", NO_PARAM),
    opt("df", NO_PARAM),
    opt("df1", NO_PARAM),
    opt("df2", NO_PARAM),
    LOWER_TAIL,
];
const NORM_PARAMS: &[Param] = &[
    req("target"),
    opt("mean", Default::Num(0.0)),
    opt("sd", Default::Num(1.0)),
    LOWER_TAIL,
];
const EXP_PARAMS: &[Param] = &[req("target"), opt("rate", Default::Num(1.0)), LOWER_TAIL];
const DF_PARAMS: &[Param] = &[req("target"), req("df"), LOWER_TAIL];
const F_PARAMS: &[Param] = &[req("target"), req("df1"), req("df2"), LOWER_TAIL];

/// `cdf`/`icdf` and their shorthands (`pnorm`, `qt`, ...): a probability of a scalar.
const fn dist_row(name: &'static str, params: &'static [Param]) -> Builtin {
    row(name, params, Rule::Fn(rule_dist), Eval::Fn(eval_dist))
}

/// `print(format, a, b, ...)`: the text of Java's `String.format` as SystemDS prints it. Not
/// a row of [`TABLE`] (a call `print(...)` is a statement); the checker builds it for a print
/// with several arguments.
pub static PRINT_FORMAT: Builtin = Builtin {
    variadic: true,
    ..row(
        "print",
        &[req("format")],
        Rule::Fn(rule_to_string),
        Eval::Fn(eval_print_format),
    )
};

const AB: &[Param] = &[req("a"), req("b")];

/// `bitwAnd(a, b)` and the other bitwise operations of integer scalars.
const fn bitw_row(name: &'static str) -> Builtin {
    row(name, AB, Rule::Fn(rule_bitw), Eval::Fn(eval_bitw))
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
    // SystemDS's other name of `mean`
    agg("avg", AggOp::Mean, AggDir::All),
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
    unary_row("ceiling", UnaryOp::Ceil),
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
        // a list's entry is read when it runs, not planned
        lower: Some(|a: &[Expr]| (a[0].ty != Ty::List).then_some(("as.scalar", 1))),
        ..row(
            "as.scalar",
            X,
            Rule::Fn(rule_as_scalar),
            Eval::Fn(eval_as_scalar),
        )
    },
    // internal (its name cannot be written in DML): one argument of `eval(f, L)` taken
    // from a list known only when it runs
    row(
        EVAL_ARG,
        &[
            req("list"),
            req("position"),
            req("name"),
            req("count"),
            opt("has_default", Default::Bool(false)),
            opt("default", Default::Num(0.0)),
        ],
        Rule::Fn(rule_list),
        Eval::Fn(eval_eval_arg),
    ),
    row(
        "castAsScalar",
        X,
        Rule::Fn(rule_as_scalar),
        Eval::Fn(eval_as_scalar),
    ),
    row(
        "rowProds",
        X,
        Rule::Fn(rule_row_col),
        Eval::Fn(eval_dir_prod),
    ),
    row(
        "colProds",
        X,
        Rule::Fn(rule_col_row),
        Eval::Fn(eval_dir_prod),
    ),
    bitw_row("bitwAnd"),
    bitw_row("bitwOr"),
    bitw_row("bitwXor"),
    bitw_row("bitwShiftL"),
    bitw_row("bitwShiftR"),
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
    row("lineage", X, Rule::Fn(rule_lineage), Eval::Fn(eval_lineage)),
    row(
        "toString",
        &[
            req("target"),
            opt("rows", Default::Int(100)),
            opt("cols", Default::Int(100)),
            opt("decimal", Default::Int(3)),
            opt("sparse", Default::Bool(false)),
            opt("sep", Default::Str(" ")),
            opt("linesep", Default::Str("\n")),
        ],
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
            opt("lambda", Default::Num(1.0)),
        ],
        Rule::Fn(rule_rand),
        Eval::Fn(eval_rand),
    ),
    row(
        "read",
        // SystemDS's read options; "" stands for an option not given
        &[
            req("file"),
            opt("format", ABSENT),
            opt("rows", ABSENT),
            opt("cols", ABSENT),
            opt("nnz", ABSENT),
            opt("header", ABSENT),
            opt("sep", ABSENT),
            opt("fill", ABSENT),
            opt("default", ABSENT),
            opt("naStrings", ABSENT),
            opt("data_type", ABSENT),
            opt("value_type", ABSENT),
        ],
        Rule::Fn(rule_read),
        Eval::Fn(eval_read),
    ),
    row("time", &[], Rule::Fn(rule_time), Eval::Fn(eval_time)),
    math("sin", MathFn::Sin),
    math("cos", MathFn::Cos),
    math("tan", MathFn::Tan),
    math("asin", MathFn::Asin),
    math("acos", MathFn::Acos),
    math("atan", MathFn::Atan),
    math("sinh", MathFn::Sinh),
    math("cosh", MathFn::Cosh),
    math("tanh", MathFn::Tanh),
    math("isNaN", MathFn::IsNaN),
    math("is.nan", MathFn::IsNaN),
    math("isNA", MathFn::IsNA),
    math("is.na", MathFn::IsNA),
    math("isInf", MathFn::IsInf),
    math("is.infinite", MathFn::IsInf),
    Builtin {
        variadic: true,
        ..row(
            "cbind",
            &[req("X"), req("Y")],
            Rule::Fn(rule_bind),
            Eval::Fn(eval_bind),
        )
    },
    Builtin {
        variadic: true,
        ..row(
            "rbind",
            &[req("X"), req("Y")],
            Rule::Fn(rule_bind),
            Eval::Fn(eval_bind),
        )
    },
    Builtin {
        variadic: true,
        ..row(
            "append",
            &[req("X"), req("Y")],
            Rule::Fn(rule_bind),
            Eval::Fn(eval_bind),
        )
    },
    row("as.list", X, Rule::Fn(rule_list), Eval::Fn(eval_as_list)),
    Builtin {
        multi: Some(eval_remove),
        ..row(
            "remove",
            &[req("target"), req("pos")],
            Rule::Fn(rule_list),
            Eval::Fn(eval_remove_first),
        )
    },
    row("diag", X, Rule::Fn(rule_diag), Eval::Fn(eval_diag)),
    row("rev", X, Rule::Fn(rule_same), Eval::Fn(eval_rev)),
    // SystemDS's compressed storage changes no value: both are the identity here
    row("compress", X, Rule::Fn(rule_same), Eval::Fn(eval_same)),
    row("decompress", X, Rule::Fn(rule_same), Eval::Fn(eval_same)),
    row(
        "roll",
        &[req("target"), req("shift")],
        Rule::Fn(rule_same),
        Eval::Fn(eval_roll),
    ),
    row(
        "lower.tri",
        &[
            req("target"),
            opt("diag", Default::Bool(false)),
            opt("values", Default::Bool(false)),
        ],
        Rule::Fn(rule_same),
        Eval::Fn(eval_tri),
    ),
    row(
        "upper.tri",
        &[
            req("target"),
            opt("diag", Default::Bool(false)),
            opt("values", Default::Bool(false)),
        ],
        Rule::Fn(rule_same),
        Eval::Fn(eval_tri),
    ),
    row(
        "replace",
        &[req("target"), req("pattern"), req("replacement")],
        Rule::Fn(rule_same),
        Eval::Fn(eval_replace),
    ),
    row(
        "removeEmpty",
        &[
            req("target"),
            req("margin"),
            opt("select", Default::Num(f64::NAN)),
            opt("empty.return", Default::Bool(true)),
        ],
        Rule::Fn(rule_remove_empty),
        Eval::Fn(eval_remove_empty),
    ),
    row(
        "order",
        &[
            req("target"),
            opt("by", Default::Int(1)),
            opt("decreasing", Default::Bool(false)),
            opt("index.return", Default::Bool(false)),
        ],
        Rule::Fn(rule_order),
        Eval::Fn(eval_order),
    ),
    row(
        "seq",
        &[req("from"), req("to"), opt("incr", Default::Num(f64::NAN))],
        Rule::Fn(rule_seq),
        Eval::Fn(eval_seq),
    ),
    row(
        "sample",
        &[
            req("range"),
            req("size"),
            opt("replace", Default::Bool(false)),
            opt("seed", Default::Int(-1)),
        ],
        Rule::Fn(rule_sample),
        Eval::Fn(eval_sample),
    ),
    Builtin {
        variadic: true,
        ..row(
            "table",
            &[req("A"), req("B")],
            Rule::Fn(rule_table),
            Eval::Fn(eval_table),
        )
    },
    row(
        "aggregate",
        &[
            req("target"),
            req("groups"),
            req("fn"),
            opt("ngroups", Default::Num(f64::NAN)),
            opt("weights", Default::Num(f64::NAN)),
            opt("order", Default::Num(f64::NAN)),
        ],
        Rule::Fn(rule_aggregate),
        Eval::Fn(eval_aggregate),
    ),
    row(
        "rowIndexMax",
        X,
        Rule::Fn(rule_row_col),
        Eval::Fn(eval_row_index),
    ),
    row(
        "rowIndexMin",
        X,
        Rule::Fn(rule_row_col),
        Eval::Fn(eval_row_index),
    ),
    row("cumsum", X, Rule::Fn(rule_same), Eval::Fn(eval_cum)),
    row("cumprod", X, Rule::Fn(rule_same), Eval::Fn(eval_cum)),
    row("cummin", X, Rule::Fn(rule_same), Eval::Fn(eval_cum)),
    row("cummax", X, Rule::Fn(rule_same), Eval::Fn(eval_cum)),
    row("rowcumsum", X, Rule::Fn(rule_same), Eval::Fn(eval_cum)),
    row(
        "cumsumprod",
        X,
        Rule::Fn(rule_row_col),
        Eval::Fn(eval_cumsumprod),
    ),
    row(
        "solve",
        &[req("A"), req("b")],
        Rule::Fn(rule_solve),
        Eval::Fn(eval_solve),
    ),
    row("inv", X, Rule::Fn(rule_same), Eval::Fn(eval_inv)),
    row("cholesky", X, Rule::Fn(rule_same), Eval::Fn(eval_cholesky)),
    row("det", X, Rule::Fn(rule_double), Eval::Fn(eval_det)),
    Builtin {
        multi: Some(eval_eigen),
        ..row(
            "eigen",
            X,
            Rule::Fn(rule_unknown_matrix),
            Eval::Fn(eval_eigen_values),
        )
    },
    Builtin {
        multi: Some(eval_lu),
        ..row(
            "lu",
            X,
            Rule::Fn(rule_unknown_matrix),
            Eval::Fn(eval_lu_first),
        )
    },
    Builtin {
        multi: Some(eval_qr),
        ..row(
            "qr",
            X,
            Rule::Fn(rule_unknown_matrix),
            Eval::Fn(eval_qr_first),
        )
    },
    Builtin {
        multi: Some(eval_svd),
        ..row(
            "svd",
            X,
            Rule::Fn(rule_unknown_matrix),
            Eval::Fn(eval_svd_first),
        )
    },
    Builtin {
        multi: Some(eval_row_class_meet),
        ..row(
            "rowClassMeet",
            &[req("A"), req("B")],
            Rule::Fn(rule_unknown_matrix),
            Eval::Fn(eval_row_class_meet_first),
        )
    },
    row("trace", X, Rule::Fn(rule_double), Eval::Fn(eval_trace)),
    row(
        "outer",
        &[req("a"), req("b"), req("op")],
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_outer),
    ),
    // SystemDS's deep-learning builtins; the shapes are lists `[a, b, ..]` (SystemDS drops
    // any other named argument, such as conv2d's `bias=`)
    row(
        "conv2d",
        &[
            req("input"),
            req("filter"),
            req("input_shape"),
            req("filter_shape"),
            req("stride"),
            req("padding"),
            opt("bias", Default::Num(f64::NAN)),
        ],
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_conv2d),
    ),
    row(
        "max_pool",
        POOL_PARAMS,
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_pool),
    ),
    row(
        "avg_pool",
        POOL_PARAMS,
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_pool),
    ),
    row(
        "bias_add",
        &[req("input"), req("bias")],
        Rule::Fn(rule_same),
        Eval::Fn(eval_bias),
    ),
    row(
        "bias_multiply",
        &[req("input"), req("bias")],
        Rule::Fn(rule_same),
        Eval::Fn(eval_bias),
    ),
    row(
        "conv2d_backward_filter",
        CONV_BACKWARD_PARAMS,
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_conv2d_backward),
    ),
    row(
        "conv2d_backward_data",
        CONV_BACKWARD_PARAMS,
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_conv2d_backward),
    ),
    row(
        "max_pool_backward",
        POOL_BACKWARD_PARAMS,
        Rule::Fn(rule_same),
        Eval::Fn(eval_pool_backward),
    ),
    row(
        "avg_pool_backward",
        POOL_BACKWARD_PARAMS,
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_pool_backward),
    ),
    Builtin {
        multi: Some(eval_batch_norm2d),
        ..row(
            "batch_norm2d",
            &[
                req("input"),
                req("scale"),
                req("bias"),
                req("runningMean"),
                req("runningVar"),
                req("mode"),
                req("epsilon"),
                req("momentum"),
            ],
            Rule::Fn(rule_same),
            Eval::Fn(eval_batch_norm2d_first),
        )
    },
    Builtin {
        multi: Some(eval_lstm),
        ..row(
            "lstm",
            LSTM_PARAMS,
            Rule::Fn(rule_unknown_matrix),
            Eval::Fn(eval_lstm_first),
        )
    },
    Builtin {
        multi: Some(eval_lstm),
        ..row(
            "lstm_backward",
            LSTM_BACKWARD_PARAMS,
            Rule::Fn(rule_same),
            Eval::Fn(eval_lstm_first),
        )
    },
    Builtin {
        multi: Some(eval_batch_norm2d_backward),
        ..row(
            "batch_norm2d_backward",
            &[
                req("input"),
                req("dout"),
                req("scale"),
                req("epsilon"),
                req("resultSaveMean"),
                req("resultSaveInvVariance"),
            ],
            Rule::Fn(rule_same),
            Eval::Fn(eval_batch_norm2d_backward_first),
        )
    },
    row("var", X, Rule::Fn(rule_double), Eval::Fn(eval_var)),
    row("sd", X, Rule::Fn(rule_double), Eval::Fn(eval_sd)),
    row("rowVars", X, Rule::Fn(rule_row_col), Eval::Fn(eval_dir_var)),
    row("rowSds", X, Rule::Fn(rule_row_col), Eval::Fn(eval_dir_var)),
    row("colVars", X, Rule::Fn(rule_col_row), Eval::Fn(eval_dir_var)),
    row("colSds", X, Rule::Fn(rule_col_row), Eval::Fn(eval_dir_var)),
    Builtin {
        // median(X) or median(X, W)
        variadic: true,
        ..row("median", X, Rule::Fn(rule_double), Eval::Fn(eval_median))
    },
    Builtin {
        // quantile(X, P) or quantile(X, W, P)
        variadic: true,
        ..row(
            "quantile",
            &[req("X"), req("P")],
            Rule::Fn(rule_quantile),
            Eval::Fn(eval_quantile),
        )
    },
    row(
        "interQuantileMean",
        X,
        Rule::Fn(rule_double),
        Eval::Fn(eval_iqm),
    ),
    dist_row("cdf", CDF_PARAMS),
    dist_row("icdf", CDF_PARAMS),
    dist_row("pnorm", NORM_PARAMS),
    dist_row("qnorm", NORM_PARAMS),
    dist_row("pexp", EXP_PARAMS),
    dist_row("qexp", EXP_PARAMS),
    dist_row("pchisq", DF_PARAMS),
    dist_row("qchisq", DF_PARAMS),
    dist_row("pt", DF_PARAMS),
    dist_row("qt", DF_PARAMS),
    dist_row("pf", F_PARAMS),
    dist_row("qf", F_PARAMS),
    Builtin {
        // interQuartileMean(X) or interQuartileMean(X, W)
        variadic: true,
        ..row(
            "interQuartileMean",
            X,
            Rule::Fn(rule_double),
            Eval::Fn(eval_iqm),
        )
    },
    row(
        "countDistinct",
        &[req("data"), opt("dir", Default::Str("rc"))],
        Rule::Fn(rule_count_distinct),
        Eval::Fn(eval_count_distinct),
    ),
    row(
        "rowCountDistinct",
        &[req("data")],
        Rule::Fn(rule_row_col),
        Eval::Fn(eval_count_distinct),
    ),
    row(
        "colCountDistinct",
        &[req("data")],
        Rule::Fn(rule_col_row),
        Eval::Fn(eval_count_distinct),
    ),
    row(
        "countDistinctApprox",
        &[
            req("data"),
            opt("dir", Default::Str("rc")),
            opt("type", Default::Str("KMV")),
        ],
        Rule::Fn(rule_count_distinct_approx),
        Eval::Fn(eval_count_distinct_approx),
    ),
    row(
        "rowCountDistinctApprox",
        &[req("data"), opt("type", Default::Str("KMV"))],
        Rule::Fn(rule_count_distinct_approx),
        Eval::Fn(eval_count_distinct_approx),
    ),
    row(
        "colCountDistinctApprox",
        &[req("data"), opt("type", Default::Str("KMV"))],
        Rule::Fn(rule_count_distinct_approx),
        Eval::Fn(eval_count_distinct_approx),
    ),
    row(
        "unique",
        &[req("target"), opt("dir", Default::Str("rc"))],
        Rule::Fn(rule_unknown_matrix),
        Eval::Fn(eval_unique),
    ),
    Builtin {
        variadic: true,
        ..row(
            "moment",
            &[req("X"), req("k")],
            Rule::Fn(rule_double),
            Eval::Fn(eval_moment),
        )
    },
    Builtin {
        variadic: true,
        ..row(
            "cov",
            &[req("X"), req("Y")],
            Rule::Fn(rule_double),
            Eval::Fn(eval_cov),
        )
    },
    row(
        "contains",
        &[req("target"), req("pattern")],
        Rule::Fn(rule_bool),
        Eval::Fn(eval_contains),
    ),
    row(
        "xor",
        &[req("x"), req("y")],
        Rule::Fn(rule_xor),
        Eval::Fn(eval_xor),
    ),
    // SystemDS's deprecated spelling of a comparison: ppred(X, Y, ">") is X > Y
    row(
        "ppred",
        &[req("x"), req("y"), req("op")],
        Rule::Fn(rule_ppred),
        Eval::Fn(eval_ppred),
    ),
    row(
        "as.logical",
        X,
        Rule::Fn(rule_bool),
        Eval::Fn(eval_as_logical),
    ),
    // SystemDS's other spelling of as.logical
    row(
        "as.boolean",
        X,
        Rule::Fn(rule_bool),
        Eval::Fn(eval_as_logical),
    ),
    row("nnz", X, Rule::Fn(rule_int), Eval::Fn(eval_nnz)),
    row("prod", X, Rule::Fn(rule_double), Eval::Fn(eval_prod)),
];

const fn math(name: &'static str, f: MathFn) -> Builtin {
    row(name, X, Rule::Math(f), Eval::Math(f))
}

/// The row of a builtin name.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    // SystemDS's own scripts write some builtins capitalized (`Rand(...)` in kmeans)
    TABLE
        .iter()
        .find(|b| b.name == name)
        .or_else(|| TABLE.iter().find(|b| b.name.eq_ignore_ascii_case(name)))
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
                Ty::Str | Ty::List => return Err(type_err(sig.span, sig.name, a)),
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
        Rule::Math(f) => {
            let a = &sig.args[0];
            let pred = matches!(f, MathFn::IsNaN | MathFn::IsNA | MathFn::IsInf);
            match a.ty {
                Ty::Str | Ty::List => Err(type_err(sig.span, sig.name, a)),
                Ty::Matrix(..) => Ok((a.ty, None)),
                Ty::Scalar(_) if pred => Ok((
                    Ty::Scalar(ScalarTy::Bool),
                    a.konst.map(|k| Scalar::Bool(f.apply(k.as_f64()) != 0.0)),
                )),
                Ty::Scalar(_) => Ok((
                    Ty::Scalar(ScalarTy::Double),
                    a.konst.map(|k| Scalar::Double(f.apply(k.as_f64()))),
                )),
            }
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
        Some(v) if v < 0.0 || !v.is_finite() => Err(SpannedError::new(
            x.span,
            format!(
                "{what} of {} must be a non-negative integer, found {v}",
                sig.name
            ),
        )),
        // the integer part of a fractional size, as SystemDS
        Some(v) => Ok(Some(v as usize)),
        None => Ok(None),
    }
}

fn rule_t(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    Ok((Ty::Matrix(c, r), None))
}

fn rule_dim(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    if sig.name == "length" && sig.args[0].ty == Ty::List {
        return Ok((Ty::Scalar(ScalarTy::Int), None));
    }
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
    if b.ty == Ty::Str {
        return Err(type_err(b.span, "log", b));
    }
    // a matrix base is cell-wise, as in SystemDS: log(x) / log(B[i, j])
    let ty = match (x.ty, b.ty) {
        (Ty::Matrix(r, c), Ty::Matrix(r2, c2)) => Ty::Matrix(r.or(r2), c.or(c2)),
        (Ty::Matrix(..), _) => x.ty,
        (_, Ty::Matrix(..)) => b.ty,
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
        // the entry's own type is known when it runs (SystemDS types it UNKNOWN): typed as
        // an integer, so that arithmetic on it takes its value type from the entry's value
        // (an integer entry plus 1 is an integer, a double entry's sum a double), where a
        // double type would make every result a double (see `ExprKind::Binary` in exec)
        Ty::List => Ok((Ty::Scalar(ScalarTy::Int), None)),
        Ty::Str => Err(type_err(sig.span, sig.name, x)),
    }
}

fn rule_as_matrix(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let x = &sig.args[0];
    match x.ty {
        Ty::Matrix(..) => Ok((x.ty, None)),
        Ty::Scalar(_) => Ok((Ty::Matrix(Some(1), Some(1)), None)),
        Ty::List => Ok((Ty::Matrix(None, None), None)),
        Ty::Str => Err(type_err(sig.span, sig.name, x)),
    }
}

fn rule_as_number(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let x = &sig.args[0];
    match x.ty {
        Ty::Matrix(r, c) => {
            shape::as_scalar((r, c)).map_err(|m| SpannedError::new(sig.span, m))?;
        }
        Ty::Str | Ty::List => return Err(type_err(sig.span, sig.name, x)),
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

/// `lineage(X)`: SystemDS's lineage trace of a matrix or list, a string. spores keeps no
/// lineage, so the call is checked as SystemDS checks it and fails only if it runs: an
/// assignment no statement reads is skipped (as SystemDS removes it), so a program that
/// computes a trace it never uses runs.
fn rule_lineage(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let a = &sig.args[0];
    match a.ty {
        Ty::Matrix(..) | Ty::List => Ok((Ty::Str, None)),
        t => Err(SpannedError::new(
            a.span,
            format!("lineage takes a matrix or a list (SystemDS's LINEAGE), found {t}"),
        )),
    }
}

fn eval_lineage(ctx: &mut Ctx, _: &[Value]) -> Res<Value> {
    Err(SpannedError::new(
        ctx.span,
        "not supported: the lineage trace of a value (spores keeps no lineage; a `lineage(..)` \
         whose value no statement uses is skipped)",
    ))
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
            if let (Some(text), Some(r), Some(c)) = (&v.text, nr, nc) {
                let n = parse_cells(text)
                    .map_err(|m| SpannedError::new(v.span, m))?
                    .len();
                if n != r * c && n != 1 {
                    return Err(SpannedError::new(
                        v.span,
                        format!("{n} values for a {r}x{c} matrix"),
                    ));
                }
            }
        }
        Ty::List => return Err(type_err(v.span, sig.name, v)),
    }
    Ok((Ty::Matrix(nr, nc), None))
}

/// The cells of `matrix("1 -1 0", ...)`: numbers separated by spaces or commas.
fn parse_cells(text: &str) -> Result<Vec<f64>, String> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .map(|t| match t {
            "NaN" => Ok(f64::NAN),
            "Inf" | "Infinity" => Ok(f64::INFINITY),
            "-Inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => t
                .parse::<f64>()
                .map_err(|_| format!("\"{t}\" is not a number")),
        })
        .collect()
}

fn rule_rand(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let nr = size_arg(sig, 0, "rows")?;
    let nc = size_arg(sig, 1, "cols")?;
    want_scalar(sig, 2, "min")?;
    want_scalar(sig, 3, "max")?;
    want_scalar(sig, 4, "sparsity")?;
    want_scalar(sig, 5, "seed")?;
    let pdf = &sig.args[6];
    if let Some(name) = &pdf.text {
        kernels::Pdf::parse(name, 1.0).map_err(|e| {
            SpannedError::new(pdf.span, "unsupported pdf for rand").with_note(e.message)
        })?;
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

/// The default of an option that is only passed on when given (`read`'s options).
const ABSENT: Default = Default::Str("");

/// The type of a `read`: a matrix (with constant `rows` and `cols` as its shape, which the
/// reader enforces, else the `.mtd`'s, else a Matrix Market header's) unless `data_type="scalar"` is written or the file's `.mtd` says so
/// (SystemDS reads the metadata when it compiles, too); a scalar's value type from
/// `value_type`, else the `.mtd`, else double. The evaluation applies the same rule.
fn read_type(
    path: Option<&str>,
    data_type: Option<&str>,
    value_type: Option<&str>,
) -> Result<Ty, String> {
    let mtd = path.and_then(|p| io::read_metadata(Path::new(p)).ok().flatten());
    let data_type = match data_type {
        Some(d) => d.to_ascii_lowercase(),
        None => mtd
            .as_ref()
            .and_then(|m| m.data_type.clone())
            .unwrap_or_else(|| "matrix".into()),
    };
    match data_type.as_str() {
        "matrix" => {
            // the shape of the `.mtd` (SystemDS's read has it when it compiles, so its
            // rewrites and its value types see it: `sum(X != 0)` of a 1x1 X is a boolean)
            let dim = |d: Option<i64>| d.and_then(|d| usize::try_from(d).ok());
            let (r, c) = match (mtd, path) {
                (Some(m), _) => (dim(m.rows), dim(m.cols)),
                // no `.mtd`: a Matrix Market header's size, as SystemDS reads it
                (None, Some(p)) => io::matrix_market_size(Path::new(p))
                    .map_or((None, None), |(r, c)| (Some(r), Some(c))),
                (None, None) => (None, None),
            };
            return Ok(Ty::Matrix(r, c));
        }
        "list" => return Ok(Ty::List),
        "scalar" => {}
        d => {
            return Err(format!(
                "unknown data_type \"{d}\" for read (expected \"matrix\", \"scalar\" or \"list\")"
            ))
        }
    }
    let vt = match value_type {
        Some(v) => v.to_ascii_lowercase(),
        None => mtd
            .and_then(|m| m.value_type)
            .unwrap_or_else(|| "double".into()),
    };
    Ok(match vt.as_str() {
        "double" | "fp64" => Ty::Scalar(ScalarTy::Double),
        "int" | "int64" => Ty::Scalar(ScalarTy::Int),
        "boolean" => Ty::Scalar(ScalarTy::Bool),
        "string" => Ty::Str,
        other => {
            return Err(format!(
                "unknown value_type \"{other}\" for read (expected \"double\", \"int\", \"boolean\" or \"string\")"
            ))
        }
    })
}

/// The index of `read`'s parameter `name`.
fn read_param(name: &str) -> usize {
    let row = TABLE.iter().find(|b| b.name == "read").expect("read row");
    row.params
        .iter()
        .position(|p| p.name == name)
        .expect("a read parameter")
}

fn rule_read(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let p = &sig.args[0];
    if p.ty != Ty::Str {
        return Err(
            SpannedError::new(p.span, "the file name of read must be a string")
                .with_label(format!("this is {}", p.ty)),
        );
    }
    // a string option is given when it is not the "" of ABSENT; data_type and value_type
    // decide the type, so they must be literals
    let given = |name: &str| -> Res<Option<String>> {
        let a = &sig.args[read_param(name)];
        match (&a.text, a.ty) {
            (Some(t), _) if t.is_empty() => Ok(None),
            (Some(t), _) => Ok(Some(t.clone())),
            _ => Err(SpannedError::new(
                a.span,
                format!("the {name} of read must be a string literal"),
            )),
        }
    };
    let (dt, vt) = (given("data_type")?, given("value_type")?);
    let check = |name: &str, v: &Option<String>, ok: &[&str]| -> Res<()> {
        match v {
            Some(v) if !ok.contains(&v.to_ascii_lowercase().as_str()) => {
                let quoted: Vec<String> = ok.iter().map(|o| format!("\"{o}\"")).collect();
                Err(SpannedError::new(
                    sig.args[read_param(name)].span,
                    format!("unknown {name} \"{v}\" for read"),
                )
                .with_note(format!("expected {}", quoted.join(" or "))))
            }
            _ => Ok(()),
        }
    };
    check("data_type", &dt, &["matrix", "scalar", "list"])?;
    check(
        "value_type",
        &vt,
        &["double", "fp64", "int", "int64", "boolean", "string"],
    )?;
    let ty = read_type(p.text.as_deref(), dt.as_deref(), vt.as_deref())
        .map_err(|e| SpannedError::new(sig.span, e))?;
    let whole = |name: &str| {
        sig.args[read_param(name)]
            .konst
            .map(|k| k.as_f64())
            .filter(|v| *v >= 0.0 && v.fract() == 0.0)
            .map(|v| v as usize)
    };
    Ok((
        match ty {
            Ty::Matrix(r, c) => Ty::Matrix(whole("rows").or(r), whole("cols").or(c)),
            t => t,
        },
        None,
    ))
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
            Value::Str(_) | Value::List(_) => Err(SpannedError::new(
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
        Eval::Math(f) => match &args[0] {
            Value::Matrix(m) => Ok(Value::matrix(kernels::math::map(f, m))),
            Value::Scalar(s) => {
                let v = f.apply(s.as_f64());
                Ok(
                    if matches!(f, MathFn::IsNaN | MathFn::IsNA | MathFn::IsInf) {
                        Value::Scalar(Scalar::Bool(v != 0.0))
                    } else {
                        Value::double(v)
                    },
                )
            }
            Value::Str(_) | Value::List(_) => Err(SpannedError::new(
                ctx.at(0),
                format!("{} cannot be applied to a string", b.name),
            )),
        },
        Eval::Fn(f) => {
            ctx.name = b.name;
            f(ctx, args)
        }
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
        // a string that is a number is read as Java's Double.parseDouble reads it, as SystemDS
        // does for a string in a number's place (`replace(..., replacement="Infinity")`)
        Value::Str(t) => spores_runtime::format::parse_java_double(t)
            .map(Scalar::Double)
            .ok_or_else(|| {
                SpannedError::new(
                    ctx.at(i),
                    format!("expected a number, found the string \"{t}\""),
                )
            }),
        Value::List(_) => Err(SpannedError::new(
            ctx.at(i),
            "expected a number, found a list",
        )),
    }
}

fn size_value(ctx: &Ctx, args: &[Value], i: usize, what: &str) -> Res<usize> {
    let v = scalar_arg(ctx, args, i)?.as_f64();
    if v < 0.0 || !v.is_finite() {
        return Err(SpannedError::new(
            ctx.at(i),
            format!("{what} must be a non-negative integer, found {v}"),
        ));
    }
    // SystemDS takes the integer part of a fractional size (`rows=max_iter/100`)
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
    if let Value::List(l) = &a[0] {
        return Ok(Value::Scalar(Scalar::Int(l.items.len() as i64)));
    }
    Ok(Value::Scalar(Scalar::Int(
        matrix_arg(ctx, a, 0)?.cells() as i64
    )))
}

fn eval_log(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use spores_runtime::ops::BinOp::Div;
    if let Value::Matrix(bm) = &a[1] {
        // a matrix base: cell-wise log(X[i, j]) / log(B[i, j]); a scalar x with a matrix base
        // is log(B) / log(x) in SystemDS (its scalar-matrix log takes the scalar as the base)
        let lb = kernels::unary(UnaryOp::Log, bm);
        return match &a[0] {
            Value::Scalar(s) => Ok(Value::matrix(kernels::binary(
                Div,
                Operand::Matrix(&lb),
                Operand::Scalar(s.as_f64().ln()),
            ))),
            Value::Matrix(m) if m.shape() != lb.shape() => Err(SpannedError::new(
                ctx.at(1),
                format!(
                    "dimension mismatch in log: {}x{} and a base of {}x{}",
                    m.rows(),
                    m.cols(),
                    lb.rows(),
                    lb.cols()
                ),
            )),
            Value::Matrix(m) => {
                let lx = kernels::unary(UnaryOp::Log, m);
                Ok(Value::matrix(kernels::binary(
                    Div,
                    Operand::Matrix(&lx),
                    Operand::Matrix(&lb),
                )))
            }
            Value::Str(_) | Value::List(_) => Err(SpannedError::new(
                ctx.at(0),
                "log cannot be applied to a string",
            )),
        };
    }
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
        Value::Str(_) | Value::List(_) => Err(SpannedError::new(
            ctx.at(0),
            "log cannot be applied to a string",
        )),
    }
}

fn operand(v: &Value) -> Operand<'_> {
    match v {
        Value::Scalar(s) => Operand::Scalar(s.as_f64()),
        Value::Matrix(m) => Operand::Matrix(m),
        Value::Str(_) | Value::List(_) => unreachable!("the rule rejects strings here"),
    }
}

/// A scalar argument's value (0 for anything else).
fn scalar_value(v: &Value) -> f64 {
    match v {
        Value::Scalar(s) => s.as_f64(),
        _ => 0.0,
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
        Value::List(l) => match l.items.as_slice() {
            [v @ (Value::Scalar(_) | Value::Str(_))] => Ok(v.clone()),
            [Value::Matrix(m)] => {
                shape::as_scalar(dims(m)).map_err(|msg| SpannedError::new(ctx.span, msg))?;
                Ok(Value::double(m.get(0, 0)))
            }
            _ => Err(SpannedError::new(
                ctx.span,
                format!(
                    "as.scalar of a list needs one scalar entry, found {} entries",
                    l.items.len()
                ),
            )),
        },
        v => Ok(v.clone()),
    }
}

fn eval_as_matrix(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    match &a[0] {
        Value::Matrix(_) => Ok(a[0].clone()),
        // SystemDS: one entry passes through (a scalar as 1x1), several scalars make a column
        Value::List(l) => match l.items.as_slice() {
            [v @ Value::Matrix(_)] => Ok(v.clone()),
            [Value::Scalar(s)] => Ok(Value::matrix(Matrix::filled(1, 1, s.as_f64()))),
            items if items.len() > 1 && items.iter().all(|v| matches!(v, Value::Scalar(_))) => {
                let v: Vec<f64> = items.iter().map(scalar_value).collect();
                Ok(Value::matrix(Matrix::from_dense(
                    matrix::Dense::from_shape_vec((v.len(), 1), v).expect("a column"),
                )))
            }
            _ => Err(SpannedError::new(
                ctx.span,
                "as.matrix of a list needs one matrix or scalar entry, or several scalars",
            )),
        },
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

fn eval_to_string(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let Value::Matrix(m) = &a[0] else {
        return Ok(Value::Str(a[0].to_string()));
    };
    let count = |ctx: &Ctx, i: usize| -> Res<usize> {
        let v = scalar_arg(ctx, a, i)?.as_f64();
        if v < 0.0 || v.is_nan() {
            return Err(SpannedError::new(
                ctx.at(i),
                format!("toString: {} must not be negative", ctx.name),
            ));
        }
        Ok(v.min(1e9) as usize)
    };
    let o = spores_runtime::format::ToString {
        rows: count(ctx, 1)?,
        cols: count(ctx, 2)?,
        decimal: count(ctx, 3)?.min(340),
        sparse: scalar_arg(ctx, a, 4)?.as_f64() != 0.0,
        sep: a[5].to_string(),
        linesep: a[6].to_string(),
    };
    Ok(Value::Str(spores_runtime::format::matrix_to_string_with(
        m, &o,
    )))
}

fn eval_matrix(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let r = size_value(ctx, a, 1, "rows of matrix")?;
    let c = size_value(ctx, a, 2, "cols of matrix")?;
    let byrow = scalar_arg(ctx, a, 3)?.as_f64() != 0.0;
    match &a[0] {
        Value::Str(text) => {
            let cells = parse_cells(text).map_err(|m| SpannedError::new(ctx.at(0), m))?;
            if cells.len() == 1 {
                check_alloc(ctx.span, r, c, 1.0)?;
                return Ok(Value::matrix(kernels::constant(r, c, cells[0])));
            }
            if cells.len() != r * c {
                return Err(SpannedError::new(
                    ctx.at(0),
                    format!("{} values for a {r}x{c} matrix", cells.len()),
                ));
            }
            let arr = if byrow {
                matrix::Dense::from_shape_vec((r, c), cells)
            } else {
                matrix::Dense::from_shape_vec((c, r), cells).map(|x| x.reversed_axes())
            }
            .expect("the cell count is checked");
            Ok(Value::matrix(Matrix::from_dense(
                arr.as_standard_layout().to_owned(),
            )))
        }
        Value::Matrix(m) => {
            shape::reshape(dims(m), Some(r), Some(c))
                .map_err(|msg| SpannedError::new(ctx.span, msg))?;
            // byrow=TRUE reads and fills row by row; byrow=FALSE reads the cells column by
            // column and fills the result column by column (as SystemDS does)
            let d = m.to_dense();
            let cells: Vec<f64> = if byrow {
                d.iter().copied().collect()
            } else {
                d.t().iter().copied().collect()
            };
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
    let pdf = kernels::Pdf::parse(&a[6].to_string(), scalar_arg(ctx, a, 7)?.as_f64())
        .map_err(|e| SpannedError::new(ctx.at(6), e.to_string()))?;
    let spec = RandSpec {
        rows,
        cols,
        min,
        max,
        sparsity,
        seed,
    };
    let m = kernels::rand_with(&spec, pdf, kernels::DEFAULT_BLOCK)
        .map_err(|e| SpannedError::new(ctx.span, e.to_string()))?;
    Ok(Value::matrix(m))
}

fn eval_read(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let path = a[0].to_string();
    let row = TABLE.iter().find(|b| b.name == "read").expect("read row");
    // the options given, in parameter order (ABSENT ones left out)
    let opts: Vec<(&str, Value)> = row.params[1..]
        .iter()
        .zip(&a[1..])
        .filter(|(_, v)| !matches!(v, Value::Str(s) if s.is_empty()))
        .map(|(p, v)| (p.name, v.clone()))
        .collect();
    let text = |name: &str| {
        opts.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let ty = read_type(
        Some(&path),
        text("data_type").as_deref(),
        text("value_type").as_deref(),
    )
    .map_err(|e| SpannedError::new(ctx.span, e))?;
    crate::exec::files::read(&path, &opts, ty).map_err(|m| SpannedError::new(ctx.span, m))
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
    // dense storage takes 8 bytes a cell; CSR about 12 bytes a non-zero plus the row
    // pointers, for a matrix narrow enough for CSR's column indices
    let bytes =
        if density >= matrix::SPARSE_THRESHOLD || cols <= 1 || cols > matrix::MAX_SPARSE_COLS {
            8.0 * cells
        } else {
            matrix::CSR_ENTRY_BYTES as f64 * density * cells
                + matrix::CSR_ROW_BYTES as f64 * rows as f64
        };
    if rows.checked_mul(cols).is_none() || bytes > MAX_MATRIX_BYTES {
        let err = SpannedError::new(
            span,
            format!(
                "a {rows}x{cols} matrix is too large (about {:.1e} bytes)",
                bytes
            ),
        )
        .with_note("the runtime keeps matrices in memory; the limit is 64 GiB");
        return Err(if cols > matrix::MAX_SPARSE_COLS {
            err.with_note(format!(
                "a matrix of more than {} columns is stored densely (sparse storage indexes \
                 columns with 32 bits)",
                matrix::MAX_SPARSE_COLS
            ))
        } else {
            err
        });
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
        Value::Str(_) | Value::List(_) => unreachable!("the checker rejects strings in arithmetic"),
    }
}

/// `a op b` on scalars, or element-wise with broadcasting (shapes checked by the caller).
pub fn binary(op: spores_runtime::ops::BinOp, a: &Value, b: &Value) -> Value {
    if let (Value::Scalar(x), Value::Scalar(y)) = (a, b) {
        return Value::Scalar(crate::check::scalar::binary(op, *x, *y));
    }
    Value::matrix(kernels::binary(op, operand(a), operand(b)))
}

/// The n-ary `+` or `*` of a chain that SystemDS folds into one operation
/// ([`kernels::elementwise::nary`]: its order of operations and its representation), when
/// every operand is a scalar or a matrix of one shape and one at least is a matrix (SystemDS's
/// condition, with the shapes it knows once it recompiles); `None` otherwise, for the caller
/// to apply the operator as written.
pub fn nary(op: spores_runtime::ops::BinOp, operands: &[Value]) -> Option<Value> {
    let mut shape = None;
    for v in operands {
        match v {
            Value::Scalar(_) => {}
            Value::Matrix(m) if shape.is_none() || shape == Some(m.shape()) => {
                shape = Some(m.shape())
            }
            _ => return None,
        }
    }
    shape?;
    let ops: Vec<Operand<'_>> = operands.iter().map(operand).collect();
    Some(Value::matrix(kernels::elementwise::nary(op, &ops)))
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

// ---- rows backed by the runtime's kernels -------------------------------------------------

fn rt<T>(ctx: &Ctx, r: Result<T, spores_runtime::error::RuntimeError>) -> Res<T> {
    r.map_err(|e| SpannedError::new(ctx.span, e.to_string()))
}

/// The argument as a string (for `margin=`, `fn=`, `op=`).
fn text_arg(ctx: &Ctx, a: &[Value], i: usize) -> Res<String> {
    match &a[i] {
        Value::Str(s) => Ok(s.clone()),
        _ => Err(SpannedError::new(ctx.at(i), "expected a string")),
    }
}

/// Whether an optional parameter was given (its absent default is a NaN scalar).
fn given(v: &Value) -> bool {
    !matches!(v, Value::Scalar(s) if s.as_f64().is_nan())
}

fn want_matrices(sig: &Sig) -> Res<()> {
    for (i, a) in sig.args.iter().enumerate() {
        if !a.ty.is_matrix() {
            return Err(SpannedError::new(
                a.span,
                format!("argument {} of {} must be a matrix", i + 1, sig.name),
            )
            .with_label(format!("this is {}", a.ty)));
        }
    }
    Ok(())
}

/// A matrix of the first argument's shape.
fn rule_same(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    Ok((Ty::Matrix(r, c), None))
}

/// `removeEmpty`: a matrix whose shape depends on values; SystemDS's compile-time checks
/// (`ParameterizedBuiltinFunctionExpression.validateRemoveEmpty`): a literal `margin` other
/// than "rows" or "cols", a `select` that is not a matrix, an `empty.return` that is not a
/// boolean.
fn rule_remove_empty(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_matrix(sig, 0)?;
    let margin = &sig.args[1];
    if let Some(t) = margin
        .text
        .as_deref()
        .filter(|t| *t != "rows" && *t != "cols")
    {
        return Err(SpannedError::new(
            margin.span,
            format!("named parameter 'margin' has an invalid value '{t}'; please specify 'rows' or 'cols'"),
        ));
    }
    let select = &sig.args[2];
    let absent = select.konst.is_some_and(|k| k.as_f64().is_nan());
    if !select.ty.is_matrix() && !absent {
        return Err(SpannedError::new(
            select.span,
            "the select argument of removeEmpty must be a matrix",
        )
        .with_label(format!("this is {}", select.ty)));
    }
    let empty = &sig.args[3];
    if empty.ty != Ty::Scalar(ScalarTy::Bool) {
        return Err(SpannedError::new(
            empty.span,
            "the empty.return argument of removeEmpty must be a boolean",
        )
        .with_label(format!("this is {}", empty.ty)));
    }
    Ok((Ty::Matrix(None, None), None))
}

/// A matrix whose shape depends on values.
fn rule_unknown_matrix(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_matrix(sig, 0)?;
    Ok((Ty::Matrix(None, None), None))
}

/// `solve(A, b)`: `ncol(A)` x `ncol(b)` (A is square: its rows when its columns are not
/// known), the shape SystemDS's `BinaryOp` gives it, so a 1x1 result is known to be 1x1 when
/// its inputs' shapes are (`sum(R != 0)` is then SystemDS's boolean `as.scalar`).
fn rule_solve(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    let cb = match sig.args[1].ty {
        Ty::Matrix(_, c) => c,
        _ => None,
    };
    Ok((Ty::Matrix(c.or(r), cb), None))
}

fn rule_double(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_matrix(sig, 0)?;
    Ok((Ty::Scalar(ScalarTy::Double), None))
}

fn rule_int(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_matrix(sig, 0)?;
    Ok((Ty::Scalar(ScalarTy::Int), None))
}

fn rule_bool(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    if sig.args[0].ty == Ty::Str {
        return Err(type_err(sig.span, sig.name, &sig.args[0]));
    }
    Ok((Ty::Scalar(ScalarTy::Bool), None))
}

/// A column with the first argument's rows.
fn rule_row_col(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, _) = want_matrix(sig, 0)?;
    Ok((Ty::Matrix(r, Some(1)), None))
}

/// A row with the first argument's columns.
fn rule_col_row(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (_, c) = want_matrix(sig, 0)?;
    Ok((Ty::Matrix(Some(1), c), None))
}

/// `as.list(L)`, `remove(L, i)`: a list from a list.
fn rule_list(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let x = &sig.args[0];
    if x.ty != Ty::List {
        return Err(
            SpannedError::new(x.span, format!("{} needs a list argument", sig.name))
                .with_label(format!("this is {}", x.ty)),
        );
    }
    if sig.args.len() > 1 {
        want_scalar(sig, 1, "the position")?;
    }
    Ok((Ty::List, None))
}

fn list_arg(ctx: &Ctx, a: &[Value], i: usize) -> Res<Arc<List>> {
    match &a[i] {
        Value::List(l) => Ok(l.clone()),
        _ => Err(SpannedError::new(ctx.at(i), "expected a list")),
    }
}

/// The name of the internal builtin that binds one argument of `eval(f, L)` from a list `L`
/// whose entries are known only when it runs (a space: no DML program can call it).
pub const EVAL_ARG: &str = "eval argument";

/// `eval argument`(L, i, name, n, has_default, default): the argument of the function's
/// parameter `name` (the `i`-th of `n`) in `eval(f, L)`, as a list of one entry, bound as
/// SystemDS's eval binds a list when the call runs: a named list by its names (each must be
/// a parameter), an unnamed one by position (at most `n` entries); a missing entry takes the
/// parameter's literal default, else is an error.
fn eval_eval_arg(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let l = list_arg(ctx, a, 0)?;
    let pos = scalar_arg(ctx, a, 1)?.as_f64() as usize;
    let Value::Str(name) = &a[2] else {
        unreachable!("the checker passes the parameter's name")
    };
    let n = scalar_arg(ctx, a, 3)?.as_f64() as usize;
    let has_default = scalar_arg(ctx, a, 4)?.as_f64() != 0.0;
    let entry = match &l.names {
        Some(names) => names
            .iter()
            .position(|x| x == name)
            .map(|i| l.items[i].clone()),
        None if l.items.len() > n => {
            return Err(SpannedError::new(
                ctx.at(0),
                format!(
                    "eval with a list of {} entries for a function of {n} parameters",
                    l.items.len()
                ),
            ))
        }
        None => l.items.get(pos - 1).cloned(),
    };
    let v = match entry {
        Some(v) => v,
        None if has_default => a[5].clone(),
        None => {
            return Err(SpannedError::new(
                ctx.at(0),
                format!("eval: the list gives no argument for the parameter `{name}`"),
            ))
        }
    };
    Ok(Value::List(Arc::new(List {
        items: vec![v],
        names: None,
    })))
}

/// `as.list(L)`: the nested list of a list whose only entry is a list (SystemDS's list
/// unnesting), any other list itself.
fn eval_as_list(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let l = list_arg(ctx, a, 0)?;
    Ok(match l.items.as_slice() {
        [inner @ Value::List(_)] => inner.clone(),
        _ => Value::List(l),
    })
}

/// `[rest, entry] = remove(L, i)`: the list without its `i`-th entry, and a list of that
/// entry alone (unnamed).
fn eval_remove(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let l = list_arg(ctx, a, 0)?;
    let p = scalar_arg(ctx, a, 1)?.as_f64();
    if p < 1.0 || p > l.items.len() as f64 || p.fract() != 0.0 {
        return Err(SpannedError::new(
            ctx.at(1),
            format!("list index {p} out of bounds 1..{}", l.items.len()),
        ));
    }
    let p = p as usize - 1;
    let mut rest = (*l).clone();
    let entry = rest.items.remove(p);
    if let Some(n) = &mut rest.names {
        n.remove(p);
    }
    let removed = List {
        items: vec![entry],
        names: None,
    };
    Ok(vec![
        Value::List(Arc::new(rest)),
        Value::List(Arc::new(removed)),
    ])
}

fn eval_remove_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_remove(ctx, a)?.swap_remove(0))
}

/// `append(L, x)`: the list with `x` added at the end; a list of one entry adds that entry
/// with its name (as SystemDS does).
fn append_list(ctx: &Ctx, a: &[Value]) -> Res<Value> {
    let l = list_arg(ctx, a, 0)?;
    let mut out = (*l).clone();
    let (name, v) = match &a[1] {
        Value::List(x) if x.items.len() == 1 => {
            (x.names.as_ref().map(|n| n[0].clone()), x.items[0].clone())
        }
        v => (None, v.clone()),
    };
    if let Some(names) = &mut out.names {
        let Some(name) = name else {
            return Err(SpannedError::new(
                ctx.at(1),
                "an unnamed entry cannot be appended to a named list",
            ));
        };
        names.push(name);
    }
    out.items.push(v);
    Ok(Value::List(Arc::new(out)))
}

fn rule_bind(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    // cbind(L) / rbind(L) of one list: its entries (matrices) bound in order
    if sig.args.len() == 1 && sig.args[0].ty == Ty::List && sig.name != "append" {
        return Ok((Ty::Matrix(None, None), None));
    }
    if sig.args[0].ty == Ty::List {
        if sig.args.len() != 2 {
            return Err(SpannedError::new(
                sig.span,
                format!("{} of a list takes the list and one value", sig.name),
            ));
        }
        return Ok((Ty::List, None));
    }
    if let Some(l) = sig.args.iter().find(|a| a.ty == Ty::List) {
        return Err(type_err(l.span, sig.name, l));
    }
    // append(s, t) of strings (or cbind, rbind) joins them with a line break
    if sig.args.iter().any(|a| a.ty == Ty::Str) {
        for a in sig.args {
            if a.ty.is_matrix() {
                return Err(type_err(a.span, "append of a string", a));
            }
        }
        return Ok((Ty::Str, None));
    }
    want_matrices(sig)?;
    let dims: Vec<(Option<usize>, Option<usize>)> = sig
        .args
        .iter()
        .map(|a| match a.ty {
            Ty::Matrix(r, c) => (r, c),
            _ => (None, None),
        })
        .collect();
    let rows = sig.name == "rbind";
    // the dimension that is joined adds up, the other must agree (checked when it runs)
    let sum = |f: fn(&Dims) -> Option<usize>| dims.iter().map(f).sum::<Option<usize>>();
    let same = |f: fn(&Dims) -> Option<usize>| {
        let first = f(&dims[0]);
        dims.iter()
            .all(|d| f(d) == first)
            .then_some(first)
            .flatten()
    };
    Ok(if rows {
        (Ty::Matrix(sum(|d| d.0), same(|d| d.1)), None)
    } else {
        (Ty::Matrix(same(|d| d.0), sum(|d| d.1)), None)
    })
}

fn eval_bind(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    if let [Value::List(l)] = a {
        let mut parts = Vec::with_capacity(l.items.len());
        for v in &l.items {
            match v {
                Value::Matrix(m) => parts.push(m.clone()),
                _ => {
                    return Err(SpannedError::new(
                        ctx.at(0),
                        format!("{} of a list needs a list of matrices", ctx.name),
                    ))
                }
            }
        }
        if parts.is_empty() {
            return Err(SpannedError::new(
                ctx.at(0),
                format!("{} of an empty list", ctx.name),
            ));
        }
        let refs: Vec<&Matrix> = parts.iter().map(|m| &**m).collect();
        let m = if ctx.name == "rbind" {
            kernels::structure::rbind(&refs)
        } else {
            kernels::structure::cbind(&refs)
        };
        return Ok(Value::matrix(rt(ctx, m)?));
    }
    if matches!(a[0], Value::List(_)) {
        return append_list(ctx, a);
    }
    if a.iter().any(|v| matches!(v, Value::Str(_))) {
        let parts: Vec<String> = a.iter().map(|v| v.to_string()).collect();
        return Ok(Value::Str(parts.join("\n")));
    }
    let mut parts = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        parts.push(matrix_arg(ctx, a, i)?);
    }
    let refs: Vec<&Matrix> = parts.iter().map(|m| &**m).collect();
    let rows = ctx.name == "rbind";
    let m = if rows {
        kernels::structure::rbind(&refs)
    } else {
        kernels::structure::cbind(&refs)
    };
    Ok(Value::matrix(rt(ctx, m)?))
}

fn rule_diag(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    Ok(match (r, c) {
        (Some(n), Some(1)) => (Ty::Matrix(Some(n), Some(n)), None),
        (Some(n), Some(m)) if n == m => (Ty::Matrix(Some(n), Some(1)), None),
        _ => (Ty::Matrix(None, None), None),
    })
}

fn eval_diag(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    Ok(Value::matrix(rt(ctx, kernels::structure::diag(&m))?))
}

fn eval_rev(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::matrix(kernels::structure::rev(&*matrix_arg(
        ctx, a, 0,
    )?)))
}

/// `compress(X)`, `decompress(X)`: `X` itself.
fn eval_same(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Matrix(matrix_arg(ctx, a, 0)?))
}

fn eval_roll(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let shift = scalar_arg(ctx, a, 1)?.as_f64();
    Ok(Value::matrix(kernels::structure::roll(&m, shift as i64)))
}

fn eval_tri(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let diag = scalar_arg(ctx, a, 1)?.as_f64() != 0.0;
    let values = scalar_arg(ctx, a, 2)?.as_f64() != 0.0;
    let lower = ctx.name == "lower.tri";
    Ok(Value::matrix(kernels::structure::triangle(
        &m, lower, diag, values,
    )))
}

fn eval_replace(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let p = scalar_arg(ctx, a, 1)?.as_f64();
    let r = scalar_arg(ctx, a, 2)?.as_f64();
    Ok(Value::matrix(kernels::structure::replace(&m, p, r)))
}

fn eval_remove_empty(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let margin = rt(
        ctx,
        kernels::structure::Margin::parse(&text_arg(ctx, a, 1)?),
    )?;
    let select = if given(&a[2]) {
        Some(matrix_arg(ctx, a, 2)?)
    } else {
        None
    };
    let empty = scalar_arg(ctx, a, 3)?.as_f64() != 0.0;
    let r = kernels::structure::remove_empty(&m, margin, select.as_deref(), empty);
    Ok(Value::matrix(rt(ctx, r)?))
}

fn rule_order(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (r, c) = want_matrix(sig, 0)?;
    let index = sig.args[3].konst.map(|k| k.as_f64() != 0.0);
    Ok(match index {
        Some(true) => (Ty::Matrix(r, Some(1)), None),
        Some(false) => (Ty::Matrix(r, c), None),
        None => (Ty::Matrix(r, None), None),
    })
}

fn eval_order(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let by: Vec<usize> = match &a[1] {
        Value::Matrix(b) => b.to_dense().iter().map(|v| *v as usize).collect(),
        _ => vec![scalar_arg(ctx, a, 1)?.as_f64() as usize],
    };
    let dec = scalar_arg(ctx, a, 2)?.as_f64() != 0.0;
    let idx = scalar_arg(ctx, a, 3)?.as_f64() != 0.0;
    Ok(Value::matrix(rt(
        ctx,
        kernels::structure::order(&m, &by, dec, idx),
    )?))
}

fn seq_incr(from: f64, to: f64, incr: f64) -> f64 {
    if incr.is_nan() {
        kernels::seq_default_incr(from, to)
    } else {
        incr
    }
}

fn rule_seq(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    for i in 0..3 {
        want_scalar(sig, i, "every argument")?;
    }
    let k = |i: usize| sig.args[i].konst.map(Scalar::as_f64);
    let len = match (k(0), k(1), k(2)) {
        (Some(f), Some(t), Some(i)) => kernels::seq_length(f, t, seq_incr(f, t, i)).ok(),
        _ => None,
    };
    Ok((Ty::Matrix(len, Some(1)), None))
}

fn eval_seq(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let f = scalar_arg(ctx, a, 0)?.as_f64();
    let t = scalar_arg(ctx, a, 1)?.as_f64();
    let i = seq_incr(f, t, scalar_arg(ctx, a, 2)?.as_f64());
    Ok(Value::matrix(rt(ctx, kernels::seq(f, t, i))?))
}

fn rule_sample(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_scalar(sig, 0, "range")?;
    let n = size_arg(sig, 1, "size")?;
    Ok((Ty::Matrix(n, Some(1)), None))
}

fn eval_sample(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let range = scalar_arg(ctx, a, 0)?.as_f64() as i64;
    let size = size_value(ctx, a, 1, "size of sample")?;
    let third = scalar_arg(ctx, a, 2)?;
    let seed = scalar_arg(ctx, a, 3)?.as_f64() as i64;
    // as SystemDS: `sample(range, size, k)` with a number `k` (not a boolean) is the seed,
    // without replacement
    let (replace, seed) = match third {
        Scalar::Bool(b) => (b, seed),
        n if seed == -1 => (false, n.as_f64() as i64),
        n => (n.as_f64() != 0.0, seed),
    };
    let seed = if seed == -1 {
        *ctx.rand_calls += 1;
        splitmix(((ctx.span.start as u64) << 32) ^ *ctx.rand_calls) as i64
    } else {
        seed
    };
    Ok(Value::matrix(rt(
        ctx,
        kernels::sample(range, size, replace, seed),
    )?))
}

fn rule_table(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    if !(2..=6).contains(&sig.args.len()) {
        return Err(SpannedError::new(
            sig.span,
            "table takes 2 to 6 arguments: table(A, B[, W][, odim1, odim2][, outputEmptyBlocks])",
        ));
    }
    Ok((Ty::Matrix(None, None), None))
}

fn eval_table(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use kernels::table::TableArg;
    // SystemDS pairs the cells of a row vector and a column vector of the same length (in
    // cell order): make every vector operand a column
    let mut cols: Vec<Value>;
    let a = {
        let vecs: Vec<&Arc<Matrix>> = a[..a.len().min(3)]
            .iter()
            .filter_map(|v| match v {
                Value::Matrix(m) => Some(m),
                _ => None,
            })
            .collect();
        let is_vec = |m: &Matrix| m.rows() == 1 || m.cols() == 1;
        let mixed = vecs.iter().any(|m| m.shape() != vecs[0].shape())
            && vecs
                .iter()
                .all(|m| is_vec(m) && m.cells() == vecs[0].cells());
        if mixed {
            cols = a.to_vec();
            for v in cols.iter_mut().take(3) {
                if let Value::Matrix(m) = v {
                    if m.rows() == 1 && m.cols() != 1 {
                        *v = Value::matrix(kernels::reorg::transpose(m));
                    }
                }
            }
            &cols[..]
        } else {
            a
        }
    };
    fn arg(v: &Value) -> TableArg<'_> {
        match v {
            Value::Matrix(m) => TableArg::Matrix(m),
            Value::Scalar(s) => TableArg::Scalar(s.as_f64()),
            Value::Str(_) | Value::List(_) => TableArg::Scalar(f64::NAN),
        }
    }
    // table(A, B), (A, B, W), (A, B, odim1, odim2), (A, B, W, odim1, odim2); a sixth
    // argument (outputEmptyBlocks) only concerns SystemDS's distributed blocks
    let (w, dims) = match a.len() {
        2 => (TableArg::Scalar(1.0), None),
        3 => (arg(&a[2]), None),
        4 => (
            TableArg::Scalar(1.0),
            Some((
                size_value(ctx, a, 2, "odim1 of table")?,
                size_value(ctx, a, 3, "odim2 of table")?,
            )),
        ),
        _ => (
            arg(&a[2]),
            Some((
                size_value(ctx, a, 3, "odim1 of table")?,
                size_value(ctx, a, 4, "odim2 of table")?,
            )),
        ),
    };
    let r = kernels::table::table(arg(&a[0]), arg(&a[1]), w, dims);
    Ok(Value::matrix(rt(ctx, r)?))
}

/// `aggregate`: a matrix of unknown shape; a literal `fn` SystemDS knows and, for
/// `"centralmoment"`, an `order` of 2, 3 or 4 (SystemDS's compile-time checks).
fn rule_aggregate(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_matrix(sig, 0)?;
    let (f, order) = (&sig.args[2], &sig.args[5]);
    if let Some(name) = &f.text {
        let known = [
            "sum",
            "count",
            "mean",
            "variance",
            "centralmoment",
            "min",
            "max",
        ];
        if !known.contains(&name.as_str()) {
            return Err(SpannedError::new(
                f.span,
                format!(
                    "fn is \"{name}\" but must be one of centralmoment, count, sum, mean, \
                     variance, min, max"
                ),
            ));
        }
        let ok = match (&order.konst, &order.text) {
            (Some(k), _) => matches!(k.as_f64(), v if v == 2.0 || v == 3.0 || v == 4.0),
            (None, Some(t)) => ["2", "3", "4"].contains(&t.trim()),
            // an order known only when the program runs (or absent: the default NaN above)
            (None, None) => true,
        };
        if name == "centralmoment" && !ok {
            return Err(SpannedError::new(
                order.span,
                "for centralmoment, order must be given as 2, 3 or 4",
            ));
        }
    }
    Ok((Ty::Matrix(None, None), None))
}

fn eval_aggregate(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let x = matrix_arg(ctx, a, 0)?;
    let g = matrix_arg(ctx, a, 1)?;
    // `order=3` or `order="3"` (SystemDS's check reads the literal's text)
    let order = match &a[5] {
        Value::Str(t) => Some(t.trim().parse::<f64>().map_err(|_| {
            SpannedError::new(ctx.at(5), format!("order must be 2, 3 or 4, found \"{t}\""))
        })?),
        v if given(v) => Some(scalar_arg(ctx, a, 5)?.as_f64()),
        _ => None,
    };
    let f = rt(
        ctx,
        kernels::table::GroupFn::parse(&text_arg(ctx, a, 2)?, order),
    )?;
    let n = if given(&a[3]) {
        Some(size_value(ctx, a, 3, "ngroups of aggregate")?)
    } else {
        None
    };
    let w = if given(&a[4]) {
        Some(matrix_arg(ctx, a, 4)?)
    } else {
        None
    };
    Ok(Value::matrix(rt(
        ctx,
        kernels::table::grouped_aggregate(&x, &g, w.as_deref(), f, n),
    )?))
}

fn eval_row_index(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let max = ctx.name == "rowIndexMax";
    Ok(Value::matrix(rt(
        ctx,
        kernels::scan::row_index_extreme(&m, max),
    )?))
}

fn eval_cum(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use kernels::scan::CumOp;
    let m = matrix_arg(ctx, a, 0)?;
    let op = match ctx.name {
        "cumsum" => CumOp::Sum,
        "cumprod" => CumOp::Prod,
        "cummin" => CumOp::Min,
        "rowcumsum" => {
            // along each row: t(cumsum(t(X))), as SystemDS rewrites it
            let t = kernels::reorg::transpose(&m);
            let c = kernels::scan::cumulative(CumOp::Sum, &t);
            return Ok(Value::matrix(kernels::reorg::transpose(&c)));
        }
        _ => CumOp::Max,
    };
    Ok(Value::matrix(kernels::scan::cumulative(op, &m)))
}

fn eval_cumsumprod(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    Ok(Value::matrix(rt(ctx, kernels::scan::cumsumprod(&m))?))
}

fn eval_solve(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let (x, y) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    Ok(Value::matrix(rt(ctx, kernels::linalg::solve(&x, &y))?))
}

fn eval_inv(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let x = matrix_arg(ctx, a, 0)?;
    Ok(Value::matrix(rt(ctx, kernels::linalg::inv(&x))?))
}

fn eval_cholesky(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let x = matrix_arg(ctx, a, 0)?;
    Ok(Value::matrix(rt(ctx, kernels::linalg::cholesky(&x))?))
}

fn eval_det(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let x = matrix_arg(ctx, a, 0)?;
    Ok(Value::double(rt(ctx, kernels::linalg::det(&x))?))
}

fn eval_eigen(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let x = matrix_arg(ctx, a, 0)?;
    let (vals, vecs) = rt(ctx, kernels::linalg::eigen(&x))?;
    Ok(vec![Value::matrix(vals), Value::matrix(vecs)])
}

fn eval_eigen_values(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_eigen(ctx, a)?.swap_remove(0))
}

fn eval_lu(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let x = matrix_arg(ctx, a, 0)?;
    let (p, l, u) = rt(ctx, kernels::linalg::lu(&x))?;
    Ok(vec![Value::matrix(p), Value::matrix(l), Value::matrix(u)])
}

fn eval_lu_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_lu(ctx, a)?.swap_remove(0))
}

fn eval_qr(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let x = matrix_arg(ctx, a, 0)?;
    let (h, r) = rt(ctx, kernels::linalg::qr(&x))?;
    Ok(vec![Value::matrix(h), Value::matrix(r)])
}

fn eval_qr_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_qr(ctx, a)?.swap_remove(0))
}

fn eval_svd(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let x = matrix_arg(ctx, a, 0)?;
    let (u, s, v) = rt(ctx, kernels::linalg::svd(&x))?;
    Ok(vec![Value::matrix(u), Value::matrix(s), Value::matrix(v)])
}

fn eval_svd_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_svd(ctx, a)?.swap_remove(0))
}

fn eval_row_class_meet(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let (x, y) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let (c, n) = rt(ctx, kernels::table::row_class_meet(&x, &y))?;
    Ok(vec![Value::matrix(c), Value::matrix(n)])
}

fn eval_row_class_meet_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_row_class_meet(ctx, a)?.swap_remove(0))
}

fn eval_trace(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let x = matrix_arg(ctx, a, 0)?;
    Ok(Value::double(rt(ctx, kernels::scan::trace(&x))?))
}

fn eval_outer(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use spores_runtime::ops::BinOp;
    let (x, y) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let name = text_arg(ctx, a, 2)?;
    let op = BinOp::ALL
        .into_iter()
        .find(|o| o.symbol() == name)
        .ok_or_else(|| {
            SpannedError::new(ctx.at(2), format!("unknown operator \"{name}\" for outer"))
        })?;
    Ok(Value::matrix(rt(ctx, kernels::math::outer(&x, &y, op))?))
}

const POOL_PARAMS: &[Param] = &[
    req("input"),
    req("input_shape"),
    req("pool_size"),
    req("stride"),
    req("padding"),
];

/// The `n` non-negative integers of a shape argument `[a, b, ..]` (a list of scalars).
fn shape_list(ctx: &Ctx, a: &[Value], i: usize, n: usize) -> Res<Vec<usize>> {
    let bad = || {
        SpannedError::new(
            ctx.at(i),
            format!(
                "{}: expected a list of {n} non-negative integers, as [a, b]",
                ctx.name
            ),
        )
    };
    let Value::List(l) = &a[i] else {
        return Err(bad());
    };
    if l.items.len() != n {
        return Err(bad());
    }
    l.items
        .iter()
        .map(|v| match v {
            Value::Scalar(s) if s.as_f64() >= 0.0 && s.as_f64().is_finite() => {
                Ok(s.as_f64() as usize)
            }
            _ => Err(bad()),
        })
        .collect()
}

/// The geometry of a `conv2d` or pooling call from its shape lists (at `shapes`: input shape,
/// filter or pool shape, stride, padding).
fn dnn_geometry(ctx: &Ctx, a: &[Value], shapes: usize, conv: bool) -> Res<kernels::dnn::Geometry> {
    let input = shape_list(ctx, a, shapes, 4)?;
    let filter = shape_list(ctx, a, shapes + 1, if conv { 4 } else { 2 })?;
    let stride = shape_list(ctx, a, shapes + 2, 2)?;
    let pad = shape_list(ctx, a, shapes + 3, 2)?;
    let (k, r, s) = if conv {
        (filter[0], filter[2], filter[3])
    } else {
        (1, filter[0], filter[1])
    };
    Ok(kernels::dnn::Geometry {
        n: input[0],
        c: input[1],
        h: input[2],
        w: input[3],
        k,
        r,
        s,
        stride_h: stride[0],
        stride_w: stride[1],
        pad_h: pad[0],
        pad_w: pad[1],
    })
}

fn eval_conv2d(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let (x, f) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let g = dnn_geometry(ctx, a, 2, true)?;
    Ok(Value::matrix(rt(ctx, kernels::dnn::conv2d(&x, &f, &g))?))
}

fn eval_pool(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let x = matrix_arg(ctx, a, 0)?;
    let g = dnn_geometry(ctx, a, 1, false)?;
    let max = ctx.name == "max_pool";
    Ok(Value::matrix(rt(ctx, kernels::dnn::pool(&x, &g, max))?))
}

/// `conv2d_backward_filter(input, dout, ...)` and `conv2d_backward_data(filter, dout, ...)`:
/// the first two arguments are positional in SystemDS (any name), then the shape lists.
const CONV_BACKWARD_PARAMS: &[Param] = &[
    req("input"),
    req("dout"),
    req("input_shape"),
    req("filter_shape"),
    req("stride"),
    req("padding"),
];

const POOL_BACKWARD_PARAMS: &[Param] = &[
    req("input"),
    req("dout"),
    req("input_shape"),
    req("pool_size"),
    req("stride"),
    req("padding"),
];

fn eval_conv2d_backward(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let (x, dout) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let g = dnn_geometry(ctx, a, 2, true)?;
    let r = if ctx.name == "conv2d_backward_filter" {
        kernels::dnn::conv2d_backward_filter(&x, &dout, &g)
    } else {
        kernels::dnn::conv2d_backward_data(&x, &dout, &g)
    };
    Ok(Value::matrix(rt(ctx, r)?))
}

fn eval_pool_backward(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let (x, dout) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let g = dnn_geometry(ctx, a, 2, false)?;
    let max = ctx.name == "max_pool_backward";
    Ok(Value::matrix(rt(
        ctx,
        kernels::dnn::pool_backward(&x, &dout, &g, max),
    )?))
}

fn eval_batch_norm2d(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let m: Vec<Arc<Matrix>> = (0..5).map(|i| matrix_arg(ctx, a, i)).collect::<Res<_>>()?;
    let mode = text_arg(ctx, a, 5)?;
    let eps = scalar_arg(ctx, a, 6)?.as_f64();
    let mu = scalar_arg(ctx, a, 7)?.as_f64();
    let outs = rt(
        ctx,
        kernels::dnn::batch_norm2d(&m[0], &m[1], &m[2], &m[3], &m[4], &mode, eps, mu),
    )?;
    Ok(outs.into_iter().map(Value::matrix).collect())
}

const LSTM_PARAMS: &[Param] = &[
    req("X"),
    req("W"),
    req("bias"),
    req("out0"),
    req("c0"),
    req("return_sequences"),
];

const LSTM_BACKWARD_PARAMS: &[Param] = &[
    req("X"),
    req("W"),
    req("bias"),
    req("out0"),
    req("c0"),
    req("return_sequences"),
    req("dout"),
    req("dc"),
    req("cache_out"),
    req("cache_c"),
    req("cache_ifog"),
];

/// `lstm(...)` and `lstm_backward(...)`: five matrices each.
fn eval_lstm(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let m: Vec<Arc<Matrix>> = (0..5).map(|i| matrix_arg(ctx, a, i)).collect::<Res<_>>()?;
    let seq = scalar_arg(ctx, a, 5)?.as_f64() != 0.0;
    let outs = if ctx.name == "lstm" {
        kernels::dnn::lstm(&m[0], &m[1], &m[2], &m[3], &m[4], seq)
    } else {
        let g: Vec<Arc<Matrix>> = (6..11).map(|i| matrix_arg(ctx, a, i)).collect::<Res<_>>()?;
        kernels::dnn::lstm_backward(
            &m[0], &m[1], &m[2], &m[3], &m[4], seq, &g[0], &g[1], &g[2], &g[3], &g[4],
        )
    };
    Ok(rt(ctx, outs)?.into_iter().map(Value::matrix).collect())
}

fn eval_lstm_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_lstm(ctx, a)?.swap_remove(0))
}

fn eval_batch_norm2d_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_batch_norm2d(ctx, a)?.swap_remove(0))
}

fn eval_batch_norm2d_backward(ctx: &mut Ctx, a: &[Value]) -> Res<Vec<Value>> {
    let (x, dout, gamma) = (
        matrix_arg(ctx, a, 0)?,
        matrix_arg(ctx, a, 1)?,
        matrix_arg(ctx, a, 2)?,
    );
    scalar_arg(ctx, a, 3)?;
    let (mean, inv_var) = (matrix_arg(ctx, a, 4)?, matrix_arg(ctx, a, 5)?);
    let outs = rt(
        ctx,
        kernels::dnn::batch_norm2d_backward(&x, &dout, &gamma, &mean, &inv_var),
    )?;
    Ok(outs.into_iter().map(Value::matrix).collect())
}

fn eval_batch_norm2d_backward_first(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(eval_batch_norm2d_backward(ctx, a)?.swap_remove(0))
}

fn eval_bias(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let (x, b) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let add = ctx.name == "bias_add";
    Ok(Value::matrix(rt(ctx, kernels::dnn::bias(&x, &b, add))?))
}

fn eval_var(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::double(kernels::stats::var(&*matrix_arg(ctx, a, 0)?)))
}

fn eval_sd(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::double(kernels::stats::sd(&*matrix_arg(ctx, a, 0)?)))
}

fn eval_dir_var(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let rows = ctx.name.starts_with("row");
    let sd = ctx.name.ends_with("Sds");
    Ok(Value::matrix(kernels::stats::dir_var(&m, rows, sd)))
}

fn eval_median(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    match a.len() {
        1 => Ok(Value::double(rt(ctx, kernels::stats::median(&m))?)),
        2 => {
            let w = matrix_arg(ctx, a, 1)?;
            let q = kernels::stats::weighted_quantile("median", &m, &w, 0.5, true);
            Ok(Value::double(rt(ctx, q)?))
        }
        n => Err(too_many(ctx, "a column and its weights", n)),
    }
}

/// The error of a variadic builtin called with more arguments than it takes.
fn too_many(ctx: &Ctx, takes: &str, n: usize) -> SpannedError {
    SpannedError::new(
        ctx.span,
        format!("{} takes {takes}, found {n} arguments", ctx.name),
    )
}

/// `quantile(X, P)` or `quantile(X, W, P)` (`W` the values' integer weights): the last
/// argument is a probability, or a column of them.
fn rule_quantile(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    want_matrix(sig, 0)?;
    if sig.args.len() == 3 {
        want_matrix(sig, 1)?;
    }
    Ok(match sig.args[sig.args.len() - 1].ty {
        Ty::Matrix(r, c) => (Ty::Matrix(r, c), None),
        _ => (Ty::Scalar(ScalarTy::Double), None),
    })
}

fn eval_quantile(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let w = match a.len() {
        2 => None,
        3 => Some(matrix_arg(ctx, a, 1)?),
        n => return Err(too_many(ctx, "a column, its weights and probabilities", n)),
    };
    let last = a.len() - 1;
    match (&a[last], w) {
        (Value::Matrix(p), None) => Ok(Value::matrix(rt(ctx, kernels::stats::quantiles(&m, p))?)),
        (Value::Matrix(p), Some(w)) => {
            if p.cols() != 1 {
                return Err(SpannedError::new(
                    ctx.at(last),
                    "the probabilities must be a column",
                ));
            }
            // a column of probabilities picks without averaging, as unweighted
            let mut out = Vec::with_capacity(p.rows());
            for i in 0..p.rows() {
                let q = kernels::stats::weighted_quantile("quantile", &m, &w, p.get(i, 0), false);
                out.push(rt(ctx, q)?);
            }
            Ok(Value::matrix(Matrix::from_dense(
                matrix::Dense::from_shape_vec((out.len(), 1), out).expect("shape"),
            )))
        }
        (_, w) => {
            let p = scalar_arg(ctx, a, last)?.as_f64();
            Ok(Value::double(match w {
                None => rt(ctx, kernels::stats::quantile(&m, p))?,
                Some(w) => rt(
                    ctx,
                    kernels::stats::weighted_quantile("quantile", &m, &w, p, true),
                )?,
            }))
        }
    }
}

fn eval_iqm(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let w = match a.len() {
        1 => None,
        2 => Some(matrix_arg(ctx, a, 1)?),
        n => {
            return Err(SpannedError::new(
                ctx.span,
                format!(
                    "{} takes a column and its weights, found {n} arguments",
                    ctx.name
                ),
            ))
        }
    };
    Ok(Value::double(rt(
        ctx,
        kernels::stats::inter_quantile_mean(&m, w.as_deref()),
    )?))
}

/// `unique(X, dir)`: the distinct values of all cells (`"rc"`), of each row (`"r"`) or of
/// each column (`"c"`), in SystemDS's order (the runtime's kernel).
fn eval_unique(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use kernels::structure::UniqueDir;
    let m = matrix_arg(ctx, a, 0)?;
    let dir = match &a[1] {
        Value::Str(s) if s == "rc" => UniqueDir::All,
        Value::Str(s) if s == "r" => UniqueDir::Row,
        Value::Str(s) if s == "c" => UniqueDir::Col,
        v => {
            return Err(SpannedError::new(
                ctx.at(1),
                format!("unique: dir must be \"rc\", \"r\" or \"c\", not {v}"),
            ))
        }
    };
    Ok(Value::matrix(kernels::structure::unique(&m, dir)))
}

/// The direction of `countDistinct(X, dir)`: `"rc"` (the default), `"r"` or `"c"`, in any
/// case, as SystemDS reads it.
fn count_distinct_dir(dir: &str) -> Option<kernels::structure::UniqueDir> {
    use kernels::structure::UniqueDir;
    match dir.to_ascii_uppercase().as_str() {
        "RC" => Some(UniqueDir::All),
        "R" => Some(UniqueDir::Row),
        "C" => Some(UniqueDir::Col),
        _ => None,
    }
}

/// `countDistinct(X, dir)`: an integer for `dir="rc"`, a column of X's rows for `"r"`, a row
/// of X's columns for `"c"`. SystemDS decides the result's type from the direction when it
/// compiles, so `dir` must be a string literal naming one (an error at check time, as
/// SystemDS's "Invalid argument: ... is not recognized").
fn rule_count_distinct(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    use kernels::structure::UniqueDir;
    let (r, c) = want_matrix(sig, 0)?;
    let d = &sig.args[1];
    let dir = d
        .text
        .as_deref()
        .and_then(count_distinct_dir)
        .ok_or_else(|| {
            let what = match &d.text {
                Some(t) => format!("\"{t}\""),
                None => format!("an expression ({})", d.ty),
            };
            SpannedError::new(
                d.span,
                format!(
                    "{}: dir must be \"rc\", \"r\" or \"c\", not {what}",
                    sig.name
                ),
            )
            .with_label("SystemDS needs the direction as one of these string literals")
        })?;
    Ok(match dir {
        UniqueDir::All => (Ty::Scalar(ScalarTy::Int), None),
        UniqueDir::Row => (Ty::Matrix(r, Some(1)), None),
        UniqueDir::Col => (Ty::Matrix(Some(1), c), None),
    })
}

/// `countDistinct(X, dir)`, `rowCountDistinct(X)`, `colCountDistinct(X)`
/// ([`kernels::structure::count_distinct`]).
fn eval_count_distinct(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let dir = count_distinct_direction(ctx, a, "countDistinct")?;
    Ok(count_distinct_value(
        dir,
        kernels::structure::count_distinct(&m, dir),
    ))
}

/// The direction of a `countDistinct` form: from the builtin's name (`row...`, `col...`), else
/// from its `dir` argument ("rc", "r" or "c"); `base` names the builtin in the diagnostic.
fn count_distinct_direction(
    ctx: &Ctx,
    a: &[Value],
    base: &str,
) -> Res<kernels::structure::UniqueDir> {
    use kernels::structure::UniqueDir;
    if ctx.name.starts_with("row") {
        return Ok(UniqueDir::Row);
    }
    if ctx.name.starts_with("col") {
        return Ok(UniqueDir::Col);
    }
    match &a[1] {
        Value::Str(s) => count_distinct_dir(s),
        _ => None,
    }
    .ok_or_else(|| {
        SpannedError::new(
            ctx.at(1),
            format!("{base}: dir must be \"rc\", \"r\" or \"c\", not {}", a[1]),
        )
    })
}

/// A `countDistinct` form's result: an integer for the whole matrix, else the counts.
fn count_distinct_value(dir: kernels::structure::UniqueDir, counts: Matrix) -> Value {
    match dir {
        kernels::structure::UniqueDir::All => Value::Scalar(Scalar::Int(counts.get(0, 0) as i64)),
        _ => Value::matrix(counts),
    }
}

/// `countDistinctApprox(X, dir, type)` (as [`rule_count_distinct`]), `rowCountDistinctApprox(X,
/// type)`, `colCountDistinctApprox(X, type)`: `type` must be a string naming "KMV" (any
/// case), SystemDS's only estimator.
fn rule_count_distinct_approx(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let t = sig.args.last().expect("a type parameter");
    if t.ty != Ty::Str
        || t.text
            .as_deref()
            .is_some_and(|t| !t.eq_ignore_ascii_case("KMV"))
    {
        return Err(SpannedError::new(
            t.span,
            format!(
                "{}: unrecognized type {}: SystemDS knows only \"KMV\"",
                sig.name,
                t.text.as_deref().unwrap_or("(not a string)")
            ),
        ));
    }
    match sig.name {
        "rowCountDistinctApprox" => rule_row_col(sig),
        "colCountDistinctApprox" => rule_col_row(sig),
        _ => rule_count_distinct(sig),
    }
}

/// `countDistinctApprox` and its row and column forms
/// ([`kernels::structure::count_distinct_approx`]).
fn eval_count_distinct_approx(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let t = a.last().expect("a type argument").to_string();
    if !t.eq_ignore_ascii_case("KMV") {
        return Err(SpannedError::new(
            ctx.at(a.len() - 1),
            format!(
                "{}: unrecognized type {t}: SystemDS knows only \"KMV\"",
                ctx.name
            ),
        ));
    }
    let dir = count_distinct_direction(ctx, a, "countDistinctApprox")?;
    Ok(count_distinct_value(
        dir,
        kernels::structure::count_distinct_approx(&m, dir),
    ))
}

fn rule_dist(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    for (i, a) in sig.args.iter().enumerate() {
        let string = i == 1 && matches!(sig.name, "cdf" | "icdf");
        if (a.ty == Ty::Str) != string || a.ty.is_matrix() {
            return Err(type_err(a.span, sig.name, a));
        }
    }
    Ok((Ty::Scalar(ScalarTy::Double), None))
}

/// The distribution functions, as SystemDS's `cdf`/`icdf`: `pX`/`cdf` is `P(X <= x)` (the
/// upper tail with `lower.tail=FALSE`), `qX`/`icdf` its inverse.
fn eval_dist(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use spores_runtime::kernels::distributions::Dist;
    let x = scalar_arg(ctx, a, 0)?.as_f64();
    // the distribution's name and its parameters' names, in the row's order after `target`
    let (dist, names, first): (String, &[&str], usize) = match ctx.name {
        "cdf" | "icdf" => (
            a[1].to_string(),
            &["mean", "sd", "rate", "df", "df1", "df2"],
            2,
        ),
        "pnorm" | "qnorm" => ("normal".into(), &["mean", "sd"], 1),
        "pexp" | "qexp" => ("exp".into(), &["rate"], 1),
        "pchisq" | "qchisq" => ("chisq".into(), &["df"], 1),
        "pt" | "qt" => ("t".into(), &["df"], 1),
        _ => ("f".into(), &["df1", "df2"], 1),
    };
    let mut vals = Vec::with_capacity(names.len());
    for i in 0..names.len() {
        vals.push(scalar_arg(ctx, a, first + i)?.as_f64());
    }
    let lower = scalar_arg(ctx, a, first + names.len())?.as_f64() != 0.0;
    let param = |p: &str| {
        names
            .iter()
            .position(|n| *n == p)
            .map(|i| vals[i])
            .filter(|v| !v.is_nan())
    };
    let d = rt(ctx, Dist::parse(ctx.name, &dist, param))?;
    let inverse = ctx.name == "icdf" || ctx.name.starts_with('q');
    let v = if inverse {
        let p = if lower { x } else { 1.0 - x };
        rt(ctx, d.icdf(p))?
    } else {
        rt(ctx, d.cdf(x, lower))?
    };
    Ok(Value::double(v))
}

/// Java's `String.format(format, args)` for the conversions DML programs use: `%d`, `%s`,
/// `%f`, `%e`, `%b`, `%%`, `%n`, with the `-` and `0` flags, a width and a precision.
fn eval_print_format(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let fmt = a[0].to_string();
    let mut out = String::new();
    let mut next = 1;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        let conv = loop {
            match chars.next() {
                Some(ch) if ch.is_ascii_alphabetic() || ch == '%' => break ch,
                Some(ch) => spec.push(ch),
                None => {
                    return Err(SpannedError::new(
                        ctx.span,
                        format!("print: unfinished format specifier %{spec}"),
                    ))
                }
            }
        };
        let left = spec.starts_with('-');
        let zero = spec.trim_start_matches('-').starts_with('0');
        let body = spec.trim_start_matches(['-', '0']);
        let (width, prec): (usize, Option<usize>) = match body.split_once('.') {
            Some((w, p)) => (w.parse().unwrap_or(0), p.parse::<usize>().ok()),
            None => (body.parse().unwrap_or(0), None),
        };
        let text = match conv {
            '%' => "%".to_string(),
            'n' => "\n".to_string(),
            _ => {
                let Some(v) = a.get(next) else {
                    return Err(SpannedError::new(
                        ctx.span,
                        format!("print: no argument for the format specifier %{spec}{conv}"),
                    ));
                };
                next += 1;
                let num = |v: &Value| match v {
                    Value::Scalar(s) => Some(s.as_f64()),
                    _ => None,
                };
                let bad = || {
                    SpannedError::new(
                        ctx.at(next - 1),
                        format!("print: %{conv} cannot format {v}"),
                    )
                };
                match conv {
                    'd' => match v {
                        Value::Scalar(Scalar::Int(i)) => i.to_string(),
                        _ => return Err(bad()),
                    },
                    'f' => format!("{:.*}", prec.unwrap_or(6), num(v).ok_or_else(bad)?),
                    'e' => {
                        let x = num(v).ok_or_else(bad)?;
                        let t = format!("{:.*e}", prec.unwrap_or(6), x);
                        // Java writes the exponent with a sign and two digits: 1.5e+01
                        match t.split_once('e') {
                            Some((m, e)) => {
                                let (sign, d) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                                format!("{m}e{sign}{d:0>2}")
                            }
                            None => t,
                        }
                    }
                    'b' => match v {
                        Value::Scalar(Scalar::Bool(b)) => b.to_string(),
                        _ => return Err(bad()),
                    },
                    's' => {
                        let t = v.to_string();
                        match prec {
                            Some(p) => t.chars().take(p).collect(),
                            None => t,
                        }
                    }
                    _ => {
                        return Err(SpannedError::new(
                            ctx.span,
                            format!("print: format specifier %{spec}{conv} is not supported"),
                        ))
                    }
                }
            }
        };
        let pad = width.saturating_sub(text.chars().count());
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if zero && matches!(conv, 'd' | 'f' | 'e') {
            let (sign, digits) = text
                .strip_prefix('-')
                .map_or(("", text.as_str()), |d| ("-", d));
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(digits);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        }
    }
    Ok(Value::Str(out))
}

fn eval_moment(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    // moment(X, k) or moment(X, W, k)
    let m = matrix_arg(ctx, a, 0)?;
    let (w, k) = match a.len() {
        2 => (None, scalar_arg(ctx, a, 1)?),
        _ => (Some(matrix_arg(ctx, a, 1)?), scalar_arg(ctx, a, 2)?),
    };
    let k = k.as_f64() as i64;
    Ok(Value::double(rt(
        ctx,
        kernels::stats::moment(&m, w.as_deref(), k),
    )?))
}

fn eval_cov(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let (x, y) = (matrix_arg(ctx, a, 0)?, matrix_arg(ctx, a, 1)?);
    let w = if a.len() > 2 {
        Some(matrix_arg(ctx, a, 2)?)
    } else {
        None
    };
    Ok(Value::double(rt(
        ctx,
        kernels::stats::cov(&x, &y, w.as_deref()),
    )?))
}

fn eval_contains(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    let hit = match &a[1] {
        Value::Matrix(p) => rt(ctx, kernels::math::contains_row(&m, p))?,
        _ => kernels::math::contains(&m, scalar_arg(ctx, a, 1)?.as_f64()),
    };
    Ok(Value::Scalar(Scalar::Bool(hit)))
}

/// `xor` of scalars is a boolean; with a matrix, the cell-wise `(x != 0) != (y != 0)`.
fn rule_xor(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (x, y) = (&sig.args[0], &sig.args[1]);
    for a in [x, y] {
        if a.ty == Ty::Str {
            return Err(type_err(sig.span, sig.name, a));
        }
    }
    let s = |t: Ty| match t {
        Ty::Matrix(r, c) => (r, c),
        _ => (Some(1), Some(1)),
    };
    Ok(match (x.ty, y.ty) {
        (Ty::Scalar(_), Ty::Scalar(_)) => (
            Ty::Scalar(ScalarTy::Bool),
            x.konst
                .zip(y.konst)
                .map(|(a, b)| Scalar::Bool((a.as_f64() != 0.0) ^ (b.as_f64() != 0.0))),
        ),
        _ => {
            let (r, c) = shape::elementwise("xor", s(x.ty), s(y.ty))
                .map_err(|m| SpannedError::new(sig.span, m))?;
            (Ty::Matrix(r, c), None)
        }
    })
}

fn eval_xor(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    use spores_runtime::ops::BinOp;
    if let (Value::Scalar(x), Value::Scalar(y)) = (&a[0], &a[1]) {
        return Ok(Value::Scalar(Scalar::Bool(
            (x.as_f64() != 0.0) ^ (y.as_f64() != 0.0),
        )));
    }
    let (ox, oy) = (operand(&a[0]), operand(&a[1]));
    shape::elementwise("xor", op_dims(&ox), op_dims(&oy))
        .map_err(|m| SpannedError::new(ctx.span, m))?;
    let zero = Value::double(0.0);
    let x = binary(BinOp::Ne, &a[0], &zero);
    let y = binary(BinOp::Ne, &a[1], &zero);
    Ok(binary(BinOp::Ne, &x, &y))
}

/// The comparison `ppred`'s third argument names (`"<"`, `">="`, `"=="`, ...).
fn ppred_op(name: &str) -> Option<spores_runtime::ops::BinOp> {
    spores_runtime::ops::BinOp::ALL
        .into_iter()
        .find(|o| o.is_comparison() && o.symbol() == name)
}

/// `ppred(X, Y, op)`: one matrix at least (SystemDS: "ppred() requires at least one matrix
/// input"), the shape of the element-wise comparison, an operator literal it knows.
fn rule_ppred(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let (x, y, op) = (&sig.args[0], &sig.args[1], &sig.args[2]);
    for a in [x, y] {
        if matches!(a.ty, Ty::Str | Ty::List) {
            return Err(type_err(sig.span, sig.name, a));
        }
    }
    if op.ty != Ty::Str {
        return Err(SpannedError::new(
            op.span,
            "the third argument of ppred must be a comparison operator string",
        )
        .with_label(format!("this is {}", op.ty)));
    }
    if let Some(t) = &op.text {
        if ppred_op(t).is_none() {
            return Err(SpannedError::new(
                op.span,
                format!("unknown operator \"{t}\" for ppred (<, <=, >, >=, ==, !=)"),
            ));
        }
    }
    let s = |t: Ty| match t {
        Ty::Matrix(r, c) => (r, c),
        _ => (Some(1), Some(1)),
    };
    match (x.ty, y.ty) {
        (Ty::Scalar(_), Ty::Scalar(_)) => Err(SpannedError::new(
            sig.span,
            "ppred() requires at least one matrix input",
        )),
        _ => {
            let (r, c) = shape::elementwise("ppred", s(x.ty), s(y.ty))
                .map_err(|m| SpannedError::new(sig.span, m))?;
            Ok((Ty::Matrix(r, c), None))
        }
    }
}

fn eval_ppred(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let name = text_arg(ctx, a, 2)?;
    let op = ppred_op(&name).ok_or_else(|| {
        SpannedError::new(
            ctx.at(2),
            format!("unknown operator \"{name}\" for ppred (<, <=, >, >=, ==, !=)"),
        )
    })?;
    let (ox, oy) = (operand(&a[0]), operand(&a[1]));
    shape::elementwise("ppred", op_dims(&ox), op_dims(&oy))
        .map_err(|m| SpannedError::new(ctx.span, m))?;
    Ok(binary(op, &a[0], &a[1]))
}

fn eval_as_logical(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Bool(number(ctx, a)? != 0.0)))
}

fn eval_nnz(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    Ok(Value::Scalar(Scalar::Int(
        matrix_arg(ctx, a, 0)?.nnz() as i64
    )))
}

/// `rowProds(X)` (a column) and `colProds(X)` (a row): the products of the cells.
fn eval_dir_prod(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let d = matrix_arg(ctx, a, 0)?.to_dense();
    let r = if ctx.name == "rowProds" {
        let v: Vec<f64> = d.rows().into_iter().map(|r| r.iter().product()).collect();
        matrix::Dense::from_shape_vec((v.len(), 1), v)
    } else {
        let v: Vec<f64> = d
            .columns()
            .into_iter()
            .map(|c| c.iter().product())
            .collect();
        matrix::Dense::from_shape_vec((1, v.len()), v)
    };
    Ok(Value::matrix(Matrix::from_dense(r.expect("a vector"))))
}

fn rule_bitw(sig: &Sig) -> Res<(Ty, Option<Scalar>)> {
    let s = |t: Ty| match t {
        Ty::Matrix(r, c) => (r, c),
        _ => (Some(1), Some(1)),
    };
    for a in sig.args {
        if a.ty == Ty::Str {
            return Err(type_err(a.span, sig.name, a));
        }
    }
    if sig.args.iter().all(|a| matches!(a.ty, Ty::Scalar(_))) {
        return Ok((Ty::Scalar(ScalarTy::Int), None));
    }
    let (r, c) = shape::elementwise(sig.name, s(sig.args[0].ty), s(sig.args[1].ty))
        .map_err(|m| SpannedError::new(sig.span, m))?;
    Ok((Ty::Matrix(r, c), None))
}

/// SystemDS's cell-wise bitwise operations on matrices: on the 32-bit integers of the
/// cells (`UtilFunctions.toInt`: toward zero after adding 2^-53 to the magnitude,
/// saturating), Java's shift (the count modulo 32), and NaN where a left shift gives the
/// smallest 32-bit integer.
fn bitw_cell(name: &str, x: f64, y: f64) -> f64 {
    let to_int = |v: f64| (v.signum() * (v.abs() + f64::EPSILON / 2.0).floor()) as i32;
    let (x, y) = (to_int(x), to_int(y));
    match name {
        "bitwAnd" => f64::from(x & y),
        "bitwOr" => f64::from(x | y),
        "bitwXor" => f64::from(x ^ y),
        "bitwShiftL" => {
            let r = x.wrapping_shl(y as u32);
            if r == i32::MIN {
                f64::NAN
            } else {
                f64::from(r)
            }
        }
        _ => f64::from(x.wrapping_shr(y as u32)),
    }
}

/// The bitwise operations: on scalars, of the 64-bit integers of the arguments (doubles
/// truncated); with a matrix, cell by cell with broadcasting ([`bitw_cell`]).
fn eval_bitw(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    if a[..2].iter().any(|v| matches!(v, Value::Matrix(_))) {
        let (ox, oy) = (operand(&a[0]), operand(&a[1]));
        let (r, c) = shape::elementwise(ctx.name, op_dims(&ox), op_dims(&oy))
            .map_err(|m| SpannedError::new(ctx.span, m))?;
        let (r, c) = (r.expect("known at run time"), c.expect("known at run time"));
        let side = |v: &Value| match v {
            Value::Matrix(m) => (Some(m.to_dense()), m.shape()),
            _ => (None, (1, 1)),
        };
        let (dx, sx) = side(&a[0]);
        let (dy, sy) = side(&a[1]);
        let at =
            |d: &Option<matrix::Dense>, s: (usize, usize), v: &Value, i: usize, j: usize| match d {
                Some(d) => d[[if s.0 == 1 { 0 } else { i }, if s.1 == 1 { 0 } else { j }]],
                None => scalar_value(v),
            };
        let mut cells = Vec::with_capacity(r * c);
        for i in 0..r {
            for j in 0..c {
                let x = at(&dx, sx, &a[0], i, j);
                let y = at(&dy, sy, &a[1], i, j);
                cells.push(bitw_cell(ctx.name, x, y));
            }
        }
        let d = matrix::Dense::from_shape_vec((r, c), cells).expect("r x c cells");
        return Ok(Value::matrix(Matrix::from_dense(d)));
    }
    let x = scalar_arg(ctx, a, 0)?.as_f64() as i64;
    let y = scalar_arg(ctx, a, 1)?.as_f64() as i64;
    let shift = |ctx: &Ctx| {
        u32::try_from(y).ok().filter(|s| *s < 64).ok_or_else(|| {
            SpannedError::new(ctx.at(1), format!("{}: shift {y} out of range", ctx.name))
        })
    };
    let r = match ctx.name {
        "bitwAnd" => x & y,
        "bitwOr" => x | y,
        "bitwXor" => x ^ y,
        "bitwShiftL" => x << shift(ctx)?,
        _ => x >> shift(ctx)?,
    };
    Ok(Value::Scalar(Scalar::Int(r)))
}

fn eval_prod(ctx: &mut Ctx, a: &[Value]) -> Res<Value> {
    let m = matrix_arg(ctx, a, 0)?;
    Ok(Value::double(m.to_dense().iter().product()))
}
