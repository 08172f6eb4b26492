package ingest

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Watcher keeps knowledge bases in step with a drop folder: <root>/<kb-name>/<any path>. A new or
// changed file is ingested, a removed file's document is deleted everywhere, and a knowledge base is
// created when its folder first holds a file. A folder whose knowledge base a member created or owns is refused file
// by file, logged and audited (OperatorKB), never ingested. Events are debounced per file, because editors and copies
// write a file in several steps.
type Watcher struct {
	Service  *Service
	Tenant   string
	Root     string
	Debounce time.Duration // default 500 ms
	MaxBytes int64         // files larger than this fail with a clear error (default 64 MiB)
	Log      *slog.Logger
	// OnReport, when set, receives every ingestion or deletion result (tests and progress displays).
	OnReport func(Report)
}

// SourceURI is the identity of an inbox file: "inbox/<kb>/<path>".
func SourceURI(kb, rel string) string { return "inbox/" + kb + "/" + filepath.ToSlash(rel) }

func (w *Watcher) log() *slog.Logger {
	if w.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Log
}

// split turns an absolute path under Root into (kb, path inside the kb); ok is false for files that are
// not inside a knowledge-base folder, and for hidden or temporary files.
func (w *Watcher) split(path string) (kb, rel string, ok bool) {
	r, err := filepath.Rel(w.Root, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return "", "", false
	}
	parts := strings.Split(filepath.ToSlash(r), "/")
	if len(parts) < 2 {
		return "", "", false
	}
	for _, p := range parts {
		if strings.HasPrefix(p, ".") || strings.HasPrefix(p, "~$") || strings.HasSuffix(p, "~") {
			return "", "", false
		}
	}
	return parts[0], strings.Join(parts[1:], "/"), true
}

// Sync ingests every file under Root and deletes documents whose inbox file is gone. Run calls it at
// start; it is also the repair for events missed while docmind was not running.
func (w *Watcher) Sync(ctx context.Context) error {
	present := map[string]map[string]bool{} // kb -> uri -> true
	kbs := map[string]resolved{}            // each folder's knowledge base, checked once per sync
	// files found are ingested in batches (a first sync of a full inbox is a bulk load)
	var batch []Source
	var rels []string
	size := int64(0)
	flush := func() {
		if len(batch) > 0 {
			for i, rep := range w.Service.IngestBatch(ctx, w.Tenant, batch) {
				w.done(batch[i].KBName, rels[i], rep)
			}
		}
		batch, rels, size = nil, nil, 0
	}
	err := filepath.WalkDir(w.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == w.Root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // an unreadable entry is skipped, not fatal
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if path != w.Root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		kb, rel, ok := w.split(path)
		if !ok || !extract.Supported(path) {
			return nil
		}
		if present[kb] == nil {
			present[kb] = map[string]bool{}
		}
		present[kb][SourceURI(kb, rel)] = true
		if src, ok := w.read(path); ok && w.resolve(ctx, &src, rel, kbs) {
			if len(batch) > 0 && size+int64(len(src.Data)) > queueBatchBytes {
				flush()
			}
			batch, rels = append(batch, src), append(rels, rel)
			size += int64(len(src.Data))
			if len(batch) >= DefaultBatch {
				flush()
			}
		}
		return nil
	})
	if err == nil {
		flush()
	}
	if err != nil {
		return err
	}
	// documents whose inbox file disappeared while we were not watching
	recs := w.Service.Runner.Stages.Records
	entries, _ := os.ReadDir(w.Root)
	folders := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			folders[e.Name()] = true
		}
	}
	for name := range present {
		folders[name] = true
	}
	for name := range folders {
		kb, err := recs.GetKBByName(ctx, w.Tenant, name)
		if err != nil {
			continue
		}
		docs, err := recs.ListDocuments(ctx, w.Tenant, kb.ID, "")
		if err != nil {
			return err
		}
		for _, d := range docs {
			if strings.HasPrefix(d.SourceURI, "inbox/"+name+"/") && !present[name][d.SourceURI] {
				w.remove(ctx, name, d.SourceURI)
			}
		}
	}
	return nil
}

