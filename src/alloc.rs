//! The process allocator: jemalloc with transparent huge pages and no purging, set here in the
//! library so the CLI, the tests and the benchmarks all run with it.

/// jemalloc, configured below. Large matrices are allocated and freed in every loop iteration;
/// the system allocator returns each one to the OS and page-faults it back in 4 KiB at a time
/// (als.la: 5.6M page faults, 60 s of system time on a 2-core VM).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Transparent huge pages for every extent (`thp:always`: jemalloc asks for them with
/// `madvise`, which is what the kernel's default `madvise` mode needs), and freed pages kept for
/// reuse instead of being purged (als.la: 3.5k page faults, 1 s of system time; peak RSS is
/// kept until exit). With `thp:default`, jemalloc zeroes a reused extent for `calloc` (every
/// `Array2::zeros`) by giving its pages back to the kernel, so each large result page-faulted
/// in again 4 KiB at a time: 22k faults per iteration of the mlr_hv peer kernel, 30% of its CPU
/// time; with huge pages it zeroes them with `memset`.
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] =
    b"thp:always,metadata_thp:always,dirty_decay_ms:-1,muzzy_decay_ms:-1\0";
