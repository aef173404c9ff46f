//! The checked program: builtins resolved to operators, every expression typed (scalar kind
//! or matrix with the dimensions known at compile time), statements grouped into basic blocks.
//! This is what the executor runs and what the optimizer will rewrite block by block.

use crate::syntax::ast::Span;
use spores_runtime::ops::{BinOp, UnaryOp};
use std::fmt;

/// A dimension: known at compile time, or only at run time.
pub type Dim = Option<usize>;

/// The kind of a scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarTy {
    /// 64-bit integer (literals like `3`, loop variables, `nrow`)
    Int,
    /// double
    Double,
    /// `TRUE` / `FALSE`, comparisons
    Bool,
}

/// The static type of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// a scalar
    Scalar(ScalarTy),
    /// a string (only for printing)
    Str,
    /// a matrix of doubles with possibly unknown dimensions
    Matrix(Dim, Dim),
    /// a list of values of any type (DML's `List[Unknown]`)
    List,
}

impl Ty {
    /// Whether this is a matrix type.
    pub fn is_matrix(&self) -> bool {
        matches!(self, Ty::Matrix(..))
    }
}

fn dim(d: Dim) -> String {
    d.map_or("?".to_string(), |d| d.to_string())
}

/// Formats a shape as `100x50` (`?` for an unknown dimension).
pub fn shape_str(r: Dim, c: Dim) -> String {
    format!("{}x{}", dim(r), dim(c))
}

/// Names the type with its article: "an integer", "a 3x4 matrix".
impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Scalar(ScalarTy::Int) => write!(f, "an integer"),
            Ty::Scalar(ScalarTy::Double) => write!(f, "a double"),
            Ty::Scalar(ScalarTy::Bool) => write!(f, "a boolean"),
            Ty::Str => write!(f, "a string"),
            Ty::Matrix(r, c) => write!(f, "a {} matrix", shape_str(*r, *c)),
            Ty::List => write!(f, "a list"),
        }
    }
}

/// A scalar constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// integer
    Int(i64),
    /// double
    Double(f64),
    /// boolean
    Bool(bool),
}

impl Scalar {
    /// The value as a double (`TRUE` is 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(i) => i as f64,
            Scalar::Double(d) => d,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// The kind of the scalar.
    pub fn ty(self) -> ScalarTy {
        match self {
            Scalar::Int(_) => ScalarTy::Int,
            Scalar::Double(_) => ScalarTy::Double,
            Scalar::Bool(_) => ScalarTy::Bool,
        }
    }
}

/// A checked program: a tree of blocks.
#[derive(Clone, Debug)]
pub struct Program {
    /// top-level blocks in order
    pub blocks: Vec<Block>,
    /// the functions called, one per (function, kinds of its arguments); calls refer to them
    /// by index
    pub functions: Vec<Function>,
    /// number of basic blocks (their ids are `0..num_basic_blocks`)
    pub num_basic_blocks: usize,
    /// the script arguments the program refers to (`$name`, `$1`), with or without `ifdef`
    pub script_args_used: std::collections::BTreeSet<String>,
}

/// A function as checked for the kinds of the arguments of its calls.
#[derive(Clone, Debug)]
pub struct Function {
    /// its name as called
    pub name: String,
    /// parameter names in order (every call passes all of them)
    pub params: Vec<String>,
    /// output names in order
    pub outputs: Vec<String>,
    /// the declared output types, in order (a scalar output is converted to its declared
    /// type when the function returns, as SystemDS does)
    pub output_types: Vec<Ty>,
    /// the body
    pub body: Vec<Block>,
    /// the definition
    pub span: Span,
}

