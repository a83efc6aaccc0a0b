"""Sphinx configuration for the dawrap documentation.

Build (warnings are errors):

    python3 -m pip install -e ".[docs]" && python3 -m sphinx -W -b html docs docs/_build/html

Executed examples: sphinx-gallery, not myst-nb. The examples are plain ``.py`` scripts, so
they stay runnable with ``python examples/...py``, diff well in review, need no Jupyter
kernel, and sphinx-gallery captures their printed output and matplotlib figures (with
thumbnails) and links every ``dw.*`` name in them to the API reference. ``DAWRAP_DOCS_FAST=1``
makes every example use its reduced size (fewer draws, fewer epsilons), as ``.ci/docs`` does.
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import dawrap  # noqa: E402
from dawrap.models import REGISTRY  # noqa: E402
from model_pages import write_model_pages  # noqa: E402  (docs/model_pages.py)
from package_tree import write_package_tree  # noqa: E402  (docs/package_tree.py)
from gallery_hooks import format_warning  # noqa: E402  (docs/gallery_hooks.py)

warnings.filterwarnings("ignore", message=".*ArviZ is undergoing a major refactor.*")


warnings.formatwarning = format_warning  # and in the examples' processes: gallery_hooks
os.environ.setdefault("MPLBACKEND", "Agg")

project = "dawrap"
author = "dawrap developers"
copyright = "dawrap developers"
release = version = dawrap.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    # MathJax shipped with the site, so that formulas render without network access (the
    # package's import name has hyphens; importlib accepts it).
    "sphinx-mathjax-offline",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "README.md", "**/GALLERY_HEADER.rst", "**.ipynb", "**.py",
                    "**.zip", "**.md5", "**.pickle", "**sg_execution_times.rst"]
root_doc = "index"

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set = set()
numpydoc_xref_param_type = False

intersphinx_mapping: dict = {}   # no network at build time

html_theme = "pydata_sphinx_theme"
html_title = f"dawrap {release}"
html_static_path = ["_static"]
html_css_files = ["dawrap.css"]   # wider article, nothing clipped at 1280 px
html_js_files = ["dawrap.js"]     # module names in the navigation break at dots
templates_path = ["_templates"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": []}

# The API reference's page of the built-in models and the catalogue's table, written from
# their registry at every build (docs/model_pages.py), so that a model added to the registry
# appears in both.
write_model_pages()
write_package_tree()

#: The order of the gallery pages (sphinx-gallery sorts each folder by this key): the
#: Quickstart first, then the tutorials, then the how-tos; the catalogue in the registry's
#: order. Anything not listed follows, by file name.
GALLERY_ORDER = ["plot_quickstart.py", "plot_own_model.py", "plot_from_dp_libraries.py",
                 "plot_private_logistic_regression.py", "plot_noisy_blocks.py", "plot_long_runs.py",
                 "plot_calibration.py",
                 *(f"plot_{name}.py" for name in REGISTRY)]


def gallery_order(filename: str) -> tuple:
    return (GALLERY_ORDER.index(filename) if filename in GALLERY_ORDER else len(GALLERY_ORDER),
            filename)


sphinx_gallery_conf = {
    "examples_dirs": ["../examples/gallery", "../examples/models", "../examples/case_studies"],
    "gallery_dirs": ["auto_examples", "catalogue", "case_studies"],
    "filename_pattern": r"/plot_",
    "within_subsection_order": gallery_order,
    "download_all_examples": False,
    "remove_config_comments": True,
    "reference_url": {"dawrap": None},
    "doc_module": ("dawrap",),
    "backreferences_dir": None,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "show_memory": False,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib", "gallery_hooks.quiet_warnings"),
    "min_reported_time": 10**9,
    # The examples are independent scripts and nearly all their time is numba compiling:
    # run them in worker processes, one per core (up to 4), so the build does not leave
    # cores idle (sphinx-gallery's joblib "loky" backend; the compiled chains are shared
    # through dawrap's disk cache).
    "parallel": max(1, min(4, os.cpu_count() or 1)),
}

nitpicky = False
suppress_warnings = ["config.cache"]
