//! `rand` benchmarks: the generator on the shapes the programs draw (MultiLogReg's 200000x1000
//! at 10%, a dense 20000x1000, a 1000000x100 at 1%), in cells per second.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spores_runtime::kernels::{self, RandSpec};
use std::hint::black_box;

fn rand(c: &mut Criterion) {
    let mut g = c.benchmark_group("rand");
    g.sample_size(10);
    for &(rows, cols, sparsity) in &[
        (200_000usize, 1000usize, 0.1),
        (20_000, 1000, 1.0),
        (1_000_000, 100, 0.01),
    ] {
        let spec = RandSpec {
            rows,
            cols,
            min: 0.0,
            max: 1.0,
            sparsity,
            seed: 7,
        };
        g.throughput(Throughput::Elements((rows * cols) as u64));
        g.bench_with_input(
            BenchmarkId::new("uniform", format!("{rows}x{cols}@{sparsity}")),
            &spec,
            |b, s| b.iter(|| black_box(kernels::rand_matrix(s))),
        );
    }
    g.finish();
}

criterion_group!(benches, rand);
criterion_main!(benches);