/// Control flow between basic blocks.
#[derive(Clone, Debug)]
pub enum Block {
    /// straight-line statements
    Basic(BasicBlock),
    /// `if`
    If {
        /// scalar condition
        cond: Expr,
        /// taken branch
        then: Vec<Block>,
        /// other branch
        els: Vec<Block>,
        /// the condition's value where the checker knows it before running (constants and
        /// script arguments): the shapes after the `if` are then the taken branch's
        known: Option<bool>,
    },
    /// `for (var in from:to)`
    For {
        /// loop variable
        var: String,
        /// first value
        from: Expr,
        /// last value
        to: Expr,
        /// the increment (`seq(from, to, step)`); without it the loop counts up or down by 1
        step: Option<Box<Expr>>,
        /// body
        body: Vec<Block>,
        /// a `parfor`'s options (its iterations run in order, as a `for`'s)
        parfor: Option<Parfor>,
    },
    /// `while (cond)`
    While {
        /// scalar condition
        cond: Expr,
        /// body
        body: Vec<Block>,
    },
}

/// What of a `parfor`'s options changes its results: SystemDS's parfor optimizer sets the
/// thread counts of the operations of the body and of the functions it calls, and products
/// split over threads add in another order (see [`crate::exec::parfor`]).
#[derive(Clone, Debug)]
pub struct Parfor {
    /// `opt=`: SystemDS's optimizer of the loop
    pub opt: ParforOpt,
    /// `par=`: the degree of parallelism asked for
    pub par: Option<Box<Expr>>,
}

/// SystemDS's parfor optimizers (`opt=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParforOpt {
    /// `RULEBASED` (the default; `HEURISTIC` too): the degree of parallelism from the number
    /// of iterations and the machine's cores
    RuleBased,
    /// `CONSTRAINED`: the `par=` asked for, when given
    Constrained,
    /// `NONE`: no optimization, the thread counts stay as they are
    None,
}

/// Straight-line code: the unit the optimizer works on.
#[derive(Clone, Debug)]
pub struct BasicBlock {
    /// a program-wide id
    pub id: usize,
    /// statements in order
    pub stmts: Vec<Stmt>,
}

/// A statement of a basic block.
#[derive(Clone, Debug)]
pub enum Stmt {
    /// `var = value`
    Assign {
        /// variable name
        var: String,
        /// value
        value: Expr,
        /// statement span
        span: Span,
    },
    /// `print(value)`
    Print {
        /// what to print
        value: Expr,
    },
    /// `write(value, path, format=)`
    Write {
        /// the matrix or scalar
        value: Expr,
        /// the file (a string expression)
        path: Expr,
        /// `format` ("text" when absent)
        format: Option<Expr>,
        /// the other named arguments (`header`, `sep`, `sparse`, `description`)
        opts: Vec<(String, Expr)>,
    },
    /// `stop(message)`: ends the program with an error
    Stop {
        /// the message
        message: Expr,
    },
    /// `assert(cond)`: ends the program with `message` when `failed` (the negated condition)
    /// holds
    Assert {
        /// `!cond`
        failed: Expr,
        /// the message
        message: Expr,
    },
    /// `[a, b] = f(..)`, or `f(..)` for its effect
    Call {
        /// the variables assigned, in the order of the function's outputs
        outputs: Vec<String>,
        /// index into [`Program::functions`]
        func: usize,
        /// one per parameter
        args: Vec<Expr>,
        /// statement span
        span: Span,
    },
    /// `[a, b] = f(..)` for a builtin with several outputs (`eigen`)
    MultiBuiltin {
        /// the variables assigned, in the order of the outputs
        outputs: Vec<String>,
        /// the builtin
        row: &'static crate::builtins::Builtin,
        /// its arguments
        args: Vec<Expr>,
        /// statement span
        span: Span,
    },
    /// `X[rows, cols] = value`
    IndexAssign {
        /// the matrix variable
        var: String,
        /// row selection
        rows: Range,
        /// column selection
        cols: Range,
        /// a scalar, or a matrix of the selection's shape
        value: Expr,
        /// statement span
        span: Span,
    },
    /// a construct that fails when it runs (not supported, or an error the checker defers to
    /// run time because the statement may never run)
    Fail {
        /// the diagnostic
        error: crate::error::SpannedError,
    },
}

