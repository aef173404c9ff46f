//! The process allocator: jemalloc with transparent huge pages and no purging, set here in the
//! library so the CLI, the tests and the benchmarks all run with it.

/// jemalloc, configured below. Large matrices are allocated and freed in every loop iteration;
/// the system allocator returns each one to the OS and page-faults it back in 4 KiB at a time
/// (als.la: 5.6M page faults, 60 s of system time on a 2-core VM).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Transparent huge pages for large extents, and freed pages kept for reuse instead of being
/// purged (als.la: 3.5k page faults, 1 s of system time; peak RSS is kept until exit).
/// `thp:always` would also make jemalloc zero reused extents with `memset` instead of handing
/// their pages back, but it costs the mlr program 2 s of system time (huge pages compacted on
/// a busy machine); the kernels write their zeros instead (`spores_runtime::matrix::zeroed`).
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] = b"thp:default,dirty_decay_ms:-1,muzzy_decay_ms:-1\0";
