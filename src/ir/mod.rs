//! The one e-graph language of the optimizer, with two levels.
//!
//! **LA operators** are executable: each has a runtime kernel. **RA operators** exist only for
//! reasoning (paper section 2): `b`/`ub` convert between matrices and K-relations, `*` is the
//! natural join, `+` the union, `sum` the aggregate over one attribute. A scalar is a relation
//! without attributes, so `*` and `+` on scalar classes are also plain scalar arithmetic.
//!
//! Leaves are numbers and symbols. A symbol is a variable of the block (`X`, `lambda`), or an
//! attribute: `_` (a dimension of size 1, no attribute) or a name starting with `@` whose size
//! the analysis records when the attribute is created.
//!
//! ```text
//! (mmul A B)      A %*% B                    (b i j A)     bind A's rows to i, columns to j
//! (t A)           t(A)                       (ub i j R)    unbind R(i, j) back to a matrix
//! (m* A B)        A * B, broadcasting        (* R S)       join
//! (m+ A B) (m- A B) (m/ A B) (m^ A B)        (+ R S)       union
//! (neg A)         -A                         (sum i R)     aggregate i away
//! (msum A)        sum(A)                     (subst n o R) R with attribute o renamed to n
//! (rowSums A) (colSums A)                    (dim i)       the size of attribute i
//! (fill v r c)    matrix(v, rows=r, cols=c)  (pow R p)     element-wise power (custom function)
//! (as.scalar A)   a 1x1 matrix as a scalar
//! (exp A) (log A) (sqrt A) (abs A) (sigmoid A)   black boxes: optimized below and above
//! (nz A)          A != 0 (1 at the non-zeros of A)
//! ```
//!
//! **Fused operators** (rules/fused.rules equates each with its meaning; the kernels in
//! `spores_runtime::kernels::fused` stream over the non-zeros of the sparse X or W and never
//! form the dense `U %*% t(V)`):
//!
//! ```text
//! (sddmm X U V)       X * (U %*% t(V))
//! (wsloss X U V)      sum((X - U %*% t(V))^2)
//! (wslossw W X U V)   sum(W * (X - U %*% t(V))^2)
//! (wcemm X U V e)     sum(X * log(U %*% t(V) + e))
//! (wdivmm X U V e)    (X / (U %*% t(V) + e)) %*% V
//! (wdivmmt X U V e)   t(U) %*% (X / (U %*% t(V) + e))
//! (wsubmm W X U V)    (W * (U %*% t(V) - X)) %*% V
//! (wsubmmt W X U V)   t(U) %*% (W * (U %*% t(V) - X))
//! (mmchain X w v)     t(X) %*% (w * (X %*% v))
//! (smmchain X P V)    t(X) %*% (P * (X %*% V) - P * rowSums(P * (X %*% V)))
//! (sprop P)           P * (1 - P)
//! (tmmul A B)         t(A) %*% B, without forming t(A)
//! ```

pub mod print;

use egg::{define_language, Id, Symbol};
use std::fmt;
use std::str::FromStr;

/// A numeric constant that can live in an e-graph (total order and hash by bit pattern; `-0.0`
/// and `0.0` are different constants, since `1 / -0.0` is `-Inf`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Const(u64);

impl Const {
    /// Wraps a finite or infinite double (NaN is kept as one canonical NaN).
    pub fn new(v: f64) -> Const {
        let v = if v.is_nan() { f64::NAN } else { v };
        // order-preserving bit trick so that `Ord` agrees with numeric order
        let b = v.to_bits();
        Const(if b >> 63 == 1 { !b } else { b | (1 << 63) })
    }

    /// The value.
    pub fn get(self) -> f64 {
        let b = self.0;
        f64::from_bits(if b >> 63 == 1 { b & !(1 << 63) } else { !b })
    }
}

