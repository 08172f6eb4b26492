//go:build bench_compare

package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"

	"github.com/blevesearch/bleve/v2"
	chromem "github.com/philippgille/chromem-go"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/textsplitter"
)

// The peers a user might pick instead: LangChainGo's splitters and chromem-go's exact search.

const peersLinked = true

type splitter struct {
	name  string
	split func(string) []string
}

func runeLen(s string) int { return len([]rune(s)) }

func lcSplit(sp textsplitter.TextSplitter) func(string) []string {
	return func(s string) []string {
		out, err := sp.SplitText(s)
		if err != nil {
			return nil
		}
		return out
	}
}

func peerSplitters() []splitter {
	cjk := []string{"\n\n", "\n", "。", "！", "？", "；", ". ", " ", ""}
	return []splitter{
		{"LangChainGo recursive (defaults)", lcSplit(textsplitter.NewRecursiveCharacter())},
		{"LangChainGo recursive (400/50, CJK separators)", lcSplit(textsplitter.NewRecursiveCharacter(
			textsplitter.WithChunkSize(400), textsplitter.WithChunkOverlap(50), textsplitter.WithSeparators(cjk), textsplitter.WithLenFunc(runeLen)))},
		{"LangChainGo markdown (400/50)", lcSplit(textsplitter.NewMarkdownTextSplitter(
			textsplitter.WithChunkSize(400), textsplitter.WithChunkOverlap(50), textsplitter.WithLenFunc(runeLen)))},
	}
}

func peerVector(dim int, ids []string, data []float32) (func(q []float32), string, error) {
	db := chromem.NewDB()
	col, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) { return nil, nil })
	if err != nil {
		return nil, "", err
	}
	docs := make([]chromem.Document, len(ids))
	for i, id := range ids {
		docs[i] = chromem.Document{ID: id, Embedding: data[i*dim : (i+1)*dim], Content: "x"}
	}
	if err := col.AddDocuments(context.Background(), docs, runtime.NumCPU()); err != nil {
		return nil, "", err
	}
	return func(q []float32) { col.QueryEmbedding(context.Background(), q, 10, nil, nil) }, "chromem-go", nil
}

// blevePeer is Bleve v2 with BM25 scoring, on disk in a temporary folder (scorch, its default).
func blevePeer() (keywordPeer, bool) {
	var idx bleve.Index
	var dir string
	p := keywordPeer{name: "Bleve (BM25)"}
	p.close = func() {
		if idx != nil {
			idx.Close()
		}
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	p.index = func(ids, texts []string) error {
		p.close()
		var err error
		if dir, err = os.MkdirTemp("", "docmind-bleve-"); err != nil {
			return err
		}
		m := bleve.NewIndexMapping()
		m.ScoringModel = "bm25"
		m.DefaultAnalyzer = "en"
		if idx, err = bleve.New(filepath.Join(dir, "idx"), m); err != nil {
			return err
		}
		b := idx.NewBatch()
		for i := range ids {
			if err := b.Index(ids[i], map[string]string{"body": texts[i]}); err != nil {
				return err
			}
			if b.Size() >= 1000 {
				if err := idx.Batch(b); err != nil {
					return err
				}
				b = idx.NewBatch()
			}
		}
		return idx.Batch(b)
	}
	p.search = func(q string) ([]string, error) {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery(q), 10, 0, false)
		res, err := idx.Search(req)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			out[i] = h.ID
		}
		return out, nil
	}
	return p, true
}

// lcRetriever exposes the retrieval chain through LangChainGo's retriever interface, as an application
// built on LangChainGo would wire it: evidence becomes schema.Document values.
type lcRetriever struct {
	search func(ctx context.Context, q string) ([]string, []float32, error)
}

func (r lcRetriever) GetRelevantDocuments(ctx context.Context, q string) ([]schema.Document, error) {
	texts, scores, err := r.search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]schema.Document, len(texts))
	for i := range texts {
		out[i] = schema.Document{PageContent: texts[i], Score: scores[i], Metadata: map[string]any{"rank": i}}
	}
	return out, nil
}

var _ schema.Retriever = lcRetriever{}

func peerRetriever(direct func(ctx context.Context, q string) ([]string, []float32, error)) (func(ctx context.Context, q string), string) {
	var r schema.Retriever = lcRetriever{direct}
	return func(ctx context.Context, q string) { r.GetRelevantDocuments(ctx, q) }, "LangChainGo schema.Retriever"
}
