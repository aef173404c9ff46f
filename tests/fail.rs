//! Every program under tests/fail/ must fail with a diagnostic (file:line:col, the source line
//! with a marker, what was expected), the same with and without run-time optimization; the
//! rendered diagnostic is an insta snapshot. Runs with
//! the working directory at the crate root, so `read("tests/fail/data/...")` resolves.

use spores::diagnostics::render;

#[test]
fn failing_programs_give_diagnostics() {
    insta::glob!("fail/*.la", |path| {
        let src = std::fs::read_to_string(path).unwrap();
        let name = format!("tests/fail/{}", path.file_name().unwrap().to_string_lossy());
        let mut out = Vec::new();
        let err = match spores::driver::run(&src, &Default::default(), &mut out) {
            Ok(_) => panic!("{name} should fail but ran"),
            Err(e) => e,
        };
        let rendered = render(&err, &name, &src, false);
        // run-time optimization (on by default in the CLI) must not change any diagnostic
        let opts = spores::driver::RunOptions {
            optimize: true,
            ..Default::default()
        };
        let optimized = spores::driver::run_with(&src, &Default::default(), &mut Vec::new(), &opts)
            .expect_err("fails with optimization too");
        assert_eq!(render(&optimized, &name, &src, false), rendered, "{name}");
        insta::assert_snapshot!(rendered);
    });
}
