"""engine.exchanges.pack_calls / unpack_calls (issue 36, item 1): a lane's calls and their
requests kept in one frame, read back exactly; a small frame as it is, a large one (a long tool
loop, each request the one before again and more) compressed."""

import json

from agents_app.engine.exchanges import (
    CALL_FIELDS,
    COMPRESS_FROM,
    ZSTD_MAGIC,
    framed,
    pack_calls,
    unframed,
    unpack_calls,
)


def call(content: str, **fields) -> list:
    values = {name: "" for name in CALL_FIELDS} | {"content": content, "tool_calls": []}
    values |= {"prompt_tokens": 3, "completion_tokens": 2, "connection": None, "at": 1.5}
    return [(values | fields)[name] for name in CALL_FIELDS]


def test_a_step_s_calls_are_kept_as_they_are_and_read_back_exactly():
    calls = [
        call("", tool_calls=[{"id": "c1", "name": "echo", "arguments": {"text": "héllo ☃"}}]),
        call("said\nhéllo ☃ \u2028 \\n", reasoning="why", error_code="", connection=7),
    ]
    requests = ['{"messages":[{"a":1}]}', '{"messages":[{"a":1},{"b":"\\u2603"}]}']

    frame = pack_calls(calls, requests, seq=4, phase="execution", attempt=1)

    assert frame[:1] == b"{" and len(frame) < COMPRESS_FROM  # not compressed
    read = unpack_calls(frame)
    assert [c["request"] for c in read] == requests
    assert [[c[name] for name in CALL_FIELDS] for c in read] == calls
    assert read[0]["tool_calls"][0]["arguments"] == {"text": "héllo ☃"}
    # Numbered from the frame's first, in the lane the frame says.
    assert [(c["seq"], c["phase"], c["attempt"]) for c in read] == [
        (4, "execution", 1),
        (5, "execution", 1),
    ]


def test_frames_appended_one_after_another_are_read_apart():
    frames = [
        pack_calls([call(str(i))] * i, ["x" * 9000 * (i % 2)] * i, seq=i, phase="p", attempt=0)
        for i in range(1, 5)
    ]

    appended = b"".join(framed(frame) for frame in frames)

    assert unframed(appended) == frames and unframed(b"") == []
    assert [len(unpack_calls(frame)) for frame in unframed(appended)] == [1, 2, 3, 4]


def test_a_long_tool_loop_is_compressed_and_read_back_exactly():
    # Twenty calls, each request the one before with another kilobyte of tool result.
    messages, requests = [{"role": "system", "content": "You are helpful. " * 20}], []
    for i in range(20):
        messages.append({"role": "tool", "content": f"result {i}: " + "abcdefgh" * 128})
        requests.append(json.dumps({"messages": messages}, separators=(",", ":")))
    calls = [call(f"call {i}") for i in range(20)]

    frame = pack_calls(calls, requests, seq=4, phase="execution", attempt=1)

    written = sum(len(r) for r in requests)
    assert frame[:4] == ZSTD_MAGIC and len(frame) < written / 20
    read = unpack_calls(frame)
    assert [c["request"] for c in read] == requests
    assert [c["content"] for c in read] == [f"call {i}" for i in range(20)]


def test_a_call_without_a_request_text_reads_back_empty():
    (read,) = unpack_calls(pack_calls([call("x")], [""], seq=1, phase="planning", attempt=0))
    assert (read["request"], read["content"]) == ("", "x")


def test_a_frame_is_compressed_from_compress_from_bytes_on():
    def payload_of(size: int) -> bytes:
        # The JSON line and its newline, with a request of four digits' length.
        header = len(pack_calls([call("")], ["r" * 1000], seq=1, phase="p", attempt=0)) - 1000
        return pack_calls([call("")], ["r" * (size - header)], seq=1, phase="p", attempt=0)

    assert payload_of(COMPRESS_FROM - 1)[:1] == b"{"
    assert payload_of(COMPRESS_FROM)[:4] == ZSTD_MAGIC
