package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
)

// reconcileJSON is what `reconcile --json` prints: every class present, 0 when clean.
type reconcileJSON struct {
	Drift    map[string]int `json:"drift"`
	Repaired map[string]int `json:"repaired"`
	LockHeld bool           `json:"lock_held,omitempty"`
}

// cmdReconcile compares SQL, the vector index and the blobs (and the drop folder), reports each class of
// drift and, with --repair, repairs it. Exit status 1 when drift remains after the run.
func cmdReconcile(e env, args []string) int {
	var c common
	fs := newFlags("reconcile", e, &c)
	kb := fs.String("kb", "", "check one knowledge base (default every one)")
	repair := fs.Bool("repair", false, "repair what is found (re-embed, delete orphans, retry or fail stuck documents, ingest or delete)")
	stuck := fs.Duration("stuck-after", time.Hour, "a document pending or processing for longer than this is stuck")
	verbose := fs.Bool("v", false, "list every finding")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		if fs.NArg() != 0 {
			fmt.Fprintln(e.stderr, "usage: docmind reconcile [--kb NAME] [--repair] [--json] [--stuck-after 1h]")
		}
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	log := newLogger(cfg, e.stderr)
	s, svc, err := openIngest(e.ctx, cfg, log)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	chk, err := newChecker(cfg, s, svc, log, true)
	if err != nil {
		return fail(e, err)
	}
	chk.StuckAfter = *stuck
	rep, err := chk.Run(e.ctx, reconcile.Options{KB: *kb, Repair: *repair})
	if err != nil {
		return fail(e, err)
	}
	if c.json {
		printJSON(e.stdout, reconcileJSON{Drift: rep.Drift, Repaired: rep.Repaired, LockHeld: rep.LockHeld})
	} else {
		printReconcile(e, rep, *repair, *verbose)
	}
	if rep.LockHeld || rep.Clean() {
		return exitOK // a run that found the lease held leaves the check to the run that holds it
	}
	return exitFail
}

func printReconcile(e env, rep reconcile.Report, repair, verbose bool) {
	if rep.LockHeld {
		fmt.Fprintln(e.stdout, "lock_held: another reconcile run holds the lease; nothing checked")
		return
	}
	fmt.Fprintf(e.stdout, "checked %d documents, %d vectors, %d blobs in %s\n", rep.Documents, rep.Vectors, rep.Blobs, rep.Duration.Round(time.Millisecond))
	for _, cl := range reconcile.Classes {
		line := fmt.Sprintf("  %-26s %6d", cl, rep.Drift[cl])
		if repair {
			line += fmt.Sprintf("   repaired %d", rep.Repaired[cl])
		}
		fmt.Fprintln(e.stdout, line)
	}
	if verbose {
		for _, f := range rep.Findings {
			fmt.Fprintf(e.stdout, "%s\t%s\t%s\t%s\t%s\n", f.Class, f.Tenant, f.DocumentID, f.Status, strings.Join(f.IDs, " "))
		}
	}
	for _, msg := range rep.Errors {
		fmt.Fprintln(e.stdout, "  repair failed:", msg)
	}
	switch {
	case rep.Clean():
		fmt.Fprintln(e.stdout, "consistent")
	case !repair:
		fmt.Fprintln(e.stdout, "drift found; run `docmind reconcile --repair` to repair it")
	default:
		fmt.Fprintln(e.stdout, "drift remains; the next run tries again")
	}
}

// newChecker wires the consistency check over the opened stores. withInbox adds the local drop folder
// (files without a document are ingested); serve passes it only when it watches the folder.
func newChecker(cfg config.Config, s *Stores, svc *ingest.Service, log *slog.Logger, withInbox bool) (*reconcile.Checker, error) {
	vl, ok := s.Vectors.(reconcile.Vectors)
	if !ok {
		return nil, rag.Errorf("reconcile", rag.KindInvalid, "the %s vector index cannot list its records", cfg.Vector.Driver)
	}
	c := &reconcile.Checker{Records: s.SQL, Vectors: vl, Blobs: s.Blobs, Embedder: svc.Runner.Stages.Embedder, Documents: svc, Lease: s.SQL, Log: log}
	if withInbox {
		c.Inbox = localInbox{root: filepath.Join(cfg.DataDir, "inbox"), tenant: cfg.Tenant, svc: svc, maxBytes: cfg.Server.MaxBodyBytes}
	}
	c.Originals = localFiles{tenant: cfg.Tenant, svc: svc, maxBytes: cfg.Server.MaxBodyBytes}
	return c, nil
}

// localFiles re-reads the file:// sources `docmind ingest` recorded, from this machine's disk; only for
// the local tenant, the one `docmind ingest` writes (no other tenant's document makes it read a path).
type localFiles struct {
	tenant   string
	svc      *ingest.Service
	maxBytes int64
}

var _ reconcile.Originals = localFiles{}

