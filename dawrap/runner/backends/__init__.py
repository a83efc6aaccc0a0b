"""Where a grouped chain's groups run (:mod:`dawrap.runner.grouped`): one module per backend.

A backend is a small object the grouped chain drives; it knows nothing of the iteration.

``local``
    Whether the workers share this process's memory, so that the chain's database
    ``state.x`` is the records themselves (threads) rather than an empty stand-in (a
    cluster): a move without a group form can then run on the whole database, and theta's
    kernel may read the records.
``workers(groups) -> int``
    How many workers will hold the ``groups`` groups (warning when fewer than asked).
``start(setup, fns, layouts, x, rngs, total, stats)``
    Scatter the groups: one :class:`~dawrap.runner.group_worker.GroupWorker` per layout,
    with its records (rows ``layout.ids`` of ``x``), its groups' generators ``rngs`` (a list
    per worker) and the running sums.
``call(method, doing, *per_worker) -> list``
    Run the workers' step ``method`` (a :class:`~dawrap.runner.group_worker.GroupWorker`
    method name) on every worker at once, an argument given as a list holding one value per
    worker; return the results in worker order. ``doing`` names the step in errors.
``close()``
    Release the workers (their records go with them).

A new backend (processes, MPI, Ray) is one module here with these five members, and an
option object in :mod:`dawrap.parallel` whose ``backend()`` builds it.
"""
