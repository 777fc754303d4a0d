"""otel-traj backfill --from otlp-json URL --trace-ids FILE against a small backend in the test that
answers a trace id as Tempo (``/api/v2/traces/{id}``: ``{"trace": {...}}``) and Jaeger v2
(``/api/v3/traces/{id}``: ``{"result": {...}}``) do, with recorded runs: the same verdicts as
``grade`` on the files, unknown ids skipped, 429 waited out, a partial answer not fully read."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from otel_traj.backfill.http import PoliteClient
from otel_traj.backfill.otlp import OtlpJsonReader, read_otlp_runs, read_trace_ids, split_template
from otel_traj.backfill.search import fill_window, trace_ids_in
from otel_traj.cli import main
from otel_traj.offline import offline_config
from otel_traj.policy import load_policy
from tests.support_trajectories import EXAMPLE_POLICY

REAL = Path(__file__).parent / "fixtures" / "real"
CLEAN, VIOLATING = REAL / "openai_v2" / "clean.otlp.json", REAL / "openai_v2" / "violating.otlp.json"
UNKNOWN = "0123456789abcdef0123456789abcdef"


def _trace_id(doc: dict[str, Any]) -> str:
    return str(doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]).lower()


class Backend:
    """Traces by id, answered in Tempo's or Jaeger's shape; the paths asked for; answers to give
    first instead (status, headers); ids answered as Tempo's partial traces."""

    def __init__(self, *paths: Path) -> None:
        self.traces = {_trace_id(doc): doc for doc in (json.loads(p.read_text()) for p in paths)}
        self.asked: list[str] = []
        self.answers: list[tuple[int, dict[str, str]]] = []
        self.partial: set[str] = set()
        self.url = ""

    def answer(self, path: str) -> tuple[int, dict[str, str], Any]:
        self.asked.append(path)
        if self.answers:
            status, headers = self.answers.pop(0)
            return status, headers, {"message": "injected"}
        if path == "/api/echo":
            return 200, {}, {"status": "echo"}
        if path.startswith("/api/search?"):
            return (
                200,
                {},
                {"traces": [{"traceID": t.lstrip("0"), "rootServiceName": "agent"} for t in self.traces]},
            )
        trace_id = path.rsplit("/", 1)[-1]
        doc = self.traces.get(trace_id)
        if doc is None:
            return 404, {}, {"message": "trace not found"}
        if path.startswith("/api/v2/traces/"):
            status = "PARTIAL" if trace_id in self.partial else "COMPLETE"
            return 200, {}, {"trace": doc, "status": status}
        if path.startswith("/api/v3/traces/"):
            return 200, {}, {"result": doc}
        return 404, {}, {"message": "no such path"}

    @contextmanager
    def running(self) -> Iterator[Backend]:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = backend.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


def _ids_file(tmp_path: Path, *ids: str) -> str:
    path = tmp_path / "ids.txt"
    path.write_text("# traces to grade\n" + "\n".join(ids) + "\n\n")
    return str(path)


@pytest.mark.parametrize("api", ["/api/v2/traces/{trace_id}", "/api/v3/traces/{trace_id}"])
def test_backfill_grades_the_traces_a_backend_answers_as_grade_grades_their_files(
    api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["grade", "--policy", str(EXAMPLE_POLICY), "--format", "json", str(CLEAN), str(VIOLATING)]) == 1
    )
    expected = json.loads(capsys.readouterr().out)
    with Backend(CLEAN, VIOLATING).running() as backend:
        ids = _ids_file(tmp_path, *backend.traces, UNKNOWN.upper())
        code = main(
            [
                "backfill", "--from", "otlp-json", backend.url + api, "--trace-ids", ids,
                "--policy", str(EXAMPLE_POLICY), "--format", "json", "--rps", "1000",
            ]
        )  # fmt: skip
        asked = list(backend.asked)
    out, err = capsys.readouterr()
    assert code == 1
    assert json.loads(out)["trajectories"] == expected["trajectories"]
    assert asked == [api.replace("{trace_id}", t) for t in [*backend.traces, UNKNOWN]]
    assert "3 traces listed, 2 read, 2 runs graded (0 not fully read), skipped: 1 not found" in err


def test_a_429_is_waited_out_and_a_partial_trace_is_not_fully_read() -> None:
    slept: list[float] = []
    policy = load_policy(EXAMPLE_POLICY)
    with Backend(CLEAN).running() as backend:
        (trace_id,) = backend.traces
        backend.partial.add(trace_id)
        backend.answers = [(429, {"Retry-After": "3"}), (503, {})]
        base, path = split_template(backend.url + "/api/v2/traces/{trace_id}")
        client = PoliteClient(base, rps=1000.0, sleep=slept.append, backoff_initial=0.01, backoff_max=0.02)
        read = read_otlp_runs(
            OtlpJsonReader(client, path), [trace_id], limit=None, config=offline_config(policy)
        )
    assert (client.counts.requests, client.counts.retries, client.counts.throttled) == (3, 2, 1)
    assert next(s for s in slept if s > 0.001) >= 3.0
    (run,) = read.runs
    assert read.incomplete == 1 and not run.complete
    assert (
        f"not fully read from the OTLP/JSON backend: the backend answered trace {trace_id} in part"
        in run.errors
    )


def test_a_failure_stops_the_reading_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Backend(CLEAN).running() as backend:
        backend.answers = [(403, {})]
        ids = _ids_file(tmp_path, *backend.traces)
        template = backend.url + "/api/v2/traces/{trace_id}"
        args = [
            "backfill",
            "--from",
            "otlp-json",
            template,
            "--trace-ids",
            ids,
            "--policy",
            str(EXAMPLE_POLICY),
        ]
        assert main(args) == 2
    assert "reading stopped: trace" in capsys.readouterr().err


