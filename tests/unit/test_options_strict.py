"""Options a user types are strict (issue #29, "Options are silently ignored"): create_table,
alter_table set-option and ``table.copy`` refuse an unknown key of Paimon's namespaces naming the
closest known key, refuse a known option paimon_rs does not implement, accept (and store) the
options of other engines, and keep a user's own keys with one warning per table."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from paimon_rs import InvalidArgumentError, Schema, SchemaChange, UnsupportedError

from unit_helpers import read, write

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _create(catalog, name, options, pk=True):
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"] if pk else None,
                                        options={"bucket": "1", **options} if pk else options)
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def _two_snapshots(catalog):
    t = _create(catalog, "db.t", {})
    write(t, pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    write(t, pa.table({"id": [1], "v": ["b"]}, schema=SCHEMA))
    return t


# the four cases the lead found on main (each passed silently there)

def test_create_refuses_a_misspelt_compaction_option(catalog):
    with pytest.raises(InvalidArgumentError) as e:
        _create(catalog, "db.t", {"compaction.size-ration": "3"})
    msg = str(e.value)
    assert "compaction.size-ration" in msg and "did you mean 'compaction.size-ratio'" in msg, msg
    assert "db.t" in msg, msg
    assert "db.t" not in catalog.list_tables("db")


def test_copy_refuses_a_misspelt_trigger_before_a_write(catalog):
    t = _create(catalog, "db.t", {})
    with pytest.raises(InvalidArgumentError, match="did you mean 'num-sorted-run.compaction-trigger'"):
        t.copy({"num-sorted-run.compaction-triger": "3"})


def test_copy_refuses_a_misspelt_snapshot_id_instead_of_reading_the_latest(catalog):
    t = _two_snapshots(catalog)
    with pytest.raises(InvalidArgumentError, match="did you mean 'scan.snapshot-id'"):
        t.copy({"scan.snapshotid": "1"})
    # spelt right it travels
    assert read(t.copy({"scan.snapshot-id": "1"})).column("v").to_pylist() == ["a"]


def test_copy_refuses_a_misspelt_incremental_read(catalog):
    t = _two_snapshots(catalog)
    with pytest.raises(InvalidArgumentError, match="did you mean 'incremental-between'"):
        t.copy({"incremental-betwen": "1,2"})


# the rest of the rule

def test_alter_refuses_a_misspelt_option_and_keeps_the_schema(catalog):
    t = _create(catalog, "db.t", {})
    with pytest.raises(InvalidArgumentError, match="did you mean 'snapshot.num-retained.max'") as e:
        catalog.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.mx", "5")], False)
    assert "db.t" in str(e.value)
    assert "snapshot.num-retained.mx" not in catalog.get_table("db.t").options
    # removing a key is always allowed (a typo stored by an older paimon_rs can be cleaned up)
    catalog.alter_table("db.t", [SchemaChange.remove_option("snapshot.num-retained.mx")], False)
    assert t.options["bucket"] == "1"


def test_unknown_key_in_a_paimon_namespace_is_refused_without_a_guess(catalog):
    with pytest.raises(InvalidArgumentError) as e:
        _create(catalog, "db.t", {"compaction.something-else-entirely": "1"})
    assert "did you mean" not in str(e.value)


@pytest.mark.parametrize("where", ["create", "alter", "copy"])
def test_known_option_not_implemented_is_refused(catalog, where):
    key, value = "snapshot.clean-empty-directories", "true"
    with pytest.raises(UnsupportedError, match=f"'{key}' is not implemented by paimon_rs"):
        if where == "create":
            _create(catalog, "db.t", {key: value})
        elif where == "alter":
            _create(catalog, "db.t", {})
            catalog.alter_table("db.t", [SchemaChange.set_option(key, value)], False)
        else:
            _create(catalog, "db.t", {}).copy({key: value})


def test_known_option_set_to_its_default_is_accepted(catalog):
    t = _create(catalog, "db.t", {"snapshot.clean-empty-directories": "false"})
    write(t, pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))


def test_options_of_other_engines_are_stored_and_have_no_effect(catalog):
    t = _create(catalog, "db.t", {"sink.parallelism": "4", "scan.infer-parallelism": "false"})
    assert t.options["sink.parallelism"] == "4"
    t = t.copy({"scan.parallelism": "2"})
    write(t, pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert read(t).num_rows == 1


def test_a_users_own_keys_round_trip_with_one_warning(catalog, caplog):
    caplog.set_level(logging.WARNING, logger="paimon_rs")
    t = _create(catalog, "db.t", {"myapp.owner": "data-team"})
    assert catalog.get_table("db.t").options["myapp.owner"] == "data-team"
    t.copy({"myapp.owner": "x"})
    catalog.alter_table("db.t", [SchemaChange.set_option("myapp.owner", "y")], False)
    t = catalog.get_table("db.t")
    assert t.options["myapp.owner"] == "y"
    write(t, pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    from paimon_rs import _core
    _core.flush_logs()
    warned = [r for r in caplog.records if "myapp.owner" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in caplog.records]


def test_a_table_written_with_options_paimon_rs_does_not_know_still_reads(catalog):
    """Java may store options paimon_rs does not implement (write-side ones): a read works, a
    write is refused naming the option, as before."""
    import json

    import stores

    t = _create(catalog, "db.t", {})
    write(t, pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    p = stores.join(t.table_path, "schema", "schema-0")
    schema = json.loads(stores.read_text(p))
    schema["options"]["async-file-write"] = "true"  # its default: harmless
    schema["options"]["compaction.future-option"] = "1"
    stores.write_bytes(p, json.dumps(schema).encode())
    t = catalog.get_table("db.t")
    assert read(t).column("v").to_pylist() == ["a"]
    with pytest.raises(UnsupportedError, match="compaction.future-option"):
        write(t, pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
