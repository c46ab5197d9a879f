"""A GCS API for the tests: ``gcp-storage-emulator`` (PyPI, requirements-dev.txt; pure Python) in a
child process on 127.0.0.1, and small helpers to look at a bucket through the emulator's own JSON
API.

object_store's GCS client speaks GCS's XML API (``PUT/GET/HEAD/DELETE /<bucket>/<key>``, ``GET
/<bucket>?list-type=2``), of which the emulator (2026.7.19) implements only a bare GET (no ETag,
Last-Modified nor generation headers, which the client requires) and a bare PUT (no ETag header;
``x-goog-if-generation-match`` ignored); HEAD, DELETE, the listing and ``x-goog-copy-source``
copies answer 501 (the copy kills the connection). So the child process adds those XML calls on
top of the emulator's own storage (``Storage.create_file``, ``get_file``, ``get_file_list``,
``delete_file``), as GCS documents them, including the precondition ``x-goog-if-generation-match``
(``0``: create only; ``412 Precondition Failed`` if the object exists). The server handles one
request at a time, so a precondition check and the create that follows are atomic, as on GCS.

``GcsServer(honour_preconditions=False)`` serves PUTs as the stock emulator does (the precondition
ignored), to show what a commit on such a server would risk (tests/unit/test_gcs.py).
Not served: XML multipart uploads (files over 16 MiB; the suites write none).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Dict, List, Optional, Tuple

from s3_server import ChildServer


class GcsServer(ChildServer):
    """gcp-storage-emulator (with the XML calls above) in a child process on 127.0.0.1."""

    def __init__(self, honour_preconditions: bool = True) -> None:
        super().__init__(lambda port: [sys.executable, __file__, str(port), "1" if honour_preconditions else "0"],
                         "/", "GCS emulator")

    def options(self) -> Dict[str, str]:
        """Catalog options for this server: its endpoint and no authentication (Java Paimon's
        Hadoop GCS connector names the latter so)."""
        return {"gs.endpoint": self.endpoint, "fs.gs.auth.type": "UNAUTHENTICATED"}

    def _call(self, method: str, path: str, data: Optional[bytes] = None,
              headers: Optional[Dict[str, str]] = None) -> Tuple[int, bytes]:
        req = urllib.request.Request(self.endpoint + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def new_bucket(self) -> str:
        name = f"g-{uuid.uuid4().hex[:12]}"
        status, body = self._call("POST", "/storage/v1/b?project=test", json.dumps({"name": name}).encode(),
                                  {"Content-Type": "application/json"})
        if status != 200:
            raise RuntimeError(f"create bucket {name}: {status} {body!r}")
        return name

    # ---- the emulator's own JSON API (independent of the XML calls added for object_store) ----

    def list(self, bucket: str, prefix: str = "") -> List[Dict[str, Any]]:
        """The objects under ``prefix`` (JSON resources: name, size, updated, ...)."""
        out: List[Dict[str, Any]] = []
        token = None
        while True:
            q = {"prefix": prefix, **({"pageToken": token} if token else {})}
            status, body = self._call("GET", f"/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(q)}")
            if status != 200:
                raise RuntimeError(f"list gs://{bucket}/{prefix}: {status} {body!r}")
            page = json.loads(body)
            out.extend(page.get("items", []))
            token = page.get("nextPageToken")
            if not token:
                return out

    def keys(self, bucket: str, prefix: str = "") -> List[str]:
        return sorted(o["name"] for o in self.list(bucket, prefix))

    def get(self, bucket: str, key: str) -> bytes:
        status, body = self._call("GET", f"/download/storage/v1/b/{bucket}/o/{urllib.parse.quote(key, safe='')}"
                                         "?alt=media")
        if status != 200:
            raise FileNotFoundError(f"gs://{bucket}/{key}: {status}")
        return body

    def put(self, bucket: str, key: str, data: bytes, if_generation_match: Optional[int] = None) -> int:
        """Upload (JSON media upload); returns the HTTP status."""
        q = {"uploadType": "media", "name": key}
        if if_generation_match is not None:
            q["ifGenerationMatch"] = str(if_generation_match)
        status, _ = self._call("POST", f"/upload/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(q)}", data,
                               {"Content-Type": "application/octet-stream"})
        return status

    def delete(self, bucket: str, key: str) -> None:
        status, _ = self._call("DELETE", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(key, safe='')}")
        if status not in (200, 204):
            raise FileNotFoundError(f"gs://{bucket}/{key}: {status}")


# ---- the child process: the emulator plus the XML API calls object_store makes ----------------

def _serve(port: int, honour_preconditions: bool) -> None:  # pragma: no cover (child process)
    import email.utils
    import re
    from datetime import datetime
    from xml.sax.saxutils import escape

    from gcp_storage_emulator import server as srv
    from gcp_storage_emulator import storage
    from gcp_storage_emulator.exceptions import NotFound
    from gcp_storage_emulator.handlers import objects

    json_api = ("/storage/", "/upload/", "/download/", "/batch/", "/b/")
    # object_store percent-encodes the bucket and the whole key ("/" too): /g%2Dab/wh%2Fx
    object_path = re.compile(r"^/(?P<bucket>[^/]+)/(?P<key>.+)$")
    bucket_path = re.compile(r"^/(?P<bucket>[^/]+)/?$")

    def rfc2822(rfc3339: str) -> str:
        return email.utils.format_datetime(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")), usegmt=True)

    class Handler(srv.RequestHandler):
        def _xml(self) -> Optional[Tuple[str, Optional[re.Match]]]:
            path = urllib.parse.urlsplit(self.path).path
            if path in ("/", "/wipe") or path.startswith(json_api):
                return None
            return path, object_path.match(path)

        def _send(self, status: int, headers: Dict[str, str], body: bytes = b"", head: bool = False) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", headers.get("Content-Length", str(len(body))))
            self.end_headers()
            if body and not head:
                self.wfile.write(body)

        def _error(self, status: int, code: str, message: str) -> None:
            body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                    f"<Message>{escape(message)}</Message></Error>").encode()
            self._send(status, {"Content-Type": "application/xml"}, body)

        def _obj(self, bucket: str, key: str) -> Optional[Dict[str, Any]]:
            try:
                return dict(self.storage.get_file_obj(bucket, key))
            except NotFound:
                return None

        def _meta(self, obj: Dict[str, Any]) -> Dict[str, str]:
            return {"ETag": f'"{obj["md5Hash"]}"', "Last-Modified": rfc2822(obj["updated"]),
                    "x-goog-generation": str(obj["generation"]), "x-goog-metageneration": "1",
                    "Content-Type": obj.get("contentType") or "application/octet-stream"}

        def do_HEAD(self) -> None:  # noqa: N802
            xml = self._xml()
            if xml is None or xml[1] is None:
                return self._send(501, {})
            m = xml[1]
            bucket, key = urllib.parse.unquote(m["bucket"]), urllib.parse.unquote(m["key"])
            obj = self._obj(bucket, key)
            if obj is None:
                return self._send(404, {})
            self._send(200, {**self._meta(obj), "Content-Length": str(obj["size"])}, head=True)

        def do_GET(self) -> None:  # noqa: N802
            xml = self._xml()
            if xml is None:
                return super().do_GET()
            path, m = xml
            if m is None:
                b = bucket_path.match(path)
                return self._list(urllib.parse.unquote(b["bucket"])) if b else self._error(400, "InvalidURI", path)
            bucket, key = urllib.parse.unquote(m["bucket"]), urllib.parse.unquote(m["key"])
            obj = self._obj(bucket, key)
            if obj is None:
                return self._error(404, "NoSuchKey", f"gs://{bucket}/{key}")
            data = self.storage.get_file(bucket, key)
            headers = self._meta(obj)
            rng = self.headers.get("Range")
            if not rng:
                return self._send(200, headers, data)
            r = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", rng)
            if r is None or (not r[1] and not r[2]):
                return self._error(400, "InvalidArgument", f"Range {rng}")
            n = len(data)
            if not r[1]:  # suffix: the last N bytes
                start, end = max(0, n - int(r[2])), n - 1
            else:
                start, end = int(r[1]), (min(int(r[2]), n - 1) if r[2] else n - 1)
            if start >= n or start > end:
                return self._send(416, {"Content-Range": f"bytes */{n}"})
            headers["Content-Range"] = f"bytes {start}-{end}/{n}"
            self._send(206, headers, data[start:end + 1])

        def _list(self, bucket: str) -> None:
            q = {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                                           keep_blank_values=True).items()}
            prefix, delimiter = q.get("prefix", ""), q.get("delimiter") or None
            try:
                objs, prefixes = self.storage.get_file_list(bucket, prefix or None, delimiter)
            except NotFound:
                return self._error(404, "NoSuchBucket", bucket)
            after = q.get("continuation-token") or q.get("start-after") or ""
            max_keys = int(q.get("max-keys") or 1000)
            entries = sorted([(o["name"], o) for o in objs] + [(p, None) for p in prefixes], key=lambda e: e[0])
            entries = [e for e in entries if e[0] > after]
            page, more = entries[:max_keys], len(entries) > max_keys
            parts = ['<?xml version="1.0" encoding="UTF-8"?>',
                     '<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01">',
                     f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>",
                     f"<KeyCount>{len(page)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>",
                     f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"]
            for name, o in page:
                if o is None:
                    parts.append(f"<CommonPrefixes><Prefix>{escape(name)}</Prefix></CommonPrefixes>")
                else:
                    parts.append(f"<Contents><Key>{escape(name)}</Key><Size>{o['size']}</Size>"
                                 f"<LastModified>{o['updated']}</LastModified>"
                                 f"<ETag>&quot;{o['md5Hash']}&quot;</ETag></Contents>")
            if more:
                parts.append(f"<NextContinuationToken>{escape(page[-1][0])}</NextContinuationToken>")
            parts.append("</ListBucketResult>")
            self._send(200, {"Content-Type": "application/xml"}, "".join(parts).encode())

        def _precondition(self, bucket: str, key: str) -> bool:
            """False (412 sent) if ``x-goog-if-generation-match`` does not hold."""
            want = self.headers.get("x-goog-if-generation-match")
            if want is None or not honour_preconditions:
                return True
            obj = self._obj(bucket, key)
            have = "0" if obj is None else str(obj["generation"])
            if want.strip() == have:
                return True
            self._error(412, "PreconditionFailed", f"gs://{bucket}/{key}: generation {have}, not {want}")
            return False

        def _create(self, bucket: str, key: str, data: bytes, content_type: str) -> Dict[str, Any]:
            base = f"http://{self.headers.get('Host') or f'127.0.0.1:{port}'}"
            obj = objects._checksums(data, objects._make_object_resource(base, bucket, key, content_type,
                                                                          str(len(data))))
            self.storage.create_file(bucket, key, data, obj)
            return obj

        def do_PUT(self) -> None:  # noqa: N802
            xml = self._xml()
            if xml is None:
                return super().do_PUT()
            m = xml[1]
            if m is None or "uploadId" in self.path:
                return self._error(501, "NotImplemented", f"PUT {self.path}")
            bucket, key = urllib.parse.unquote(m["bucket"]), urllib.parse.unquote(m["key"])
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if bucket not in self.storage.buckets:
                return self._error(404, "NoSuchBucket", bucket)
            source = self.headers.get("x-goog-copy-source")
            if source is not None:
                src_bucket, _, src_key = urllib.parse.unquote(source).lstrip("/").partition("/")
                src = self._obj(src_bucket, src_key)
                if src is None:
                    return self._error(404, "NoSuchKey", f"gs://{src_bucket}/{src_key}")
                data = self.storage.get_file(src_bucket, src_key)
            if not self._precondition(bucket, key):
                return None
            obj = self._create(bucket, key, data, self.headers.get("Content-Type") or "application/octet-stream")
            self._send(200, {"ETag": f'"{obj["md5Hash"]}"', "x-goog-generation": str(obj["generation"])})

        def do_DELETE(self) -> None:  # noqa: N802
            xml = self._xml()
            if xml is None:
                return super().do_DELETE()
            m = xml[1]
            if m is None:
                return self._error(501, "NotImplemented", f"DELETE {self.path}")
            try:
                self.storage.delete_file(urllib.parse.unquote(m["bucket"]), urllib.parse.unquote(m["key"]))
            except NotFound:
                return self._error(404, "NoSuchKey", self.path)
            self._send(204, {})

        def do_POST(self) -> None:  # noqa: N802
            xml = self._xml()
            if xml is None:
                return super().do_POST()
            self._error(501, "NotImplemented", f"POST {self.path} (XML multipart uploads are not served)")

    # In memory, the emulator re-serialises every object's metadata (to a ".meta" it never reads
    # back) on each write: O(objects) per PUT, minutes over a session's suites.
    storage.Storage._write_config_to_file = lambda self: None
    srv.RequestHandler = Handler  # APIThread builds its handlers from this name
    srv.create_server("127.0.0.1", port, in_memory=True).run()


if __name__ == "__main__":
    import logging
    logging.disable(logging.CRITICAL)
    _serve(int(sys.argv[1]), sys.argv[2] == "1")
