package connector

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// The local Scheduler: each connector on its own timer, driven here by hand; an Upsert with the same
// interval keeps the timer, a new interval replaces it, Delete and Close stop it, and syncs never
// overlap.
func TestTicker(t *testing.T) {
	var mu sync.Mutex
	timers := map[time.Duration][]chan time.Time{}
	stopped := 0
	synced := map[string]int{}
	var inSync, overlap atomic.Int32
	done := make(chan string, 16)
	tk := &Ticker{
		NewTicker: func(every time.Duration) (<-chan time.Time, func()) {
			c := make(chan time.Time)
			mu.Lock()
			timers[every] = append(timers[every], c)
			mu.Unlock()
			return c, func() { mu.Lock(); stopped++; mu.Unlock() }
		},
		Sync: func(ctx context.Context, tenant, name string) {
			if inSync.Add(1) > 1 {
				overlap.Add(1)
			}
			time.Sleep(time.Millisecond)
			mu.Lock()
			synced[tenant+"/"+name]++
			mu.Unlock()
			inSync.Add(-1)
			done <- name
		},
	}
	ctx := context.Background()
	wiki := rag.Connector{Tenant: "t1", Name: "wiki"}
	site := rag.Connector{Tenant: "t1", Name: "site"}
	if err := tk.Upsert(ctx, wiki, time.Hour); err != nil {
		t.Fatal(err)
	}
	tk.Upsert(ctx, wiki, time.Hour) // unchanged: the same timer
	tk.Upsert(ctx, site, 2*time.Hour)
	mu.Lock()
	if len(timers[time.Hour]) != 1 || len(timers[2*time.Hour]) != 1 {
		t.Fatalf("timers %v; want one per connector, none for an unchanged Upsert", timers)
	}
	wikiTimer, siteTimer := timers[time.Hour][0], timers[2*time.Hour][0]
	mu.Unlock()
	// both fire at once: the syncs run one after the other
	go func() { wikiTimer <- time.Now() }()
	go func() { siteTimer <- time.Now() }()
	<-done
	<-done
	if overlap.Load() != 0 || synced["t1/wiki"] != 1 || synced["t1/site"] != 1 {
		t.Fatalf("synced %v, %d overlapping; want one each, never two at once", synced, overlap.Load())
	}
	if got := tk.Scheduled("t1"); len(got) != 2 || got["wiki"] != time.Hour {
		t.Fatalf("Scheduled = %v", got)
	}
	// a new interval replaces the timer; Delete stops one
	tk.Upsert(ctx, wiki, 30*time.Minute)
	tk.Delete(ctx, "t1", "site")
	if got := tk.Scheduled("t1"); len(got) != 1 || got["wiki"] != 30*time.Minute {
		t.Fatalf("after changes Scheduled = %v; want wiki every 30m only", got)
	}
	mu.Lock()
	newWiki := timers[30*time.Minute][0]
	mu.Unlock()
	newWiki <- time.Now()
	if n := <-done; n != "wiki" {
		t.Fatalf("synced %s; want wiki", n)
	}
	if err := tk.Upsert(ctx, rag.Connector{Tenant: "t1", Name: "bad/name"}, time.Hour); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("Upsert of a bad name: %v; want Invalid", err)
	}
	tk.Close()
	mu.Lock()
	defer mu.Unlock()
	if stopped != 3 {
		t.Fatalf("%d timers stopped after Close; want all 3", stopped)
	}
	if err := tk.Upsert(ctx, wiki, time.Hour); !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("Upsert after Close: %v; want Unavailable", err)
	}
}
