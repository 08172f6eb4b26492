package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/text"
)

// Keyword is BM25 over child chunks on MySQL/Aurora: FULLTEXT (natural language mode, over the
// pre-analysed search_terms column) finds candidates, and bm25.Score ranks them in Go from the stored
// per-field terms, with the corpus statistics of the filter's scope (chunk count, average field
// lengths, exact document frequencies). The embedded index ranks with index-wide statistics, so the two
// agree exactly when the scope is the whole index (one knowledge base), as the parity test shows.
//
// One difference remains by design: search_terms always holds the context field's terms, so with
// ContextWeight 0 a term found only in a chunk's parent still counts in its document frequency.
//
// Terms are stored as bm25.Token encodings, so no server setting (minimum token size, stop words)
// changes what matches.
type Keyword struct {
	DB         *sqldb.DB
	Params     bm25.Params
	Candidates int // FULLTEXT candidates rescored per query (default 1,000)
}

var _ interface {
	Search(ctx context.Context, query string, k int, f rag.Filter) ([]rag.Hit, error)
} = (*Keyword)(nil)

// scope builds the WHERE clause of a filter (ids validated by f.Validate).
func scope(f rag.Filter) (string, []any) {
	w := `tenant_id = ? AND level = 'child'`
	args := []any{f.Tenant}
	in := func(col string, ids []string) {
		if len(ids) == 0 {
			return
		}
		w += ` AND ` + col + ` IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	in("kb_id", f.KBIDs)
	in("document_id", f.DocumentIDs)
	return w, args
}

// Search implements the keyword leg.
func (k *Keyword) Search(ctx context.Context, query string, n int, f rag.Filter) ([]rag.Hit, error) {
	const op = "mysql.Keyword"
	if err := f.Validate(); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if len(f.Tags) > 0 {
		return nil, rag.Errorf(op, rag.KindInvalid, "tag filters are applied on the vector leg only")
	}
	if n < 1 {
		return nil, rag.Errorf(op, rag.KindInvalid, "k must be positive, got %d", n)
	}
	terms := text.Analyze(query)
	hits := []rag.Hit{}
	if len(terms) == 0 {
		return hits, nil
	}
	p := k.Params
	if p.K1 == 0 {
		p = bm25.DefaultParams()
	}
	cands := k.Candidates
	if cands <= 0 {
		cands = 1000
	}
	db := k.DB.SQL()
	where, args := scope(f)

	var count int
	var bodyAvg, titleAvg, ctxAvg sql.NullFloat64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), AVG(body_len), AVG(title_len), AVG(context_len) FROM chunks WHERE `+where, args...).
		Scan(&count, &bodyAvg, &titleAvg, &ctxAvg); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, fmt.Errorf("corpus statistics: %w", err))
	}
	if count == 0 {
		return hits, nil
	}
	avg := bodyAvg.Float64 + p.TitleWeight*titleAvg.Float64 + p.ContextWeight*ctxAvg.Float64
	if avg <= 0 {
		avg = 1
	}

	distinct := slices.Compact(slices.Sorted(slices.Values(terms)))
	df := map[string]float64{}
	for _, t := range distinct {
		// search_terms holds bm25.Token encodings, which every MySQL tokenizer keeps whole: a FULLTEXT
		// match of one token is an exact term match
		var c int
		q := `SELECT COUNT(*) FROM chunks WHERE ` + where + ` AND MATCH(search_terms) AGAINST(? IN NATURAL LANGUAGE MODE)`
		if err := db.QueryRowContext(ctx, q, append(slices.Clone(args), bm25.Token(t))...).Scan(&c); err != nil {
			return nil, rag.E(op, rag.KindUnavailable, fmt.Errorf("document frequency: %w", err))
		}
		df[t] = float64(c)
	}

	q := `SELECT id, document_id, kb_id, COALESCE(body_terms, ''), COALESCE(title_terms, ''), COALESCE(context_terms, '') FROM chunks
		WHERE ` + where + ` AND MATCH(search_terms) AGAINST(? IN NATURAL LANGUAGE MODE) LIMIT ?`
	tokens := make([]string, len(distinct))
	for i, t := range distinct {
		tokens[i] = bm25.Token(t)
	}
	rows, err := db.QueryContext(ctx, q, append(slices.Clone(args), strings.Join(tokens, " "), cands)...)
	if err != nil {
		return nil, rag.E(op, rag.KindUnavailable, fmt.Errorf("candidates: %w", err))
	}
	defer rows.Close()
	type scored struct {
		hit rag.Hit
	}
	var all []scored
	for rows.Next() {
		var id, doc, kb, body, title, context string
		if err := rows.Scan(&id, &doc, &kb, &body, &title, &context); err != nil {
			return nil, rag.E(op, rag.KindUnavailable, err)
		}
		fields := bm25.Fields{Body: strings.Fields(body), Title: strings.Fields(title), Context: strings.Fields(context)}
		tf, length := fields.Weighted(p)
		var s float32
		for _, t := range terms {
			if c := tf[t]; c > 0 && df[t] > 0 {
				s += bm25.Score(p, float64(c), df[t], float64(count), float64(length), avg)
			}
		}
		if s > 0 {
			all = append(all, scored{rag.Hit{ID: id, ChunkID: id, DocumentID: doc, KBID: kb, Score: s}})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.hit.Score != b.hit.Score {
			if a.hit.Score > b.hit.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.hit.ID, b.hit.ID)
	})
	for _, s := range all[:min(n, len(all))] {
		hits = append(hits, s.hit)
	}
	return hits, nil
}