impl fmt::Display for Const {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl fmt::Debug for Const {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl FromStr for Const {
    type Err = std::num::ParseFloatError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<f64>().map(Const::new)
    }
}

define_language! {
    /// The optimizer's language (see the module doc for each operator).
    pub enum Ir {
        // ---- LA: executable ----
        "mmul" = MMul([Id; 2]),
        "t" = Trans(Id),
        "m*" = EMul([Id; 2]),
        "m+" = EAdd([Id; 2]),
        "m-" = ESub([Id; 2]),
        "m/" = EDiv([Id; 2]),
        "m^" = EPow([Id; 2]),
        "neg" = Neg(Id),
        "msum" = MSum(Id),
        "rowSums" = RowSums(Id),
        "colSums" = ColSums(Id),
        "fill" = Fill([Id; 3]),
        "as.scalar" = AsScalar(Id),
        "exp" = Exp(Id),
        "log" = Log(Id),
        "sqrt" = Sqrt(Id),
        "abs" = Abs(Id),
        "sigmoid" = Sigmoid(Id),
        "nz" = Nz(Id),
        // ---- LA: fused ----
        "sddmm" = Sddmm([Id; 3]),
        "wsloss" = WsLoss([Id; 3]),
        "wslossw" = WsLossW([Id; 4]),
        "wcemm" = Wcemm([Id; 4]),
        "wdivmm" = WDivMM([Id; 4]),
        "wdivmmt" = WDivMMT([Id; 4]),
        "wsubmm" = WSubMM([Id; 4]),
        "wsubmmt" = WSubMMT([Id; 4]),
        "mmchain" = MMChain([Id; 3]),
        "mmchainr" = MMChainR([Id; 3]),
        "smmchain" = SMMChain([Id; 3]),
        "sprop" = Sprop(Id),
        "tmmul" = TMMul([Id; 2]),
        // ---- RA: reasoning only ----
        "b" = Bind([Id; 3]),
        "ub" = Unbind([Id; 3]),
        "*" = Join([Id; 2]),
        "+" = Union([Id; 2]),
        "sum" = Agg([Id; 2]),
        "subst" = Subst([Id; 3]),
        "dim" = Dim(Id),
        "pow" = Pow([Id; 2]),
        Num(Const),
        Symbol(Symbol),
    }
}

/// The placeholder attribute of a dimension of size 1.
pub const UNIT: &str = "_";

/// Whether a symbol names an attribute (rather than a variable of the block).
pub fn is_attr(s: &str) -> bool {
    s == UNIT || s.starts_with('@')
}

/// The symbol [`UNIT`], interned once (interning takes the global symbol table's lock: the
/// rewrites of a saturation ask for it hundreds of thousands of times).
pub fn unit_symbol() -> Symbol {
    static UNIT_SYMBOL: std::sync::OnceLock<Symbol> = std::sync::OnceLock::new();
    *UNIT_SYMBOL.get_or_init(|| Symbol::from(UNIT))
}

/// Whether `s` is [`UNIT`] (without looking its text up).
pub fn is_unit(s: Symbol) -> bool {
    s == unit_symbol()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn const_order_and_round_trip() {
        let vals = [-3.5, -1.0, -0.0, 0.0, 1e-9, 2.0, 1e300, f64::INFINITY];
        for w in vals.windows(2) {
            assert!(Const::new(w[0]) <= Const::new(w[1]), "{w:?}");
        }
        for v in vals {
            assert_eq!(Const::new(v).get().to_bits(), v.to_bits());
        }
        assert_ne!(Const::new(-0.0), Const::new(0.0));
        assert!(Const::new(f64::NAN).get().is_nan());
    }

    #[test]
    fn parses_terms() {
        let e: egg::RecExpr<Ir> = "(ub @i @j (sum @k (* (b @i @k U) (b @k @j V))))"
            .parse()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "(ub @i @j (sum @k (* (b @i @k U) (b @k @j V))))"
        );
        let e: egg::RecExpr<Ir> = "(m* 0.5 (mmul X (t Y)))".parse().unwrap();
        assert_eq!(e.as_ref().len(), 6);
    }
}
