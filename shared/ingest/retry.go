package ingest

import "context"

// Retry runs a document's stages again from its stored source, as the consistency check does for a
// document stuck in pending or processing. NotFound when the document or its stored source is gone.
func (s *Service) Retry(ctx context.Context, tenant, docID string) error {
	_, src, err := s.Stored(ctx, tenant, docID)
	if err != nil {
		return err
	}
	_, err = s.Ingest(ctx, tenant, src)
	return err
}
