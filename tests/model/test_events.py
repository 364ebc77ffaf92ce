"""Every event type survives the trip model -> canonical YAML -> safe load -> model."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.model import codec
from loopx.errors import SchemaError
from loopx.model.events import EVENT_TYPES, event_path, parse_event
from strategies import envelopes


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
def test_every_event_type_round_trips(type_name: str) -> None:
    model, version = EVENT_TYPES[type_name]

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(envelopes(type_name, model, version))
    def round_trip(doc: dict) -> None:
        event = parse_event(doc)
        written = codec.dump(event.to_dict())
        again = parse_event(codec.load(written, "x.yaml"), "x.yaml")
        assert again.to_dict() == event.to_dict()
        assert codec.dump(again.to_dict()) == written
        assert event_path(again).endswith(f"{doc['id']}.{type_name}.yaml")

    round_trip()


def _doc(**over: object) -> dict:
    doc = {"id": "01JD0000000000000000000000", "type": "note.added", "v": 1,
           "at": "2026-01-01T00:00:00Z", "clock": 1, "actor": "human:a@x",
           "data": {"id": "n-1", "text": "hi"}}
    doc.update(over)
    return doc


def test_unknown_fields_are_refused_with_their_name() -> None:
    with pytest.raises(SchemaError, match="data.color"):
        parse_event(_doc(data={"id": "n-1", "text": "hi", "color": "red"}), "f.yaml")


def test_an_unknown_type_from_a_newer_loopx_is_kept_not_refused() -> None:
    event = parse_event(_doc(type="future.thing", data={"anything": [1, 2]}))
    assert not event.known
    assert event.to_dict()["data"] == {"anything": [1, 2]}


def test_a_newer_version_of_a_known_type_is_kept_as_unknown() -> None:
    assert not parse_event(_doc(v=99, data={"new": "shape"})).known


@pytest.mark.parametrize("field,value", [
    ("id", "not-a-ulid"), ("clock", 0), ("actor", "nobody"), ("at", "yesterday"),
    ("type", "../../etc"),
])
def test_envelope_fields_are_validated(field: str, value: object) -> None:
    with pytest.raises(SchemaError, match=field):
        parse_event(_doc(**{field: value}), "f.yaml")


@given(st.text(min_size=1, max_size=20))
def test_entity_ids_cannot_escape_a_path(text: str) -> None:
    doc = _doc(data={"id": text, "text": "hi"})
    try:
        event = parse_event(doc)
    except SchemaError:
        return
    assert "/" not in event.data.id and ".." not in event.data.id



def test_priority_discovered_from_and_every_are_fields_of_v2() -> None:
    """A v1 event (written by an older loopx) cannot carry them; a newer version is kept as
    unknown rather than refused."""
    from loopx.model.events import make_event, parse_event

    urgent = make_event(type="todo.added", event_id="01J0000000000000000000000A",
                        data={"id": "t-1", "goal": "g", "title": "T", "priority": 0,
                              "discovered_from": "t-0"},
                        at="2030-01-01T00:00:00Z", clock=1, actor="agent:a@b")
    assert urgent.env.v == 3  # todo.added is v3 since needs
    doc = urgent.to_dict()
    with pytest.raises(SchemaError, match="todo.added v1 cannot carry data.priority"):
        parse_event(dict(doc, v=1))
    wake = dict(doc, type="wake.set", v=1, data={"id": "w-1", "at": "2030-01-01T00:00:00Z",
                                                  "every": 600})
    with pytest.raises(SchemaError, match="wake.set v1 cannot carry data.every"):
        parse_event(wake)
    assert not parse_event(dict(doc, v=4)).known  # from a newer loopx: kept as unknown


def test_writing_an_event_builds_only_its_familys_models() -> None:
    """A write loads the payload models of its own type's family, not the catalogue."""
    import subprocess
    import sys

    code = ("import sys; from loopx.model import events; "
            "events.make_event(type='note.added', data={'id': 'n1', 'text': 'hi'}, "
            "event_id='01JD5Z3Q1T8E0000000000ABCD', at='2026-01-01T00:00:00Z', clock=1, "
            "actor='human:a@example.com'); "
            "print(sorted(m for m in sys.modules if m.startswith('loopx.model.payloads.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip() == "['loopx.model.payloads.base', 'loopx.model.payloads.note_events']"


def test_every_payload_model_is_in_the_catalogue_or_nested_in_one() -> None:
    import importlib
    import pkgutil

    from loopx.model import events, payloads
    from loopx.model.payloads.base import Model

    listed = {model for model, _ in events.EVENT_TYPES.values()}
    for info in pkgutil.iter_modules(payloads.__path__):
        module = importlib.import_module(f"loopx.model.payloads.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, Model) and value is not Model \
                    and value.__module__ == module.__name__:
                assert getattr(events, name) is value  # events.<Model> finds it
    assert len(listed) == len(events.EVENT_TYPES) == len(events._CATALOGUE)
