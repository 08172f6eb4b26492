package main

import (
	"fmt"

	"github.com/docmind/docmind/shared/store/milvus"
)

// cmdMetadata runs `docmind metadata mirror`: every document's metadata copied onto its rows in the
// Milvus collection (docs/metadata-filters.md, "Milvus: metadata on the rows"), the backfill after a
// deploy gave the collection its metadata field. Metadata written later is mirrored as it is written.
func cmdMetadata(e env, args []string) int {
	var c common
	fs := newFlags("metadata", e, &c)
	rest, err := parseInterspersed(fs, args)
	if err != nil || len(rest) != 1 || rest[0] != "mirror" {
		fmt.Fprintln(e.stderr, "usage: docmind metadata mirror [--json]: copy every document's metadata onto its Milvus rows")
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	s, err := OpenStores(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	if _, ok := s.Vectors.(*milvus.Index); !ok {
		fmt.Fprintf(e.stdout, "nothing to mirror: the %s vector index filters through the metadata index in memory\n", cfg.Vector.Driver)
		return exitOK
	}
	n, err := s.SQL.MirrorAllMetadata(e.ctx, cfg.Tenant)
	if c.json {
		printJSON(e.stdout, map[string]any{"mirrored": n, "error": errString(err)})
	} else {
		fmt.Fprintf(e.stdout, "%d documents' metadata mirrored onto their vector rows\n", n)
	}
	if err != nil {
		return fail(e, err)
	}
	return exitOK
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
