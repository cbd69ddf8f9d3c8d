"""The one boundary where stored values of a table are parsed: what the service writes parses,
anything else is the table's CorruptTable naming the key or field, and a batch parses each
table's value on its own."""

from __future__ import annotations

import pickle

import pytest

from service.eventlog import decoding
from service.eventlog.decoding import CorruptTable
from service.eventlog.store import CorruptLog, Idempotency, StoreError


def test_the_meta_fields_the_service_writes_parse() -> None:
    parsed = decoding.meta("t", [b"17", b"{}", b"16", b"1795683664.815", b"4"])
    assert (parsed.version, parsed.snapshot, parsed.snapshot_version) == (17, b"{}", 16)
    assert (parsed.due, parsed.trimmed) == (1795683664.815, 4)
    absent = decoding.meta("t", [b"3", b"", None, None, None])  # (an empty snapshot is one)
    assert (absent.snapshot_version, absent.due, absent.trimmed) == (3, None, 0)
    assert decoding.meta("t", [None, None, None, b"garbage", None]).version == 0  # no table


@pytest.mark.parametrize(
    ("fields", "what"),
    [
        ([b"garbage", b"{}", None, None, None], "meta field version"),
        ([b"0", b"{}", None, None, None], "meta field version"),
        ([b" 7", b"{}", None, None, None], "meta field version"),
        ([b"1e3", b"{}", None, None, None], "meta field version"),
        ([b"7", None, None, None, None], "meta field snapshot"),
        ([b"7", b"{}", b"8", None, None], "meta field snapshot_version"),
        ([b"7", b"{}", b"-1", None, None], "meta field snapshot_version"),
        ([b"7", b"{}", None, b"garbage", None], "meta field due"),
        ([b"7", b"{}", None, b"inf", None], "meta field due"),
        ([b"7", b"{}", None, b"nan", None], "meta field due"),
        ([b"7", b"{}", None, None, b"8"], "meta field trimmed"),
        ([b"7", b"{}", None, None, b"x"], "meta field trimmed"),
    ],
)
def test_a_meta_field_that_does_not_parse_is_named(fields: list[bytes | None], what: str) -> None:
    with pytest.raises(CorruptTable) as refused:
        decoding.meta("t-1", fields)
    assert (refused.value.table_id, refused.value.what) == ("t-1", what)
    assert isinstance(refused.value, CorruptLog) and isinstance(refused.value, StoreError)
    assert "t-1" in str(refused.value) and what in str(refused.value)
    copy = pickle.loads(pickle.dumps(refused.value))  # (crosses process boundaries: RQ)
    assert (copy.table_id, copy.what) == ("t-1", what)


def test_stream_entries_must_be_the_next_versions_each_with_its_data() -> None:
    entries = [(b"3-0", {b"data": b"a"}), (b"4-0", {b"data": b"b"})]
    assert [e.version for e in decoding.stored_events("t", 2, entries)] == [3, 4]
    for bad, what in [
        ([(b"3-0", {b"data": b"a"}), (b"5-0", {b"data": b"b"})], "stream entry b'5-0'"),
        ([(b"3-1", {b"data": b"a"})], "stream entry b'3-1'"),
        ([(b"3-0", {b"other": b"a"})], "stream entry 3"),
    ]:
        with pytest.raises(CorruptTable) as refused:
            decoding.stored_events("t", 2, bad)
        assert refused.value.what == what


def test_idempotency_records_and_their_responses() -> None:
    record = decoding.idempotency("t", "k", b"abc", b'{"status": 201, "body": {"a": 1}}')
    assert record == Idempotency("k", "abc", b'{"status": 201, "body": {"a": 1}}')
    assert decoding.replay("t", record) == ("made", {"a": 1})  # (an older record: upcast)
    for response in (b"garbage", b"[1]", b'{"status": "201"}', b'{"status": 7}', b"{}"):
        with pytest.raises(CorruptTable, match="idempotency record 'k'"):
            decoding.replay("t", Idempotency("k", "abc", response))
    for request_hash, response in ((None, b"{}"), (b"abc", None), (b"\xff", b"{}")):
        with pytest.raises(CorruptTable, match="idempotency record 'k'"):
            decoding.idempotency("t", "k", request_hash, response)


def test_a_batch_parses_each_tables_value_on_its_own() -> None:
    replies = [b"3", b"garbage", None, Exception("WRONGTYPE Operation against a key")]
    parsed = decoding.parse_each(
        ["a", "b", "c", "d"],
        replies,
        lambda table_id, raw: decoding.position(table_id, "ledger", raw),
        "ledger positions",
    )
    assert parsed[0] == 3 and parsed[2] == 0
    assert isinstance(parsed[1], CorruptTable) and parsed[1].what == "ledger position"
    assert isinstance(parsed[3], CorruptTable) and parsed[3].what == "ledger positions"
    assert [getattr(p, "table_id", None) for p in parsed] == [None, "b", None, "d"]


def test_what_failed_looks_through_what_an_error_was_raised_from() -> None:
    try:
        try:
            raise CorruptTable("t", "meta field due")
        except CorruptTable as error:
            raise RuntimeError("wrapped") from error
    except RuntimeError as wrapped:
        assert decoding.what_failed(wrapped) == "meta field due"
    assert decoding.what_failed(ValueError("x")) == "log"


def test_members_that_name_no_table_and_versions_of_ids() -> None:
    assert decoding.member_text(b"t-1") == "t-1"
    assert decoding.member_text(b"\xff\xfe") is None
    assert decoding.version_of_id(b"12-0") == 12
    assert [decoding.version_of_id(i) for i in (b"12-1", b"x-0", b"012-0", None)] == [None] * 4


def test_an_idempotency_record_keeps_an_effect_and_facts() -> None:
    for effect in ("made", "changed"):
        kept = b'{"effect": "%s", "facts": {"version": 3}}' % effect.encode()
        assert decoding.replay("t", Idempotency("k", "h", kept)) == (effect, {"version": 3})
    for kept in (b'{"effect": "refused", "facts": {}}', b'{"effect": 201, "facts": {}}'):
        with pytest.raises(CorruptTable, match="idempotency record 'k'"):
            decoding.replay("t", Idempotency("k", "h", kept))


def test_a_record_kept_as_an_http_response_is_upcast_to_its_effect() -> None:
    """Records written before effects were kept held the response (they live 24 h, across a
    deploy): a 201 made something, a 200 changed the table; the body is the facts."""
    for status, effect in ((201, "made"), (200, "changed")):
        kept = b'{"status": %d, "body": {"seat": 2, "version": 9}}' % status
        replayed = decoding.replay("t", Idempotency("k", "h", kept))
        assert replayed == (effect, {"seat": 2, "version": 9})
    for kept in (b'{"status": 202, "body": {}}', b'{"status": true}', b'{"status": [201]}'):
        with pytest.raises(CorruptTable, match="idempotency record 'k'"):
            decoding.replay("t", Idempotency("k", "h", kept))
