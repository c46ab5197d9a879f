"""Property test of the option declaration (issue #29, "Options, once, typed, strict"): every
honoured option round-trips through create_table, alter_table and ``table.copy`` with a valid
value of its type, and any one-edit misspelling of it is refused with ``InvalidArgumentError``
suggesting the closest declared key (the option itself, or a declared key as close that sorts
first), misspellings that are themselves a declared key skipped."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, InvalidArgumentError, Schema, SchemaChange, _core

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])
BLOB_SCHEMA = SCHEMA.append(pa.field("image", pa.large_binary()))
DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
DEFS, PATTERNS = _core.option_defs()
KEYS = {d[0] for d in DEFS}
HONOURED = [d for d in DEFS if d[3] == "honoured"]
# honoured options that need a particular table: (table kind, extra options, value)
SPECIAL = {
    "clustering.columns": ("append", {"bucket": "-1"}, "v"),
    "clustering.strategy": ("append", {"bucket": "-1", "clustering.columns": "v"}, "zorder"),
    "sink.clustering.by-columns": ("append", {"bucket": "-1"}, "v"),
    "sink.clustering.strategy": ("append", {"bucket": "-1", "clustering.columns": "v"}, "order"),
    "sink.clustering.sort-in-cluster": ("append", {"bucket": "-1", "clustering.columns": "v"}, "false"),
    "sink.clustering.sample-factor": ("append", {"bucket": "-1", "clustering.columns": "v"}, "50"),
    "fields.default-aggregate-function": ("pk", {"merge-engine": "aggregation"}, "last_non_null_value"),
    "incremental-between-scan-mode": ("pk", {"incremental-between": "1,2"}, "delta"),
    "partial-update.remove-record-on-sequence-group": (
        "pk", {"merge-engine": "partial-update", "fields.n.sequence-group": "v"}, "n"),
    # inline BLOB columns: a data-evolution append table with a binary column `image`
    "blob-descriptor-field": ("blob", DE, "image"),
    "blob.stored-descriptor-fields": ("blob", DE, "image"),
    "blob-view-field": ("blob", DE, "image"),
}
# set by the catalog (`path`) or naming something that must exist first (`branch`)
NOT_TYPED = {"path", "branch"}
# immutable: a copy with another value is refused (Java's checkImmutability), create / alter of a
# table without snapshots keep it
COPY_REFUSED = {"data-file.path-directory"}
ROUND_TRIP = [d for d in HONOURED if d[0] not in NOT_TYPED and (d[5] is not None or d[0] in SPECIAL)]
KEY_CHARS = "abcdefghijklmnopqrstuvwxyz.-"

_names = itertools.count()


@pytest.fixture(scope="module")
def catalog():
    wh = tempfile.mkdtemp(prefix="opts-model-")
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", True)
    yield cat
    shutil.rmtree(wh, ignore_errors=True)


def _table_options(key):
    kind, extra, _ = SPECIAL.get(key, ("pk", {}, None))
    if kind == "pk":
        return kind, {"bucket": "1", **extra}
    return kind, dict(extra)


def _create(catalog, key, options):
    kind, base = _table_options(key)
    name = f"db.t{next(_names)}"
    schema = Schema.from_pyarrow_schema(BLOB_SCHEMA if kind == "blob" else SCHEMA,
                                        primary_keys=["id"] if kind == "pk" else None,
                                        options={**base, **options})
    catalog.create_table(name, schema, False)
    return name


def _value(d):
    """A valid value of option ``d``: a boolean either way, an enum's default or example,
    else the declared example (values with ranges and units checked by the engine)."""
    key, kind, default, _, _, example = d
    if key in SPECIAL:
        return st.just(SPECIAL[key][2])
    if kind == "boolean":
        return st.sampled_from(["true", "false"])
    if kind == "enum":
        return st.sampled_from([v for v in (default, example) if v is not None])
    return st.just(example)


def _edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a):
        cur = [i + 1] * (len(b) + 1)
        for j, cb in enumerate(b):
            cur[j + 1] = min(prev[j] + (ca != cb), prev[j + 1] + 1, cur[j] + 1)
        prev = cur
    return prev[-1]


@st.composite
def misspelling(draw, key):
    """``key`` with one character inserted, deleted or replaced."""
    i = draw(st.integers(0, len(key) - 1))
    op = draw(st.sampled_from(["insert", "delete", "replace"]))
    c = draw(st.sampled_from(KEY_CHARS))
    if op == "insert":
        return key[:i] + c + key[i:]
    if op == "delete":
        return key[:i] + key[i + 1:]
    return key[:i] + c + key[i + 1:]


@pytest.mark.parametrize("d", ROUND_TRIP, ids=[d[0] for d in ROUND_TRIP])
@settings(max_examples=int(os.environ.get("PAIMON_RS_OPTS_EXAMPLES", "3")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_honoured_option_round_trips(catalog, d, data):
    key = d[0]
    value = data.draw(_value(d), label="value")
    where = data.draw(st.sampled_from(["create", "alter", "copy"]), label="where")
    if where == "create":
        t = catalog.get_table(_create(catalog, key, {key: value}))
    elif where == "alter":
        name = _create(catalog, key, {})
        catalog.alter_table(name, [SchemaChange.set_option(key, value)], False)
        t = catalog.get_table(name)
    elif key in COPY_REFUSED:
        with pytest.raises(InvalidArgumentError, match="an immutable option"):
            catalog.get_table(_create(catalog, key, {})).copy({key: value})
        return
    else:
        t = catalog.get_table(_create(catalog, key, {})).copy({key: value})
    assert t.options[key] == value


@pytest.mark.parametrize("d", HONOURED, ids=[d[0] for d in HONOURED])
@settings(max_examples=int(os.environ.get("PAIMON_RS_OPTS_EXAMPLES", "3")) * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_edit_misspelling_is_refused_with_the_option_suggested(catalog, d, data):
    key = d[0]
    typo = data.draw(misspelling(key), label="typo")
    assume(typo not in KEYS and typo != key)
    assume(not any(typo.startswith(p) for p, _ in PATTERNS))
    closest = [k for k in KEYS if _edit_distance(typo, k) == 1]
    assert key in closest
    want = min(closest)
    where = data.draw(st.sampled_from(["create", "copy"]), label="where")
    value = d[5] or "1"
    with pytest.raises(InvalidArgumentError) as e:
        if where == "create":
            _create(catalog, key, {typo: value})
        else:
            catalog.get_table(_create(catalog, key, {})).copy({typo: value})
    assert f"did you mean '{want}'" in str(e.value), (typo, str(e.value))
