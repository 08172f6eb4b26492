package bm25

import (
	"context"
	"sync"
	"time"
)

// Saver keeps the snapshot current for a running process: a tick after the index changed it waits, and
// writes once the index has stayed unchanged for a whole tick (ingestion has settled: a batch of
// documents is not written out document by document, and writers wait for no save while it runs), and
// Close writes whatever changed since. A crash loses at most the changes since the last settled tick, and
// the next start re-indexes those documents from SQL (their stamps differ).
type Saver struct {
	ix           *Index
	src          Source
	tenant, path string
	logf         func(string, ...any)
	stop         chan struct{}
	done         chan struct{}
	once         sync.Once
	err          error
}

// StartSaver starts saving ix to path every tick at most (a minute when every <= 0).
func (ix *Index) StartSaver(src Source, tenant, path string, every time.Duration, logf func(string, ...any)) *Saver {
	if every <= 0 {
		every = time.Minute
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Saver{ix: ix, src: src, tenant: tenant, path: path, logf: logf, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop(every)
	return s
}

// Dirty reports whether the index changed since the snapshot was last written or read.
func (ix *Index) Dirty() bool { return ix.version.Load() != ix.saved.Load() }

func (s *Saver) loop(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	seen := s.ix.version.Load()
	retried := ^uint64(0) // the version whose pending documents were last retried
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		v := s.ix.version.Load()
		// a save can fall between ingestion's index update and its commit of the row: the document is
		// then written without a stamp, and one more save once settled records it (once per version, so
		// a change that never commits does not rewrite the snapshot every tick)
		retry := !s.ix.Dirty() && s.ix.Pending() > 0 && retried != v
		if v == seen && (s.ix.Dirty() || retry) {
			if retry {
				retried = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*every)
			if err := s.ix.SaveSnapshot(ctx, s.src, s.tenant, s.path); err != nil {
				s.logf("bm25: writing the snapshot: %v (the next start re-indexes what changed)", err)
			}
			cancel()
		}
		seen = v
	}
}

// Close stops the loop and writes the snapshot if the index changed since it was last written, or if
// that snapshot left documents pending (their commit came after it); the source must still be open.
// Safe to call twice.
func (s *Saver) Close(ctx context.Context) error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if s.ix.Dirty() || s.ix.Pending() > 0 {
			s.err = s.ix.SaveSnapshot(ctx, s.src, s.tenant, s.path)
		}
	})
	return s.err
}
