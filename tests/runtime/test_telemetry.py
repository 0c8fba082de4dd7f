"""Tests of mcp_sync.runtime.telemetry against the real OpenTelemetry SDK."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from mcp_sync.runtime import telemetry as telemetry_module
from mcp_sync.runtime.telemetry import Telemetry, default_telemetry

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def provider(reader: InMemoryMetricReader) -> MeterProvider:
    return MeterProvider(metric_readers=[reader])


def collect(reader: InMemoryMetricReader) -> dict[str, Any]:
    """Map metric name to its metric object, for the mcp_sync scope only."""
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, Any] = {}
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            if scope_metrics.scope.name != "mcp_sync":
                continue
            for metric in scope_metrics.metrics:
                found[metric.name] = metric
    return found


def points(reader: InMemoryMetricReader, name: str) -> dict[frozenset[Any], Any]:
    """Data points of one metric, keyed by their attribute set."""
    metric = collect(reader)[name]
    return {frozenset(p.attributes.items()): p for p in metric.data.data_points}


def attrs(**values: str) -> frozenset[Any]:
    return frozenset(values.items())


def test_request_counter_counts_each_request_with_its_attributes(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    telemetry = Telemetry(provider)
    telemetry.record_request("client", "tools/call", "success", 10.0)
    telemetry.record_request("client", "tools/call", "success", 20.0)
    telemetry.record_request("server", "tools/call", "success", 5.0)
    telemetry.record_request("client", "resources/read", "success", 1.0)

    counts = {key: p.value for key, p in points(reader, "mcp_request_total").items()}
    assert counts == {
        attrs(direction="client", method="tools/call", status="success"): 2,
        attrs(direction="server", method="tools/call", status="success"): 1,
        attrs(direction="client", method="resources/read", status="success"): 1,
    }
    metric = collect(reader)["mcp_request_total"]
    assert metric.data.is_monotonic


def test_error_and_cancelled_statuses_are_tagged(provider: MeterProvider, reader: InMemoryMetricReader) -> None:
    telemetry = Telemetry(provider)
    telemetry.record_request("server", "tools/call", "error", 3.0)
    telemetry.record_request("server", "tools/call", "cancelled", 7.0)
    telemetry.record_request("server", "tools/call", "cancelled", 8.0)
    telemetry.record_request("server", "tools/call", "success", 1.0)

    counts = {key: p.value for key, p in points(reader, "mcp_request_total").items()}
    assert counts == {
        attrs(direction="server", method="tools/call", status="error"): 1,
        attrs(direction="server", method="tools/call", status="cancelled"): 2,
        attrs(direction="server", method="tools/call", status="success"): 1,
    }


def test_duration_histogram_gets_count_and_sum(provider: MeterProvider, reader: InMemoryMetricReader) -> None:
    telemetry = Telemetry(provider)
    telemetry.record_request("client", "tools/call", "success", 12.5)
    telemetry.record_request("client", "tools/call", "error", 7.5)
    telemetry.record_request("client", "ping", "success", 0.25)

    metric = collect(reader)["mcp_request_duration_ms"]
    assert metric.unit == "ms"
    by_attrs = points(reader, "mcp_request_duration_ms")
    # status is not an attribute of the histogram: both tools/call land together
    assert set(by_attrs) == {
        attrs(direction="client", method="tools/call"),
        attrs(direction="client", method="ping"),
    }
    tools = by_attrs[attrs(direction="client", method="tools/call")]
    assert tools.count == 2
    assert tools.sum == pytest.approx(20.0)
    assert tools.min == pytest.approx(7.5)
    assert tools.max == pytest.approx(12.5)
    ping = by_attrs[attrs(direction="client", method="ping")]
    assert ping.count == 1
    assert ping.sum == pytest.approx(0.25)


def test_notification_counter(provider: MeterProvider, reader: InMemoryMetricReader) -> None:
    telemetry = Telemetry(provider)
    telemetry.record_notification("sent", "notifications/progress")
    telemetry.record_notification("sent", "notifications/progress")
    telemetry.record_notification("sent", "notifications/progress")
    telemetry.record_notification("received", "notifications/cancelled")

    counts = {key: p.value for key, p in points(reader, "mcp_notification_total").items()}
    assert counts == {
        attrs(direction="sent", method="notifications/progress"): 3,
        attrs(direction="received", method="notifications/cancelled"): 1,
    }
    # notifications never touch the request instruments
    assert "mcp_request_total" not in collect(reader)
    assert "mcp_request_duration_ms" not in collect(reader)


def test_notification_and_duration_attributes_do_not_mix(provider: MeterProvider, reader: InMemoryMetricReader) -> None:
    telemetry = Telemetry(provider)
    telemetry.record_request("server", "ping", "success", 2.0)
    telemetry.record_notification("received", "ping")

    assert set(points(reader, "mcp_request_duration_ms")) == {attrs(direction="server", method="ping")}
    assert set(points(reader, "mcp_notification_total")) == {attrs(direction="received", method="ping")}


def test_meter_scope_name_and_version(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: f"{name}-9.9.9")
    Telemetry(provider).record_notification("sent", "notifications/message")

    data = reader.get_metrics_data()
    assert data is not None
    scopes = [s.scope for r in data.resource_metrics for s in r.scope_metrics]
    assert [(s.name, s.version) for s in scopes] == [("mcp_sync", "mcp-sync-py-9.9.9")]


def test_meter_version_is_omitted_when_not_installed(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    Telemetry(provider).record_notification("sent", "notifications/message")

    data = reader.get_metrics_data()
    assert data is not None
    scopes = [s.scope for r in data.resource_metrics for s in r.scope_metrics]
    assert [(s.name, s.version) for s in scopes] == [("mcp_sync", None)]


class _RecordingInstrument:
    def __init__(self) -> None:
        self.calls: list[tuple[float, Any]] = []

    def add(self, amount: float, attributes: Any = None) -> None:
        self.calls.append((amount, attributes))

    def record(self, amount: float, attributes: Any = None) -> None:
        self.calls.append((amount, attributes))


class _RecordingMeter:
    def __init__(self) -> None:
        self.instruments: dict[str, _RecordingInstrument] = {}

    def _make(self, name: str, **_: Any) -> _RecordingInstrument:
        instrument = self.instruments[name] = _RecordingInstrument()
        return instrument

    create_counter = _make
    create_histogram = _make


class _RecordingProvider:
    def __init__(self) -> None:
        self.meter = _RecordingMeter()

    def get_meter(self, name: str, version: str | None = None, **_: Any) -> _RecordingMeter:
        return self.meter


def test_attribute_dicts_are_reused_per_key() -> None:
    provider = _RecordingProvider()
    telemetry = Telemetry(provider)  # type: ignore[arg-type]
    telemetry.record_request("client", "ping", "success", 1.0)
    telemetry.record_request("client", "ping", "success", 2.0)
    telemetry.record_request("client", "ping", "error", 3.0)
    telemetry.record_notification("sent", "notifications/progress")
    telemetry.record_notification("sent", "notifications/progress")

    instruments = provider.meter.instruments
    requests = [a for _, a in instruments["mcp_request_total"].calls]
    assert requests[0] is requests[1]
    assert requests[2] == {"direction": "client", "method": "ping", "status": "error"}
    durations = instruments["mcp_request_duration_ms"].calls
    assert [amount for amount, _ in durations] == [1.0, 2.0, 3.0]
    assert durations[0][1] is durations[1][1] is durations[2][1]
    assert durations[0][1] == {"direction": "client", "method": "ping"}
    notifications = [a for _, a in instruments["mcp_notification_total"].calls]
    assert notifications[0] is notifications[1]
    assert notifications[0] == {"direction": "sent", "method": "notifications/progress"}


def test_attribute_caches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry_module, "_ATTRIBUTE_CACHE_LIMIT", 1)
    provider = _RecordingProvider()
    telemetry = Telemetry(provider)  # type: ignore[arg-type]
    telemetry.record_request("client", "a", "success", 1.0)
    telemetry.record_request("client", "b", "success", 1.0)
    telemetry.record_request("client", "b", "success", 1.0)
    telemetry.record_request("client", "a", "success", 1.0)

    calls = [a for _, a in provider.meter.instruments["mcp_request_total"].calls]
    # past the limit, attribute sets are still correct but built afresh
    assert calls[1] == calls[2] == {"direction": "client", "method": "b", "status": "success"}
    assert calls[1] is not calls[2]
    assert calls[0] is calls[3]
    durations = [a for _, a in provider.meter.instruments["mcp_request_duration_ms"].calls]
    assert durations[1] == durations[2] == {"direction": "client", "method": "b"}
    assert durations[1] is not durations[2]
    assert durations[0] is durations[3]


def test_bounded_cache_still_reports_to_the_sdk(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    monkeypatch.setattr(telemetry_module, "_ATTRIBUTE_CACHE_LIMIT", 0)
    telemetry = Telemetry(provider)
    for method in ("a", "b", "a"):
        telemetry.record_request("server", method, "success", 1.0)

    counts = {key: p.value for key, p in points(reader, "mcp_request_total").items()}
    assert counts == {
        attrs(direction="server", method="a", status="success"): 2,
        attrs(direction="server", method="b", status="success"): 1,
    }


def test_no_provider_means_the_global_one(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    monkeypatch.setattr(otel_metrics, "get_meter_provider", lambda: provider)
    Telemetry().record_request("client", "initialize", "success", 4.0)

    counts = {key: p.value for key, p in points(reader, "mcp_request_total").items()}
    assert counts == {attrs(direction="client", method="initialize", status="success"): 1}


def test_default_telemetry_is_built_once(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    monkeypatch.setattr(telemetry_module, "_default", None)
    monkeypatch.setattr(otel_metrics, "get_meter_provider", lambda: provider)

    first = default_telemetry()
    second = default_telemetry()

    assert isinstance(first, Telemetry)
    assert first is second
    first.record_notification("sent", "notifications/initialized")
    counts = {key: p.value for key, p in points(reader, "mcp_notification_total").items()}
    assert counts == {attrs(direction="sent", method="notifications/initialized"): 1}


def test_default_telemetry_from_many_threads_is_one_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(telemetry_module, "_default", None)
    built: list[Telemetry] = []
    real_init = Telemetry.__init__

    def counting_init(self: Telemetry, meter_provider: Any = None) -> None:
        built.append(self)
        real_init(self, meter_provider)

    monkeypatch.setattr(Telemetry, "__init__", counting_init)
    start = threading.Barrier(8)
    results: list[Telemetry] = []

    def call() -> None:
        start.wait()
        results.append(default_telemetry())

    workers = [threading.Thread(target=call) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert len(built) == 1
    assert len(results) == 8
    assert all(result is built[0] for result in results)


def test_default_telemetry_keeps_the_instance_of_a_thread_that_won_the_race(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider
) -> None:
    winner = Telemetry(provider)

    class RacingLock:
        """Stands for a lock another thread held while building the default."""

        def __enter__(self) -> None:
            telemetry_module._default = winner

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(telemetry_module, "_default", None)
    monkeypatch.setattr(telemetry_module, "_default_lock", RacingLock())

    assert default_telemetry() is winner


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_importing_the_module_does_not_import_opentelemetry() -> None:
    result = run_python(
        """
        import sys
        import mcp_sync.runtime.telemetry
        print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_early_telemetry_follows_a_provider_set_later() -> None:
    result = run_python(
        """
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from mcp_sync.runtime.telemetry import default_telemetry

        telemetry = default_telemetry()  # before any provider exists
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        telemetry.record_request("server", "tools/list", "success", 2.0)

        data = reader.get_metrics_data()
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = point.count
                        print(metric.name, dict(point.attributes)["method"], value)
        """
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "mcp_request_duration_ms tools/list 1",
        "mcp_request_total tools/list 1",
    ]


