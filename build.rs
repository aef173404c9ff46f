//! Generates the parser from grammar/la.lalrpop into $OUT_DIR.
fn main() {
    println!("cargo:rerun-if-changed=grammar/la.lalrpop");
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .set_in_dir("grammar")
        .process()
        .expect("LALRPOP failed on grammar/la.lalrpop");
}
