package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// docFlags is a repeatable --doc: the documents a question is asked about, by id or file name.
type docFlags []string

func (d *docFlags) String() string { return strings.Join(*d, ",") }

func (d *docFlags) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return fmt.Errorf("an empty document")
	}
	*d = append(*d, s)
	return nil
}

// maxAskDocs is how many documents one question may select: the HTTP API's limit (maxChatKBs).
const maxAskDocs = 20

// selectDocs turns each --doc (an id, or a file name) into the id of a document the question may read,
// as /api/chat checks its `documents`: in the tenant, not deleted, in a knowledge base of kbIDs (the
// --kb named or, for --user, those the user may read; nil: every one of the tenant), and, with --kb,
// in that knowledge base. A document outside them is unknown whatever its id, so that --user cannot
// probe another knowledge base's documents. A name held by documents of two knowledge bases is ambiguous: the error
// lists their ids. Unknown documents are a usage error naming them.
func selectDocs(e env, s *Stores, tenant string, kbIDs []string, keys []string) ([]string, error) {
	const op = "docmind"
	if len(keys) > maxAskDocs {
		return nil, rag.Errorf(op, rag.KindInvalid, "at most %d documents per question (--doc)", maxAskDocs)
	}
	readable := func(d rag.Document) bool {
		return d.Status != rag.StatusDeleted && (kbIDs == nil || slices.Contains(kbIDs, d.KBID))
	}
	var byName []rag.Document // every readable document, listed once when a --doc is a name
	var ids []string
	for _, key := range keys {
		doc, err := s.SQL.GetDocument(e.ctx, tenant, key)
		switch {
		case err == nil && readable(doc):
			ids = appendNew(ids, doc.ID)
			continue
		case err != nil && !rag.Is(err, rag.KindNotFound) && !rag.Is(err, rag.KindInvalid):
			return nil, err
		}
		// not an id the question may read: a file name
		if byName == nil {
			if byName, err = listReadable(e, s, tenant, kbIDs); err != nil {
				return nil, err
			}
		}
		var found []rag.Document
		for _, d := range byName {
			if d.FileName == key && readable(d) {
				found = append(found, d)
			}
		}
		switch len(found) {
		case 0:
			return nil, rag.Errorf(op, rag.KindInvalid, "no document %q in the knowledge bases asked (give a document id or its file name)", key)
		case 1:
			ids = appendNew(ids, found[0].ID)
		default:
			var which []string
			for _, d := range found {
				which = append(which, d.ID+" (knowledge base "+d.KBID+")")
			}
			return nil, rag.Errorf(op, rag.KindInvalid, "%d documents are named %q: select one by id: %s", len(found), key, strings.Join(which, ", "))
		}
	}
	return ids, nil
}

// listReadable lists the documents of kbIDs (nil: every knowledge base of the tenant).
func listReadable(e env, s *Stores, tenant string, kbIDs []string) ([]rag.Document, error) {
	if kbIDs == nil {
		kbs, err := s.SQL.ListKBs(e.ctx, tenant)
		if err != nil {
			return nil, err
		}
		for _, kb := range kbs {
			kbIDs = append(kbIDs, kb.ID)
		}
	}
	out := []rag.Document{}
	for _, kb := range kbIDs {
		docs, err := s.SQL.ListDocuments(e.ctx, tenant, kb, "")
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

func appendNew(ids []string, id string) []string {
	if slices.Contains(ids, id) {
		return ids
	}
	return append(ids, id)
}
