"""The in-process Dask cluster that the tests of partitioned data run on."""

import contextlib

#: The memory monitors of workers that are threads of this process, off: each would read the
#: whole process (see the user guide on Dask).
MONITORS_OFF = {f"distributed.worker.memory.{k}": False
                for k in ("target", "spill", "pause", "terminate")}


@contextlib.contextmanager
def in_process_client(**client_options):
    """A client of a ``LocalCluster(processes=False)`` of two single-threaded workers, their
    memory monitors off; not the default client (tests make it current where they use it)."""
    import dask
    import distributed

    with dask.config.set(MONITORS_OFF), \
            distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False, **client_options) as client:
        yield client
