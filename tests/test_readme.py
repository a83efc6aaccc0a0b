"""Every code block of README.md runs as written, in order, and prints what the README shows.

* The ```python blocks are joined, in order, into one script, run by a fresh Python process
  in an empty folder: what a reader who pastes them into a file gets.
* The ```bash blocks run in another empty folder: each ``dawrap ...`` command through
  :func:`dawrap.cli.main`, the function behind the ``dawrap`` entry point, in this process;
  ``echo TEXT > FILE`` writes the file. The install lines (``python3 -m pip ...``) and the
  test-suite line (``python3 -m pytest``) are not run: installing is what made this test
  possible, and the suite includes this test. Any other command fails the test, so that a
  README change cannot slip past it.
* A ```text block is output: the lines the code block before it (prose in between allowed)
  must print, in order, with numbers equal to within 2% or one unit of their last digit.
  Columns headed ``ess/s`` are timings and are not compared. On ArviZ 1.x a line laid out
  differently (its ``az.summary`` shows other columns than the 0.x one the README shows) is
  not compared; every other line must still be found.
* Sizes: the Python blocks run exactly as written. The bash blocks' calibration study is the
  one substitution, listed in ``SMALLER``: 200 trials in a process pool would cost a minute of
  compilation in every worker for seconds of work, so the test runs 8 trials in this process.
* Plots need matplotlib (the ``plots`` extra). Without it the plotting lines are left out and
  the test, having checked everything else, ends as skipped and says so.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dawrap import diagnostics

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: README text -> what the test runs instead (each must occur in the README).
SMALLER = {"--trials 200 --out study": "--trials 8 --executor serial --out study"}

#: A Python line that draws a plot (needs matplotlib).
PLOT_CALL = re.compile(r"\.plot\w*\(|\bplot_\w+\(")

#: Separates the output of one Python block from the next in the script's stdout.
MARK = "@@ README block {} @@"

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, re.S | re.M)]


def _with_outputs(blocks):
    """``[(language, code, expected output or None)]`` for the python and bash blocks; a text
    block is the output of the nearest code block before it."""
    out = []
    for language, code in blocks:
        if language == "text":
            assert out and out[-1][2] is None, "a text block without a code block before it"
            out[-1] = (*out[-1][:2], code)
        elif language in ("python", "bash"):
            out.append((language, code, None))
    return out


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _numbers_agree(expected: str, actual: str) -> bool:
    """``actual`` is within 2% of ``expected``, or within one unit of its last digit."""
    e, a = float(expected), float(actual)
    mantissa = expected.lower().split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** -decimals * (10.0 ** int(expected.lower().split("e")[1])
                                if "e" in expected.lower() else 1.0)
    return abs(a - e) <= max(0.02 * abs(e), unit * 1.0001)


def _line_matches(expected: str, actual: str, skip: set) -> bool:
    """Same words and layout, numbers within tolerance; tokens at indices in ``skip`` (the
    ``ess/s`` column) are not compared."""
    want, got = expected.split(), actual.split()
    if len(want) != len(got):
        return False
    for i, (w, g) in enumerate(zip(want, got)):
        if i in skip:
            continue
        w_parts, g_parts = NUMBER.split(w), NUMBER.split(g)
        w_nums, g_nums = NUMBER.findall(w), NUMBER.findall(g)
        if w_parts != g_parts or len(w_nums) != len(g_nums):
            return False
        if not all(_numbers_agree(x, y) for x, y in zip(w_nums, g_nums)):
            return False
    return True


def _check_output(expected: str, actual: str, where: str) -> int:
    """Every expected line is found in ``actual``, in order. Returns how many lines were
    compared (on ArviZ 1.x, lines of ArviZ's own summary layout are left out)."""
    lines = [line for line in actual.splitlines() if line.strip()]
    at, skip, compared = 0, set(), 0
    for line in (line for line in expected.splitlines() if line.strip()):
        if "ess/s" in line.split():
            skip = {line.split().index("ess/s")}
        for i in range(at, len(lines)):
            if _line_matches(line, lines[i], skip):
                at, compared = i + 1, compared + 1
                break
        else:
            arviz_layout = diagnostics.ARVIZ_1 and re.search(r"hdi_\d|mcse_mean", expected)
            if not arviz_layout:
                raise AssertionError(f"{where}: the README shows\n  {line}\nbut the output "
                                     f"has no such line after the ones already matched:\n"
                                     + actual)
    return compared


def _script(python_blocks, plots: bool) -> tuple[str, int]:
    """One script of all Python blocks, each preceded by a printed mark; plotting lines are
    left out when ``plots`` is False. Returns the script and how many lines were left out."""
    parts, left_out = [], 0
    for k, code in enumerate(python_blocks):
        lines = []
        for line in code.splitlines():
            if not plots and PLOT_CALL.search(line):
                indent = line[:len(line) - len(line.lstrip())]
                lines.append(f"{indent}pass  # left out: needs matplotlib")
                left_out += 1
            else:
                lines.append(line)
        parts.append(f"print({MARK.format(k)!r}, flush=True)\n" + "\n".join(lines))
    return "\n".join(parts) + "\n", left_out


def _commands(code: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments dropped, ``&&``
    chains split."""
    joined = code.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            commands.append(words[:cut])
            words = words[cut + 1:]
    return commands


def _run_bash(code: str, capsys) -> str:
    from dawrap.cli import main

    out = []
    for words in _commands(code):
        if words[:3] in (["python3", "-m", "pip"], ["python3", "-m", "pytest"]):
            continue  # installing, and the test suite itself: see the module docstring
        if words[0] == "echo" and len(words) >= 3 and words[-2] == ">":
            Path(words[-1]).write_text(" ".join(words[1:-2]) + "\n")
            continue
        assert words[0] == "dawrap", f"the README runs {words[0]!r}: teach this test about it"
        code = main(words[1:])
        captured = capsys.readouterr()
        assert code == 0, f"{shlex.join(words)} exited {code}:\n{captured.err}"
        out.append(captured.out)
    return "".join(out)


def _readme() -> str:
    text = README.read_text()
    for old, new in SMALLER.items():
        assert old in text, f"SMALLER: {old!r} is no longer in the README"
        text = text.replace(old, new)
    return text


@pytest.mark.slow
def test_the_bash_blocks_run_and_print_what_the_readme_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    compared = 0
    for k, (language, code, expected) in enumerate(_with_outputs(_blocks(_readme()))):
        if language != "bash":
            continue
        output = _run_bash(code, capsys)
        if expected is not None:
            compared += _check_output(expected, output, f"bash block {k}")
    assert compared >= 4  # the demo's table, on either ArviZ generation
    for name in ("posterior.nc", "counts.nc", "study/summary.txt",
                 "dawrap-demo/demo_posterior.nc"):
        assert (tmp_path / name).stat().st_size > 0, name


@pytest.mark.slow
def test_the_python_blocks_run_as_one_script_and_print_what_the_readme_shows(tmp_path):
    blocks = _with_outputs(_blocks(_readme()))
    python = [(code, expected) for language, code, expected in blocks if language == "python"]
    plots = _has_matplotlib()
    script, left_out = _script([code for code, _ in python], plots)
    (tmp_path / "readme.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "readme.py"], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    outputs = re.split(r"^@@ README block \d+ @@$", done.stdout, flags=re.M)[1:]
    assert len(outputs) == len(python)
    compared = sum(_check_output(expected, output, f"python block {k}")
                   for k, ((_, expected), output) in enumerate(zip(python, outputs))
                   if expected is not None)
    assert compared >= 6
    if plots:
        for name in ("posteriors.png", "sbc.png", "ranks.png", "trace.png"):
            assert (tmp_path / name).stat().st_size > 5000, name
    else:
        pytest.skip(f"every README block ran except {left_out} plotting lines, which need "
                    f"matplotlib (pip install 'dawrap[plots]')")


@pytest.mark.parametrize("expected, actual, agree", [
    ("p  0.312  0.015", "p  0.312  0.015", True),
    ("p  0.312  0.015", "p  0.313  0.015", True),        # one unit of the last digit
    ("p  0.312  0.015", "p  0.330  0.015", False),
    ("ess 7568.0", "ess 7600.0", True),                  # within 2%
    ("ess 7568.0", "ess 8056.0", False),
    ("[0.042, 0.428] yes", "[0.042, 0.428] NO", False),  # words must agree
    ("9.2e+06", "9.3e+06", True),
    ("count 27", "count 27 of 100", False),              # layout must agree
])
def test_output_comparison(expected, actual, agree):
    assert _line_matches(expected, actual, set()) is agree


def test_output_check_finds_lines_in_order_and_ignores_timings():
    expected = ("method  mean  ess/s\n"
                "record  0.30  1.4e+04\n"
                "naive   0.24  7.9e+06\n")
    actual = ("noise before\n"
              "method  mean  ess/s\n"
              "record  0.30  2.2e+05\n"          # another machine's timing
              "naive   0.24  1.1e+06\n")
    assert _check_output(expected, actual, "test") == 3
    with pytest.raises(AssertionError, match="the README shows"):
        _check_output(expected, actual.replace("0.24", "0.31"), "test")
    with pytest.raises(AssertionError, match="the README shows"):  # order matters
        _check_output("naive 0.24\nrecord 0.30\n", "record 0.30\nnaive 0.24\n", "test")
