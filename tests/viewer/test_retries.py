"""Retries as one logical operation: grouping, counts that never double-count, both pages."""

from __future__ import annotations


from apptest_helpers import lines, run_app, table, texts
from hypothesis import given
from hypothesis import strategies as hs
from viewer_fixture import ViewerFixture

from otel_inputs.viewer._queries import load_attempt, read_only, run_retry_links, run_timeline
from otel_inputs.viewer._records import AttemptListRow
from otel_inputs.viewer._retries import family, group_operations, position_text, root_of



def row(attempt_id: str, t: int, kind: str = "initial") -> AttemptListRow:
    return AttemptListRow(attempt_id, t, t + 1, "p", "a", kind, 1, "s", "complete", 1, "Ok", False)


def test_fixture_run_groups_into_three_operations(viewer_fixture: ViewerFixture) -> None:
    """att-001 with its parse and check retries is one operation of 3; att-004 and att-005 stand alone."""
    with read_only(viewer_fixture.db_path) as con:
        ops = group_operations(run_timeline(con, viewer_fixture.run_id), run_retry_links(con, viewer_fixture.run_id))
        bundle = load_attempt(con, "att-002")
    assert [(o.root_id, o.count) for o in ops] == [("att-001", 3), ("att-004", 1), ("att-005", 1)]
    assert ops[0].sends == "initial request → parse retry → check retry"
    assert position_text(ops)["att-003"] == "3 of 3"
    assert bundle is not None and [m.attempt_id for m in bundle.operation] == ["att-001", "att-002", "att-003"]


def test_cycles_and_dangling_links_are_bounded() -> None:
    """A corrupt cycle or a link to an attempt outside the list never loops and never loses an attempt."""
    links = {"b": "a", "a": "b", "c": "zz"}
    assert root_of("a", links) in {"a", "b"}
    ops = group_operations([row("a", 1), row("b", 2), row("c", 3)], links)
    assert sorted(a.attempt_id for o in ops for a in o.attempts) == ["a", "b", "c"]
    assert family("c", links) == {"zz", "c"}


@given(hs.lists(hs.integers(0, 12), min_size=1, max_size=12))
def test_every_attempt_is_in_exactly_one_operation(parents: list[int]) -> None:
    """Whatever the retry links (including cycles), operations partition the attempts: no double count."""
    rows = [row(f"x{i}", i) for i in range(len(parents))]
    links = {f"x{i}": f"x{p}" for i, p in enumerate(parents) if p != i and p < len(parents)}
    ops = group_operations(rows, links)
    members = [a.attempt_id for o in ops for a in o.attempts]
    assert sorted(members) == sorted(r.attempt_id for r in rows)
    assert sum(o.count for o in ops) == len(rows)


def test_run_page_and_attempt_page_show_one_operation(env: ViewerFixture) -> None:
    """The run page counts 5 physical attempts in 3 operations; the retry's page says attempt 2 of 3 and links the others."""
    at = run_app(run=env.run_id)
    assert any("5 physical attempt(s) in 3 logical operation(s)" in t for t in texts(at))
    ops = table(at, "physical attempts")
    assert list(ops["physical attempts"]) == [3, 1, 1] and list(ops["first attempt"]) == ["att-001", "att-004", "att-005"]
    assert list(table(at, "try")["try"]) == ["1 of 3", "2 of 3", "3 of 3", "1 of 1", "1 of 1"]
    at = run_app(attempt=env.ids["parse_retry"])
    assert "One logical operation of 3 physical attempts; this is attempt 2 of 3." in lines(at)
    labels = [b.label.replace("\\", "") for b in at.button if b.key and b.key.startswith("page:lineage:")]
    assert any(lb.startswith("1. initial request · att-001") for lb in labels)
    assert any(lb.startswith("3. check retry · att-003") for lb in labels)
    at = run_app(attempt=env.ids["review"])
    assert "One physical attempt: this send was not retried." not in texts(at)  # a lone attempt shows no line
