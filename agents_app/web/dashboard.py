"""The dashboard: a person's runs, searched, filtered, sorted and paged in the database
(`runs.listing`, the same vocabulary as `GET /api/v1/runs`).

The controls are a GET form, so a URL holds the whole view (shareable, the back button works)
and everything works without JavaScript; htmx sends the same GET and swaps the table alone.
A value the list does not know (a junk status, sort or page) is not an error page: the
dashboard falls back to the default and says what it ignored.

Live rows: the dashboard's socket sends a row for every change to one of the person's runs;
a row on this page is swapped in place. A run newer than any the page knew (`latest_run_id`)
is put at the top when the page shows the newest runs unfiltered (page 1, no search, no status,
newest first); on any other view the page says "New runs — refresh" instead, since where the
run belongs there is the database's to say (static/agentdesk/live.js).
"""

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Max
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import push_url

from agents_app.core.inputs import text_problem
from agents_app.models import RunKind, RunStatus
from agents_app.runs import listing
from agents_app.runs.admission import queue_counts
from agents_app.runs.listing import RunSort
from agents_app.runs.recipes import recipe_for
from agents_app.runs.selectors import runs_for
from agents_app.templatetags.agentdesk import status_label
from agents_app.web import run_page
from agents_app.web.views import HtmxHttpRequest

RUNS_PER_PAGE = 25
FILTER_FORM_ID = "runs-filter"

STATUS_CHOICES: list[tuple[str, str]] = [
    ("", "All"),
    (listing.StatusGroup.ACTIVE, "Active"),
    (listing.StatusGroup.WAITING, "Waiting"),
    (RunStatus.SUCCEEDED, "Succeeded"),
    (RunStatus.FAILED, "Failed"),
    (RunStatus.CANCELLED, "Cancelled"),
]
SORT_CHOICES: list[tuple[str, str]] = [
    (RunSort.NEWEST, "Newest first"),
    (RunSort.OLDEST, "Oldest first"),
    (RunSort.LONGEST, "Longest"),
    (RunSort.SHORTEST, "Shortest"),
    (RunSort.MOST_TOKENS, "Most tokens"),
    (RunSort.FEWEST_TOKENS, "Fewest tokens"),
]
# The sortable columns, in table order: label, the order a click asks for first, and the
# opposite one it asks for when the first is already on.
HEADER_SORTS: list[tuple[str, RunSort, RunSort]] = [
    ("Tokens", RunSort.MOST_TOKENS, RunSort.FEWEST_TOKENS),
    ("Duration", RunSort.LONGEST, RunSort.SHORTEST),
    ("Created", RunSort.NEWEST, RunSort.OLDEST),
]
SORT_LABELS = dict(SORT_CHOICES)
# The kind menu: by default the kinds the recipes list (tasks, team runs); "all", or one kind.
KIND_ALL = "all"


def kind_choices() -> list[tuple[str, str]]:
    return [
        ("", "Tasks and teams"),
        (KIND_ALL, "Every kind"),
        *((kind, recipe_for(kind).plural) for kind in RunKind.values),
    ]


@dataclass
class DashboardQuery:
    """What the URL asks for, every value known to the list; `ignored` says what was not."""

    q: str = ""
    status: str = ""
    kind: str = ""  # "": the listed kinds; KIND_ALL; or one RunKind
    sort: RunSort = RunSort.NEWEST
    ignored: list[str] = field(default_factory=list)

    @classmethod
    def from_params(cls, params: QueryDict) -> "DashboardQuery":
        query = cls()
        q = params.get("q", "").strip()
        if problem := text_problem(q):
            query.ignored.append(f"The search was ignored: it {problem}.")
        else:
            query.q = q[: listing.SEARCH_MAX_LENGTH]
        status = params.get("status", "")
        if status in listing.STATUS_GROUPS or not status:
            query.status = status
        else:
            query.ignored.append(f"Unknown status “{status[:40]}”: showing every status.")
        kind = params.get("kind", "")
        if kind in (KIND_ALL, *RunKind.values) or not kind:
            query.kind = kind
        else:
            query.ignored.append(f"Unknown kind “{kind[:40]}”: showing tasks and teams.")
        sort = params.get("sort", "")
        if sort in {order.value for order in RunSort}:
            query.sort = RunSort(sort)
        elif sort:
            query.ignored.append(f"Unknown order “{sort[:40]}”: showing the newest first.")
        return query

    @property
    def is_default_view(self) -> bool:
        return not self.q and not self.status and not self.kind and self.sort == RunSort.NEWEST

    @property
    def listing_kind(self) -> str | None:
        """The `kind` runs.listing takes for this view."""
        if not self.kind:
            return listing.LISTED
        return None if self.kind == KIND_ALL else self.kind

    @property
    def shown_kinds(self) -> str:
        """The kinds this view shows, for live.js: "all" or a comma-separated list."""
        kind = self.listing_kind
        return KIND_ALL if kind is None else ",".join(listing.kinds_of(kind))

    def url(self, *, page: int = 1, sort: RunSort | None = None) -> str:
        """The dashboard's URL for this query (defaults left out), at `page`."""
        sort = sort or self.sort
        params = {"q": self.q, "status": self.status, "kind": self.kind}
        params["sort"] = "" if sort == RunSort.NEWEST else sort
        params["page"] = "" if page == 1 else str(page)
        encoded = urlencode({key: value for key, value in params.items() if value})
        return reverse("dashboard") + (f"?{encoded}" if encoded else "")