def test_calls_import_no_opentelemetry_until_the_application_does() -> None:
    """A server and client that serve calls in both eras load nothing of OpenTelemetry while nobody configures it;
    once the application imports it and sets its providers, the next calls are measured and traced."""
    result = run_python(
        """
        import sys
        from mcp_sync import MCPClient, MCPServer
        from mcp_sync.transports.memory import InMemoryTransport

        server = MCPServer("quiet")

        @server.tool
        def echo(text: str) -> str:
            return text

        def call_in_both_eras():
            for era in ("handshake", "stateless"):
                client_end, server_end = InMemoryTransport.pair()
                server.start(server_end)
                client = MCPClient(era=era)
                client.connect(client_end)
                assert client.call_tool("echo", {"text": "hi"}).text == "hi"
                client.close()

        call_in_both_eras()
        print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))

        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        reader, exporter = InMemoryMetricReader(), InMemorySpanExporter()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(tracer_provider)
        call_in_both_eras()
        server.stop()

        calls = 0
        for rm in reader.get_metrics_data().resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == "mcp_request_total":
                        calls += sum(p.value for p in metric.data.data_points if p.attributes["method"] == "tools/call")
        print(calls, sorted(span.name for span in exporter.get_finished_spans() if span.name.startswith("tools/call")))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[]",  # (main imported the OpenTelemetry API at the first request)
        "4 ['tools/call echo', 'tools/call echo', 'tools/call echo', 'tools/call echo']",  # 2 eras x client and server
    ]


def test_nothing_is_made_while_opentelemetry_is_not_imported(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    """The measurements before the application imports the API are dropped; the first one after it is counted."""
    monkeypatch.delitem(sys.modules, "opentelemetry.metrics")
    monkeypatch.delenv("OTEL_PYTHON_METER_PROVIDER", raising=False)
    monkeypatch.setattr(telemetry_module, "_NAMED", {})
    monkeypatch.setattr(otel_metrics, "get_meter_provider", lambda: provider)
    telemetry = Telemetry()
    telemetry.record_request("server", "tools/call", "success", 1.0)
    telemetry.record_notification("sent", "notifications/progress")
    assert reader.get_metrics_data() is None  # (no instrument was made on the provider)

    monkeypatch.setitem(sys.modules, "opentelemetry.metrics", otel_metrics)  # the application imports it
    telemetry.record_request("server", "tools/call", "success", 1.0)
    telemetry.record_notification("sent", "notifications/progress")
    assert {key: p.value for key, p in points(reader, "mcp_request_total").items()} == {
        attrs(direction="server", method="tools/call", status="success"): 1
    }
    assert {key: p.value for key, p in points(reader, "mcp_notification_total").items()} == {
        attrs(direction="sent", method="notifications/progress"): 1
    }


def test_a_provider_named_in_the_environment_is_used_without_an_import(
    monkeypatch: pytest.MonkeyPatch, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    """OTEL_PYTHON_METER_PROVIDER configures a provider the application never imports: measured from the start."""
    monkeypatch.delitem(sys.modules, "opentelemetry.metrics")
    monkeypatch.setenv("OTEL_PYTHON_METER_PROVIDER", "sdk_meter_provider")
    monkeypatch.setattr(telemetry_module, "_NAMED", {})
    monkeypatch.setattr(otel_metrics, "get_meter_provider", lambda: provider)  # (what the API installs from it)
    Telemetry().record_request("client", "ping", "success", 1.0)
    assert {key: p.value for key, p in points(reader, "mcp_request_total").items()} == {
        attrs(direction="client", method="ping", status="success"): 1
    }
