// Package otellock reports lockplugin's events (package observe) to
// OpenTelemetry: histograms of wait and hold times, counters of busy and
// timed-out acquisitions, version conflicts, lost leases, failed refreshes,
// retries and full resources, and a span for each wait.
//
//	// fragment: needs db *gorm.DB, store lease.Store
//	o, err := otellock.New() // the global MeterProvider and TracerProvider
//	if err != nil {
//		return err
//	}
//	if err := db.Use(lockplugin.New(lockplugin.WithObserver(o))); err != nil {
//		return err
//	}
//	m := lease.NewManager(store, lease.WithObserver(o))
//	_ = m
//
// Every instrument carries the attribute lock.mechanism ("lease",
// "advisory", "version", "fence", "retry", "holds"), and the wait
// instruments lock.outcome. The lock name (lock.name) is added only with
// LockNames: names are often unbounded (one per order or user), and each
// distinct name is a new time series.
//
// The Observer is called synchronously and only records: it never blocks
// on an exporter.
package otellock

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lockplugin/lockplugin/observe"
)

// ScopeName is the instrumentation scope of the meter and tracer.
const ScopeName = "github.com/lockplugin/lockplugin/integrations/otellock"

// Option configures New.
type Option func(*config)

type config struct {
	mp    metric.MeterProvider
	tp    trace.TracerProvider
	names bool
}

// MeterProvider sets the MeterProvider (default: otel.GetMeterProvider()).
func MeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// TracerProvider sets the TracerProvider (default:
// otel.GetTracerProvider()).
func TracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// LockNames adds the lock name as the attribute lock.name to every metric
// and span. Use it only when names are few and fixed (a job name, not an
// order id): each name is its own time series.
func LockNames() Option { return func(c *config) { c.names = true } }

// Observer is an observe.Observer that records to OpenTelemetry.
type Observer struct {
	names  bool
	tracer trace.Tracer
	// noSpans: the tracer is OpenTelemetry's no-op one, so no span is
	// started (its options would be built for nothing).
	noSpans bool

	// The attribute sets and span options of every mechanism (and, for
	// the wait instruments and spans, every outcome), built once by New,
	// so that an event without LockNames allocates nothing of its own.
	byMech [nMech]mechAttrs

	wait      metric.Float64Histogram
	hold      metric.Float64Histogram
	busy      metric.Int64Counter
	timeouts  metric.Int64Counter
	errors    metric.Int64Counter
	conflicts metric.Int64Counter
	lost      metric.Int64Counter
	refreshes metric.Int64Counter
	retries   metric.Int64Counter
	full      metric.Int64Counter
	expired   metric.Int64Counter
	forced    metric.Int64Counter
}

// New returns an Observer over the given (or global) providers. It fails
// only when an instrument cannot be created.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	m := c.mp.Meter(ScopeName)
	o := &Observer{names: c.names, tracer: c.tp.Tracer(ScopeName)}
	_, o.noSpans = o.tracer.(tracenoop.Tracer)
	for i := range o.byMech {
		o.byMech[i] = newMechAttrs(observe.Mechanism(i))
	}
	var err error
	hist := func(dst *metric.Float64Histogram, name, desc string) {
		if err == nil {
			*dst, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc))
		}
	}
	count := func(dst *metric.Int64Counter, name, desc string) {
		if err == nil {
			*dst, err = m.Int64Counter(name, metric.WithDescription(desc))
		}
	}
	hist(&o.wait, "lockplugin.lock.wait.duration", "How long acquisitions waited, by outcome.")
	hist(&o.hold, "lockplugin.lock.hold.duration", "How long locks, leases and holds were held.")
	count(&o.busy, "lockplugin.lock.busy", "Acquisitions that found the lock held and did not wait.")
	count(&o.timeouts, "lockplugin.lock.timeouts", "Acquisitions that waited their whole allowance.")
	count(&o.errors, "lockplugin.lock.errors", "Acquisitions that failed with an error.")
	count(&o.conflicts, "lockplugin.version.conflicts", "Version-guarded or fenced writes that found the row changed.")
	count(&o.lost, "lockplugin.lease.lost", "Leases lost while held (gone from the store, or past their safety deadline).")
	count(&o.refreshes, "lockplugin.lease.refresh.failures", "Lease refreshes that got an error or no answer.")
	count(&o.retries, "lockplugin.retries", "RetryOnConflict attempts after the first.")
	count(&o.full, "lockplugin.holds.full", "Hold requests refused because the resource was full.")
	count(&o.expired, "lockplugin.holds.expired", "Holds that ran out their TTL without a release (reported once, by the first read that met them).")
	count(&o.forced, "lockplugin.holds.force_released", "Holds an operator ended with holds.ForceRelease.")
	if err != nil {
		return nil, err
	}
	return o, nil
}

// nMech and nOutcome bound the mechanisms and outcomes that have
// precomputed attributes; others (from a newer lockplugin) are built per
// event.
const (
	nMech    = 8
	nOutcome = 6
)

// mechAttrs is one mechanism's precomputed measurement options: its
// attribute set for counters and the hold histogram, and per outcome the
// wait histogram's and the wait span's.
type mechAttrs struct {
	add      []metric.AddOption
	rec      []metric.RecordOption
	waitRec  [nOutcome][]metric.RecordOption
	spanOpt  [nOutcome]trace.SpanStartOption
	spanName string
}