def _page_number(raw: str | None, num_pages: int, ignored: list[str]) -> int:
    """The page to show: 1 for a missing or junk number or one below 1, the last page for one
    past the end, each fallback noted in `ignored`."""
    if raw is None or raw == "":
        return 1
    try:
        number = int(raw)
    except ValueError:
        ignored.append(f"“{raw[:40]}” is no page number: showing page 1.")
        return 1
    if number < 1:
        ignored.append(f"There is no page {number}: showing page 1.")
        return 1
    if number > num_pages:
        ignored.append(f"There is no page {number}: showing the last page, {num_pages}.")
        return num_pages
    return number


def _status_choices(query: DashboardQuery) -> list[tuple[str, str]]:
    """The status menu; a single status from a shared URL (`?status=running`) gets its own
    entry, so the menu shows what the list does."""
    if any(value == query.status for value, _ in STATUS_CHOICES):
        return STATUS_CHOICES
    return [*STATUS_CHOICES, (query.status, status_label(query.status).capitalize())]


def _headers(query: DashboardQuery) -> list[dict[str, str]]:
    headers = []
    for label, first, second in HEADER_SORTS:
        target = second if query.sort == first else first
        aria_sort = ""
        if query.sort in (first, second):
            aria_sort = "descending" if query.sort == first else "ascending"
        headers.append(
            {
                "label": label,
                "url": query.url(sort=target),
                "title": f"Sort: {SORT_LABELS[target].lower()}",
                "aria_sort": aria_sort,
            }
        )
    return headers


def dashboard_context(request: HtmxHttpRequest) -> dict[str, Any]:
    query = DashboardQuery.from_params(request.GET)
    runs = listing.runs_search(
        user=request.user,
        q=query.q,
        status=query.status or None,
        sort=query.sort,
        kind=query.listing_kind,
    )
    paginator = Paginator(runs, RUNS_PER_PAGE)
    number = _page_number(request.GET.get("page"), paginator.num_pages, query.ignored)
    page_obj = paginator.page(number)
    rows = list(page_obj.object_list)
    progress = run_page.progress_by_run(rows)
    for run in rows:
        run.progress = progress[run.pk]
    page_links = [
        {"number": n, "url": query.url(page=n), "current": n == number}
        if isinstance(n, int)
        else {"gap": True}
        for n in paginator.get_elided_page_range(number, on_each_side=2, on_ends=1)
    ]
    return {
        "nav": "dashboard",
        "query": query,
        "page_obj": page_obj,
        "rows": rows,
        "page_links": page_links,
        "previous_url": query.url(page=number - 1) if page_obj.has_previous() else "",
        "next_url": query.url(page=number + 1) if page_obj.has_next() else "",
        "self_url": query.url(page=number),
        "status_choices": _status_choices(query),
        "sort_choices": SORT_CHOICES,
        "kind_choices": kind_choices(),
        "headers": _headers(query),
        # Runs with a larger id started after this page was read (live.js).
        "latest_run_id": runs_for(request.user).aggregate(latest=Max("id"))["latest"] or 0,
        "live_prepend": query.is_default_view and number == 1,
        # How many of the person's runs hold a turn and how many wait for one (runs.admission).
        "queue": queue_counts(request.user.pk),
    }


@login_required
@require_GET
def dashboard(request: HtmxHttpRequest) -> HttpResponse:
    """The page, or for htmx the runs panel alone (with the form out of band when a link
    asked) and the view's canonical URL to push. A history restore (the back button: the
    page keeps no snapshot) gets the whole page, which htmx swaps in for the body."""
    context = dashboard_context(request)
    if not request.htmx or request.htmx.history_restore_request:
        return render(request, "agents/dashboard.html", context)
    html = render_to_string("agents/partials/runs_table.html", context, request=request)
    if request.htmx.trigger != FILTER_FORM_ID:
        # A header or page link: the form must show the query too. Not when the form asked:
        # swapping it would take the search box from under the person typing in it.
        html += render_to_string(
            "agents/partials/runs_filter.html", {**context, "oob": True}, request=request
        )
    # The canonical URL (defaults and ignored values left out) rather than the form's fields.
    return push_url(HttpResponse(html), context["self_url"])