func (w *Watcher) report(r Report) {
	if w.OnReport != nil {
		w.OnReport(r)
	}
}

func (w *Watcher) ingest(ctx context.Context, path string) {
	src, ok := w.read(path)
	if !ok {
		return
	}
	_, rel, _ := w.split(path)
	if !w.resolve(ctx, &src, rel, nil) {
		return
	}
	rep, _ := w.Service.Ingest(ctx, w.Tenant, src)
	w.done(src.KBName, rel, rep)
}

// resolved is a folder's knowledge base, or why the folder cannot be ingested.
type resolved struct {
	kb  rag.KnowledgeBase
	err error
}

// resolve sets the source's knowledge base: its folder's, found or created as an operator channel
// (OperatorKB). false, with the reason logged and reported, when that fails: a knowledge base a member
// owns refuses the file (OperatorKB has audited it), so nothing of it reaches that member. cache, when
// not nil, keeps each folder's answer for one sync.
func (w *Watcher) resolve(ctx context.Context, src *Source, rel string, cache map[string]resolved) bool {
	r, ok := cache[src.KBName]
	if !ok {
		r.kb, r.err = w.Service.OperatorKB(ctx, w.Tenant, src.KBName, "inbox")
		if cache != nil {
			cache[src.KBName] = r
		}
	}
	if r.err != nil {
		if AsMemberOwned(r.err) != nil {
			w.log().Warn("inbox file refused", "kb", src.KBName, "file", rel, "err", r.err)
		} else {
			w.log().Warn("ingest failed", "kb", src.KBName, "file", rel, "err", r.err)
		}
		w.report(Report{File: src.Name, Status: rag.StatusFailed, Error: r.err.Error()})
		return false
	}
	src.KBID = r.kb.ID
	return true
}

