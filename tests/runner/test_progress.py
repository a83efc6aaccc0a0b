"""The progress line (dawrap.runner.progress): silent unless on a terminal or asked for,
and its final line reports the iterations done over all chains."""
import io
import re
import time

from dawrap.runner.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_silent_when_stderr_is_not_a_terminal():
    stream = io.StringIO()
    with Progress("record", chains=2, total=10, stream=stream, interval=0.01) as progress:
        progress.done[0] = 10
        time.sleep(0.05)
    assert not progress.enabled and stream.getvalue() == ""


def test_shown_on_a_terminal_and_forced_or_silenced_by_enabled():
    assert Progress("x", 1, 1, stream=Terminal()).enabled
    assert not Progress("x", 1, 1, stream=Terminal(), enabled=False).enabled
    assert Progress("x", 1, 1, stream=io.StringIO(), enabled=True).enabled


def test_the_lines_count_every_chain_and_end_with_done():
    stream = Terminal()
    with Progress("record", chains=3, total=40, stream=stream, interval=0.01) as progress:
        progress.done[:] = [40, 20, 0]
        time.sleep(0.1)  # a few periodic lines
        progress.done[1:] = [40, 40]
    lines = stream.getvalue().split("\r")[1:]
    assert len(lines) >= 2
    assert re.match(r"record: 60/120 iterations \(50%\), .* iterations/s, \d+ s left", lines[0])
    assert re.match(r"record: 120/120 iterations \(100%\), .* iterations/s, done +\n$",
                    lines[-1])


def test_a_study_counts_its_own_unit():
    stream = Terminal()
    with Progress("calibration", chains=1, total=5, stream=stream, unit="trials") as progress:
        progress.done[0] = 5
    assert "calibration: 5/5 trials (100%)" in stream.getvalue()
