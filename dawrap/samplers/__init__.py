"""The compiled samplers, one module per algorithm: the record-level sweep (:mod:`.record`),
the interweaving move (:mod:`.interweave`), theta kernels (:mod:`.kernels`), the
sufficient-statistic sampler's Gibbs kernels (:mod:`.suffstat`) and marginal kernel
(:mod:`.suffstat_marginal`, with :mod:`.suffstat_marginal_parts` and
:mod:`.suffstat_densities`) and the baselines (:mod:`.baselines`).

They are pure functions of explicit state (BlackJAX style: ``init`` and ``step``); running
chains, checkpoints and Ctrl-C are the runner's business (:mod:`dawrap.runner`)."""
