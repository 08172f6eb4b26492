package connector

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Ticker is the Scheduler of `docmind serve`: an in-process timer per connector. Syncs run one at a
// time, in the order their timers fire (one machine, one embedded store); a timer that fires while a
// sync runs waits for it. Close stops every timer and waits for a running sync.
type Ticker struct {
	// Sync runs one sync of the tenant's connector; it logs its own outcome.
	Sync func(ctx context.Context, tenant, name string)
	// NewTicker makes a connector's timer (nil: time.NewTicker); tests drive it by hand.
	NewTicker func(every time.Duration) (c <-chan time.Time, stop func())

	once    sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	entries map[string]*tickEntry // by tenant and name
	running sync.Mutex            // one sync at a time
	wg      sync.WaitGroup
}

type tickEntry struct {
	every time.Duration
	stop  context.CancelFunc
}

var _ Scheduler = (*Ticker)(nil)

func (t *Ticker) init() {
	t.once.Do(func() {
		t.ctx, t.cancel = context.WithCancel(context.Background())
		t.entries = map[string]*tickEntry{}
	})
}

// Upsert syncs c every interval from now; an unchanged interval keeps the running timer (and its
// phase), so a periodic re-read of the connectors does not postpone their syncs. every <= 0 removes
// the schedule.
func (t *Ticker) Upsert(_ context.Context, c rag.Connector, every time.Duration) error {
	if err := rag.ValidateConnectorName(c.Name); err != nil {
		return rag.E("connector.Ticker", rag.KindInvalid, err)
	}
	if every <= 0 {
		return t.Delete(context.Background(), c.Tenant, c.Name)
	}
	t.init()
	key := c.Tenant + "\x00" + c.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return rag.Errorf("connector.Ticker", rag.KindUnavailable, "the schedule is closed")
	}
	if e, ok := t.entries[key]; ok {
		if e.every == every {
			return nil
		}
		e.stop()
	}
	ctx, stop := context.WithCancel(t.ctx)
	t.entries[key] = &tickEntry{every: every, stop: stop}
	ch, stopTimer := t.timer(every)
	t.wg.Go(func() {
		defer stopTimer()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
			t.running.Lock()
			if ctx.Err() == nil {
				t.Sync(ctx, c.Tenant, c.Name)
			}
			t.running.Unlock()
		}
	})
	return nil
}

// Delete stops the connector's timer (a sync it started runs to its end).
func (t *Ticker) Delete(_ context.Context, tenant, name string) error {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.entries[tenant+"\x00"+name]; ok {
		e.stop()
		delete(t.entries, tenant+"\x00"+name)
	}
	return nil
}

// Scheduled returns the names of the tenant's connectors with a timer.
func (t *Ticker) Scheduled(tenant string) map[string]time.Duration {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]time.Duration{}
	for k, e := range t.entries {
		if tn, name, _ := strings.Cut(k, "\x00"); tn == tenant {
			out[name] = e.every
		}
	}
	return out
}

// Close stops every timer and waits for the running sync.
func (t *Ticker) Close() {
	t.init()
	t.mu.Lock()
	t.cancel()
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *Ticker) timer(every time.Duration) (<-chan time.Time, func()) {
	if t.NewTicker != nil {
		return t.NewTicker(every)
	}
	tk := time.NewTicker(every)
	return tk.C, tk.Stop
}
