"""Texts from Parquet files as pyarrow writes them (the writer of Hugging
Face `datasets`): with every codec and page layout it writes, each row of
the string column is one text, equal to pyarrow's own reading, in every
command that reads texts."""

import json
import pathlib
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tiktoken

import modelbin

TEXTS = ([f"row {i}: plain words, numbers {i * 7919} and code x[{i}] = f(y);" for i in range(40)]
         + ["", "caf\u00e9 \u4e2d\u6587 \U0001f600 \u0645\u0631\u062d\u0628\u0627",
            "two\nlines\r\n", "  runs   of   space  \t", "<|endoftext|> inside text"] * 3)


def write(path, codec="snappy", **layout):
    table = pa.table({"id": list(range(len(TEXTS))), "text": TEXTS})
    pq.write_table(table, path, compression=codec, **layout)
    return pq.read_table(path, columns=["text"]).column("text").to_pylist()


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip", "lz4", "brotli", "none"])
@pytest.mark.parametrize("layout", [
    {},
    {"use_dictionary": False, "data_page_version": "2.0"},
    {"row_group_size": 7, "data_page_size": 64},
], ids=["defaults", "plain-v2", "small-groups-and-pages"])
def test_every_codec_and_layout_reads_as_pyarrow_reads_it(tmp_path, cli, codec, layout):
    path = tmp_path / "train-00000-of-00001.parquet"
    column = write(path, codec, **layout)
    done = subprocess.run([str(cli), "tokens", "encode", "-e", "cl100k_base", str(path)],
                          capture_output=True, text=True, check=True)
    encoding = tiktoken.get_encoding("cl100k_base")
    assert [json.loads(line) for line in done.stdout.splitlines()] == \
        [encoding.encode_ordinary(text) for text in column]


def test_a_directory_gives_its_parquet_files_and_another_column_is_named_by_field(tmp_path, cli):
    (tmp_path / "data").mkdir()
    column = write(tmp_path / "data" / "train.parquet")
    pq.write_table(pa.table({"body": ["only this"]}), tmp_path / "data" / "test.parquet")
    count = lambda *args: json.loads(subprocess.run(  # noqa: E731
        [str(cli), "tokens", "count", "-e", "o200k_base", "--json", *map(str, args)],
        capture_output=True, text=True, check=True).stdout)["total"]
    encoding = tiktoken.get_encoding("o200k_base")
    assert count(tmp_path / "data" / "train.parquet") == \
        sum(len(encoding.encode_ordinary(t)) for t in column)
    assert count("--field", "body", tmp_path / "data" / "test.parquet") == 2
    # The directory walk takes both files; the first has no "body" column.
    done = subprocess.run([str(cli), "tokens", "count", "--field", "body", str(tmp_path / "data")],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert 'no column "body" (its columns: id, text); name the column with --field' in done.stderr


def test_search_ranks_rows_and_names_them_from_one(tmp_path, cli, minilm_dir):
    path = tmp_path / "rows.parquet"
    column = write(path)
    done = subprocess.run([str(cli), "search", "-m", str(minilm_dir), "-q", "mixed scripts",
                           "--json", "--top", "60", str(path)],
                          capture_output=True, text=True, check=True)
    hits = [json.loads(line) for line in done.stdout.splitlines()]
    assert {hit["text"] for hit in hits} == {t for t in column if t.strip()}
    assert all(column[hit["line"] - 1] == hit["text"] for hit in hits)


def test_acts_record_reads_a_parquet_column_as_the_texts_in_both_faces(tmp_path, cli):
    model = tmp_path / "m.tllm"
    subprocess.run([str(cli), "tllm", "init", "--dim", "16", "--layers", "2", "--heads", "2",
                    "--ffn", "32", "-o", str(model)], check=True, capture_output=True)
    path = tmp_path / "rows.parquet"
    column = write(path)
    ours = modelbin.acts.record(model, [path], out=tmp_path / "parquet", tokens_per_text=16,
                                progress=False)
    subprocess.run([str(cli), "acts", "record", "-m", str(model), "--tokens-per-text", "16",
                    "-o", str(tmp_path / "cli"), str(path)], check=True, capture_output=True)
    texts = modelbin.acts.record(model, texts=column, out=tmp_path / "texts",
                                 tokens_per_text=16, progress=False)

    def payload(root):
        return {p.relative_to(root): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and p.name != "metadata.json"}

    ours, texts = pathlib.Path(ours), pathlib.Path(texts)
    cli_dataset = next((tmp_path / "cli").iterdir())
    assert payload(ours) == payload(texts) == payload(cli_dataset)
    described = json.loads((ours / "metadata.json").read_text())["data"]["files"][0]
    assert described["parquet"] == {"column": "text", "texts": len(column)}
