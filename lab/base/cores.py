"""Work spread over the host cores this process may use."""
import os
from concurrent.futures import ProcessPoolExecutor


def map_on_cores(fn, *iterables, chunksize: int = 1) -> list:
    """list(map(fn, *iterables)), one worker process per usable core."""
    with ProcessPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        return list(pool.map(fn, *iterables, chunksize=chunksize))
