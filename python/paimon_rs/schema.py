"""Table schema declaration, as pypaimon's ``Schema``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import pyarrow as pa


@dataclass
class Schema:
    """What a new table looks like: columns (as a pyarrow schema), keys, options, comment.

    Primary-key columns are made NOT NULL when the table is created, as Paimon does.
    """

    pa_schema: pa.Schema
    partition_keys: List[str] = field(default_factory=list)
    primary_keys: List[str] = field(default_factory=list)
    options: Dict[str, str] = field(default_factory=dict)
    comment: Optional[str] = None

    @staticmethod
    def from_pyarrow_schema(
        pa_schema: pa.Schema,
        partition_keys: Optional[List[str]] = None,
        primary_keys: Optional[List[str]] = None,
        options: Optional[Dict[str, str]] = None,
        comment: Optional[str] = None,
    ) -> Schema:
        if not isinstance(pa_schema, pa.Schema):
            raise TypeError(f"expected a pyarrow.Schema, got {type(pa_schema).__name__}")
        opts = {}
        for k, v in (options or {}).items():
            # Paimon stores every option as a string
            opts[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
        return Schema(
            pa_schema=pa_schema,
            partition_keys=list(partition_keys or []),
            primary_keys=list(primary_keys or []),
            options=opts,
            comment=comment,
        )
