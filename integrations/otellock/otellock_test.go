package otellock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lockplugin/lockplugin/integrations/otellock"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/observe"
)

type harness struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	obs    *otellock.Observer
}

func newHarness(t *testing.T, opts ...otellock.Option) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	o, err := otellock.New(append([]otellock.Option{otellock.MeterProvider(mp), otellock.TracerProvider(tp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.obs = o
	return h
}

func (h *harness) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func sum(t *testing.T, data map[string]metricdata.Aggregation, name string) int64 {
	t.Helper()
	s, ok := data[name].(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	var n int64
	for _, dp := range s.DataPoints {
		n += dp.Value
	}
	return n
}

// hist returns the count and sum of name's data points whose attributes
// include every one of want.
func hist(t *testing.T, data map[string]metricdata.Aggregation, name string, want ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	h, ok := data[name].(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: no histogram (%T)", name, data[name])
	}
	var n uint64
	var s float64
	for _, dp := range h.DataPoints {
		match := true
		for _, kv := range want {
			if v, ok := dp.Attributes.Value(kv.Key); !ok || v != kv.Value {
				match = false
			}
		}
		if match {
			n += dp.Count
			s += dp.Sum
		}
	}
	return n, s
}

func TestScriptedEvents(t *testing.T) {
	h := newHarness(t)
	ev := func(e observe.Event) { h.obs.Observe(e) }
	boom := errors.New("boom")
	for i := 0; i < 3; i++ { // 3 acquired after 10 ms, held 100 ms
		ev(observe.Event{Mechanism: observe.Lease, Kind: observe.WaitEnded, Name: "a", Outcome: observe.Acquired, Duration: 10 * time.Millisecond})
		ev(observe.Event{Mechanism: observe.Lease, Kind: observe.Released, Name: "a", Duration: 100 * time.Millisecond})
	}
	ev(observe.Event{Mechanism: observe.Advisory, Kind: observe.WaitEnded, Name: "b", Outcome: observe.Busy, Duration: time.Millisecond})
	ev(observe.Event{Mechanism: observe.Advisory, Kind: observe.WaitEnded, Name: "b", Outcome: observe.Timeout, Duration: time.Second})
	ev(observe.Event{Mechanism: observe.Advisory, Kind: observe.WaitEnded, Name: "b", Outcome: observe.Error, Duration: time.Millisecond, Err: boom})
	ev(observe.Event{Mechanism: observe.Version, Kind: observe.Conflict, Name: "books"})
	ev(observe.Event{Mechanism: observe.Version, Kind: observe.Conflict, Name: "books"})
	ev(observe.Event{Mechanism: observe.Lease, Kind: observe.Lost, Name: "a"})
	ev(observe.Event{Mechanism: observe.Lease, Kind: observe.RefreshFailed, Name: "a"})
	ev(observe.Event{Mechanism: observe.Retry, Kind: observe.Retried, Attempt: 2})
	ev(observe.Event{Mechanism: observe.Holds, Kind: observe.HoldFull, Name: "seats/1"})
	ev(observe.Event{Mechanism: observe.Holds, Kind: observe.HoldExpired, Name: "seats/1"}) // no Duration: no hold time
	ev(observe.Event{Mechanism: observe.Holds, Kind: observe.HoldForceReleased, Name: "seats/1"})
	ev(observe.Event{Mechanism: observe.Holds, Kind: observe.HoldForceReleased, Name: "seats/1"})

	d := h.collect(t)
	for name, want := range map[string]int64{
		"lockplugin.lock.busy": 1, "lockplugin.lock.timeouts": 1, "lockplugin.lock.errors": 1,
		"lockplugin.version.conflicts": 2, "lockplugin.lease.lost": 1, "lockplugin.lease.refresh.failures": 1,
		"lockplugin.retries": 1, "lockplugin.holds.full": 1,
		"lockplugin.holds.expired": 1, "lockplugin.holds.force_released": 2,
	} {
		if got := sum(t, d, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	n, s := hist(t, d, "lockplugin.lock.wait.duration", attribute.String("lock.mechanism", "lease"), attribute.String("lock.outcome", "acquired"))
	if n != 3 || math.Abs(s-0.030) > 1e-9 {
		t.Errorf("lease wait: count %d sum %v, want 3 and 0.030", n, s)
	}
	n, s = hist(t, d, "lockplugin.lock.wait.duration", attribute.String("lock.outcome", "timeout"))
	if n != 1 || math.Abs(s-1) > 1e-9 {
		t.Errorf("timeout wait: count %d sum %v, want 1 and 1", n, s)
	}
	n, s = hist(t, d, "lockplugin.lock.hold.duration")
	if n != 3 || math.Abs(s-0.3) > 1e-9 {
		t.Errorf("hold: count %d sum %v, want 3 and 0.3", n, s)
	}
	// No lock.name without LockNames.
	if hd := d["lockplugin.lock.wait.duration"].(metricdata.Histogram[float64]); true {
		for _, dp := range hd.DataPoints {
			if _, ok := dp.Attributes.Value("lock.name"); ok {
				t.Errorf("lock.name attribute without LockNames: %v", dp.Attributes)
			}
		}
	}
	spans := h.spans.Ended()
	if len(spans) != 6 {
		t.Fatalf("%d spans, want 6 (one per wait)", len(spans))
	}
	if got := spans[4].EndTime().Sub(spans[4].StartTime()); got != time.Second {
		t.Errorf("timeout span lasts %v, want 1s", got)
	}
	if spans[5].Status().Code.String() != "Error" {
		t.Errorf("error span status %v", spans[5].Status())
	}
}

func TestLockNames(t *testing.T) {
	h := newHarness(t, otellock.LockNames())
	h.obs.Observe(observe.Event{Mechanism: observe.Lease, Kind: observe.WaitEnded, Name: "job", Outcome: observe.Busy})
	d := h.collect(t)
	n, _ := hist(t, d, "lockplugin.lock.wait.duration", attribute.String("lock.name", "job"))
	if n != 1 {
		t.Fatalf("wait with lock.name=job: %d", n)
	}
}

// A real Manager on the local store: 5 cycles, 2 busy tries, one lost
// lease.
func TestLeaseManager(t *testing.T) {
	h := newHarness(t)
	store, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := lease.NewManager(store, lease.WithObserver(h.obs))
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		l, err := m.Acquire(ctx, "i17_otel", lease.TTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if _, err := m.Acquire(ctx, "i17_otel"); !errors.Is(err, lease.ErrNotAcquired) {
				t.Fatalf("busy: %v", err)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l, err := m.Acquire(ctx, "i17_otel", lease.TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	<-l.Done()
	_ = l.Release(ctx)
	d := h.collect(t)
	if got := sum(t, d, "lockplugin.lock.busy"); got != 2 {
		t.Errorf("busy = %d, want 2", got)
	}
	if got := sum(t, d, "lockplugin.lease.lost"); got != 1 {
		t.Errorf("lost = %d, want 1", got)
	}
	if n, _ := hist(t, d, "lockplugin.lock.wait.duration", attribute.String("lock.outcome", "acquired")); n != 6 {
		t.Errorf("acquired waits = %d, want 6", n)
	}
	if n, _ := hist(t, d, "lockplugin.lock.hold.duration"); n != 6 {
		t.Errorf("holds = %d, want 6", n)
	}
	t.Logf("spans: %d", len(h.spans.Ended()))
}
