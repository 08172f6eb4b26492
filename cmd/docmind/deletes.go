package main

import (
	"context"
	"fmt"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// pendingKBDelete finds the knowledge base named name whose delete was recorded but did not finish (its
// name is free from the record on, so GetKBByName no longer finds it); notFound when there is none.
func pendingKBDelete(e env, db *sqldb.DB, tenant, name string, notFound error) (rag.KnowledgeBase, error) {
	pending, err := db.ListKBDeletions(e.ctx, tenant)
	if err != nil {
		return rag.KnowledgeBase{}, err
	}
	for _, kb := range pending {
		if kb.Name == name {
			return kb, nil
		}
	}
	return rag.KnowledgeBase{}, notFound
}

// finishDeletes completes the deletes a crash interrupted, for every tenant with data: each recorded
// knowledge-base delete, then each document marked deleted. Both were invisible to callers from the
// moment they were recorded; this returns their storage at start instead of at the hourly repair. It
// reports how many it finished; an error on one is logged and the rest go on.
func (m *Main) finishDeletes(ctx context.Context) (kbs, docs int) {
	db, svc := m.Stores.SQL, m.Ingest
	tenants, err := db.ListDataTenants(ctx)
	if err != nil {
		m.Logger.Warn("interrupted deletes not looked for", "err", err)
		return 0, 0
	}
	for _, tenant := range tenants {
		pending, err := db.ListKBDeletions(ctx, tenant)
		if err != nil {
			m.Logger.Warn("interrupted knowledge-base deletes not listed", "tenant", tenant, "err", err)
		}
		for _, kb := range pending {
			if err := svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
				m.Logger.Warn("interrupted knowledge-base delete not finished", "tenant", tenant, "kb", kb.ID, "name", kb.Name, "err", err)
				continue
			}
			kbs++
		}
		live, err := db.ListKBs(ctx, tenant)
		if err != nil {
			m.Logger.Warn("knowledge bases not listed", "tenant", tenant, "err", err)
			continue
		}
		for _, kb := range live {
			tomb, err := db.ListDocuments(ctx, tenant, kb.ID, rag.StatusDeleted)
			if err != nil {
				m.Logger.Warn("deleted documents not listed", "tenant", tenant, "kb", kb.ID, "err", err)
				continue
			}
			for _, d := range tomb {
				if err := svc.Delete(ctx, tenant, d.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
					m.Logger.Warn("interrupted document delete not finished", "tenant", tenant, "document", d.ID, "err", err)
					continue
				}
				docs++
			}
		}
	}
	if kbs+docs > 0 {
		m.Logger.Info("finished interrupted deletes", "knowledge_bases", kbs, "documents", docs)
		m.progress("finished %s interrupted at the last stop", plural(kbs+docs, "delete"))
	}
	return kbs, docs
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
