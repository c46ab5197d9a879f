"""paimon_rs.blob: pypaimon's BLOB value classes (Blob, BlobData, BlobRef, BlobDescriptor)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_rs import Blob, BlobData, BlobDescriptor, BlobRef, FileIO, UnsupportedError


def test_descriptor_wire_layout_is_version_2_little_endian():
    d = BlobDescriptor("/x/y.blob", 7, 11)
    raw = d.serialize()
    assert raw == (b"\x02" + struct.pack("<Q", 0x424C4F4244455343) + struct.pack("<i", 9)
                   + b"/x/y.blob" + struct.pack("<qq", 7, 11))
    assert BlobDescriptor.is_blob_descriptor(raw)
    assert BlobDescriptor.parse_if_serialized(raw) == d
    assert BlobDescriptor.parse_if_serialized(raw + b"!") is None
    assert BlobDescriptor.deserialize(raw + b"!") == d  # trailing bytes ignored, as Java


def test_version_1_descriptors_are_read_but_not_detected():
    raw = b"\x01" + struct.pack("<i", 3) + b"abc" + struct.pack("<qq", 1, -1)
    d = BlobDescriptor.deserialize(raw)
    assert (d.version, d.uri, d.offset, d.length) == (1, "abc", 1, -1)
    assert not BlobDescriptor.is_blob_descriptor(raw)
    assert BlobDescriptor.parse_if_serialized(raw) == d
    assert d.serialize()[0] == 2  # written back as version 2


@pytest.mark.parametrize("raw", [b"", b"\x03" + b"\0" * 30, b"\x02" + b"\0" * 30,
                                 b"\x01" + struct.pack("<i", -1) + b"\0" * 16,
                                 b"\x01" + struct.pack("<i", 99) + b"\0" * 16])
def test_bad_descriptor_bytes_raise_value_error(raw):
    with pytest.raises(ValueError):
        BlobDescriptor.deserialize(raw)


@given(st.text(max_size=40), st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1))
def test_descriptor_round_trips(uri, offset, length):
    d = BlobDescriptor(uri, offset, length)
    assert BlobDescriptor.deserialize(d.serialize()) == d
    assert Blob.from_bytes(d.serialize(), file_io=FileIO()).to_descriptor() == d


def test_blob_data_and_refs(tmp_path):
    f = tmp_path / "payload.bin"
    f.write_bytes(b"0123456789")
    assert Blob.from_data(b"ab") == BlobData(b"ab") and BlobData().to_data() == b""
    assert Blob.from_bytes(b"raw") == BlobData(b"raw")
    with pytest.raises(RuntimeError):
        BlobData(b"x").to_descriptor()
    assert Blob.from_local(str(f)).to_data() == b"0123456789"
    assert Blob.from_local("file://" + str(f)).to_data() == b"0123456789"
    # a file URI is percent-encoded: a space in the path is %20
    spaced = tmp_path / "pay load.bin"
    spaced.write_bytes(b"spaced")
    assert Blob.from_local("file://" + str(spaced).replace(" ", "%20")).to_data() == b"spaced"
    assert Blob.from_local("file://localhost" + str(spaced).replace(" ", "%20")).to_data() == b"spaced"
    ref = Blob.from_file(FileIO(), str(f), 2, 5)
    assert isinstance(ref, BlobRef) and ref.to_data() == b"23456"
    with ref.new_input_stream() as s:
        assert s.read(2) == b"23" and s.seek(4) == 4 and s.read() == b"6" and s.read() == b""
    assert Blob.from_file(FileIO(), str(f), 8, -1).to_data() == b"89"
    d = BlobDescriptor(str(f), 1, 2)
    assert Blob.from_descriptor_bytes(d.serialize(), file_io=FileIO()).to_data() == b"12"
    v1 = b"\x01" + struct.pack("<i", 0) + struct.pack("<qq", 0, 3)
    assert Blob.from_bytes(v1, file_io=FileIO()) == BlobData(v1)  # v1 is not detected
    assert Blob.from_bytes(v1, file_io=FileIO(), allow_blob_data=False).to_descriptor().length == 3
    with pytest.raises(ValueError):
        Blob.from_descriptor_bytes(b"nope", file_io=FileIO())
    with pytest.raises(ValueError, match="file_io is required"):
        Blob.from_bytes(d.serialize())


def test_video_frames_and_blob_views_are_refused():
    video = b"\x01" + struct.pack("<Q", 0x564944454F46524D) + b"\0" * 44
    view = b"\x01" + struct.pack("<Q", 0x424C4F4256494557) + b"\0" * 16
    for raw in (video, view):
        with pytest.raises(UnsupportedError):
            Blob.from_bytes(raw, file_io=FileIO())
    with pytest.raises(UnsupportedError):
        BlobDescriptor.deserialize(video)
