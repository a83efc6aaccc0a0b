"""The study store (dawrap.studies.trial_log.Store): completed trials survive a restart, a
second study on the same file is refused while the first holds it, and every kind of damage
is named with its line."""
import json

import pytest

from dawrap.studies.trial_log import Store

SETTINGS = {"model": "beta_binomial", "trials": 3}


def rows_of(path):
    with Store(path, SETTINGS) as store:
        return store.rows


def test_trials_appended_are_read_back_after_a_restart(tmp_path):
    path = tmp_path / "sub" / "study.jsonl"  # the folder is created
    with Store(path, SETTINGS) as store:
        assert store.rows == {}
        store.append({"trial": 0, "value": 1.5})
        store.append({"trial": 2, "value": float("nan")})
        assert set(store.rows) == {0, 2}
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"settings": SETTINGS} and len(lines) == 3
    rows = rows_of(path)
    assert rows[0] == {"trial": 0, "value": 1.5} and set(rows) == {0, 2}


def test_a_second_study_on_the_same_store_is_refused_while_the_first_runs(tmp_path):
    path = tmp_path / "study.jsonl"
    with Store(path, SETTINGS):
        with pytest.raises(ValueError, match="wait for it to finish"):
            Store(path, SETTINGS)
    Store(path, SETTINGS).close()  # free again once the first closed it


def test_another_studys_store_is_refused_unless_replaced(tmp_path):
    path = tmp_path / "study.jsonl"
    with Store(path, SETTINGS) as store:
        store.append({"trial": 0, "value": 1.0})
    other = {"model": "poisson_gamma", "trials": 3}
    with pytest.raises(ValueError, match="holds a study with other settings"):
        Store(path, other)
    with Store(path, other, replace=True) as store:
        assert store.rows == {}
    assert json.loads(path.read_text().splitlines()[0]) == {"settings": other}


def test_a_row_cut_short_is_dropped_and_the_next_row_starts_its_own_line(tmp_path):
    path = tmp_path / "study.jsonl"
    with Store(path, SETTINGS) as store:
        store.append({"trial": 0, "value": 1.0})
    with open(path, "a") as f:
        f.write('{"trial": 1, "val')  # a study killed while appending
    with Store(path, SETTINGS) as store:
        assert set(store.rows) == {0}
        store.append({"trial": 1, "value": 2.0})
    assert set(rows_of(path)) == {0, 1}


def test_the_same_result_twice_is_read_once_but_two_results_are_refused(tmp_path):
    path = tmp_path / "study.jsonl"
    header = json.dumps({"settings": SETTINGS})
    path.write_text(f'{header}\n{{"trial": 1, "v": 2}}\n{{"trial": 1, "v": 2}}\n')
    assert rows_of(path) == {1: {"trial": 1, "v": 2}}
    path.write_text(f'{header}\n{{"trial": 1, "v": 2}}\n{{"trial": 1, "v": 3}}\n')
    with pytest.raises(ValueError, match="two different results for trial 1, on lines 2 and 3"):
        rows_of(path)


@pytest.mark.parametrize("row, said", [
    ("[1, 2]", "line 2 is not a valid trial .not a JSON object"),
    ('{"trial": -1}', r"trial must be an index >= 0, got -1"),
    ('{"trial": true}', r"trial must be an index >= 0, got True"),
    ('{"trial": 0', "line 2 is not a valid trial .not JSON"),
    ('{"trial": 0, "v": "bad"}', "v must be a number"),
])
def test_a_damaged_row_is_named_with_its_line(tmp_path, row, said):
    path = tmp_path / "study.jsonl"
    path.write_text(json.dumps({"settings": SETTINGS}) + f"\n{row}\n")

    def check_row(r):
        return None if isinstance(r.get("v", 0), (int, float)) else "v must be a number"

    with pytest.raises(ValueError, match=said):
        Store(path, SETTINGS, check_row=check_row).close()


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("my notes\n")
    with pytest.raises(ValueError, match="line 1 is not a dawrap study header"):
        Store(path, SETTINGS)
    assert path.read_text() == "my notes\n"  # left as it was


def test_verify_catches_a_store_changed_while_the_study_ran(tmp_path):
    path = tmp_path / "study.jsonl"
    with Store(path, SETTINGS) as store:
        store.append({"trial": 0, "value": 1.0})
        store.verify(store.rows, 1)
        with pytest.raises(ValueError, match="lacks trial 1"):
            store.verify({**store.rows, 1: {"trial": 1}}, 2)
        with open(path, "a") as f:
            f.write(json.dumps({"trial": 0, "value": 9.0}) + "\n")
        with pytest.raises(ValueError, match="two different results for trial 0"):
            store.verify(store.rows, 1)