// spanKind is every wait span's kind, as an option built once.
var spanKind = trace.WithSpanKind(trace.SpanKindInternal)

func newMechAttrs(m observe.Mechanism) mechAttrs {
	mech := attribute.String("lock.mechanism", m.String())
	set := metric.WithAttributeSet(attribute.NewSet(mech))
	a := mechAttrs{
		add:      []metric.AddOption{set},
		rec:      []metric.RecordOption{set},
		spanName: "lockplugin." + m.String() + ".wait",
	}
	for oc := range a.waitRec {
		attrs := []attribute.KeyValue{mech, attribute.String("lock.outcome", observe.Outcome(oc).String())}
		a.waitRec[oc] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
		a.spanOpt[oc] = trace.WithAttributes(attrs...)
	}
	return a
}

// Observe records e.
func (o *Observer) Observe(e observe.Event) {
	if !o.names && int(e.Mechanism) < nMech && int(e.Outcome) < nOutcome {
		o.observeFixed(e)
		return
	}
	o.observeBuilt(e)
}

// observeFixed is Observe with the precomputed attributes: no lock name,
// and a mechanism and outcome New knew.
func (o *Observer) observeFixed(e observe.Event) {
	ctx := context.Background()
	a := &o.byMech[e.Mechanism]
	switch e.Kind {
	case observe.WaitEnded:
		o.wait.Record(ctx, e.Duration.Seconds(), a.waitRec[e.Outcome]...)
		switch e.Outcome {
		case observe.Busy:
			o.busy.Add(ctx, 1, a.add...)
		case observe.Timeout:
			o.timeouts.Add(ctx, 1, a.add...)
		case observe.Error:
			o.errors.Add(ctx, 1, a.add...)
		}
		if !o.noSpans {
			o.startSpan(e, a.spanName, a.spanOpt[e.Outcome])
		}
	case observe.Released, observe.HoldReleased:
		if e.Duration > 0 {
			o.hold.Record(ctx, e.Duration.Seconds(), a.rec...)
		}
	case observe.HoldExpired: // held until its expiry: a hold time too
		o.expired.Add(ctx, 1, a.add...)
		if e.Duration > 0 {
			o.hold.Record(ctx, e.Duration.Seconds(), a.rec...)
		}
	case observe.HoldForceReleased:
		o.forced.Add(ctx, 1, a.add...)
	case observe.Conflict:
		o.conflicts.Add(ctx, 1, a.add...)
	case observe.Lost:
		o.lost.Add(ctx, 1, a.add...)
	case observe.RefreshFailed:
		o.refreshes.Add(ctx, 1, a.add...)
	case observe.Retried:
		o.retries.Add(ctx, 1, a.add...)
	case observe.HoldFull:
		o.full.Add(ctx, 1, a.add...)
	}
}

// observeBuilt is Observe building the attributes for the event: with
// LockNames, each name is a set of its own.
func (o *Observer) observeBuilt(e observe.Event) {
	ctx := context.Background()
	attrs := []attribute.KeyValue{attribute.String("lock.mechanism", e.Mechanism.String())}
	if o.names && e.Name != "" {
		attrs = append(attrs, attribute.String("lock.name", e.Name))
	}
	set := metric.WithAttributes(attrs...)
	switch e.Kind {
	case observe.WaitEnded:
		attrs = append(attrs, attribute.String("lock.outcome", e.Outcome.String()))
		o.wait.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
		switch e.Outcome {
		case observe.Busy:
			o.busy.Add(ctx, 1, set)
		case observe.Timeout:
			o.timeouts.Add(ctx, 1, set)
		case observe.Error:
			o.errors.Add(ctx, 1, set)
		}
		if !o.noSpans {
			o.startSpan(e, "lockplugin."+e.Mechanism.String()+".wait", trace.WithAttributes(attrs...))
		}
	case observe.Released, observe.HoldReleased:
		if e.Duration > 0 {
			o.hold.Record(ctx, e.Duration.Seconds(), set)
		}
	case observe.HoldExpired: // held until its expiry: a hold time too
		o.expired.Add(ctx, 1, set)
		if e.Duration > 0 {
			o.hold.Record(ctx, e.Duration.Seconds(), set)
		}
	case observe.HoldForceReleased:
		o.forced.Add(ctx, 1, set)
	case observe.Conflict:
		o.conflicts.Add(ctx, 1, set)
	case observe.Lost:
		o.lost.Add(ctx, 1, set)
	case observe.RefreshFailed:
		o.refreshes.Add(ctx, 1, set)
	case observe.Retried:
		o.retries.Add(ctx, 1, set)
	case observe.HoldFull:
		o.full.Add(ctx, 1, set)
	}
}

// startSpan records the wait that just ended as a span from its start to
// now, named name, with attrs (its attributes, as an option). Events carry
// no context, so it is a root span.
func (o *Observer) startSpan(e observe.Event, name string, attrs trace.SpanStartOption) {
	end := time.Now()
	_, sp := o.tracer.Start(context.Background(), name, trace.WithTimestamp(end.Add(-e.Duration)), attrs, spanKind)
	if e.Outcome == observe.Error && e.Err != nil {
		sp.RecordError(e.Err)
		sp.SetStatus(codes.Error, e.Err.Error())
	}
	sp.End(trace.WithTimestamp(end))
}
