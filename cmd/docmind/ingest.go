package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// ingestSummary is `docmind ingest --json`'s output.
type ingestSummary struct {
	Documents int             `json:"documents"` // documents indexed (new, changed or unchanged)
	Chunks    int             `json:"chunks"`
	Parents   int             `json:"parents"`
	Embedded  int             `json:"embedded"` // texts sent to the embeddings provider in this run
	Reused    int             `json:"reused"`
	Deleted   int             `json:"deleted"`
	Failed    []ingestFailure `json:"failed"`
}

type ingestFailure struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

func cmdIngest(e env, args []string) int {
	var c common
	fs := newFlags("ingest", e, &c)
	kbName := fs.String("kb", "", "knowledge base name (created when missing; refused when a member created or owns it)")
	adopt := fs.Bool("adopt", false, "add to the knowledge base even though a member created or owns it (its members will read what is added, its owners share and delete it; review them and kb revoke first)")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: docmind ingest --kb NAME [--adopt] [--data DIR] [--json] PATH...   (files or folders)")
		fs.PrintDefaults()
	}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	if *kbName == "" || len(paths) == 0 {
		fs.Usage()
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	files, problems := collect(paths)
	s, svc, err := openIngest(e.ctx, cfg, nil)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	kb, err := ingestKB(e, svc, s.SQL, cfg.Tenant, *kbName, *adopt)
	if err != nil {
		return fail(e, err)
	}
	sum := ingestSummary{Failed: problems}
	progress := !c.json && isTerminal(e.stderr)
	// Sources go in batches (ingest.DefaultBatch files, at most batchBytes of them): a batch's documents
	// share one embeddings call, one vector-log fsync and one SQL transaction.
	// Two batches are in flight, so one is read, extracted and chunked while the other waits for its
	// embeddings or its commit.
	const batchBytes, inFlight = 64 << 20, 2
	var batch []ingest.Source
	var names []string
	size := int64(0)
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, inFlight)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		srcs, files := batch, names
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			reps := svc.IngestBatch(e.ctx, cfg.Tenant, srcs)
			mu.Lock()
			defer mu.Unlock()
			for i, rep := range reps {
				sum.Embedded += rep.Embedded
				if rep.Error != "" {
					sum.Failed = append(sum.Failed, ingestFailure{File: files[i], Error: rep.Error})
					continue
				}
				sum.Documents++
				sum.Chunks += rep.Chunks
				sum.Parents += rep.Parents
				sum.Reused += rep.Reused
				sum.Deleted += rep.Deleted
			}
		})
		batch, names, size = nil, nil, 0
	}
	for i, f := range files {
		if e.ctx.Err() != nil {
			mu.Lock()
			sum.Failed = append(sum.Failed, ingestFailure{File: f, Error: "interrupted"})
			mu.Unlock()
			continue
		}
		if progress {
			fmt.Fprintf(e.stderr, "\r\033[K[%d/%d] %s", i+1, len(files), shorten(f, 60))
		}
		abs, _ := filepath.Abs(f)
		data, err := readLimited(abs, cfg.Server.MaxBodyBytes)
		if err != nil {
			mu.Lock()
			sum.Failed = append(sum.Failed, ingestFailure{File: f, Error: err.Error()})
			mu.Unlock()
			continue
		}
		side, err := ingest.ReadSidecar(abs) // <file>.metadata.json: its metadata, never a document
		if err != nil {                      // the file is ingested without it, and the run says so
			mu.Lock()
			sum.Failed = append(sum.Failed, ingestFailure{File: f + ingest.SidecarSuffix, Error: err.Error()})
			mu.Unlock()
		}
		if len(batch) > 0 && size+int64(len(data)) > batchBytes {
			flush()
		}
		batch = append(batch, ingest.Source{KBID: kb.ID, KBName: kb.Name, URI: "file://" + filepath.ToSlash(abs), Name: filepath.Base(abs), Data: data, Sidecar: side})
		names = append(names, f)
		size += int64(len(data))
		if len(batch) >= ingest.DefaultBatch {
			flush()
		}
	}
	if e.ctx.Err() == nil {
		flush()
	}
	wg.Wait()
	for _, f := range names { // read, but interrupted before its batch started
		sum.Failed = append(sum.Failed, ingestFailure{File: f, Error: "interrupted"})
	}
	if progress {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if sum.Failed == nil {
		sum.Failed = []ingestFailure{}
	}
	if c.json {
		printJSON(e.stdout, sum)
	} else {
		fmt.Fprintf(e.stdout, "%d documents, %d chunks (%d parents): %d embedded, %d reused, %d deleted; %d failed\n",
			sum.Documents, sum.Chunks, sum.Parents, sum.Embedded, sum.Reused, sum.Deleted, len(sum.Failed))
		for _, f := range sum.Failed {
			fmt.Fprintf(e.stdout, "  failed: %s: %s\n", f.File, f.Error)
		}
	}
	if len(sum.Failed) > 0 {
		return exitFail
	}
	return exitOK
}

// ingestKB resolves --kb once, before any file is read, as the operator channel it is: found or created,
// and refused when a member created or owns it (ingest.OperatorKB, which audits the refusal). With --adopt
// it is added to as it is: every member is named with its role on stderr and the adoption is audited.
// The sources then carry its id, so a delete and re-create of the name during a long run cannot
// redirect them.
func ingestKB(e env, svc *ingest.Service, db *sqldb.DB, tenant, name string, adopt bool) (rag.KnowledgeBase, error) {
	if !adopt {
		return svc.OperatorKB(e.ctx, tenant, name, "cli")
	}
	kb, err := svc.KB(e.ctx, tenant, name, true)
	if err != nil {
		return kb, err
	}
	refusal, err := svc.Refusal(e.ctx, kb)
	if err != nil {
		return kb, err
	}
	if refusal != nil {
		fmt.Fprintf(e.stderr, "docmind: adding to knowledge base %q, %s (--adopt); its members can read what is ingested, "+
			"its owners share and delete it: %s\n", kb.Name, refusal.Why(), refusal.MemberList())
		audit(e, db, tenant, "ingest.adopt", kb.ID, refusal.Detail())
	}
	return kb, nil
}

// collect expands folders into their supported files (hidden files and folders skipped); a named file
// that does not exist or is of an unsupported type is reported as failed.
func collect(paths []string) ([]string, []ingestFailure) {
	var files []string
	var bad []ingestFailure
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			bad = append(bad, ingestFailure{File: p, Error: "no such file or folder"})
			continue
		}
		if !st.IsDir() {
			if !extract.Supported(p) {
				bad = append(bad, ingestFailure{File: p, Error: "unsupported file type (supported: " + strings.Join(extract.Formats, " ") + ")"})
				continue
			}
			files = append(files, p)
			continue
		}
		filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				bad = append(bad, ingestFailure{File: path, Error: err.Error()})
				return nil
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && extract.Supported(path) {
				files = append(files, path)
			}
			return nil
		})
	}
	return files, bad
}

func readLimited(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("file is %d bytes, the limit is %d (DOCMIND_MAX_BODY_BYTES)", st.Size(), limit)
	}
	return os.ReadFile(path)
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "..." + string(r[len(r)-n+3:])
}