// read loads an inbox file as a source; false (with the reason logged and reported) when it cannot be
// ingested: outside a knowledge base folder, gone again, too large or unreadable.
func (w *Watcher) read(path string) (Source, bool) {
	kb, rel, ok := w.split(path)
	if !ok {
		return Source{}, false
	}
	max := w.MaxBytes
	if max <= 0 {
		max = 64 << 20
	}
	st, err := os.Stat(path)
	if err != nil {
		return Source{}, false // gone again: the removal event handles it
	}
	if st.Size() > max {
		w.log().Warn("inbox file too large", "file", path, "size", st.Size(), "limit", max)
		w.report(Report{File: rel, Status: rag.StatusFailed, Error: "file too large"})
		return Source{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		w.log().Warn("cannot read inbox file", "file", path, "err", err)
		return Source{}, false
	}
	side, err := ReadSidecar(path)
	if err != nil { // the file is ingested without it: a bad sidecar loses its metadata, nothing else
		w.log().Warn("sidecar metadata ignored", "file", path, "err", err)
		w.report(Report{File: rel + SidecarSuffix, Status: rag.StatusFailed, Error: err.Error()})
	}
	return Source{KBName: kb, URI: SourceURI(kb, rel), Name: filepath.Base(rel), Data: data, Sidecar: side}, true
}

// done logs and reports one file's result.
func (w *Watcher) done(kb, rel string, rep Report) {
	if rep.Error != "" {
		w.log().Warn("ingest failed", "kb", kb, "file", rel, "err", rep.Error)
	} else if !rep.Skipped {
		w.log().Info("ingested", "kb", kb, "file", rel, "chunks", rep.Chunks, "embedded", rep.Embedded, "reused", rep.Reused)
	}
	w.report(rep)
}

func (w *Watcher) remove(ctx context.Context, kb, uri string) {
	ok, err := w.Service.DeleteBySource(ctx, w.Tenant, kb, uri)
	if err != nil {
		w.log().Warn("delete failed", "kb", kb, "source", uri, "err", err)
		w.report(Report{File: uri, Status: rag.StatusFailed, Error: err.Error()})
		return
	}
	if ok {
		w.Service.AuditOperator(ctx, w.Tenant, "inbox", "document.delete", uri, "the file left the drop folder of "+kb)
		w.log().Info("deleted", "kb", kb, "source", uri)
		w.report(Report{File: uri, Status: rag.StatusDeleted})
	}
}

// Run syncs, then follows file system events until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	if err := os.MkdirAll(w.Root, 0o755); err != nil {
		return err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	addTree := func(dir string) {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				if p != w.Root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				fw.Add(p)
			}
			return nil
		})
	}
	addTree(w.Root) // watch before syncing, so nothing written meanwhile is missed
	if err := w.Sync(ctx); err != nil && ctx.Err() == nil {
		w.log().Warn("inbox sync failed", "err", err)
	}
	debounce := w.Debounce
	if debounce <= 0 {
		debounce = 500 * time.Millisecond
	}
	var mu sync.Mutex
	timers := map[string]*time.Timer{}
	var wg sync.WaitGroup
	defer wg.Wait()
	fire := func(path string) {
		mu.Lock()
		delete(timers, path)
		mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if _, err := os.Stat(path); err == nil {
			w.ingest(ctx, path)
		} else if kb, rel, ok := w.split(path); ok {
			w.remove(ctx, kb, SourceURI(kb, rel))
		}
	}
	schedule := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if t := timers[path]; t != nil {
			t.Reset(debounce)
			return
		}
		wg.Add(1)
		timers[path] = time.AfterFunc(debounce, func() { defer wg.Done(); fire(path) })
	}
	for {
		select {
		case <-ctx.Done():
			mu.Lock()
			for p, t := range timers {
				if t.Stop() {
					wg.Done()
				}
				delete(timers, p)
			}
			mu.Unlock()
			return nil
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			w.log().Warn("inbox watcher error", "err", err)
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if strings.HasPrefix(filepath.Base(ev.Name), ".") {
				continue // hidden, such as a deleted knowledge base's folder renamed to .deleted-<kb>-<time>
			}
			if ev.Has(fsnotify.Create) {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
					addTree(ev.Name)
					// files moved in with the folder raise no events of their own
					filepath.WalkDir(ev.Name, func(p string, d fs.DirEntry, err error) error {
						if err == nil && !d.IsDir() && extract.Supported(p) {
							schedule(p)
						}
						return nil
					})
					continue
				}
			}
			if _, _, ok := w.split(ev.Name); !ok {
				continue
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// a removed folder: its files' documents go too
				w.removedTree(ctx, ev.Name, schedule)
			}
			if extract.Supported(ev.Name) {
				schedule(ev.Name)
			}
			if main, ok := SidecarOf(ev.Name); ok && extract.Supported(main) {
				schedule(main) // a sidecar written, changed or removed: its file's metadata follows
			}
		}
	}
}

// removedTree schedules a check of every known document under a removed path (a deleted folder
// removes its documents; for a single file this is the file itself).
func (w *Watcher) removedTree(ctx context.Context, path string, schedule func(string)) {
	kb, rel, ok := w.split(path)
	if !ok {
		return
	}
	recs := w.Service.Runner.Stages.Records
	k, err := recs.GetKBByName(ctx, w.Tenant, kb)
	if err != nil {
		return
	}
	docs, err := recs.ListDocuments(ctx, w.Tenant, k.ID, "")
	if err != nil {
		return
	}
	prefix := SourceURI(kb, rel) + "/"
	for _, d := range docs {
		if strings.HasPrefix(d.SourceURI, prefix) {
			schedule(filepath.Join(w.Root, kb, filepath.FromSlash(strings.TrimPrefix(d.SourceURI, "inbox/"+kb+"/"))))
		}
	}
}