impl Stmt {
    /// Calls `f` on each expression a statement holds (not their sub-expressions).
    pub fn exprs<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        fn range<'a>(r: &'a Range, f: &mut dyn FnMut(&'a Expr)) {
            match r {
                Range::All => {}
                Range::At(x) => f(x),
                Range::Span(a, b) => {
                    f(a);
                    f(b);
                }
            }
        }
        match self {
            Stmt::Assign { value, .. } | Stmt::Print { value } => f(value),
            Stmt::Write {
                value,
                path,
                format,
                opts,
            } => {
                f(value);
                f(path);
                if let Some(x) = format {
                    f(x);
                }
                opts.iter().for_each(|(_, x)| f(x));
            }
            Stmt::Stop { message } => f(message),
            Stmt::Assert { failed, message } => {
                f(failed);
                f(message);
            }
            Stmt::Call { args, .. } | Stmt::MultiBuiltin { args, .. } => args.iter().for_each(f),
            Stmt::IndexAssign {
                rows, cols, value, ..
            } => {
                range(rows, f);
                range(cols, f);
                f(value);
            }
            Stmt::Fail { .. } => {}
        }
    }
}

/// One dimension of right indexing, 1-based inclusive bounds.
#[derive(Clone, Debug)]
pub enum Range {
    /// the whole dimension
    All,
    /// one position
    At(Box<Expr>),
    /// `lo:hi`
    Span(Box<Expr>, Box<Expr>),
}

/// A typed expression.
#[derive(Clone, Debug)]
pub struct Expr {
    /// the operation
    pub kind: ExprKind,
    /// its static type
    pub ty: Ty,
    /// its source text
    pub span: Span,
}

/// The operations of the checked language.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// scalar literal (or folded `ifdef`)
    Lit(Scalar),
    /// string literal
    Str(String),
    /// variable read
    Var(String),
    /// element-wise or scalar unary function
    Unary(UnaryOp, Box<Expr>),
    /// element-wise or scalar binary operator, with broadcasting
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// string concatenation (`+` with a string operand)
    Concat(Box<Expr>, Box<Expr>),
    /// `%*%`
    MatMul(Box<Expr>, Box<Expr>),
    /// the first output of a function: index into [`Program::functions`], one argument per
    /// parameter
    Call(usize, Vec<Expr>),
    /// `evalList("f", ..)`: every output of a function, as a list named by its outputs
    /// (index into [`Program::functions`], one argument per parameter)
    Outputs(usize, Vec<Expr>),
    /// `eval(name, ..)` (or `evalList`) of a name known only when it runs: the call of the
    /// case whose name the string `name` holds (a `.defaultNS::` prefix stripped), each case
    /// checked for these arguments; a name without a case, or whose case did not check, is
    /// the error `missing` gives for it
    Dispatch {
        /// the function's name, a string
        name: Box<Expr>,
        /// the functions that take these arguments: the name as the program writes it, and
        /// the checked call (an `eval`'s converted to a matrix, as SystemDS converts it)
        cases: Vec<(String, Expr)>,
        /// the names found that do not take these arguments, with the checker's diagnostic
        missing: Vec<(String, crate::error::SpannedError)>,
    },
    /// a builtin function (every parameter present, defaults filled in)
    Builtin(&'static crate::builtins::Builtin, Vec<Expr>),
    /// `list(a, b)` or `list(a=x, b=y)`: the entries with their names, if named
    List(Vec<(Option<String>, Expr)>),
    /// `exists(X)`: whether a variable of the name (the string value of the operand) is
    /// defined when this runs
    Exists(Box<Expr>),
    /// `X[rows, cols]`
    Index {
        /// the matrix
        base: Box<Expr>,
        /// row selection
        rows: Range,
        /// column selection
        cols: Range,
    },
}