def test_backfill_reads_the_trace_ids_a_search_answers_in_its_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["grade", "--policy", str(EXAMPLE_POLICY), "--format", "json", str(CLEAN), str(VIOLATING)]) == 1
    )
    expected = json.loads(capsys.readouterr().out)
    with Backend(CLEAN, VIOLATING).running() as backend:
        code = main(
            [
                "backfill", "--from", "otlp-json", backend.url + "/api/v2/traces/{trace_id}",
                "--search", backend.url + "/api/search?q={}&start={since}&end={until}&limit=100",
                "--since", "2026-01-01T00:00:00Z", "--until", "2026-01-02T00:00:00Z",
                "--policy", str(EXAMPLE_POLICY), "--format", "json", "--rps", "1000",
            ]
        )  # fmt: skip
        asked = list(backend.asked)
    assert code == 1
    assert json.loads(capsys.readouterr().out)["trajectories"] == expected["trajectories"]
    assert asked[0] == "/api/search?q={}&start=1767225600&end=1767312000&limit=100"
    assert asked[1:] == [f"/api/v2/traces/{t}" for t in backend.traces]


def test_trace_ids_are_found_in_the_answers_of_tempo_jaeger_and_jaeger_v2() -> None:
    short = "7a1d2dd4deaf177e0acf55b3c49032"
    tempo = {"traces": [{"traceID": short, "spanSet": {"spans": [{"spanID": "c9da5e6e5f51bb83"}]}}]}
    jaeger = {"data": [{"traceID": "5e6e5f51bb83c9da", "spans": [{"traceID": "5e6e5f51bb83c9da"}]}]}
    jaeger_v2 = {"result": json.loads(CLEAN.read_text())}
    assert trace_ids_in(tempo) == ["00" + short]
    assert trace_ids_in(jaeger) == ["0" * 16 + "5e6e5f51bb83c9da"]
    assert trace_ids_in(jaeger_v2) == [_trace_id(jaeger_v2["result"])]
    assert trace_ids_in({"traces": [{"traceID": "not hex"}, {"traceID": "0" * 32}, {"traceID": 7}]}) == []


def test_a_search_window_is_filled_in_seconds_or_rfc3339_and_a_missing_time_named() -> None:
    since, until = 1_767_225_600_123_456_789, 1_767_312_000_000_000_000
    url = "http://j/api/v3/traces?query.start_time_min={since_rfc3339}&query.start_time_max={until_rfc3339}"
    assert fill_window(url, since, until).endswith(
        "min=2026-01-01T00:00:00.123456Z&query.start_time_max=2026-01-02T00:00:00.000000Z"
    )
    assert (
        fill_window("http://t/api/search?start={since}", since, None)
        == "http://t/api/search?start=1767225600"
    )
    with pytest.raises(ValueError, match=r"holds \{until\}: give --until"):
        fill_window("http://t/api/search?end={until}", since, None)


def test_a_search_that_answers_no_search_answer_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with Backend(CLEAN).running() as backend:
        code = main(
            [
                "backfill", "--from", "otlp-json", backend.url + "/api/v2/traces/{trace_id}",
                "--search", backend.url + "/api/echo", "--policy", str(EXAMPLE_POLICY),
            ]
        )  # fmt: skip
    assert code == 2
    assert "--search: GET api/echo: the answer is no search answer" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--from", "otlp-json", "http://tempo:3200/api/v2/traces/", "--trace-ids", "IDS"],
            "must hold {trace_id}",
        ),
        (
            ["--from", "otlp-json", "http://tempo:3200/api/v2/traces/{trace_id}"],
            "needs one of --trace-ids FILE and --search URL",
        ),
        (["--from", "langfuse", "--trace-ids", "IDS"], "--trace-ids goes with --from otlp-json URL"),
        (["--from", "tempo"], "expected `langfuse` or `otlp-json URL`"),
        (
            ["--from", "langfuse", "--search", "http://t/api/search"],
            "--search goes with --from otlp-json URL",
        ),
        (
            ["--from", "otlp-json", "http://t/{trace_id}", "--search", "http://t/s", "--trace-ids", "IDS"],
            "needs one of --trace-ids FILE and --search URL",
        ),
        (
            [
                "--from",
                "otlp-json",
                "http://t/{trace_id}",
                "--search",
                "http://t/api/search",
                "--since",
                "1h",
            ],
            "--since: the search URL holds no {since} or {since_rfc3339}",
        ),
        (
            ["--from", "otlp-json", "http://t/{trace_id}", "--search", "http://t/s", "--name", "x"],
            "--name: Langfuse's only",
        ),
        (
            ["--from", "otlp-json", "http://t/{trace_id}", "--trace-ids", "IDS", "--since", "24h"],
            "--since: a window goes with --search",
        ),
    ],
)
def test_settings_that_cannot_be_used_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _ids_file(tmp_path, UNKNOWN)
    args = [ids if arg == "IDS" else arg for arg in args]
    assert main(["backfill", "--policy", str(EXAMPLE_POLICY), *args]) == 2
    assert message in capsys.readouterr().err


def test_trace_ids_are_read_one_a_line_and_a_bad_line_is_named(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text(f"# ids\n {UNKNOWN.upper()} \n\n{UNKNOWN}\n{'f' * 32}\n")
    assert read_trace_ids(str(good)) == [UNKNOWN, "f" * 32]
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{UNKNOWN}\nnot-an-id\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: 'not-an-id' is not a trace id"):
        read_trace_ids(str(bad))
