"""`from_data` builds each class's converter once, and a thread that asks while another thread
builds it waits for it (two followers decoding at once in the dispatcher once got a converter
whose plan was not built yet: NameError, and the archiver's thread died)."""

from __future__ import annotations

import threading
import time
import typing
from dataclasses import dataclass, field

from service.rules import serial


@dataclass
class _Inner:
    seats: dict[int, str] = field(default_factory=dict)


@dataclass
class _Outer:
    inner: _Inner
    rest: list[_Outer] = field(default_factory=list)  # self-referencing


def test_a_converter_being_built_is_waited_for_by_other_threads(monkeypatch) -> None:
    original = typing.get_type_hints

    def slow(cls: type) -> dict[str, typing.Any]:
        time.sleep(0.2)  # the first thread is building while the others ask
        return original(cls)

    monkeypatch.setattr(serial.typing, "get_type_hints", slow)
    serial._CACHE.pop(_Outer, None)
    serial._CACHE.pop(_Inner, None)
    data = {"inner": {"seats": {"1": "p1"}}, "rest": [{"inner": {"seats": {}}, "rest": []}]}
    results: list[object] = []
    errors: list[BaseException] = []

    def decode(delay: float) -> None:
        time.sleep(delay)
        try:
            results.append(serial.from_data(_Outer, data))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=decode, args=(0.05 * n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = _Outer(_Inner({1: "p1"}), [_Outer(_Inner({}), [])])
    assert results == [expected] * 4
