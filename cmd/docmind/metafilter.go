package main

import (
	"context"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// metaRestrict narrows f to the documents whose metadata passes the JSON filter raw
// (docs/metadata-filters.md); none is true when no document passes. f.KBIDs empty means every
// knowledge base of the tenant.
func metaRestrict(ctx context.Context, db *sqldb.DB, raw string, f *rag.Filter) (none bool, err error) {
	mf, err := rag.ParseMetaFilter([]byte(raw))
	if err != nil || mf == nil {
		return false, err
	}
	kbs := f.KBIDs
	if len(kbs) == 0 {
		all, err := db.ListKBs(ctx, f.Tenant)
		if err != nil {
			return false, err
		}
		for _, kb := range all {
			kbs = append(kbs, kb.ID)
		}
		if len(kbs) == 0 {
			return true, nil
		}
	}
	ids, err := db.MatchDocuments(ctx, f.Tenant, kbs, mf)
	if err != nil {
		return false, err
	}
	f.DocumentIDs, f.Meta = ids, mf // Meta: Milvus may search by the filter (metadata-filters.md)
	return len(ids) == 0, nil
}

// failOr is fail for an error, exitOK for none.
func failOr(e env, err error) int {
	if err != nil {
		return fail(e, err)
	}
	return exitOK
}
