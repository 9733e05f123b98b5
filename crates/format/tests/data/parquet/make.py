"""Writes the Parquet files of crates/format/tests/parquet.rs with pyarrow
(the writer Hugging Face `datasets` uses), so that the tests read files a
real writer made. Run from the repository root with the light venv:

    target/py/bin/python crates/format/tests/data/parquet/make.py
"""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
TEXTS = ["plain words", "", "caf\u00e9 \u4e2d\u6587 \U0001f600", "two\nlines\r\n", "  runs   of   space  ",
         "<|endoftext|> inside", "tab\there", "last"]


def texts():
    # Three row groups, dictionary pages, snappy: pyarrow's defaults but the
    # row-group size.
    table = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS,
                      "body": [t.upper() for t in TEXTS]})
    pq.write_table(table, HERE / "texts.parquet", row_group_size=3)


def rejected():
    pq.write_table(pa.table({"text": ["a", "b", "c", "d", None, "f"]}), HERE / "null.parquet")
    pq.write_table(pa.table({"text": pa.array([b"a", b"b"], pa.binary())}), HERE / "binary.parquet")
    pq.write_table(pa.table({"text": [["a", "b"], ["c"]]}), HERE / "list.parquet")
    pq.write_table(pa.table({"text": [1, 2, 3]}), HERE / "integer.parquet")
    # A string column whose second row is not UTF-8, built from raw buffers
    # (pyarrow's constructors validate; the file format does not).
    data = b"ok\xff\xfe"
    offsets = pa.array([0, 2, 4], pa.int32()).buffers()[1]
    strings = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(data)])
    pq.write_table(pa.table({"text": strings}), HERE / "not_utf8.parquet", use_dictionary=False)


def page_lie():
    # Four row groups of one page each, each a 1.5 MB text that compresses
    # to a few KB; every page header's uncompressed_page_size (a four-byte
    # varint here) is then rewritten to 128 MiB - 1, so the pages declare
    # 512 MiB between them.
    table = pa.table({"text": ["a" * 1_500_000 for _ in range(4)]})
    path = HERE / "page_lie.parquet"
    pq.write_table(table, path, row_group_size=1, use_dictionary=False, compression="zstd")
    metadata = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    for group in range(metadata.num_row_groups):
        at = metadata.row_group(group).column(0).data_page_offset
        # Field 1 (type, one-byte varint) then field 2's header byte.
        assert data[at] == 0x15 and data[at + 2] == 0x15, data[at:at + 8]
        size = data[at + 3:at + 7]
        assert all(b & 0x80 for b in size[:3]) and not size[3] & 0x80, size
        data[at + 3:at + 7] = b"\xfe\xff\xff\x7f"
    path.write_bytes(bytes(data))


texts()
rejected()
page_lie()
