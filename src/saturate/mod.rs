//! Stage 4, saturate: the rewrite rules (text files under rules/, loaded by [`rules`], with
//! named [`conditions`] and Rust [`appliers`]) applied by a sampling [`runner`], or by a Monte
//! Carlo tree search over rule applications ([`mcts`]) that starts from the sampling run.

pub mod appliers;
pub mod conditions;
pub mod mcts;
pub mod rules;
pub mod runner;

pub use rules::{all_rules, rules_except, Rule, RuleError};
pub use runner::{saturate, Limits, Report, Scheduler};
