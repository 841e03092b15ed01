"""The diff page (issue 36, item 5): two attempts side by side, the first difference marked and
named at the top, reached from the run page's "Compare with…"; another person's run is 404."""

import pytest

from tests.support.diffs import attempt, echo_script
from tests.support.runs import make_run
from tests.support.workspaces import own_workspaces

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_workspaces")]
__all__ = ["own_workspaces"]


def diff_url(a, b) -> str:
    return f"/runs/{a.pk}/diff/{b.pk}/"


def test_the_page_shows_both_runs_and_highlights_the_first_difference(owner, owner_session):
    first = attempt(echo_script("two"), owner=owner)
    second = attempt(echo_script("TWO"), of=first)

    response = owner_session.get(diff_url(first, second))

    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-side="a"' in html and 'data-side="b"' in html
    assert f"Run #{first.pk}" in html and f"Run #{second.pk}" in html
    assert (
        'First difference: <a href="#first-difference">step 2: call 1 echo arguments differ</a>'
        in html
    )
    # The call row is marked and holds the anchor the top line (and the run page) link to.
    assert 'id="diff-step-2-call-1" class="diff-pair diff-call differs diverged"' in html
    row = html.split('id="diff-step-2-call-1"')[1].split('id="diff-step-3"')[0]
    assert 'id="first-difference"' in row
    assert html.count('id="first-difference"') == 1
    assert (
        "{&quot;text&quot;:&quot;two&quot;}" in row and "{&quot;text&quot;:&quot;TWO&quot;}" in row
    )


def test_identical_runs_say_there_is_no_difference(owner, owner_session):
    first = attempt(echo_script(), owner=owner)
    second = attempt(echo_script(), of=first)

    html = owner_session.get(diff_url(first, second)).content.decode()

    assert "No difference" in html
    assert "diverged" not in html.replace("diff.css", "")
    assert 'id="first-difference"' not in html


def test_the_run_page_links_each_other_attempt_to_compare_with(owner, owner_session):
    first = attempt(echo_script(), owner=owner)
    second = attempt(echo_script("TWO"), of=first)

    html = owner_session.get(f"/runs/{second.pk}/").content.decode()

    assert "Compare with…" in html
    assert f'href="/runs/{second.pk}/diff/{first.pk}/#first-difference"' in html


def test_another_persons_run_is_not_found(owner, outsider, owner_session):
    mine = make_run(owner)
    theirs = make_run(outsider, "secret plans")

    for url in (diff_url(mine, theirs), diff_url(theirs, mine)):
        response = owner_session.get(url)
        assert response.status_code == 404
        assert b"secret plans" not in response.content
