//! Splitting CPU-bound work over the machine's cores, for the few places that handle a whole log
//! (rebuild, verify, a rewritten log). Small inputs stay on the calling thread.

/// Below this many items one thread is faster than starting more.
const MIN_PARALLEL: usize = 2048;

/// Applies `f` to consecutive chunks of `items` on up to [`threads`] threads and returns the
/// results in chunk order.
pub fn map_chunks<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> R + Sync,
{
    if items.len() < MIN_PARALLEL {
        return vec![f(items)];
    }
    let n = threads();
    if n == 1 {
        return vec![f(items)];
    }
    let size = items.len().div_ceil(n);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(size)
            .map(|chunk| scope.spawn(|| f(chunk)))
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// Worker threads to use: the available parallelism, at most 8. Asked once per process: the
/// answer reads the cgroup's quota files each time (a query asked five times, 25 system calls).
pub fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
}
