//! Reading and writing matrices: Matrix Market (`.mtx`) and CSV.

mod mtx;

pub use mtx::{read_matrix_market, write_csv, write_matrix_market, IoError};
