package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queueConfig bounds a queue: each export's time, the wait before a
// partial batch is sent, the spans held, the spans of one export.
type queueConfig struct {
	timeout, delay time.Duration
	size, batch    int
}

// queue is the span processor of an enabled Provider: OpenTelemetry's
// batch span processor, with what it drops counted. OnEnd never blocks: a
// sampled span enters a bounded channel or is dropped (DropQueueFull);
// one goroutine sends batches to the exporter, each within the export
// timeout, and counts a failed export's spans (DropExportFailed).
type queue struct {
	exp sdktrace.SpanExporter
	cfg queueConfig
	in  chan sdktrace.ReadOnlySpan

	flush chan chan struct{} // ForceFlush's requests: answered once what was queued before was sent
	stop  chan struct{}      // closed by Shutdown
	done  chan struct{}      // closed when the loop has returned
	once  sync.Once

	full, failed, exported atomic.Uint64

	rest []sdktrace.ReadOnlySpan // the loop's batch not sent when it stopped; read after done
}

var _ sdktrace.SpanProcessor = (*queue)(nil)

func newQueue(exp sdktrace.SpanExporter, cfg queueConfig) *queue {
	q := &queue{exp: exp, cfg: cfg, in: make(chan sdktrace.ReadOnlySpan, cfg.size),
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go q.loop()
	return q
}

func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case <-q.stop:
		q.full.Add(1)
		return
	default:
	}
	select {
	case q.in <- s:
	default:
		q.full.Add(1)
	}
}

// loop batches the queue's spans and exports them until Shutdown, then
// exports what is left (within Shutdown's context: drain).
func (q *queue) loop() {
	defer close(q.done)
	t := time.NewTimer(q.cfg.delay)
	defer t.Stop()
	batch := make([]sdktrace.ReadOnlySpan, 0, q.cfg.batch)
	for {
		select {
		case s := <-q.in:
			batch = append(batch, s)
			if len(batch) < q.cfg.batch {
				continue
			}
		case <-t.C:
		case ack := <-q.flush:
			batch = q.take(batch)
			q.export(context.Background(), batch)
			batch = batch[:0]
			close(ack)
			continue
		case <-q.stop:
			q.rest = batch // Shutdown exports it, after done
			return
		}
		q.export(context.Background(), batch)
		batch = batch[:0]
		t.Reset(q.cfg.delay)
	}
}

// take appends to batch every span queued now.
func (q *queue) take(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for {
		select {
		case s := <-q.in:
			batch = append(batch, s)
		default:
			return batch
		}
	}
}

// export sends spans in batches, each within the export timeout and ctx.
func (q *queue) export(ctx context.Context, spans []sdktrace.ReadOnlySpan) {
	for len(spans) > 0 {
		n := min(len(spans), q.cfg.batch)
		ectx, cancel := context.WithTimeout(ctx, q.cfg.timeout)
		err := q.exp.ExportSpans(ectx, spans[:n])
		cancel()
		if err != nil {
			q.failed.Add(uint64(n))
		} else {
			q.exported.Add(uint64(n))
		}
		spans = spans[n:]
	}
}

// ForceFlush exports what is queued now, within ctx.
func (q *queue) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-q.done:
		return errQueueStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown stops the loop, exports what is left within ctx and shuts the
// exporter down; what ctx leaves no time for is counted as failed.
func (q *queue) Shutdown(ctx context.Context) error {
	var err error
	q.once.Do(func() {
		close(q.stop)
		select {
		case <-q.done:
		case <-ctx.Done():
			// An export in flight holds the loop: it ends within its
			// own timeout; what is queued is not sent.
			q.failed.Add(uint64(len(q.in))) // dropped: counted as failed
			err = ctx.Err()
			return
		}
		q.export(ctx, q.take(q.rest))
		err = q.exp.Shutdown(ctx)
	})
	return err
}