// Reingest ingests a file:// document again from its path (Force: the content may be unchanged), which
// stores its source again. NotFound for another kind of uri, another tenant's document, or a file that is gone.
func (o localFiles) Reingest(ctx context.Context, d rag.Document) error {
	const op = "reconcile.originals"
	p, ok := strings.CutPrefix(d.SourceURI, "file://")
	if !ok || d.Tenant != o.tenant {
		return rag.Errorf(op, rag.KindNotFound, "%s is not a local file", d.SourceURI)
	}
	data, err := readLimited(filepath.FromSlash(p), o.maxBytes)
	if err != nil {
		if os.IsNotExist(err) {
			return rag.E(op, rag.KindNotFound, err)
		}
		return rag.E(op, rag.KindUnavailable, err)
	}
	_, err = o.svc.Ingest(ctx, d.Tenant, ingest.Source{KBID: d.KBID, URI: d.SourceURI, Name: d.FileName, Data: data, Force: true})
	return err
}

// reconcileLoop runs the check with repair every interval until ctx ends (the serve ticker). The first
// run is one interval after start: at start the watcher's own scan is already catching up.
func (m *Main) reconcileLoop(ctx context.Context, every time.Duration) {
	chk, err := newChecker(m.Config, m.Stores, m.Ingest, m.Logger, !m.NoWatch)
	if err != nil {
		m.Logger.Warn("consistency check off", "err", err)
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := chk.Run(ctx, reconcile.Options{Repair: true})
		switch {
		case err != nil:
			m.Logger.Warn("consistency check failed", "err", err)
		case rep.LockHeld:
			m.Logger.Info("consistency check skipped", "reason", "lock_held")
		default:
			lvl := slog.LevelDebug
			if !rep.Clean() || sum(rep.Drift) > 0 {
				lvl = slog.LevelWarn
			}
			m.Logger.Log(ctx, lvl, "consistency check", "drift", rep.Drift, "repaired", rep.Repaired, "errors", len(rep.Errors), "documents", rep.Documents, "ms", rep.Duration.Milliseconds())
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// localInbox is the drop folder <data>/inbox/<kb>/<path> as the check sees it; only the configured local
// tenant owns it (as for the watcher).
type localInbox struct {
	root     string
	tenant   string
	svc      *ingest.Service
	maxBytes int64
}

var _ reconcile.InboxPresence = localInbox{}

// Files lists the supported, non-hidden files under each knowledge-base folder (hidden folders, such as a
// deleted knowledge base's .deleted-<kb>-<time>, are skipped) that the watcher would ingest.
func (in localInbox) Files(ctx context.Context, tenant string) ([]string, error) {
	if tenant != in.tenant {
		return nil, nil
	}
	return in.walk(ctx, true)
}

// Present lists every non-hidden file under each knowledge-base folder, whatever its format or size: a
// drop-folder document whose file is not among them lost its file while no watcher ran. A folder that
// cannot be read is an error, and a missing drop folder serves nothing: neither may pass for files
// that were removed (their documents would be deleted).
func (in localInbox) Present(ctx context.Context, tenant string) ([]string, bool, error) {
	if tenant != in.tenant {
		return nil, false, nil
	}
	if _, err := os.Stat(in.root); err != nil {
		return nil, false, nil
	}
	uris, err := in.walk(ctx, false)
	return uris, err == nil, err
}

// walk lists the drop folder's source uris. ingestible keeps only what the watcher would ingest and
// skips what cannot be read; otherwise every file is listed and an unreadable folder is an error.
func (in localInbox) walk(ctx context.Context, ingestible bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(in.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == in.root && os.IsNotExist(err) {
				return fs.SkipAll
			}
			if !ingestible {
				return rag.E("reconcile.inbox", rag.KindUnavailable, err)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := d.Name()
		hidden := strings.HasPrefix(name, ".") || strings.HasPrefix(name, "~$") || strings.HasSuffix(name, "~")
		if d.IsDir() {
			if p != in.root && hidden {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(in.root, p)
		if err != nil || hidden {
			return nil
		}
		if ingestible {
			if !extract.Supported(name) {
				return nil
			}
			if info, err := d.Info(); err != nil || (in.maxBytes > 0 && info.Size() > in.maxBytes) {
				return nil // refused by the watcher too: not drift
			}
		}
		kb, path, ok := strings.Cut(filepath.ToSlash(rel), "/")
		if ok {
			out = append(out, ingest.SourceURI(kb, path))
		}
		return nil
	})
	return out, err
}

// Ingest ingests one drop-folder file again, storing its source (Force: the content may be unchanged).
func (in localInbox) Ingest(ctx context.Context, tenant, uri string) error {
	rest, ok := strings.CutPrefix(uri, "inbox/")
	kb, rel, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || tenant != in.tenant {
		return rag.Errorf("reconcile.inbox", rag.KindInvalid, "not a drop-folder source: %s", uri)
	}
	p := filepath.Join(in.root, kb, filepath.FromSlash(rel))
	st, err := os.Stat(p)
	if err != nil {
		return rag.E("reconcile.inbox", rag.KindNotFound, err)
	}
	if in.maxBytes > 0 && st.Size() > in.maxBytes {
		return rag.Errorf("reconcile.inbox", rag.KindTerminal, "%s is larger than %d bytes", uri, in.maxBytes)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return rag.E("reconcile.inbox", rag.KindUnavailable, err)
	}
	_, err = in.svc.Ingest(ctx, tenant, ingest.Source{KBName: kb, URI: uri, Name: filepath.Base(rel), Data: data, Force: true})
	return err
}
