"""Writes real `.evtx` files (Windows XML event logs) for the winlog server's tests: the file header, 64 KiB
chunks and event records in binary XML, with their CRC32 checksums, as the format's documentation gives them
(libyal's "Windows XML Event Log (EVTX)"). Records are plain binary XML fragments, without templates."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

FILE_HEADER, CHUNK_SIZE, CHUNK_HEADER = 4096, 65536, 512
EPOCH_DIFF = 11644473600  # seconds from 1601-01-01 (FILETIME) to 1970-01-01
XMLNS = "http://schemas.microsoft.com/win/2004/08/events/event"


@dataclass
class Event:
    """One event as Event Viewer shows it; `data` becomes <EventData><Data Name=...>."""

    event_id: int
    level: int  # 1 critical, 2 error, 3 warning, 4 information, 0 log always
    provider: str
    time: datetime
    channel: str = "System"
    computer: str = "host1.example"
    data: dict[str, str] = field(default_factory=dict)


def write_evtx(path: Path, events: Sequence[Event], per_chunk: int = 200) -> Path:
    """An .evtx file holding `events` in order (record ids from 1), `per_chunk` records to a chunk."""
    chunks = []
    for start in range(0, len(events), per_chunk):
        chunks.append(_chunk(events[start : start + per_chunk], first_id=start + 1))
    path.write_bytes(_file_header(len(chunks), len(events) + 1) + b"".join(chunks))
    return path


def _file_header(chunk_count: int, next_record: int) -> bytes:
    head = b"ElfFile\x00" + struct.pack(
        "<QQQIHHHH", 0, max(chunk_count - 1, 0), next_record, 128, 2, 3, 4096, chunk_count
    )
    head += b"\x00" * (120 - len(head)) + struct.pack("<I", 0)  # flags: clean
    head += struct.pack("<I", zlib.crc32(head[:120]))
    return head + b"\x00" * (FILE_HEADER - len(head))


def _chunk(events: Sequence[Event], first_id: int) -> bytes:
    records, offsets = b"", []
    for number, event in enumerate(events):
        offsets.append(CHUNK_HEADER + len(records))
        records += _record(event, first_id + number, CHUNK_HEADER + len(records))
    if CHUNK_HEADER + len(records) > CHUNK_SIZE:
        raise ValueError("too many records for one chunk: lower per_chunk")
    last_id = first_id + len(events) - 1
    free = CHUNK_HEADER + len(records)
    head = b"ElfChnk\x00" + struct.pack("<QQQQ", first_id, last_id, first_id, last_id)
    head += struct.pack("<III", 128, offsets[-1], free) + struct.pack("<I", zlib.crc32(records))
    head += b"\x00" * (120 - len(head)) + struct.pack("<I", 0)
    tables = b"\x00" * (CHUNK_HEADER - 128)  # no common strings, no templates: every name is written inline
    checksum = zlib.crc32(head[:120] + tables)
    body = head + struct.pack("<I", checksum) + tables + records
    return body + b"\x00" * (CHUNK_SIZE - len(body))


def _record(event: Event, record_id: int, offset: int) -> bytes:
    xml = _Fragment(offset + 24).event(event, record_id)
    size = 24 + len(xml) + 4
    written = int((event.time.timestamp() + EPOCH_DIFF) * 10_000_000)
    return b"\x2a\x2a\x00\x00" + struct.pack("<IQQ", size, record_id, written) + xml + struct.pack("<I", size)


class _Fragment:
    """Binary XML of one record, written at chunk offset `base` (names are placed inline, by offset)."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.out = bytearray(b"\x0f\x01\x01\x00")  # fragment header, version 1.1

    def event(self, event: Event, record_id: int) -> bytes:
        stamp = event.time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
        system = [
            ("Provider", {"Name": event.provider}, None),
            ("EventID", {}, str(event.event_id)),
            ("Level", {}, str(event.level)),
            ("TimeCreated", {"SystemTime": stamp}, None),
            ("EventRecordID", {}, str(record_id)),
            ("Channel", {}, event.channel),
            ("Computer", {}, event.computer),
        ]

        def body() -> None:
            self.element("System", {}, lambda: [self.leaf(*item) for item in system])
            data = list(event.data.items())
            self.element("EventData", {}, lambda: [self.leaf("Data", {"Name": k}, v) for k, v in data])

        self.element("Event", {"xmlns": XMLNS}, body)
        self.out += b"\x00"  # end of stream
        return bytes(self.out)

    def leaf(self, name: str, attributes: dict[str, str], text: str | None) -> None:
        self.element(name, attributes, None if text is None else lambda: self.value(text))

    def element(self, name: str, attributes: dict[str, str], content: Callable[[], object] | None) -> None:
        start = len(self.out)
        # Elements of a record's own binary XML carry no dependency id (those of template definitions do).
        self.out += bytes([0x41 if attributes else 0x01]) + struct.pack("<I", 0)  # size patched below
        self.name(name)
        if attributes:
            list_start = len(self.out)
            self.out += b"\x00\x00\x00\x00"
            for number, (key, text) in enumerate(attributes.items()):
                more = number < len(attributes) - 1
                self.out += bytes([0x46 if more else 0x06])
                self.name(key)
                self.value(text)
            struct.pack_into("<I", self.out, list_start, len(self.out) - list_start - 4)
        if content is None:
            self.out += b"\x03"  # close empty element
        else:
            self.out += b"\x02"  # close start element
            content()
            self.out += b"\x04"  # end element
        struct.pack_into("<I", self.out, start + 1, len(self.out) - start - 5)

    def name(self, text: str) -> None:
        here = self.base + len(self.out) + 4
        encoded = text.encode("utf-16-le")
        self.out += struct.pack("<I", here)
        self.out += struct.pack("<IHH", 0, _hash(text), len(text)) + encoded + b"\x00\x00"

    def value(self, text: str) -> None:
        self.out += b"\x05\x01" + struct.pack("<H", len(text)) + text.encode("utf-16-le")


def _hash(text: str) -> int:
    value = 0
    for char in text:
        value = (value * 65599 + ord(char)) & 0xFFFFFFFF
    return value & 0xFFFF
