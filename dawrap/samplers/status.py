"""Status codes shared by every compiled sampler loop (record sweep, interweaving move,
sufficient-statistic Gibbs).

A compiled loop cannot raise with a useful message, so it stops and returns one of these
integers; the runner turns it into a ``ValueError`` with :func:`message`. One enum for all
samplers, so the same failure has the same number everywhere.
"""
from __future__ import annotations

__all__ = ["OK", "BAD_THETA", "BAD_THETA_SIZE", "BAD_RATIO", "BAD_RECORD", "BAD_STATS",
           "BAD_SUPPORT", "BAD_DRIFT", "BAD_RECORD_SUPPORT", "TOO_MANY_REJECTIONS",
           "BAD_ENTRIES", "MESSAGES", "message"]

(OK, BAD_THETA, BAD_THETA_SIZE, BAD_RATIO, BAD_RECORD, BAD_STATS, BAD_SUPPORT, BAD_DRIFT,
 BAD_RECORD_SUPPORT, TOO_MANY_REJECTIONS, BAD_ENTRIES) = range(11)

#: What each code means; ``{theta_step}`` names the function that draws theta.
MESSAGES = {
    BAD_THETA: "{theta_step} returned a non-finite theta",
    BAD_THETA_SIZE: "{theta_step} returned a theta of the wrong size",
    BAD_RATIO: "the acceptance ratio is NaN: the mechanism's statistic or log_density (or the "
               "propose_record log ratio) produced NaN",
    BAD_RECORD: "draw_record (or propose_record) wrote a non-finite value into a record "
                "during the sweep",
    BAD_STATS: "model_stat produced a non-finite running statistic",
    BAD_SUPPORT: "{theta_step} returned a theta outside the parameter space (the model's "
                 "theta_support is False for it)",
    BAD_DRIFT: "the running statistics disagree with the imputed database beyond rounding: "
               "something modified x outside the record sweep (draw_theta, or a theta kernel, "
               "must not write to its x argument), or model_stat / the mechanism's statistic "
               "is not a pure function of the record",
    BAD_RECORD_SUPPORT: "draw_record (or propose_record) produced a record outside the "
                        "model's record_support during the sweep",
    TOO_MANY_REJECTIONS: "{max_rejections} consecutive draws of the statistic fell outside "
                         "its valid region: the normal approximation puts almost no mass on "
                         "valid totals (n too small for the CLT, or a release far outside the "
                         "possible range)",
    BAD_ENTRIES: "a sparse statistic's entries function (declared with dw.declare_sparse or "
                 "a mechanism's entries) returned a count outside 0..nnz or an index outside "
                 "0..size-1 during the sweep, or disagrees with the dense statistic on a "
                 "record of the imputed database (checked at each refresh of the running "
                 "sums: declare_sparse must describe the statistic's own values)",
}


def message(code: int, theta_step: str = "draw_theta", **details) -> str:
    """The sentence for status ``code``, naming the theta step (e.g. ``"the family's
    conjugate_draw"``) and any other ``details`` the message refers to."""
    return MESSAGES[code].format(theta_step=theta_step, **details)
