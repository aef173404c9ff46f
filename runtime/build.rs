//! Links the system's OpenBLAS when the `blas` feature is on (Debian: libopenblas-dev).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_BLAS").is_some() {
        println!("cargo:rustc-link-lib=openblas");
    }
}
