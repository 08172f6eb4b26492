package ingest

import (
	"context"

	"github.com/docmind/docmind/shared/rag"
)

// sourceKB is the knowledge base a source goes into: by id when the caller resolved it (an upload,
// checked against the uploader's role on that id; a delete and re-create under the same name meanwhile
// makes it NotFound, never the new one), otherwise by name, created on first use.
func (s *Service) sourceKB(ctx context.Context, tenant string, src Source) (rag.KnowledgeBase, error) {
	if src.KBID != "" {
		return s.Runner.Stages.Records.GetKB(ctx, tenant, src.KBID)
	}
	return s.KB(ctx, tenant, src.KBName, true)
}
