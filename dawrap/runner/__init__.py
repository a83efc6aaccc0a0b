"""The Python side of sampling: probing the user's functions, starting values
(:mod:`.starts`), running chains in threads with Ctrl-C deferred (:mod:`.chains`), progress
lines, and checkpoints of long runs (:mod:`.checkpoint`); one driver per sampler
(:mod:`.record`, :mod:`.suffstat`)."""
