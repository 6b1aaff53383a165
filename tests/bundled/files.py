"""Documents for the reading tests, made on the spot."""

from __future__ import annotations

from pathlib import Path


def minimal_pdf(path: Path, text: str) -> Path:
    """A valid one-page PDF showing `text` in Helvetica (correct cross-reference offsets)."""
    stream = f"BT /F1 18 Tf 20 80 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def hide_module(directory: Path, module: str) -> str:
    """A directory to put first on PYTHONPATH so that importing `module` fails, as if it were not installed."""
    package = directory / module
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ImportError('{module} is hidden by the test')\n")
    return str(directory)
