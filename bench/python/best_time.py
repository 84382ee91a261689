"""The best wall time of a call, the bench scripts' one measure."""
import time


def best_ms(fn, repeat):
    """The fastest of `repeat` calls of fn, in ms, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * min(times)
