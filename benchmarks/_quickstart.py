"""The README Quickstart's model of one's own, as source text for benchmarks that run it in
fresh processes (``compile_profile.py``, ``modes_overhead.py``): one copy, so the two measure
the same model."""

#: The three ``@numba.njit`` functions and ``model``, ``mech`` of the Quickstart, verbatim.
MODEL = '''
import numba, numpy as np
import dawrap as dw

@numba.njit
def draw_record(rng, theta, out):
    out[0] = 1.0 if rng.random() < theta[0] else 0.0

@numba.njit
def count(x_i, out):
    out[0] = x_i[0]

@numba.njit
def draw_theta(rng, theta, x, stats):
    return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])

model = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                 draw_theta=draw_theta, model_stat=count, stat_size=1,
                 draw_prior=lambda rng: np.array([rng.beta(1, 1)]))
mech = dw.Laplace(count, epsilon=0.5, sensitivity=1.0)
'''
