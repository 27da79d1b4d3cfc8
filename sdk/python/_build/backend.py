"""A PEP 517 build backend in the standard library alone.

`pip install ./sdk/python` builds the package in an isolated environment,
which would fetch setuptools from a package index; where none is reachable
that fails. This backend needs nothing: it zips src/stint into a pure-Python
wheel (and the tree into an sdist), with the metadata from pyproject.toml.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11: the two fields read here, by hand
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read()
    if tomllib:
        return tomllib.loads(text.decode())["project"]
    project, section = {}, ""
    for line in text.decode().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[project]" and "=" in line:
            k, v = (p.strip() for p in line.split("=", 1))
            if v.startswith('"'):
                project[k] = v.strip('"')
    return project


def _metadata():
    p = _project()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    head = (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\nSummary: {p.get('description', '')}\n"
            f"Requires-Python: {p.get('requires-python', '>=3.9')}\nDescription-Content-Type: text/markdown\n\n")
    return p, head + readme


def _files():
    src = os.path.join(ROOT, "src")
    for d, _, names in os.walk(os.path.join(src, "stint")):
        for n in sorted(names):
            if n.endswith((".py", ".typed")):
                full = os.path.join(d, n)
                yield os.path.relpath(full, src).replace(os.sep, "/"), full


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p, metadata = _metadata()
    dist = p["name"].replace("-", "_")
    name = f"{dist}-{p['version']}-py3-none-any.whl"
    info = f"{dist}-{p['version']}.dist-info"
    entries = [(arc, open(full, "rb").read()) for arc, full in _files()]
    entries.append((f"{info}/METADATA", metadata.encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: stint-build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(n, d) for n, d in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in entries:
            z.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), d)
    return name


def build_sdist(sdist_directory, config_settings=None):
    p, metadata = _metadata()
    base = f"{p['name'].replace('-', '_')}-{p['version']}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [os.path.join("src", a) for a, _ in _files()]:
            t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        data = metadata.encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    return name
