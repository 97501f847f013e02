fn main() -> std::process::ExitCode {
    tune_allocator();
    resilient_write::cmd::main()
}

/// Requests and reads carry whole files, so a call allocates a few buffers of the file's
/// size (the request line, its JSON string, the read-back). glibc serves an allocation above
/// its mmap threshold (128 KiB at first, raised as it goes) with its own `mmap` and unmaps it
/// on free, so such a call paid a page fault and the zeroing of a page per 4 KiB of every
/// buffer: about a third of a 1 MB `safe_write`'s time (`write_bench`,
/// docs/performance-log.md). Allocations up to 8 MiB now come from the heap, and up to 32 MiB
/// of freed heap is kept for reuse.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only sets two of the allocator's parameters; it is called first thing,
    // before any other thread exists, and a refused value leaves glibc's default in place.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 8 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 32 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}
