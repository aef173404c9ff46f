//! The abstract syntax tree of `.la` programs, as parsed. Every node carries the byte span of
//! its source text; sugar (named arguments, `$args`, builtin names) is kept as written and
//! resolved by the checker.

use std::fmt;

/// A byte range `start..end` in the source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// first byte
    pub start: usize,
    /// one past the last byte
    pub end: usize,
}

impl Span {
    /// The span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A name with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// the name as written
    pub name: String,
    /// where it is written
    pub span: Span,
}

/// A whole program: a list of statements.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// top-level statements in order
    pub stmts: Vec<Stmt>,
}

/// A statement with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// what the statement does
    pub kind: StmtKind,
    /// its source text
    pub span: Span,
}

/// The statement forms of the DML subset.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `x = expr`
    Assign {
        /// the variable assigned
        target: Ident,
        /// the value
        value: Expr,
    },
    /// A call for its effect: `print(..)`, `write(..)`, `stop(..)`, or a function's.
    Call(Call),
    /// `X[rows, cols] = value` (also `X[..] += value`, written out)
    IndexAssign {
        /// the matrix assigned into
        target: Ident,
        /// the row selection
        rows: IndexRange,
        /// the column selection
        cols: IndexRange,
        /// a scalar or a matrix of the selection's shape
        value: Expr,
    },
    /// `[a, b] = f(..)`: the outputs of a function
    MultiAssign {
        /// the variables, one per output
        targets: Vec<Ident>,
        /// the call
        call: Call,
    },
    /// `name = function(..) return (..) { .. }`
    Function(Box<Function>),
    /// a construct spores parses but does not run (its description)
    Unsupported(String),
    /// `source("file.dml") as ns`: the functions of `file.dml` (relative to the working
    /// folder, as in SystemDS, or to the folder of the last `setwd` before it), called as
    /// `ns::f(..)`
    Source {
        /// the file, as written
        path: String,
        /// the namespace
        ns: Ident,
    },
    /// `setwd("folder")`: the `source` statements after it in the same file (in the text's
    /// order, at any depth) find relative paths under `folder`, as in SystemDS, where it acts
    /// while parsing; it does nothing when run
    SetWd(String),
    /// `if (cond) {..} else {..}`
    If {
        /// the condition
        cond: Expr,
        /// statements run when it holds
        then: Vec<Stmt>,
        /// statements run otherwise (empty if there is no else)
        els: Vec<Stmt>,
    },
    /// `for (var in from:to) {..}`
    For {
        /// the loop variable
        var: Ident,
        /// first value
        from: Expr,
        /// last value (inclusive; counts down when below `from`); `None` when the range is
        /// one expression, such as `seq(a, b, step)`
        to: Option<Expr>,
        /// the body
        body: Vec<Stmt>,
        /// `parfor` rather than `for`
        parallel: bool,
        /// a `parfor`'s options (`check=0`, `opt=NONE`, `par=4`, ...), as written
        options: Vec<Arg>,
    },
    /// `while (cond) {..}`
    While {
        /// the condition, tested before each iteration
        cond: Expr,
        /// the body
        body: Vec<Stmt>,
    },
}

/// A function definition.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// its name
    pub name: Ident,
    /// parameters in order
    pub params: Vec<ParamDecl>,
    /// outputs in order
    pub returns: Vec<ParamDecl>,
    /// the body
    pub body: Vec<Stmt>,
}

/// A typed parameter or output of a function: `Matrix[Double] X`, `Double eps = 1e-3`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    /// the declared type
    pub ty: TypeName,
    /// the name
    pub name: Ident,
    /// the default value
    pub default: Option<Expr>,
}

/// A type as written: `Matrix[Double]`, `Integer`, `Frame[Unknown]`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeName {
    /// `Matrix`, `Double`, ...
    pub base: Ident,
    /// the value type in brackets
    pub elem: Option<Ident>,
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// the expression form
    pub kind: ExprKind,
    /// its source text
    pub span: Span,
}

/// A function call as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// the function name
    pub func: Ident,
    /// the arguments in order
    pub args: Vec<Arg>,
}

/// One argument of a call, positional or named (`rows=m`).
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// the parameter name, for `name=value`
    pub name: Option<Ident>,
    /// the value
    pub value: Expr,
}

/// One dimension of a right-indexing expression `X[rows, cols]`.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexRange {
    /// empty: the whole dimension
    All,
    /// a single (1-based) position
    At(Box<Expr>),
    /// `a:b`, 1-based and inclusive
    Range(Box<Expr>, Box<Expr>),
}

/// A unary operator as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `!x`
    Not,
}

/// A binary operator as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `^`
    Pow,
    /// `%*%`
    MatMul,
    /// `%/%`
    IntDiv,
    /// `%%`
    Mod,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&` or `&&`
    And,
    /// `|` or `||`
    Or,
}

impl BinOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Pow => "^",
            BinOp::MatMul => "%*%",
            BinOp::IntDiv => "%/%",
            BinOp::Mod => "%%",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&",
            BinOp::Or => "|",
        }
    }
}

/// The expression forms.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal (`12`).
    Int(i64),
    /// A floating-point literal (`0.25`, `.5`, `1e-8`).
    Double(f64),
    /// `TRUE` / `FALSE`
    Bool(bool),
    /// A string literal, unescaped.
    Str(String),
    /// A variable.
    Var(String),
    /// A script argument `$name`.
    ScriptArg(String),
    /// A unary operator.
    Unary(UnOp, Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A builtin call.
    Call(Call),
    /// A construct spores parses but does not evaluate (its description).
    Unsupported(String),
    /// Right indexing `X[rows, cols]`.
    Index {
        /// the indexed matrix
        base: Box<Expr>,
        /// the row selection
        rows: IndexRange,
        /// the column selection
        cols: IndexRange,
    },
}

/// Prints expressions fully parenthesised (used by parser tests).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Int(i) => write!(f, "{i}"),
            ExprKind::Double(d) => write!(f, "{d:?}"),
            ExprKind::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
            ExprKind::Str(s) => write!(f, "{s:?}"),
            ExprKind::Var(v) => write!(f, "{v}"),
            ExprKind::ScriptArg(v) => write!(f, "${v}"),
            ExprKind::Unsupported(what) => write!(f, "<{what}>"),
            ExprKind::Unary(op, e) => {
                let s = match op {
                    UnOp::Neg => "-",
                    UnOp::Plus => "+",
                    UnOp::Not => "!",
                };
                write!(f, "({s}{e})")
            }
            ExprKind::Binary(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            ExprKind::Call(c) => {
                write!(f, "{}(", c.func.name)?;
                for (k, a) in c.args.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    if let Some(n) = &a.name {
                        write!(f, "{}=", n.name)?;
                    }
                    write!(f, "{}", a.value)?;
                }
                write!(f, ")")
            }
            ExprKind::Index { base, rows, cols } => {
                let r = |x: &IndexRange| match x {
                    IndexRange::All => String::new(),
                    IndexRange::At(e) => e.to_string(),
                    IndexRange::Range(a, b) => format!("{a}:{b}"),
                };
                write!(f, "{base}[{}, {}]", r(rows), r(cols))
            }
        }
    }
}
