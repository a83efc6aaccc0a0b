"""models/ installs as dawrap.models (wheel and editable), never as a top-level `models`."""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHECK = """
import importlib.util, sys
import models                      # the user's own models.py, next to their script
assert models.MINE == 1, "a user's models.py was shadowed"
import dawrap, dawrap.models
from dawrap.models import beta_binomial, poisson_gamma, normal_mean
print(dawrap.__file__)
print(dawrap.models.__file__)
"""


def _source_copy(tmp_path: Path) -> Path:
    """A copy of the tracked sources, so the install cannot see build leftovers."""
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    names = files.stdout.split() if files.returncode == 0 and files.stdout else None
    if names is None:  # not a git checkout: copy the package folders
        names = [str(p.relative_to(REPO)) for d in ("dawrap", "models") for p in
                 (REPO / d).rglob("*.py")] + ["pyproject.toml", "setup.py", "README.md"]
    for name in names:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    return src


def _venv(tmp_path: Path) -> Path:
    """A new venv that sees this environment's packages (numpy, numba, arviz) through a .pth
    file but not its dawrap: a plain path line adds the folder without running the .pth
    files in it, so this environment's own (editable) dawrap install stays invisible.
    `--system-site-packages` would not do: inside a venv it exposes the base interpreter's
    packages, not this environment's."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    child_site = subprocess.run([str(python), "-c", "import sysconfig; "
                                 "print(sysconfig.get_paths()['purelib'])"],
                                capture_output=True, text=True, check=True).stdout.strip()
    parents = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(child_site, "_parent_env.pth").write_text("\n".join(sorted(parents)) + "\n")
    return python


def _check_imports(python: Path, workdir: Path) -> list[str]:
    workdir.mkdir()
    (workdir / "models.py").write_text("MINE = 1\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(python), "-c", CHECK], cwd=workdir, capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


# Build isolation on purpose: the build uses the setuptools pyproject.toml asks for, as a
# user's pip would.
PIP = ["-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]


@pytest.mark.slow
def test_the_readme_snippets_import_from_the_checkout_after_a_plain_install(tmp_path):
    """The README's install is not editable; a newcomer then runs its snippets at the
    checkout's root, where the source dawrap/ shadows the installed copy and has no models/
    inside: ``dawrap.models`` must still import (the checkout's top-level models/)."""
    src = _source_copy(tmp_path)
    python = _venv(tmp_path)
    subprocess.run([str(python), *PIP, str(src)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(python), "-c", "import dawrap, dawrap.models, dawrap.calibration; "
                          "from dawrap.models import beta_binomial; "
                          "print(dawrap.__file__, beta_binomial.__file__)"],
                         cwd=src, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    dawrap_file, models_file = out.stdout.split()
    assert dawrap_file == str(src / "dawrap" / "__init__.py")  # the checkout, as Python does
    assert models_file == str(src / "models" / "beta_binomial.py")


@pytest.mark.slow
def test_wheel_install_provides_dawrap_models(tmp_path):
    src = _source_copy(tmp_path)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--disable-pip-version-check", "-w", str(wheels), str(src)], check=True)
    wheel = next(wheels.glob("dawrap-*.whl"))
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert "dawrap/models/beta_binomial.py" in names
    assert not any(n.startswith("models/") for n in names), "a top-level models package"
    python = _venv(tmp_path)
    subprocess.run([str(python), *PIP, str(wheel)], check=True)
    dawrap_file, models_file = _check_imports(python, tmp_path / "user")
    site = str(tmp_path / "venv")
    assert dawrap_file.startswith(site) and models_file.startswith(site)
    assert models_file.endswith(os.path.join("dawrap", "models", "__init__.py"))


@pytest.mark.slow
def test_editable_install_provides_dawrap_models(tmp_path):
    src = _source_copy(tmp_path)
    python = _venv(tmp_path)
    subprocess.run([str(python), *PIP, "-e", str(src)], check=True)
    dawrap_file, models_file = _check_imports(python, tmp_path / "user")
    assert dawrap_file == str(src / "dawrap" / "__init__.py")
    assert models_file == str(src / "models" / "__init__.py")


@pytest.mark.parametrize("folder", ["dawrap", "models", "tests", "benchmarks", "examples"])
def test_every_source_compiles_without_a_warning(folder):
    """An invalid escape in a docstring ("\\s" outside a raw string) is a DeprecationWarning
    on 3.11 and a SyntaxWarning from 3.12: a user running with ``-W error`` could not
    import dawrap, and our own warning checks fail far from the cause. Name the file."""
    import warnings
    found = []
    for path in sorted((REPO / folder).rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                compile(path.read_text(encoding="utf-8"), str(path), "exec")
            except (SyntaxError, SyntaxWarning, DeprecationWarning) as error:
                found.append(f"{path.relative_to(REPO)}: {error}")
    assert not found, "\n".join(found)
