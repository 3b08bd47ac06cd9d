"""A store's bucket (docs/objects.md): copies of the snapshot bytes on object storage, uploaded in the
background, read when the local copy is gone, and deleted by the same rule as local bytes.

Imported only when a bucket is configured (``OTEL_INPUTS_OBJECTS_URL``, or ``objects_url=`` of
:class:`~otel_inputs.store.ArtifactStore`) or asked for; it subscribes to the store's
change-listener seam and the core never imports it.
"""

from __future__ import annotations

from otel_inputs.store.bucket._link import (
    BucketLink,
    Placement,
    RemoteState,
    SyncReport,
    attach,
    bucket_counts,
    bucket_of,
    item_placements,
    sync_bucket,
)
from otel_inputs.store.bucket._remote import RemoteObjects, public_location, under_roots

__all__ = [
    "BucketLink",
    "Placement",
    "RemoteObjects",
    "RemoteState",
    "SyncReport",
    "attach",
    "bucket_counts",
    "bucket_of",
    "item_placements",
    "public_location",
    "sync_bucket",
    "under_roots",
]
