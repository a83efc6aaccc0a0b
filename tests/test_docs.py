"""The documentation site: it builds, every public name has a page, every page's images and
internal links resolve, and a headless browser renders the home page, the ``dw.sample``
reference and a gallery example with their figures. What a reader would trip over is
checked on every page: markup shown raw (``:func:`` and the like), a path of the machine
that built the site, an executed example showing its output before its code, and (in a
headless browser at 1280 px) a table or code block wider than its column, so clipped.

Reads the site built by ``.ci/docs`` (``DAWRAP_DOCS_BUILT=docs/_build/html``) or by the
documented build command (``docs/_build/html``); skipped when Sphinx is not installed
(``pip install -e ".[docs]"``) or the site has not been built.
"""
from __future__ import annotations

import html.parser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytest.importorskip("sphinx", reason="Sphinx is not installed: pip install -e '.[docs]'")
pytest.importorskip("sphinx_gallery",
                    reason="sphinx-gallery is not installed: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site() -> Path:
    """The built site: ``DAWRAP_DOCS_BUILT`` (``.ci/docs`` sets it), else the documented
    command's output folder ``docs/_build/html``. Building takes minutes, so the test does
    not build on its own: it skips and says how."""
    built = os.environ.get("DAWRAP_DOCS_BUILT")
    path = Path(built) if built else ROOT / "docs" / "_build" / "html"
    if not path.is_absolute():
        path = ROOT / path
    if built:
        assert (path / "index.html").is_file(), f"DAWRAP_DOCS_BUILT={built} holds no site"
    elif not (path / "index.html").is_file():
        pytest.skip("the documentation site is not built: run bash .ci/docs, or "
                    "python3 -m sphinx -W -b html docs docs/_build/html")
    return path


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.ids = [], [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _pages(site: Path):
    return [p for p in site.rglob("*.html") if "_static" not in p.parts]


def _local(href: str) -> bool:
    parts = urlsplit(href)
    return not parts.scheme and not parts.netloc and not href.startswith("mailto:")


@pytest.mark.slow
def test_every_public_name_has_a_reference_page(site):
    import dawrap
    import dawrap.models

    missing = [name for name in dawrap.__all__ if name != "__version__"
               and not (site / "api" / "generated" / f"dawrap.{name}.html").is_file()]
    missing += [f"models.{name}" for name in dawrap.models.REGISTRY
                if not (site / "api" / "generated" / f"dawrap.models.{name}.html").is_file()]
    assert not missing, f"no API page for {missing}"
    sample = (site / "api" / "generated" / "dawrap.sample.html").read_text(encoding="utf-8")
    assert "Parameters" in sample and "checkpoint" in sample


@pytest.mark.slow
def test_no_broken_images_or_internal_links(site):
    parsed = {p: _parse(p) for p in _pages(site)}
    broken = []
    for page, info in parsed.items():
        for src in info.images:
            if _local(src) and not (page.parent / unquote(urlsplit(src).path)).is_file():
                broken.append(f"{page.relative_to(site)}: image {src}")
        for href in info.links:
            if not _local(href):
                continue
            parts = urlsplit(href)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: link {href}")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if parts.fragment not in ids:
                    broken.append(f"{page.relative_to(site)}: anchor {href}")
    assert not broken, "\n".join(broken[:50])


# The pages a reader must see with their figures (sphinx-gallery's executed output, the
# committed benchmark figures).
FIGURES = {
    "auto_examples/plot_quickstart.html": "sphx_glr_plot_quickstart_001.png",
    "catalogue/plot_beta_binomial.html": "sphx_glr_plot_beta_binomial_001.png",
    "case_studies/plot_anes96_contingency.html": "sphx_glr_plot_anes96_contingency_001.png",
    "case_studies/plot_diabetes_regression.html": "sphx_glr_plot_diabetes_regression_001.png",
    "reproductions/ju_loglinear.html": "ju_loglinear_fig1.png",
    "reproductions/calibration.html": "calibration.png",
    "auto_examples/plot_own_model.html": "sphx_glr_plot_own_model_001.png",
}


@pytest.mark.slow
@pytest.mark.parametrize("page,figure", sorted(FIGURES.items()))
def test_pages_show_their_figures(site, page, figure):
    info = _parse(site / page)
    assert any(Path(urlsplit(src).path).name == figure for src in info.images), \
        f"{page} does not show {figure}"


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.parametrize("page", ["index.html", "api/generated/dawrap.sample.html",
                                  "case_studies/plot_anes96_contingency.html"])
def test_headless_browser_renders_the_page(site, page, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless browser (apt-get install chromium): the HTML checks above "
                    "still ran")
    out_dir = Path(os.environ.get("DAWRAP_DOCS_SCREENSHOTS", tmp_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    shot = out_dir / (page.replace("/", "_").replace(".html", ".png"))
    shot.unlink(missing_ok=True)
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--window-size=1280,1800",
                    f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", (site / page).resolve().as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000
    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(shot)[..., :3]
    # A rendered page has text and figures: far from one flat colour.
    assert pixels.std() > 0.05, f"{page} rendered blank"
    assert len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50


class _Text(html.parser.HTMLParser):
    """A page's text as a reader sees it outside code (``<pre>``, ``<code>``), and the text
    of its code literals that are not links."""

    CODE = ("pre", "code", "script", "style", "kbd", "samp", "tt")

    def __init__(self):
        super().__init__()
        self.code_depth, self.link_depth = 0, 0
        self.prose, self.code = [], []

    def handle_starttag(self, tag, attrs):
        self.code_depth += tag in self.CODE
        self.link_depth += tag == "a"

    def handle_endtag(self, tag):
        self.code_depth -= tag in self.CODE
        self.link_depth -= tag == "a"

    def handle_data(self, data):
        if not self.code_depth:
            self.prose.append(data)
        elif not self.link_depth:
            self.code.append(data)


def _text(path: Path) -> _Text:
    text = _Text()
    text.feed(path.read_text(encoding="utf-8"))
    return text


#: reStructuredText and MyST markup that should have become a link or a formula.
RAW_MARKUP = re.compile(r":(?:func|class|meth|mod|data|attr|doc|ref|math|obj|exc|term|numref)"
                        r":`|\{(?:doc|ref|math|func|class|mod|meth)\}`|``\w")


@pytest.mark.slow
def test_no_raw_markup_in_rendered_text(site):
    """A docstring paragraph in the wrong numpydoc section rendered ``:func:`_check_memory```
    and double backquotes as they are (issue 29)."""
    found = []
    for page in _pages(site):
        prose = " ".join(_text(page).prose)
        found += [f"{page.relative_to(site)}: ...{prose[max(0, m.start() - 40):m.end() + 30]}..."
                  for m in RAW_MARKUP.finditer(prose)]
    assert not found, "\n".join(found[:20])


@pytest.mark.slow
def test_no_page_shows_the_build_machines_paths(site):
    """A warning printed by an example showed the build machine's checkout (issue 29)."""
    found = [f"{page.relative_to(site)}: {marker}" for page in _pages(site)
             for marker in (str(ROOT),)
             if marker in " ".join(_text(page).prose + _text(page).code)]
    assert not found, "\n".join(found[:20])


GALLERIES = ("auto_examples", "catalogue", "case_studies")


@pytest.mark.slow
def test_executed_examples_show_code_before_output(site):
    """sphinx-gallery puts an example of one code block's output above its code; every
    example has several, so each output follows the code that printed it."""
    late = []
    for gallery in GALLERIES:
        for page in sorted((site / gallery).glob("plot_*.html")):
            html_text = page.read_text(encoding="utf-8")
            code = html_text.find('class="highlight-Python')
            output = min((i for i in (html_text.find("sphx-glr-script-out"),
                                      html_text.find("sphx-glr-single-img"),
                                      html_text.find("sphx-glr-multi-img")) if i >= 0),
                         default=len(html_text))
            if not 0 <= code < output:
                late.append(str(page.relative_to(site)))
    assert not late, f"output before code on {late}"


def _gallery_titles(index: Path) -> list[str]:
    return re.findall(r'<div class="sphx-glr-thumbnail-title">([^<]*)</div>',
                      index.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_gallery_starts_with_the_quickstart_and_the_catalogue_follows_the_registry(site):
    import dawrap.models

    titles = _gallery_titles(site / "auto_examples" / "index.html")
    assert titles[0].startswith("Quickstart"), titles
    assert any(t.startswith("Tutorial: your logistic-regression") for t in titles)
    assert any(t.startswith("Census-style counts") for t in titles)
    catalogue = [t.split(":")[0] for t in _gallery_titles(site / "catalogue" / "index.html")]
    assert catalogue == list(dawrap.models.REGISTRY)
    table = (site / "catalogue" / "index.html").read_text(encoding="utf-8")
    assert all(f"dawrap.models.{name}.html" in table for name in dawrap.models.REGISTRY)


@pytest.mark.slow
@pytest.mark.parametrize("page, target", [
    ("kernels.html", "plot_private_logistic_regression.html"),
    ("pymc.html", "plot_private_logistic_regression.html"),
    ("guide/model.html", "plot_private_logistic_regression.html"),
    ("tables.html", "plot_noisy_blocks.html"),
    ("guide/own_model.html", "plot_own_model.html"),
])
def test_tutorials_are_linked_pages_not_bare_paths(site, page, target):
    info = _parse(site / page)
    assert any(urlsplit(href).path.endswith(target) for href in info.links), \
        f"{page} does not link {target}"
    bare = [c for c in _text(site / page).code if re.search(r"examples/\S*\.py", c)
            and "pymc_" not in c]
    assert not bare, f"{page} shows bare paths {bare}"


#: Injected into a copy of a page: after layout, every table and code block of the article
#: that is wider than its own box or its wrapper's (hidden or scrolled), or reaches past the
#: article's right edge, with the widths; posted to the frame that holds the copy
#: (CLIP_FRAMES).
CLIP_PROBE = """<script>window.addEventListener("load", function () {
  var out = [], article = document.querySelector("article");
  var right = article ? article.getBoundingClientRect().right : Infinity;
  document.querySelectorAll("article table, article pre").forEach(function (el) {
    [el, el.parentElement].forEach(function (node) {
      if (node.scrollWidth > node.clientWidth + 1) {
        out.push([el.tagName, node.scrollWidth, node.clientWidth,
                  el.textContent.trim().slice(0, 60)]);
      }
    });
    var box = el.getBoundingClientRect();
    if (box.right > right + 1) {
      out.push([el.tagName, Math.round(box.right - box.left),
                Math.round(right - box.left), el.textContent.trim().slice(0, 60)]);
    }
  });
  parent.postMessage({page: PAGE, width: window.innerWidth, report: out}, "*");
});</script>"""

#: One browser for many pages: each copy in a frame 1280 px wide (the window's width before,
#: one browser per page), their reports gathered into the page that --dump-dom returns.
CLIP_FRAMES = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body
style="margin:0">{frames}<script>
var reports = {{}}, expected = {count};
window.addEventListener("message", function (event) {{
  reports[event.data.page] = [event.data.width, event.data.report];
  if (Object.keys(reports).length === expected) {{
    var r = document.createElement("div");
    r.id = "clip-report";
    r.setAttribute("data-report", JSON.stringify(reports));
    document.body.appendChild(r);
  }}
}});</script></body></html>"""

#: Pages per browser (about 0.7 s of CPU to start one; every frame's page stays loaded). With
#: 12, a browser on a loaded machine (the 2 cores shared with a test run) dumped its page
#: before every frame had reported (CI, 2026-12-07; 12 pages passed in 25 s when idle).
CLIP_BATCH = 6


def _clipped(browser: str, pages: list, folder: Path) -> list:
    """For each of ``pages``, the clipped tables and code blocks at 1280 px (CLIP_PROBE), in
    one browser. The probes are copies of the pages outside the site (their links resolved
    against the page's folder by a ``<base>``), so that tests reading the site never meet
    them."""
    import json
    from html import unescape

    folder.mkdir(parents=True, exist_ok=True)
    frames = []
    for k, page in enumerate(pages):
        text = page.read_text(encoding="utf-8").replace(
            "<head>", f'<head><base href="{page.parent.resolve().as_uri()}/">', 1)
        probe = folder / f"probe{k}.html"
        probe.write_text(text.replace("</body>", CLIP_PROBE.replace("PAGE", str(k))
                                      + "</body>"), encoding="utf-8")
        frames.append(f'<iframe src="{probe.resolve().as_uri()}" width="1280" height="1800" '
                      f'style="border:0;display:block"></iframe>')
    holder = folder / "frames.html"
    holder.write_text(CLIP_FRAMES.format(frames="".join(frames), count=len(pages)),
                      encoding="utf-8")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--hide-scrollbars", "--window-size=1280,1800",
                          "--allow-file-access-from-files",
                          "--virtual-time-budget=60000", f"--user-data-dir={folder / 'chrome'}",
                          "--dump-dom", holder.resolve().as_uri()],
                         capture_output=True, text=True, timeout=600).stdout
    report = re.search(r'id="clip-report" data-report="([^"]*)"', dom)
    assert report, f"{[p.name for p in pages]}: not every probe reported"
    reports = json.loads(unescape(report.group(1)))
    assert all(reports[str(k)][0] == 1280 for k in range(len(pages))), reports
    return [reports[str(k)][1] for k in range(len(pages))]


@pytest.mark.slow
def test_nothing_is_clipped_at_1280px(site, tmp_path):
    """At a 1280 px window the model-protocol, mechanisms and case-study tables and most code
    blocks were wider than the article, their ends hidden (issue 29)."""
    from concurrent.futures import ThreadPoolExecutor

    browser = _browser()
    if browser is None:
        pytest.skip("no headless browser (apt-get install chromium)")
    pages = [p for p in _pages(site) if "<article" in p.read_text(encoding="utf-8")
             and ("<table" in p.read_text(encoding="utf-8")
                  or "<pre" in p.read_text(encoding="utf-8"))]
    batches = [pages[k:k + CLIP_BATCH] for k in range(0, len(pages), CLIP_BATCH)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = [r for batch in pool.map(
            lambda ib: _clipped(browser, ib[1], tmp_path / f"b{ib[0]}"), enumerate(batches))
            for r in batch]
    clipped = [f"{page.relative_to(site)}: {tag} needs {wide} px, has {room}: {text!r}"
               for page, report in zip(pages, reports) for tag, wide, room, text in report]
    assert not clipped, "\n".join(clipped)


# Every Python code block of a guide page (README.md, docs/*.md, docs/guide/*.md,
# docs/extending/*.md) runs as
# written, or says it is a fragment and links the full example that runs (issue 41: the
# census, marginals and parallel pages used names they never defined). A block is one of:
#
# * README.md: a ```python block, run by tests/test_readme.py (every one, as one script);
# * a ```python block of a docs page: run by this test, the page's blocks as one script;
# * a {literalinclude} of a gallery example (executed by the build), of the package's own
#   source (the code that runs), or of a script under examples/ that a test runs
#   (SCRIPTS_RUN_BY_TESTS);
# * a {code-block} python whose caption starts "A fragment" and links, with {doc}, a
#   gallery page, or with {download}, a script of SCRIPTS_RUN_BY_TESTS.

#: The gallery's output folders (docs/conf.py) and the example folders they are built from.
GALLERY_SOURCES = {"auto_examples": "gallery", "catalogue": "models",
                   "case_studies": "case_studies"}

#: Scripts under examples/ that are not gallery pages, and the test files that run them.
SCRIPTS_RUN_BY_TESTS = {
    "examples/adult_marginals.py": "tests/test_docs.py",
    "examples/pymc_logistic_regression.py": "tests/dawrap_pymc/test_pymc_posteriors.py",
    "examples/tumult_grouped_count.py": "tests/test_tumult.py",
}

FENCE = re.compile(r"^(?P<fence>`{3,})(?:\{(?P<directive>[\w-]+)\})?[ \t]*(?P<arg>[^\n]*)\n"
                   r"(?P<body>.*?)^(?P=fence)[ \t]*$", re.S | re.M)


def _guide_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "docs" / "guide").glob("*.md")),
            *sorted((ROOT / "docs" / "extending").glob("*.md"))]


def _options(body: str) -> tuple[dict, str]:
    """A MyST directive's ``:name: value`` options and its content. MyST reads one line per
    option: a value continued over an indented line is kept (so the check can name it) under
    the key ``"continued"``."""
    options, lines, name = {}, body.splitlines(), None
    k = 0
    for k, line in enumerate(lines):
        m = re.match(r":([\w-]+):\s*(.*)", line)
        if m:
            name = m.group(1)
            options[name] = m.group(2)
        elif name and line.startswith((" ", "\t")) and line.strip():
            options[name] += " " + line.strip()
            options["continued"] = name
        else:
            break
    else:
        k = len(lines)
    return options, "\n".join(lines[k:])


def _executed_example(path: Path) -> bool:
    """A gallery example that the build executes, or a script a test runs."""
    rel = path.resolve().relative_to(ROOT.resolve()).as_posix() \
        if path.resolve().is_relative_to(ROOT.resolve()) else str(path)
    if re.fullmatch(r"examples/(gallery|models|case_studies)/plot_\w+\.py", rel):
        return path.is_file()
    runner = SCRIPTS_RUN_BY_TESTS.get(rel)
    return bool(runner and path.is_file() and Path(rel).stem in (ROOT / runner).read_text())


def _fragment_link_ok(caption: str, page: Path) -> bool:
    """The caption says "A fragment" and links an executed example: a gallery page
    ({doc}) or a script a test runs ({download})."""
    if not caption.strip('"').startswith("A fragment"):
        return False
    for doc in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", caption):
        parts = doc.strip("/").split("/")
        if len(parts) == 2 and parts[0] in GALLERY_SOURCES and _executed_example(
                ROOT / "examples" / GALLERY_SOURCES[parts[0]] / f"{parts[1]}.py"):
            return True
    for target in re.findall(r"\{download\}`[^`<]*<([^`>]+)>`", caption):
        if _executed_example(page.parent / target):
            return True
    return False


def classify_code_blocks(page: Path, text: str) -> tuple[list[str], list[str]]:
    """``(scripts, faults)`` for the Python code blocks of a guide page: the plain
    ```python blocks this test must run (not README's: tests/test_readme.py runs them), and
    a line for every block that is neither executed nor a marked fragment."""
    scripts, faults = [], []
    for m in FENCE.finditer(text):
        directive, arg, body = m.group("directive"), m.group("arg").strip(), m.group("body")
        line = text[:m.start()].count("\n") + 1
        where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{line}"
        if directive is None:
            if arg == "python" and page != ROOT / "README.md":  # README's: test_readme.py
                scripts.append(body)
            continue
        options, content = _options(body)
        if "continued" in options:
            faults.append(f"{where}: the option :{options['continued']}: goes on over a second "
                          f"line, which MyST does not read (the build fails): one line each")
        if directive == "literalinclude":
            if options.get("language") != "python" and not arg.endswith(".py"):
                continue
            target = (page.parent / arg).resolve()
            own_source = target.is_relative_to((ROOT / "dawrap").resolve())
            if not (own_source or _executed_example(target)):
                faults.append(f"{where}: includes {arg}, which neither the build nor a test "
                              f"runs")
        elif directive in ("code-block", "code", "sourcecode") and arg == "python":
            if not _fragment_link_ok(options.get("caption", ""), page):
                faults.append(f"{where}: a code block that no one runs, without a caption "
                              f"\"A fragment ...\" linking the executed example")
    return scripts, faults


def test_every_guide_code_block_is_executed_or_a_marked_fragment():
    faults = []
    for page in _guide_pages():
        faults += classify_code_blocks(page, page.read_text(encoding="utf-8"))[1]
    assert not faults, "\n".join(faults)


@pytest.mark.parametrize("block, fault", [
    ("```python\nx = 1\n```", None),                                       # run by the test
    ("```{code-block} python\nx = county_of_block\n```", "no one runs"),
    ("```{code-block} python\n:caption: \"A fragment: see {doc}`/marginals`\"\n\nx = s_dp\n```",
     "no one runs"),                                                       # not an example
    ("```{code-block} python\n:caption: \"A fragment. In full: {doc}`/catalogue/plot_census`\""
     "\n\nx = s_dp\n```", None),
    ("```{code-block} python\n:caption: \"A fragment. In full:\n  {doc}`/catalogue/plot_census`\""
     "\n\nx = s_dp\n```", "over a second line"),
    ("```{code-block} python\n:caption: \"A fragment: {doc}`/catalogue/plot_nothing`\"\n\nx\n```",
     "no one runs"),
    ("```{literalinclude} ../examples/gallery/plot_quickstart.py\n:language: python\n```", None),
    ("```{literalinclude} ../examples/quickstart.py\n:language: python\n```", "neither"),
    ("```{literalinclude} ../examples/adult_marginals.py\n:language: python\n```", None),
    ("```{literalinclude} ../dawrap/_templates.py\n:language: python\n```", None),
])
def test_the_code_block_check_tells_fragments_from_executed_code(block, fault):
    scripts, faults = classify_code_blocks(ROOT / "docs" / "page.md", f"# Page\n\n{block}\n")
    if fault is None:
        assert not faults, faults
    else:
        assert len(faults) == 1 and fault in faults[0], faults
    assert len(scripts) == (block.startswith("```python"))


@pytest.mark.slow
def test_the_docs_pages_python_blocks_run(tmp_path):
    """Each docs page's ```python blocks, joined in order, run as one fresh script."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("MPLBACKEND", "Agg")
    ran = 0
    for page in _guide_pages()[1:]:
        scripts = classify_code_blocks(page, page.read_text(encoding="utf-8"))[0]
        if not scripts:
            continue
        # guide/model.md and extending/model.md: one folder per page path
        folder = tmp_path / "_".join(page.relative_to(ROOT).with_suffix("").parts)
        folder.mkdir()
        (folder / "page.py").write_text("\n\n".join(scripts))
        done = subprocess.run([sys.executable, "page.py"], cwd=folder, capture_output=True,
                              text=True, env=env, timeout=600)
        assert done.returncode == 0, f"{page.relative_to(ROOT)}:\n{done.stderr[-3000:]}"
        ran += 1
    assert ran >= 1


@pytest.mark.slow
def test_the_adult_case_study_runs(capsys):
    """examples/adult_marginals.py, shown in full on docs/marginals.md, at a small size
    (the docs extra installs what it needs: pandas, statsmodels)."""
    pytest.importorskip("statsmodels")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "adult_marginals", ROOT / "examples" / "adult_marginals.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # chains this short do not mix
        module.main(draws=20, tune=20, m=3)
    out = capsys.readouterr().out
    assert "n = 46043, 10 attributes, 1,792,000 cells" in out
    assert "gender_Male" in out and "3 synthetic datasets of 46043 records" in out


def test_the_architecture_pages_tree_names_every_module_with_its_summary():
    """docs/package_tree.py generates the architecture page's tree from the package: every
    folder and module of dawrap/ and models/ has a line, and each says what it is (its
    docstring's first sentence), so the page cannot leave one out."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import package_tree
    finally:
        sys.path.remove(str(ROOT / "docs"))
    tree = package_tree.package_tree()
    for package in package_tree.PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name == "__init__.py":
                path = path.parent
            name = path.name + ("/" if path.is_dir() else "")
            assert re.search(rf"^ *{re.escape(name)} ", tree, re.M), path
            assert package_tree.summary(path), f"{path.relative_to(ROOT)} has no docstring"
    assert "api/package_tree.inc" in (ROOT / "docs" / "architecture.md").read_text()
